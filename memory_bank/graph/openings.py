"""Whether a capitalized word opening a sentence (or a clause) is a name or grammar's capital.

A sentence capitalizes its first word whatever it is: "Alice is" opens with a name, "Club
historians have", "Roofers have", "Built as a shipping office" and "Founder: Hester Vaile" do
not. `graph.values` asks this of each capitalized word that opens a sentence.
"""

from __future__ import annotations

import re

# A capitalized participle opening a sentence ("Built as a shipping office", "Rebuilt after a
# fire", "Founded in 1983"): grammar's capital, never a name.
PARTICIPLE = (
    r"[A-Z][a-z]{2,}ed|(?:Re|Un|Over|Under)?(?i:built|held|born|made|known|grown|shown|given|"
    r"taken|written|seen|begun|sold|kept|won|lost|found|run|set|led)"
)
_OPENING_PARTICIPLE = re.compile(PARTICIPLE)
POSSESSIVE = re.compile(r"['’]s$")
# What follows a sentence-opening name: a verb, a comma, a possessive ("Alice is", "Penn
# recorded", "Bob, ..."). A capitalized opening word followed by a common word is grammar's
# capital ("Club historians have ...", "Archival records show ...").
NAME_FOLLOWER = re.compile(
    r"(?:is|are|was|were|has|have|had|will|would|can|could|may|might|must|should|said|says|"
    r"became|becomes|remains|joined|left|took|won|made|[a-z]+ed|[a-z]+s|[a-z]{3,}ly)$"
)


# A plural verb: the word before it at a sentence's start names many ("Roofers have").
_PLURAL_VERBS = frozenset({"have", "are", "were"})
# A participle opening a sentence ("Built as a shipping office", "Born in Orvieux").
# fmt: off
PARTICIPLE_OBJECTS = frozenset([
    "as", "in", "on", "at", "by", "for", "from", "with", "to", "of", "into", "every", "each",
    "after", "before", "during", "under", "over", "near", "the", "a", "an", "its", "his", "her",
    "their", "this", "that",
])
# fmt: on


# A word opening a sentence that labels the figure or the names after it, which say no more
# ("Est. 1874"; "Founder: Hester Vaile"; "Stop 4: Vossen Town Hall", "Site 3: the weather
# station" -- not a speaker's line, "Alice: We moved in May").
_LABEL = re.compile(
    r"\s*(?:\d+:|(?:\d+\s*(?=:))?(?:[:.]\s*\d|:\s*(?=[A-Z])(?![^.!?]*\b[a-z]{4,}\b)))"
)


def common_opening(sentence: str, words: list[re.Match[str]], position: int) -> bool:
    word = words[position].group(0)
    if word.isupper() or POSSESSIVE.search(word):
        return False
    if _LABEL.match(sentence, words[position].end()):
        return True  # "Capacity: 4,200", "Est. 1874", "Founder: Hester Vaile": a label
    if position + 1 >= len(words):
        return False
    following = words[position + 1]
    gap = sentence[words[position].end() : following.start()]
    if gap.strip() or following.group(0)[0].isupper():
        return False  # "Bob, the CEO", "Alice Moreno": a name
    if _OPENING_PARTICIPLE.fullmatch(word) and following.group(0) in PARTICIPLE_OBJECTS:
        return True  # "Built as", "Held every": a participle ("Alfred is": a name)
    if word.endswith("s") and following.group(0) in _PLURAL_VERBS:
        return True  # "Roofers have", "Visitors are": a plural noun ("Alfred has": a name)
    return NAME_FOLLOWER.fullmatch(following.group(0)) is None


def opens_clause(sentence: str, start: int) -> bool:
    before = sentence[:start].rstrip()
    return not before or before[-1] in '.:;!?"“(–—-'
