"""Numbers written in words: "twelve", "twenty-five", "a hundred and twenty", "three thousand".

A number said in words is one number however many words it takes: "a hundred and twenty
passengers" is 120, not 20. A lone "one" is left out, as it is a pronoun as often as a number
("one of the oldest"); inside a compound ("one hundred") it counts.
"""

from __future__ import annotations

import re

# fmt: off
_UNITS = {
    word: value
    for value, word in enumerate([
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
        "nineteen",
    ])
}
_TENS = {
    word: 10 * value
    for value, word in enumerate(
        ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"], start=2
    )
}
# fmt: on
_SCALES = {"hundred": 100, "thousand": 1000}
# The single words that say a number (and so may open a name: "Nine Inch Nails").
NUMBER_WORDS = frozenset((set(_UNITS) | set(_TENS)) - {"zero", "one"})
_TOKEN = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)?")


def _small(word: str) -> int | None:
    """The value of one word below a hundred ("seven", "forty", "twenty-five")."""
    tens, _, unit = word.partition("-")
    if not unit:
        return _UNITS.get(word, _TENS.get(word))
    if tens in _TENS and unit in _UNITS and 0 < _UNITS[unit] < 10:
        return _TENS[tens] + _UNITS[unit]
    return None


def _follows(current: int, small: int) -> bool:
    """Whether a word below a hundred goes on the number so far ("hundred and twenty",
    "ninety nine"), rather than starting another ("seven eight")."""
    rest = current % 100
    return rest == 0 or (rest >= 20 and rest % 10 == 0 and small < 10)


def word_numbers(text: str) -> list[tuple[int, int, float]]:
    """Each number written in words in `text`: (start, end, value)."""
    tokens = list(_TOKEN.finditer(text))
    found: list[tuple[int, int, float]] = []
    i = 0
    while i < len(tokens):
        total, current, end, j, words = 0, 0, None, i, 0
        while j < len(tokens):
            word = tokens[j].group(0).lower()
            if j > i and not text[tokens[j - 1].end() : tokens[j].start()].isspace():
                break
            following = tokens[j + 1].group(0).lower() if j + 1 < len(tokens) else ""
            if word in ("a", "an") and j == i and following in _SCALES:
                current = 1
            elif word == "and" and end is not None and _small(following) is not None:
                pass
            elif (small := _small(word)) is not None and _follows(current, small):
                current += small
                end, words = tokens[j].end(), words + 1
            elif word in _SCALES and end is not None or word in _SCALES and current == 1:
                if word == "hundred":
                    current = max(current, 1) * 100
                else:
                    total, current = total + max(current, 1) * 1000, 0
                end, words = tokens[j].end(), words + 1
            else:
                break
            j += 1
        value = total + current
        lone_one = words == 1 and tokens[i].group(0).lower() == "one"
        if end is not None and not lone_one and value >= 2:
            found.append((tokens[i].start(), end, float(value)))
            i = j
        else:
            i += 1
    return found
