"""What a question asks about: its content terms (stemmed) and the exact entities worth a grep
(quoted phrases, names, acronyms, numbers, code identifiers).

Terms and evidence are compared as Snowball stems (`lexicon.stem_words`), the stems BM25 uses:
against a hand-written stemmer (plural, -ed, -ing) `ask` answered more questions with
retrieval unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from memory_bank.text.lexicon import QUESTION_WORDS, search_tokens, stem_words

# Double quotes anywhere; single quotes only around a phrase, so "Rust's" is not a quote.
_QUOTED = re.compile(r"[\"“”]([^\"“”]{2,60})[\"“”]|(?<!\w)['‘]([^'‘’]{2,60})['’](?!\w)")
_WORD = re.compile(r"[^\W_](?:[\w.+#-]*[^\W_])?")
_IDENTIFIER = re.compile(r"[a-z][A-Z]|\w_\w|[a-z]\.[a-z]")  # camelCase, snake_case, dotted.name


def content_terms(question: str) -> list[str]:
    """The question's topical terms, stemmed: search tokens minus question words, unique."""
    terms = [term for term in search_tokens(question) if term not in QUESTION_WORDS]
    return list(dict.fromkeys(stem_words(terms)))


def term_coverage(terms: Sequence[str], stems: AbstractSet[str]) -> float:
    """Share of the (stemmed) `terms` among `stems`, the stemmed vocabulary of some evidence."""
    if not terms:
        return 0.0
    return sum(1 for term in terms if term in stems) / len(terms)


def question_entities(question: str) -> list[str]:
    """Exact strings worth a grep, in order: quoted phrases, names (runs of capitalized words,
    "North Carolina"), acronyms, numbers and code identifiers (useState, asyncio.gather).

    The question's first word is capitalized by grammar, so alone it is not taken as a name.
    """
    entities = [(match.group(1) or match.group(2)).strip() for match in _QUOTED.finditer(question)]
    run: list[re.Match[str]] = []

    def close_run() -> None:
        if run:
            entities.append(question[run[0].start() : run[-1].end()])
            run.clear()

    for position, match in enumerate(_WORD.finditer(question)):
        word = match.group(0)
        is_acronym = sum(char.isupper() for char in word) >= 2
        if (
            word[0].isupper()
            and (position > 0 or is_acronym)
            and word.lower() not in QUESTION_WORDS
        ):
            if run and question[run[-1].end() : match.start()] != " ":
                close_run()
            run.append(match)
            continue
        close_run()
        if any(char.isdigit() for char in word) or _IDENTIFIER.search(word):
            entities.append(word)
    close_run()
    return list(dict.fromkeys(entities))
