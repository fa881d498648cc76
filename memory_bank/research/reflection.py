"""Reflection: is the gathered evidence enough to answer, and if not, what to search next.

The coverage test: the question's content terms (stems) against the words of the leading
passages. Terms no leading passage contains are the question's *residual*: what the evidence
has not found yet ("based", "city" in "... is based in what city?"). The evidence is enough
when the residual is empty, or when no new bridge is left to follow.

Bridge entities: names read in the question-relevant sentences of the leading passages that the
question does not contain. In a bridge question the first passage found names the thing the
question only describes; searching for that name, together with the residual, finds the second.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from memory_bank.query.answer_sentences import AnswerSentence
from memory_bank.research.entities import Mention, mentions_overlap, name_mentions
from memory_bank.research.plans import Bridge, Reflection
from memory_bank.text.lexicon import search_tokens, stem_words

# Words on each side of a name that count as its context.
CONTEXT_WORDS = 8
# The coverage test reads the best this many passages: a two-hop answer rests on two.
COVERAGE_PASSAGES = 2


def reflect(
    question: str,
    terms: list[str],
    leading: list[int],
    passage_stems: dict[int, frozenset[str]],
    sentences: list[AnswerSentence],
    passage_scores: Mapping[int, float],
    explored: Collection[str],
    specific: Callable[[str], bool],
) -> Reflection:
    """Coverage of `terms` by the best COVERAGE_PASSAGES of the `leading` passages, and the
    bridges left to follow.

    `sentences` are the leading passages' sentences scored for the question, best first;
    `explored` the names already searched for (lowercased), which are not proposed again;
    `specific` tells a name worth a search from one found everywhere.
    """
    chain = leading[:COVERAGE_PASSAGES]
    evidence = frozenset().union(*(passage_stems[index] for index in chain))
    covered = [term for term in terms if term in evidence]
    missing = [term for term in terms if term not in evidence]
    bridges = find_bridges(question, terms, leading, sentences, passage_scores, explored, specific)
    if not leading:
        return Reflection(False, covered, missing, bridges, "nothing found")
    if not missing:
        return Reflection(
            True, covered, missing, bridges, "the evidence covers every question term"
        )
    if not bridges:
        return Reflection(True, covered, missing, bridges, "no bridge left to follow")
    return Reflection(
        False, covered, missing, bridges, f"missing {', '.join(missing)}; {len(bridges)} bridges"
    )


def find_bridges(
    question: str,
    terms: list[str],
    leading: list[int],
    sentences: list[AnswerSentence],
    passage_scores: Mapping[int, float],
    explored: Collection[str],
    specific: Callable[[str], bool],
) -> list[Bridge]:
    """Specific names in the leading passages, not in the question, not explored, each once.

    Ranked by their passage's score plus their *context*: the share of the question's terms
    among the words around the name (CONTEXT_WORDS on each side, the name's own words aside).
    The thing a question describes is named next to the words that describe it ("she resigned
    to become a lobbyist for Boston Beer Company"); ties go to the more relevant sentence.
    """
    question_tokens = frozenset(search_tokens(question)) | frozenset(
        stem_words(search_tokens(question))
    )
    wanted = frozenset(terms)
    bridges: dict[str, Bridge] = {}
    for sentence in sentences:  # best first, so a name keeps its most relevant sentence
        if sentence.chunk not in leading:
            continue
        for mention in name_mentions(sentence.text):
            key = mention.text.lower()
            if (
                key in bridges
                or key in explored
                or mentions_overlap(mention.text, question_tokens)
                or not specific(mention.text)
            ):
                continue
            context = _context_share(sentence.text, mention, wanted)
            priority = passage_scores.get(sentence.chunk, 0.0) + context
            bridges[key] = Bridge(mention.text, sentence.chunk, sentence.text, priority)
    return sorted(bridges.values(), key=lambda bridge: -bridge.score)


def _context_share(text: str, mention: Mention, terms: frozenset[str]) -> float:
    """Share of `terms` (stems) among the CONTEXT_WORDS words on each side of the mention."""
    if not terms:
        return 0.0
    before = search_tokens(text[: mention.start])[-CONTEXT_WORDS:]
    after = search_tokens(text[mention.end :])[:CONTEXT_WORDS]
    around = frozenset(stem_words(before + after))
    return len(terms & around) / len(terms)
