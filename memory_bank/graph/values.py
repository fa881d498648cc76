"""The values of a sentence: the spans a fact turns on.

Dates and years (normalized to "d:YYYY-MM-DD" keys, told more or less precisely), numbers with
their unit class ("n:3.5e+06", "number:inhabitant"), number words before a unit ("three
members"), weekdays, and names: runs of capitalized words joined by "of", "de", ..., without
grammar's capitals (a sentence-opening "The", "Currently"), a place with its region ("Young,
New South Wales") or a pair ("Steely and Clevie") as one value, and names ending in a model
number ("Apollo 11"). Everything else a sentence says is its frame (`sentence_facts`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from memory_bank.graph.openings import (
    NAME_FOLLOWER,
    PARTICIPLE,
    POSSESSIVE,
    common_opening,
    opens_clause,
)
from memory_bank.text.lexicon import FUNCTION_WORDS, MONTHS, WEEKDAYS, stem_words
from memory_bank.text.number_words import NUMBER_WORDS, word_numbers

_MONTH_ABBREVIATIONS = {month[:3]: month for month in MONTHS} | {"sept": "september"}
_WEEKDAYS = frozenset(WEEKDAYS)
# Titles written in capitals that name a role, not someone: frame words, never values.
_ROLE_ACRONYMS = frozenset(
    ["ceo", "cfo", "cto", "coo", "cio", "cmo", "cso", "vp", "svp", "evp", "md", "mp", "mep", "gm"]
)
_SCALE = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "bn": 1e9, "m": 1e6}
_MONTH_NAME = r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sept?(?:ember)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
_YEAR = r"(?:1[0-9]{3}|20[0-9]{2})"
_DATE = re.compile(
    rf"\b(?:(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<m1>{_MONTH_NAME})(?:,?\s+(?P<y1>{_YEAR}))?"
    rf"|(?P<m2>{_MONTH_NAME})\s+(?:(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?,?\s+)?(?P<y2>{_YEAR})"
    rf"|(?P<y3>{_YEAR})-(?P<mn>\d{{2}})-(?P<dn>\d{{2}})"
    rf"|(?P<y4>{_YEAR})(?![\d,.]\d))\b"
)
_NUMBER = re.compile(
    r"(?<![\w.])(?P<currency>[$€£¥])?(?P<number>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:\s?(?P<scale>thousand|million|billion|trillion|bn|m)\b)?"
    r"(?:\s?(?P<percent>%|per ?cent\b))?",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W\d_][\w'’.-]*[^\W_]|[^\W\d_]")
_ITEM_LABEL = re.compile(r"\W*[A-Z][a-z]+\s+")
_SEASON = re.compile(rf"\b(spring|summer|autumn|fall|winter)\s+(?:of\s+)?({_YEAR})\b", re.I)
_FAMILY = re.compile(r"\s+family\b")
_DECADE = re.compile(r"\b(1[0-9]{2}|20[0-9])0s\b")
# Words that may join capitalized words into one name ("Bank of America", "Leonardo da Vinci",
# "Inside the NBA").
_NAME_JOINERS = frozenset(
    {"of", "de", "da", "del", "der", "di", "du", "van", "von", "la", "le", "the"}
)
# Capitalized at a sentence's start by grammar, and not names there.
# fmt: off
_NOT_NAMES = FUNCTION_WORDS | frozenset([
    "according", "like", "unlike", "although", "despite", "following", "today", "yesterday",
    "tomorrow", "currently", "recently", "initially", "originally", "later", "earlier", "meanwhile",
    "now", "since", "while", "yes", "no", "the", "this", "that", "these", "those", "our", "their",
    "his", "her", "its", "in", "on", "at", "by", "for", "from", "with", "after", "before", "during",
])
# fmt: on


@dataclass(frozen=True)
class Value:
    """A span a fact turns on: its surface text, a normalized key, and its kind."""

    text: str
    key: str
    kind: str  # "name", "date", "number:<unit class>"
    start: int
    end: int


def extract_values(sentence: str) -> list[Value]:
    """Dates, numbers and names of one sentence, left to right, non-overlapping."""
    values: list[Value] = []
    taken: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e in taken)

    for match in _SEASON.finditer(sentence):
        # "spring 2027": a date within its year, told less precisely than a day
        season = match.group(1).lower().replace("fall", "autumn")
        key = f"d:{match.group(2)}-{season}"
        values.append(Value(match.group(0), key, "date", match.start(), match.end()))
        taken.append((match.start(), match.end()))
    for match in _DATE.finditer(sentence):
        key = _date_key(match)
        if key and free(match.start(), match.end()):
            values.append(Value(match.group(0), key, "date", match.start(), match.end()))
            taken.append((match.start(), match.end()))
    for match in _DECADE.finditer(sentence):
        # "the 1920s": any date of the decade is told less precisely (its key is their prefix)
        if free(match.start(), match.end()):
            key = "d:" + match.group(1)
            values.append(Value(match.group(0), key, "date", match.start(), match.end()))
            taken.append((match.start(), match.end()))
    for start, end in _numbered_names(sentence):
        if free(start, end):
            text = sentence[start:end]
            values.append(Value(text, "e:" + name_key(text), "name", start, end))
            taken.append((start, end))
    for match in _NUMBER.finditer(sentence):
        start, end = match.start(), match.end()
        if not free(start, end) or (
            _ITEM_LABEL.fullmatch(sentence, 0, start) and sentence[end : end + 1] == ":"
        ):
            continue  # "Site 3: Kettleby Moor": the number of an item, no value
        number = float(match.group("number").replace(",", ""))
        scale = (match.group("scale") or "").lower()
        if scale == "m" and not match.group("currency"):
            # "52 m over the quay": metres; "£52m" is money, in millions
            end = match.end("number")
            scale = ""
        number *= _SCALE.get(scale, 1.0)
        unit = _unit_after(sentence, end)
        if match.group("percent"):
            unit = "percent"
        elif match.group("currency"):
            unit = "money"
        values.append(Value(sentence[start:end], f"n:{number:g}", f"number:{unit}", start, end))
        taken.append((start, end))
    for start, end, number in word_numbers(sentence):
        if not free(start, end) or _CAPITALIZED_NEXT.match(sentence, end):
            continue  # "Nine Inch Nails", "Two Dollar Radio": a name
        if unit := _unit_after(sentence, end):  # "three members", not "the three of them"
            values.append(Value(sentence[start:end], f"n:{number:g}", f"number:{unit}", start, end))
            taken.append((start, end))
    for match in _WORD.finditer(sentence):
        if match.group(0).lower() in _WEEKDAYS and free(match.start(), match.end()):
            key = "w:" + match.group(0).lower()
            values.append(Value(match.group(0), key, "weekday", match.start(), match.end()))
            taken.append((match.start(), match.end()))
    for start, end in _joined(sentence, [s for s in _name_spans(sentence) if free(*s)]):
        # "the Pendry family": a family is named by its surname and the word "family"
        family = _FAMILY.match(sentence, end)
        if family and sentence[:start].rstrip().lower().endswith("the"):
            end = family.end()
        text = sentence[start:end]
        # "Young, New South Wales": the place, then its regions
        key = "|".join(name_key(part) for part in re.split(r",\s*", text))
        values.append(Value(text, "e:" + key, "name", start, end))
        taken.append((start, end))
    return sorted(values, key=lambda value: value.start)


_PAIR_GAP = re.compile(r",\s*|\s+and\s+|\s*&\s*")
_AND_GAP = re.compile(r"\s+(?:and|&)\s+")


def _joined(sentence: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Two names that make one value: a place and its region ("Columbus, Ohio") or a pair
    ("Steely and Clevie"). A third name joined the same way makes a list, unless commas alone
    join the three, as a place, its region and its country ("Chadstone, Victoria, Australia"):
    a list puts an "and" before its last name."""
    joined: list[tuple[int, int]] = []
    position = 0
    while position < len(spans):
        start, end = spans[position]
        if _three_places(sentence, spans, position):
            joined.append((start, spans[position + 2][1]))
            position += 3
            continue
        if position + 1 < len(spans):
            next_start, next_end = spans[position + 1]
            gap = sentence[end:next_start]
            third = spans[position + 2] if position + 2 < len(spans) else None
            continues = third is not None and _PAIR_GAP.fullmatch(sentence[next_end : third[0]])
            # "New York City and Little Rock, Arkansas": after an "and", a comma joins a
            # place to its region (a list puts its commas before the "and").
            region = (
                gap.strip() == ","
                and position > 0
                and _AND_GAP.fullmatch(sentence[spans[position - 1][1] : start]) is not None
            )
            if (
                _PAIR_GAP.fullmatch(gap)
                and not continues
                and (region or not _starts_list(sentence, start, spans[:position]))
                and not _closes_fronted_phrase(sentence, start, gap, next_end)
            ):
                joined.append((start, next_end))
                position += 2
                continue
        joined.append((start, end))
        position += 1
    return joined


def _three_places(sentence: str, spans: list[tuple[int, int]], position: int) -> bool:
    """Whether commas alone join the name at `position` and the two after it, and no more."""
    if position + 2 >= len(spans) or _starts_list(sentence, spans[position][0], spans[:position]):
        return False
    gaps = [sentence[spans[n][1] : spans[n + 1][0]] for n in (position, position + 1)]
    fourth = spans[position + 3] if position + 3 < len(spans) else None
    return all(gap.strip() == "," for gap in gaps) and not (
        fourth is not None and _PAIR_GAP.fullmatch(sentence[spans[position + 2][1] : fourth[0]])
    )


# A sentence opening with a prepositional phrase: "On The Brady Bunch, Ann B. Davis played".
_FRONTED_PREPOSITION = re.compile(
    r"\W*(?:in|on|at|for|from|with|after|before|during|since|under|as|by)\s+(?:the\s+)?$",
    re.IGNORECASE,
)
_LOWERCASE_WORD_NEXT = re.compile(r"\s+[a-z]")


def _closes_fronted_phrase(sentence: str, start: int, gap: str, next_end: int) -> bool:
    """Whether the comma after the name at `start` ends an opening prepositional phrase, the
    next name being the main clause's subject ("On The Brady Bunch, Ann B. Davis played ..."),
    not the region of a place ("In Columbus, Ohio, the publisher ...")."""
    if gap.strip() != ",":
        return False
    if _FRONTED_PREPOSITION.fullmatch(sentence[:start]) is not None:
        return _LOWERCASE_WORD_NEXT.match(sentence, next_end) is not None
    # "Headquartered in St Louis, Missouri at 3558 S. Jefferson, CPH publishes ...": the name
    # after the phrase's last comma is the subject of the verb that follows it
    following = _NEXT_WORD.match(sentence, next_end)
    return (
        _FRONTED_OPENING.match(sentence) is not None
        and following is not None
        and NAME_FOLLOWER.fullmatch(following.group(1)) is not None
    )


_FRONTED_OPENING = re.compile(rf"(?:{PARTICIPLE}|In|On|At|From|After|Before|During|Since)\s")
_NEXT_WORD = re.compile(r"\s+([a-z]+)\b")


def _starts_list(sentence: str, start: int, before: list[tuple[int, int]]) -> bool:
    """Whether the name at `start` continues a list begun by an earlier name."""
    return bool(before) and _PAIR_GAP.fullmatch(sentence[before[-1][1] : start]) is not None


def _unit_after(sentence: str, end: int) -> str:
    match = re.match(r"(?:\s*|-)([A-Za-z][a-z]+|m\b)", sentence[end:])  # "22 km", "a 22-km pipe"
    if not match:
        return ""
    word = match.group(1).lower()
    if word in FUNCTION_WORDS or word in MONTHS or (word in _SCALE and word != "m"):
        return ""
    stem = stem_words([word])[0]
    return _UNIT_SPELLINGS.get(stem, stem)


# One unit however written: "41 m" and "38 metres" measure alike.
_UNIT_SPELLINGS = {"m": "metr", "meter": "metr", "km": "kilometr", "kilomet": "kilometr"}
_UNIT_SPELLINGS |= {"ft": "foot", "feet": "foot", "mi": "mile", "kg": "kilogram"}


def _date_key(match: re.Match[str]) -> str | None:
    groups = match.groupdict()
    year = groups["y1"] or groups["y2"] or groups["y3"] or groups["y4"]
    month_text = groups["m1"] or groups["m2"]
    day = groups["d1"] or groups["d2"] or groups["dn"]
    month = None
    if month_text:
        month = MONTHS.index(_MONTH_ABBREVIATIONS[month_text.lower().rstrip(".")[:3]]) + 1
    elif groups["mn"]:
        month = int(groups["mn"])
    if month_text and not year and not day:
        return None
    if groups["m2"] and not day and not year:
        return None
    if groups["m1"] and not year:  # "5 May": a day of some year
        return f"d:--{month:02d}-{int(day):02d}"
    parts = [year or "----"]
    if month:
        parts.append(f"{month:02d}")
        if day:
            parts.append(f"{int(day):02d}")
    return "d:" + "-".join(parts)


def _name_spans(sentence: str) -> list[tuple[int, int]]:
    """Runs of capitalized words (joined by "of", "de", ...), minus grammar's capitals."""
    words = list(_WORD.finditer(sentence))
    spans: list[tuple[int, int]] = []
    run: list[re.Match[str]] = []

    def close() -> None:
        while run and run[-1].group(0).lower() in _NAME_JOINERS:
            run.pop()
        if run:
            spans.append((run[0].start(), run[-1].end()))
        run.clear()

    for position, match in enumerate(words):
        word = match.group(0)
        lower = word.lower().rstrip(".")
        # "I" names nobody, but numbers a name ("Henry I", "World War I")
        pronoun = (word == "I" or _I_CONTRACTION.fullmatch(word) is not None) and not run
        capitalized = word[0].isupper() and lower not in _ROLE_ACRONYMS and not pronoun
        gap = sentence[run[-1].end() : match.start()] if run else " "
        # "Ann B. Davis", "George W. Bush": a middle initial's dot continues the name
        initial = gap == ". " and len(run[-1].group(0)) == 1 and run[-1].group(0).isupper()
        if run and (
            (
                gap not in (" ", "-")
                and not (initial and word[0].isupper() and lower not in _NOT_NAMES)
            )
            or (POSSESSIVE.search(run[-1].group(0)) and not _owned_kind(sentence, words, position))
        ):
            close()
        bare = POSSESSIVE.sub("", lower)  # "Saturday's outing": a day, no name
        if capitalized and bare not in MONTHS and bare not in _WEEKDAYS:
            if lower in _MONTH_ABBREVIATIONS and len(lower) <= 4:
                close()
                continue
            opening = position == 0 or opens_clause(sentence, match.start())
            numbered = lower in NUMBER_WORDS and _CAPITALIZED_NEXT.match(sentence, match.end())
            if (
                opening
                and not run
                and not numbered  # "Nine Inch Nails", "Two Dollar Radio"
                and (
                    bare in _NOT_NAMES  # "It's", "There's"
                    or common_opening(sentence, words, position)
                )
            ):
                continue
            run.append(match)
        elif run and lower in _NAME_JOINERS:
            run.append(match)
        else:
            close()
    close()
    return [(start, _strip_possessive(sentence, start, end)) for start, end in spans]


_CAPITALIZED_NEXT = re.compile(r"\s+[A-Z]")
_I_CONTRACTION = re.compile(r"I['’](?:ve|m|d|ll)")  # "I've booked": the speaker, no name
_NUMBERED_NAME = re.compile(r"\b(?:[A-Z][\w-]*\s+)*[A-Z][A-Z\w-]*\s+\d{1,3}(?![\d,.]\d|\w)")


def _numbered_names(sentence: str) -> list[tuple[int, int]]:
    """Names that end in a model number ("HD 21", "Apollo 11", "Boeing 747")."""
    return [
        (match.start(), match.end())
        for match in _NUMBERED_NAME.finditer(sentence)
        if (first := match.group(0).split()[0].lower()) not in _NOT_NAMES
        and first not in MONTHS
        # "Stop 4: Vossen Town Hall", "Item 3: ...": a label numbering what follows
        and not (not sentence[: match.start()].strip() and sentence[match.end() :].startswith(":"))
    ]


def _owned_kind(sentence: str, words: list[re.Match[str]], position: int) -> bool:
    """Whether the capitalized word after a possessive is the last of the name, as a place is
    named for its owner ("Pritchard's Bakery, on Castle Street", "Hobb's Cross is"), unlike a
    possessor and another name ("NBA TV's NBA Inside Stuff")."""
    word = words[position].group(0)
    following = words[position + 1].group(0) if position + 1 < len(words) else ""
    gap = sentence[words[position - 1].end() : words[position].start()]
    return (
        gap == " "
        and word[0].isupper()
        and word.lower() not in _NOT_NAMES
        and not following[:1].isupper()
    )


def _strip_possessive(sentence: str, start: int, end: int) -> int:
    return end - 2 if sentence[start:end].endswith(("'s", "’s")) else end


def name_key(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode() or text
    folded = folded.replace("’", "'")
    # the possessive is grammar, as in "Hobb's Cross" / "Hobb Cross" -- no word of the name
    words = [
        POSSESSIVE.sub("", w.lower().strip(".,"))
        for w in re.split(r"[\s,&]+|\band\b", folded)
        if w.strip(".,")
    ]
    words = [_SUFFIX_ABBREVIATIONS.get(w, w) if i else w for i, w in enumerate(words)]
    return " ".join(w for w in words if w not in _NAME_JOINERS and w != "the")


# An organization's suffix, abbreviated or not, is one word ("Airspeed Ltd.", "Airspeed Limited").
_SUFFIX_ABBREVIATIONS = {
    "ltd": "limited",
    "inc": "incorporated",
    "corp": "corporation",
    "co": "company",
    "bros": "brothers",
}
