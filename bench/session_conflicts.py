"""Session conflicts between sources: two intercepted contexts from different sources that give
different values for one attribute, with no cue word, then a context that validates one.

    python bench/session_conflicts.py                 # every suite
    python bench/session_conflicts.py --suites dev    # development cases only

Suites: "dev" (bench/data/session_conflicts.json: written while building the session
conflicts), "fresh" (bench/data/fresh_session_conflicts.json), "fresh2"
(bench/data/fresh_session_conflicts_2.json), "fresh3"
(bench/data/fresh_session_conflicts_3.json), "fresh4"
(bench/data/fresh_session_conflicts_4.json), "fresh5"
(bench/data/fresh_session_conflicts_5.json), "fresh6"
(bench/data/fresh_session_conflicts_6.json), "fresh7"
(bench/data/fresh_session_conflicts_7.json), "fresh8"
(bench/data/fresh_session_conflicts_8.json), "fresh9"
(bench/data/fresh_session_conflicts_9.json), "fresh10"
(bench/data/fresh_session_conflicts_10.json), "fresh11"
(bench/data/fresh_session_conflicts_11.json), "fresh12"
(bench/data/fresh_session_conflicts_12.json) and "fresh13"
(bench/data/fresh_session_conflicts_13.json; the third to thirteenth written blind by helpers
before the rules for conflicts between sources were changed), held out while building. Every
kind of value: number, date, name, common noun phrase, place. Each case runs in a session of its own, in a store of
its own (offline agents): intercept the first context, the second (both with their source as
metadata), then the validating one. Scored per case:
- conflict: the second intercept records a conflict between the two values;
- validation first: the first pending task is the cross-validation of the two memories;
- one current: after the validating context, one current memory states the confirmed value
  and not the other, and both values stay in its history.
A suite's "no_conflict" pairs (contexts that agree, speak of other subjects or attributes, add
a detail, paraphrase, or hold at other times) count the false conflicts their second intercept
records. It prints a table; it is not a test.

`--funnel` prints, per suite, how many cases pass each step the comparison of the two
sentences that hold the values takes (values read, one subject, a shared attribute word, one
differing span, the rules), as counts only: a held-out suite can show where its cases are lost
without anyone reading them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.contradictions import states  # noqa: E402
from memory_bank.app.bank import MemoryBank  # noqa: E402
from memory_bank.config import AppConfig  # noqa: E402
from memory_bank.graph.contradictions import find_contradiction  # noqa: E402
from memory_bank.graph.sentence_facts import mentions_value  # noqa: E402
from memory_bank.graph.span_difference import span_difference  # noqa: E402
from memory_bank.graph.subjects import same_subject, text_facts  # noqa: E402
from memory_bank.graph.value_identity import value_key_of  # noqa: E402
from memory_bank.index.embedders import build_embedder  # noqa: E402

SUITES = {
    "dev": ROOT / "bench" / "data" / "session_conflicts.json",
    "fresh": ROOT / "bench" / "data" / "fresh_session_conflicts.json",
    "fresh2": ROOT / "bench" / "data" / "fresh_session_conflicts_2.json",
    "fresh3": ROOT / "bench" / "data" / "fresh_session_conflicts_3.json",
    "fresh4": ROOT / "bench" / "data" / "fresh_session_conflicts_4.json",
    "fresh5": ROOT / "bench" / "data" / "fresh_session_conflicts_5.json",
    "fresh6": ROOT / "bench" / "data" / "fresh_session_conflicts_6.json",
    "fresh7": ROOT / "bench" / "data" / "fresh_session_conflicts_7.json",
    "fresh8": ROOT / "bench" / "data" / "fresh_session_conflicts_8.json",
    "fresh9": ROOT / "bench" / "data" / "fresh_session_conflicts_9.json",
    "fresh10": ROOT / "bench" / "data" / "fresh_session_conflicts_10.json",
    "fresh11": ROOT / "bench" / "data" / "fresh_session_conflicts_11.json",
    "fresh12": ROOT / "bench" / "data" / "fresh_session_conflicts_12.json",
    "fresh13": ROOT / "bench" / "data" / "fresh_session_conflicts_13.json",
}
COLUMNS = ("conflict", "validation first", "one current")


def _intercepted(bank: MemoryBank, case: dict):
    session = bank.session(case["task_goal"])
    results = [
        session.intercept(c["text"], metadata={"source": c["source"]}) for c in case["contexts"]
    ]
    return session, results


def run_case(case: dict, store: Path, embedder) -> dict:
    bank = MemoryBank(store, AppConfig(), embedder=embedder)
    session, (first, second) = _intercepted(bank, case)
    a, b = case["values"]

    def same(found: str, value: str) -> bool:  # "370" found for "370 metres"
        return states(found, value) or states(value, found)

    conflict = any(
        (same(c.old_value, a) and same(c.new_value, b))
        or (same(c.old_value, b) and same(c.new_value, a))
        for c in second.conflicts
    )
    pending = second.insight_doc.pending_tasks
    ids = [first.new_nodes[0].id, second.new_nodes[0].id] if first.new_nodes else []
    validation_first = (
        bool(pending)
        and pending[0].startswith("Cross-validate")
        and bool(ids)
        and all(i in pending[0] for i in ids)
    )
    validated = session.intercept(
        case["validation"]["text"], metadata={"source": case["validation"]["source"]}
    )
    other = b if case["confirmed"] == a else a
    service = bank.session_service()
    current = [service.node(n.id) for n in validated.new_nodes]
    one_current = any(
        node.status == "current"
        and states(node.summary, case["confirmed"])
        and not states(node.summary, other)
        and all(any(states(h.summary, v) for h in node.history) for v in (a, b))
        for node in current
    )
    session.close()
    return {
        "conflict": conflict,
        "validation first": validation_first,
        "one current": one_current and bool(validated.resolved),
        "found": [f"{c.old_value!r} vs {c.new_value!r}" for c in second.conflicts],
    }


def run_agreeing(case: dict, store: Path, embedder) -> list[str]:
    """The conflicts a pair that must not conflict records (none is right)."""
    bank = MemoryBank(store, AppConfig(), embedder=embedder)
    session, (_, second) = _intercepted(bank, case)
    session.close()
    return [f"{c.old_value!r} vs {c.new_value!r}" for c in second.conflicts]


FUNNEL = (
    "both values read",
    "of one kind",
    "one subject",
    "one subject (strict)",
    "a shared attribute word",
    "one differing span",
    "the rules",
)


def funnel(case: dict) -> dict[str, bool]:
    """Which steps the two sentences that hold the case's values pass (`--funnel`)."""
    texts = [text_facts(c["text"], all_sentences=True) for c in case["contexts"]]
    held = []
    for facts, value in zip(texts, case["values"], strict=True):
        key = value_key_of(value)
        kinds = (  # a common noun phrase is no value of its own: its words are read
            ((f, "phrase") for f in facts.sentences if mentions_value(f.text, value))
            if key is None
            else ((f, v.kind) for f in facts.sentences for v in f.values if v.key == key)
        )
        held.append(next(kinds, (None, None)))
    (first, a), (second, b) = held
    steps = dict.fromkeys(FUNNEL, False)
    if first is None or second is None:
        return steps
    about = texts[0].about(first), texts[1].about(second)
    steps["both values read"] = True
    steps["of one kind"] = a == b
    steps["one subject"] = any(same_subject(x, y) for x in about[0] for y in about[1])
    steps["one subject (strict)"] = any(
        same_subject(x, y, strict=True) for x in about[0] for y in about[1]
    )
    steps["a shared attribute word"] = bool(first.frame & second.frame)
    steps["one differing span"] = span_difference(first.text, second.text) is not None
    steps["the rules"] = find_contradiction(first, second, None, *about) is not None
    return steps


def print_funnel(suites: list[str]) -> None:
    print(f"| {'suite':8} | cases |" + "|".join(f" {step} " for step in FUNNEL) + "|")
    print(f"|{'-' * 10}|-------|" + "|".join("-" * (len(step) + 2) for step in FUNNEL) + "|")
    for suite in suites:
        cases = json.loads(SUITES[suite].read_text(encoding="utf-8"))["cases"]
        passed = [funnel(case) for case in cases]
        cells = [f" {sum(p[step] for p in passed):>{len(step)}} " for step in FUNNEL]
        print(f"| {suite:8} | {len(cases):>5} |" + "|".join(cells) + "|")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", default=",".join(SUITES))
    parser.add_argument("--show", action="store_true", help="print every case")
    parser.add_argument("--funnel", action="store_true", help="counts per comparison step")
    args = parser.parse_args()
    suites = [s.strip() for s in args.suites.split(",") if s.strip()]
    if args.funnel:
        print_funnel(suites)
        return 0
    rows: list[tuple[str, dict, dict]] = []
    false: list[tuple[str, dict, list[str]]] = []
    with tempfile.TemporaryDirectory() as scratch:
        embedder = build_embedder(AppConfig().embedding)
        for suite in suites:
            data = json.loads(SUITES[suite].read_text(encoding="utf-8"))
            for number, case in enumerate(data["cases"]):
                store = Path(scratch) / f"{suite}{number}" / "store"
                rows.append((suite, case, run_case(case, store, embedder)))
            for number, case in enumerate(data.get("no_conflict", [])):
                store = Path(scratch) / f"{suite}-agree{number}" / "store"
                false.append((suite, case, run_agreeing(case, store, embedder)))
    print(f"| {'cases':24} |" + "|".join(f" {c:>16} " for c in COLUMNS) + "|")
    print(f"|{'-' * 26}|" + "|".join("-" * 18 for _ in COLUMNS) + "|")
    kinds = sorted({case["kind"] for _, case, _ in rows})
    for suite in suites:
        for kind in [None, *kinds]:
            chosen = [r for s, c, r in rows if s == suite and (kind is None or c["kind"] == kind)]
            if not chosen:
                continue
            label = f"{suite}, {kind or 'all'}"
            cells = [f"{sum(r[c] for r in chosen)}/{len(chosen)}" for c in COLUMNS]
            print(f"| {label:24} |" + "|".join(f" {cell:>16} " for cell in cells) + "|")
    for suite in suites:
        pairs = [found for s, _, found in false if s == suite]
        if pairs:
            wrong = sum(bool(found) for found in pairs)
            print(f"{suite}: false conflicts on must-not-conflict pairs: {wrong}/{len(pairs)}")
    if args.show:
        for suite, case, result in rows:
            marks = " ".join(c for c in COLUMNS if not result[c]) or "ok"
            print(f"[{suite}] {case['id']}: {marks}; conflicts found: {result['found']}")
        for suite, case, found in false:
            if found:
                print(f"[{suite}] false conflict {case['id']}: {found}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
