"""Clean verbatim: a transcript's sentence as a reader wants it quoted.

A meeting transcript writes down how people speak: hesitations ("uh", "um"), words said again
while the speaker thinks ("it's it's", "the whole point of the whole point of"), stutters ("C c
can") and spaces before punctuation ("design ."). A summary that quotes such a sentence spends a
reader's attention and a retrieval budget's tokens on them. `clean_verbatim` removes exactly
those (and joins contractions a parser's tokenizer split off: "we 're") and nothing else: no
word is reworded, reordered or added, so the sentence is still a quote.

Only for spoken text: in prose a repeated word can be meant ("he had had enough").
"""

from __future__ import annotations

import re

from memory_bank.text.lexicon import HESITATIONS

_WORD = r"[\w'’]+"
# Transcripts tokenized for parsing split contractions off their word ("we 're", "do n't").
_SPLIT_CONTRACTION = re.compile(r"(?<=\w)[ \t]+('(?:s|re|m|d|ll|ve)|n't)(?![\w'’])", re.IGNORECASE)
# A hesitation with the commas that set it off ("I think, uh, we" -> "I think we").
_HESITATION = re.compile(
    r"(?:[ \t]*,)?[ \t]*(?<![\w'’-])"
    rf"(?:{'|'.join(sorted(HESITATIONS, key=len, reverse=True))})(?![\w'’-])[ \t]*(?:,[ \t]*)?",
    re.IGNORECASE,
)
# One to four words said again at once, maybe after a comma ("the the", "you make , you make").
_REPEAT = re.compile(
    rf"(?<![\w'’])((?:{_WORD}[ \t]+){{0,3}}?{_WORD})(?:[ \t]*,?[ \t]+\1(?![\w’]))+",
    re.IGNORECASE,
)
# A cut-off start of the next word: one letter ("c can"; not "a", "I" or "o", which are words)
# or two consonants ("wh where", "th the"); "in" before "inside" may be meant.
_STUTTER = re.compile(
    r"(?<![\w'’])(?![aio][ \t])([^\W\d_]|[b-df-hj-np-tv-xz]{2})[ \t]+(?=\1[^\W\d_])",
    re.IGNORECASE,
)
_SPACE_BEFORE_PUNCTUATION = re.compile(r"[ \t]+([,.;:!?])")
_REPEATED_COMMA = re.compile(r",(?:[ \t]*,)+")
_COMMA_BEFORE_END = re.compile(r",[ \t]*([.!?])")
_SPACES = re.compile(r"[ \t]{2,}")


def clean_verbatim(text: str) -> str:
    """`text` without hesitations, immediate repetitions and stutters, with punctuation and
    contractions set against their word; line breaks are kept."""
    # Runs of spaces first: the patterns below then never backtrack through one.
    cleaned = _SPLIT_CONTRACTION.sub(r"\1", _SPACES.sub(" ", text))
    cleaned = _HESITATION.sub(" ", cleaned)
    cleaned = _REPEAT.sub(r"\1", cleaned)
    cleaned = _STUTTER.sub("", cleaned)
    cleaned = _SPACE_BEFORE_PUNCTUATION.sub(r"\1", _SPACES.sub(" ", cleaned))
    cleaned = _REPEATED_COMMA.sub(",", cleaned)
    cleaned = _COMMA_BEFORE_END.sub(r"\1", cleaned)
    lines = [_SPACES.sub(" ", line).strip(" \t") for line in cleaned.split("\n")]
    return "\n".join(line.lstrip(",").lstrip() for line in lines)
