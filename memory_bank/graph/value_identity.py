"""When two values are one: a name told longer or shorter ("Smith", "Bob Smith"), with or
without the common noun that says what kind of thing it names ("the Grand Ossory", "the Grand
Ossory Hotel"), a place without its region, a date told more or less precisely, a bare number
and the same number with its unit."""

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
        and "" in (first.split(":", 1)[1], second.split(":", 1)[1])
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
    a, b = key_words(first), key_words(second)
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    remaining = iter(long)
    return all(word in remaining for word in short)


@lru_cache(maxsize=65536)
def key_words(key: str) -> tuple[str, ...]:
    """A name key's words ("e:young|new south wales": its region's too)."""
    return tuple(key[2:].replace("|", " ").split())


def dates_compatible(first: str, second: str) -> bool:
    """ "June 2017" and "June 16, 2017": one date told more or less precisely."""
    if not (first.startswith("d:") and second.startswith("d:")):
        return False
    return first.startswith(second) or second.startswith(first)


# The common nouns a name carries to say what kind of thing it names, after it ("Morrow
# Canal", "Quell Rowing Club") or before it ("Mount Orrin", "Hotel Carlton"). Told without
# it, the name still names that thing; two such nouns on one name are two things ("Carrow
# Bridge", "Carrow River").
# fmt: off
NAME_HEADS = frozenset([
    # buildings and works
    "hotel", "inn", "motel", "hostel", "lodge", "house", "hall", "manor", "castle", "palace",
    "tower", "lighthouse", "mill", "farm", "chapel", "church", "cathedral", "abbey", "priory",
    "monastery", "temple", "mosque", "synagogue", "shrine", "museum", "gallery", "library",
    "archive", "theatre", "theater", "cinema", "opera", "stadium", "arena", "pavilion",
    "observatory", "hospital", "clinic", "school", "academy", "college", "university",
    "institute", "centre", "center", "market", "arcade", "station", "terminal", "airport",
    "port", "harbour", "harbor", "pier", "dock", "docks", "wharf", "quay", "marina", "bridge",
    "viaduct", "aqueduct", "tunnel", "dam", "reservoir", "canal", "fort", "fortress", "prison",
    "courthouse", "brewery", "distillery", "winery", "factory", "works", "mine", "quarry",
    "garden", "gardens", "park", "zoo", "cemetery", "square", "street", "road", "avenue",
    "lane", "boulevard", "terrace", "crescent", "gate", "building", "tavern", "pub", "bar",
    "restaurant", "cafe", "café", "bakery", "shop", "store",
    # land and water
    "river", "lake", "loch", "lough", "sea", "bay", "gulf", "strait", "sound", "channel",
    "falls", "waterfall", "springs", "creek", "brook", "stream", "pond", "mountain", "mount",
    "hill", "hills", "peak", "ridge", "valley", "glen", "dale", "gorge", "canyon", "pass",
    "cape", "head", "point", "island", "isle", "islands", "peninsula", "forest", "wood",
    "woods", "moor", "marsh", "desert", "plain", "beach", "cove", "cliffs", "glacier", "cave",
    "caves", "village", "town", "city", "county", "district", "province", "region",
    # bodies and events
    "club", "society", "association", "union", "league", "federation", "company",
    "corporation", "corp", "inc", "ltd", "group", "trust", "foundation", "council",
    "committee", "commission", "agency", "authority", "ministry", "department", "party",
    "band", "orchestra", "choir", "ensemble", "quartet", "team", "studio", "studios",
    "festival", "fair", "cup", "championship", "tournament", "marathon", "prize", "award",
    "railway", "railroad", "airline", "airlines", "line", "trail", "route", "expedition",
    # abbreviated
    "fc", "afc", "rfc", "cc", "plc", "llc", "gmbh", "co",
])
# fmt: on


def kind_key(noun: str) -> str:
    """The key of a thing told only by its kind ("the canal"): one with a name of that kind
    ("e:morrow canal") may be it (`same_name`, `compatible_names`)."""
    return f"k:{noun}"


def _of_kind(first: str, second: str) -> bool | None:
    """Whether two equal keys, or a kind key and a name key (or two kind keys), may be one
    thing; None when they differ and neither is a kind key."""
    if first == second:
        return True
    if not (first.startswith("k:") or second.startswith("k:")):
        return None
    kind, other = (first, second) if first.startswith("k:") else (second, first)
    return kind == other or (other.startswith("e:") and kind[2:] in key_words(other))


def without_head(key: str) -> str:
    """A name key without the common noun that says what kind of thing it names (`NAME_HEADS`),
    after the name or before it; the key itself when it has none or is nothing else."""
    words = key[2:].split()
    if len(words) > 1 and words[-1] in NAME_HEADS:
        words = words[:-1]
    elif len(words) > 1 and words[0] in NAME_HEADS:
        words = words[1:]
    return key[:2] + " ".join(words)


def _acronym(first: str, second: str) -> bool:
    """Whether one name key is the other's initials ("e:cph", "e:concordia publishing house")."""
    a, b = key_words(first), key_words(second)
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return len(short) == 1 and len(long) > 1 and short[0] == "".join(w[0] for w in long)


def same_name(first: str, second: str) -> bool:
    """Equal name keys, or one the other's last words ("e:weizman", "e:ezer weizman"), or a
    place named without its region ("e:young", "e:young|new south wales"), or one the other
    without its kind of thing ("e:grand ossory", "e:grand ossory hotel"; `without_head`)."""
    if (kind := _of_kind(first, second)) is not None:
        return kind
    if "|" in first or "|" in second:
        return same_name(first.split("|")[0], second.split("|")[0])
    if _same_words(first, second) or _acronym(first, second):
        return True
    # Told without its kind, a name may be shortened further ("Ossory", "Grand Ossory Hotel"),
    # never lengthened: "Antony Chandris" is no "Chandris Line".
    bare_first, bare_second = without_head(first), without_head(second)
    return (bare_first != first and _ends_with(bare_first, second)) or (
        bare_second != second and _ends_with(bare_second, first)
    )


def _ends_with(key: str, shorter: str) -> bool:
    """Whether name key `shorter`'s words are `key`'s last words."""
    words, tail = key[2:].split(), shorter[2:].split()
    return bool(tail) and len(tail) <= len(words) and words[-len(tail) :] == tail


def _same_words(first: str, second: str) -> bool:
    """Equal name keys, or one the other's last words."""
    a, b = first[2:].split(), second[2:].split()
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return bool(short) and long[-len(short) :] == short and (len(short) > 1 or len(long) <= 3)


def compatible_names(first: str, second: str) -> bool:
    """Two name keys for one entity: equal, or one's words within the other's ("e:stella",
    "e:joseph stella")."""
    if (kind := _of_kind(first, second)) is not None:
        return kind
    if "|" in first or "|" in second:
        return compatible_names(first.split("|")[0], second.split("|")[0]) or compatible_names(
            first.replace("|", " "), second.replace("|", " ")
        )
    if not (first.startswith("e:") and second.startswith("e:")):
        return False
    a, b = set(key_words(first)), set(key_words(second))
    return bool(a and b) and (a <= b or b <= a or _acronym(first, second))


def one_holds_the_other(first: str, second: str) -> bool:
    """Two value keys for one value, or one holds the other: a date told less precisely ("June
    1902" / "4 June 1902"), a place and its region ("Oakleigh, Victoria" / "Victoria"), a name
    and its short form ("Merriland Printing Company Limited" / "Merriland Printing"), a phrase
    and one that says more ("oak" / "oak timber")."""
    if first == second:
        return True
    if first.startswith("p:") and second.startswith("p:"):
        words = [set(key[2:].split()) for key in (first, second)]
        return words[0] <= words[1] or words[1] <= words[0]
    if first.startswith("d:") and second.startswith("d:"):
        return dates_compatible(first, second)
    return compatible_names(first, second)
