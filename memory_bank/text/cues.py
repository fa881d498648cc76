"""The cue lexicon: the words with which a text says that a value changed.

Every reader of claims -- the ingest graph step, the session agents, conversation memory and
the answer -- takes its cues from here, each pattern for one role:
- `REPLACEMENT_CUES`: a later sentence names the value it replaces ("replaced Alice Moreno",
  "formerly the Corn Hall", "not Portland but Salem");
- `UPDATE_CUES`: a later sentence announces a change without naming what it replaces ("now",
  "appointed", "moved");
- `SET_ASIDE_CUES`: a value mentioned beside one of these is not stated as a fact of its own
  ("not", "once", "earlier"): wider than a replacement, as it only keeps a mention from
  counting as agreement;
- `REPLACED_CLAUSE`: the clause of an answer sentence that names a replaced value (",
  replacing Alice Moreno"), cut from the answer since the history states it;
- `CHANGE_WORDS`: single words that announce a change rather than state a value, left out
  when two sentences' words are compared.
"""

from __future__ import annotations

import re

REPLACEMENT_CUES = re.compile(
    r"\b(?:replac(?:ed|es|ing)|succeed(?:ed|s)?|successor|took over|takes over|no longer|"
    r"formerly|previously|former|instead of|rather than|changed? from|switched from|"
    r"moved from|renamed|not\b[^.;]*\bbut\b|used to|earlier (?:reports?|records?)|"
    r"(?:,|;|\(|—|–)\s*not\b|\bnot\s+(?:as|like)\b)",
    re.IGNORECASE,
)
UPDATE_CUES = re.compile(
    r"\b(?:now|new|newly|current(?:ly)?|latest|updated?|as of|has become|became|becomes|"
    r"appointed|elected|named|moved|relocated|changed|switched|corrected|correction|revised|"
    r"actually|in fact|took office|stepped down|resigned|retired|since)\b",
    re.IGNORECASE,
)
SET_ASIDE_CUES = re.compile(
    r"\b(?:not|no longer|formerly|previously|former|replac\w*|succeed\w*|instead of|rather than|"
    r"changed? from|moved from|switched from|earlier|used to|once)\b",
    re.IGNORECASE,
)
REPLACED_CLAUSE = re.compile(
    r"(?:,|;|\(|—|–)?\s*(?:not|rather than|instead of|replacing|succeeding|formerly|previously|"
    r"(?:who|which)\s+(?:took over|replaced|succeeded)[^,;()]*?)\b[^,;()]*",
    re.IGNORECASE,
)
CHANGE_WORDS = frozenset(
    ["now", "currently", "current", "new", "newly", "latest", "today", "actually", "still"]
)
