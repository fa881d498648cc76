"""Whether two texts' answers to one question (`query.goal_answers`) disagree on their face.

Two answers are no disagreement when
- they share a value, or one holds the other ("May 1931" / "3 May 1931"; "Oakleigh, Victoria" /
  "Victoria"; "Merriland Printing" / "Merriland Printing Company Limited"; "oak" / "oak
  timber");
- either sentence states the other's value too (the later one other than as what it
  replaced);
- the two sentences name two things the question's name covers ("the Corra Bell" and "the
  Corra Rose" for "Where were the Corra ferries built?");
- the question asks several things and each states another of its words ("Who designed it,
  and who owns it?": one says who designed it, the other who owns it); there only its own
  words say which a sentence answers, so no paraphrase counts. (A question asking one thing
  may word it twice over: "How many people live on ...?" is answered by "home to 960 people"
  and by "1,240 live there".);
- no two of their values measure one thing: another unit, or another dimension ("31 metres
  high" / "410 metres long") -- though two counts answer one "how many" question whatever
  noun each counts by ("147 steps" / "163 stone stairs");
- each dates its claim, at another time ("in 1990 ... 42 members" / "by 2020 ... 118").
"""

from __future__ import annotations

import re

from memory_bank.graph.contradictions import MEASURE_UNITS, Contradiction
from memory_bank.graph.sentence_facts import mentions_value
from memory_bank.graph.value_context import dates_claim
from memory_bank.graph.value_identity import (
    compatible_names,
    dates_compatible,
    one_holds_the_other,
    same_kind,
)
from memory_bank.graph.values import Value
from memory_bank.query.goal_answers import Goal, GoalAnswer, dimension_of
from memory_bank.text.cues import REPLACEMENT_CUES

_HOW_MANY = re.compile(r"\bhow many\b", re.IGNORECASE)


def disagreement(goal: Goal, first: GoalAnswer, second: GoalAnswer) -> Contradiction | None:
    """The two answers' disagreement on their face, or None (module docstring)."""
    keys = [{v.key for v in answer.values} for answer in (first, second)]
    if any(one_holds_the_other(a, b) for a in keys[0] for b in keys[1]):
        return None
    if goal.several and first.stated and second.stated and not first.stated & second.stated:
        return None
    if _two_things(goal, first, second) or _states_both(first, second):
        return None
    pairs = [
        (a, b)
        for a in first.values
        for b in second.values
        if (same_kind(a.kind, b.kind) or _both_counted(goal, a, b))
        and dimension_of(first.sentence.text, a, goal.dimension)
        == dimension_of(second.sentence.text, b, goal.dimension)
    ]
    if not pairs or _own_times(first, second):
        return None
    old, new = pairs[0]
    return Contradiction(
        old_sentence=first.sentence.text,
        new_sentence=second.sentence.text,
        subject="",
        attribute=" ".join(sorted(first.stated | second.stated)),
        old_value=old.text,
        new_value=new.text,
        kind=old.kind,
    )


def _both_counted(goal: Goal, first: Value, second: Value) -> bool:
    """Whether two counts answer one "how many" question: the question says what is counted,
    whatever noun each text counts it by ("147 steps" / "163 stone stairs", "46 singers" / "63
    members"); a measure is no count ("35 minutes")."""
    units = [v.kind.removeprefix("number:") for v in (first, second)]
    return (
        _HOW_MANY.search(goal.text) is not None
        and all(v.kind.startswith("number:") for v in (first, second))
        and not any(unit in MEASURE_UNITS for unit in units)
    )


def _states_both(first: GoalAnswer, second: GoalAnswer) -> bool:
    """Whether one answer's sentence states the other's value too: the earlier one the later
    value ("played for Ayr, then Troon"), or the later one the earlier value other than as what
    it replaced ("the medieval frame, all of oak timber" beside "framed in oak")."""
    if any(mentions_value(first.sentence.text, v.text) for v in second.values[:1]):
        return True
    later = second.sentence.text
    return not REPLACEMENT_CUES.search(later) and any(
        mentions_value(later, v.text) for v in first.values[:1]
    )


def _two_things(goal: Goal, first: GoalAnswer, second: GoalAnswer) -> bool:
    """Whether the sentences name two things the goal's name covers ("the Corra Bell" / "the
    Corra Rose" for a goal that asks of "the Corra ferries")."""
    named = [[k for k in a.sentence.name_keys if goal.names_one_of([k])] for a in (first, second)]
    return all(named) and not any(compatible_names(a, b) for a in named[0] for b in named[1])


def _own_times(first: GoalAnswer, second: GoalAnswer) -> bool:
    """Whether each sentence dates its claim (`value_context.dates_claim`) and the two dates
    are not one time."""
    dates = [
        {
            v.key
            for v in a.sentence.values
            if v.kind == "date"
            and v not in a.values
            and bool(a.values)
            and dates_claim(a.sentence.text, v, a.values[0])
        }
        for a in (first, second)
    ]
    return all(dates) and not any(dates_compatible(a, b) for a in dates[0] for b in dates[1])
