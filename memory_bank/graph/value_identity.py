"""When two values are one: a name told longer or shorter ("Smith", "Bob Smith"), a place
without its region, a date told more or less precisely, a bare number and the same number with
its unit."""

from __future__ import annotations

from functools import lru_cache

from memory_bank.graph.values import Value, extract_values


def value_key_of(text: str) -> str | None:
    """The key of a value given as its text alone ("Inside the NBA": read as a sentence, its
    opening "Inside" would be grammar's capital)."""
    for reading in (f"About {text}", text):
        values = extract_values(reading)
        if len(values) == 1:
            return values[0].key
    return None


def distinct_values(values: list[Value]) -> list[Value]:
    seen: dict[str, Value] = {}
    for value in values:
        seen.setdefault(value.key, value)
    return list(seen.values())


def date_parts_shared(first: str, second: str) -> int:
    if not (first.startswith("d:") and second.startswith("d:")):
        return 0
    a, b = first[2:].split("-"), second[2:].split("-")
    return sum(1 for x, y in zip(a, b, strict=False) if x == y and x.strip("-"))


def same_kind(first: str, second: str) -> bool:
    if first == second:
        return True
    # A bare number and a number with a unit may be the same quantity ("12" vs "12 members").
    return (
        first.startswith("number:")
        and second.startswith("number:")
        and ""
        in (
            first.split(":", 1)[1],
            second.split(":", 1)[1],
        )
    )


def name_contains(first: Value, second: Value) -> bool:
    """ "Bob Smith" and "Smith", "Maureen McCormick" and "Maureen Denise McCormick" name the same
    person: not two values. The shorter name's words stand in the longer one in their order:
    "Inside the NBA" is no part of "NBA Inside Stuff"."""
    return first.kind == "name" and names_nested(first.key, second.key)


@lru_cache(maxsize=262144)
def names_nested(first: str, second: str) -> bool:
    """Whether one name key's words stand in the other's, in their order (`name_contains`;
    asked for every pair of values compared, where the same few names meet again and
    again)."""
    a, b = _name_words(first), _name_words(second)
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    remaining = iter(long)
    return all(word in remaining for word in short)


@lru_cache(maxsize=65536)
def _name_words(key: str) -> tuple[str, ...]:
    """A name key's words."""
    return tuple(key[2:].replace("|", " ").split())


def dates_compatible(first: str, second: str) -> bool:
    """ "June 2017" and "June 16, 2017": one date told more or less precisely."""
    if not (first.startswith("d:") and second.startswith("d:")):
        return False
    return first.startswith(second) or second.startswith(first)


def same_name(first: str, second: str) -> bool:
    """Equal name keys, or one the other's last words ("e:weizman", "e:ezer weizman"), or a
    place named without its region ("e:young", "e:young|new south wales")."""
    if first == second:
        return True
    if "|" in first or "|" in second:
        return same_name(first.split("|")[0], second.split("|")[0])
    a, b = first[2:].split(), second[2:].split()
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return bool(short) and long[-len(short) :] == short and (len(short) > 1 or len(long) <= 3)


def compatible_names(first: str, second: str) -> bool:
    """Two name keys for one entity: equal, or one's words within the other's ("e:stella",
    "e:joseph stella")."""
    if first == second:
        return True
    if "|" in first or "|" in second:
        return compatible_names(first.split("|")[0], second.split("|")[0]) or compatible_names(
            first.replace("|", " "), second.replace("|", " ")
        )
    if not (first.startswith("e:") and second.startswith("e:")):
        return False
    a, b = set(first[2:].replace("|", " ").split()), set(second[2:].replace("|", " ").split())
    return bool(a and b) and (a <= b or b <= a)
