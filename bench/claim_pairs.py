"""Conflicts the ingest graph step records between a stored paragraph and a later update.

    python bench/claim_pairs.py                         # bench/data/fresh_claims_2.json
    python bench/claim_pairs.py --suite fresh_claims_2 --show
    python bench/claim_pairs.py --direct                # the comparison alone (seconds)

Each case runs in a store of its own: one `add` of the paragraph (as a titled Markdown file),
then a later `add` of the update as raw text, then the graph's conflicts are read.
- a fact (the suite's "facts"): detected when a conflict gives the stale value as the old one
  and the current value as the new one;
- a must-not-conflict pair (the suite's "no_conflict": an added detail, the same value
  reworded, another attribute, subject or time): any conflict is a false one.
`--direct` skips the stores: the two texts are compared by the graph's analysis role as the
ingest step calls it (sentence vectors from the same embedder), for quick iteration; the
store run is the measure. It prints a table; it is not a test.
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

import numpy as np  # noqa: E402

from bench.contradictions import normalized, write_corpus  # noqa: E402
from memory_bank import MemoryBank  # noqa: E402
from memory_bank.config import AppConfig  # noqa: E402
from memory_bank.graph.analysis import NodeView, analyze_offline, two_phase  # noqa: E402
from memory_bank.index.embedders import build_embedder  # noqa: E402
from memory_bank.text.sentences import split_sentences  # noqa: E402


def stored_conflicts(case: dict, work: Path, embedder) -> list[tuple[str, str]]:
    """(old value, new value) of every conflict the graph records for the case's two adds."""
    write_corpus({case["title"]: [case["paragraph"]]}, [case["title"]], work / "doc")
    bank = MemoryBank(work / "store", AppConfig(), embedder=embedder)
    bank.add(files=[str(work / "doc")])
    bank.add(text=case["update"])
    return [(c.old_value, c.new_value) for c in bank.graph().conflicts]


def direct_conflicts(case: dict, encode) -> list[tuple[str, str]]:
    """The same comparison without a store: the analysis role on the two texts."""
    stored = view("old", f"# {case['title']}\n\n{case['paragraph']}", case["title"], 1.0, encode)
    update = view("new", case["update"], None, 2.0, encode)
    found = two_phase(analyze_offline, update, [stored])
    return [
        (c.old_value, c.new_value)
        for r in found
        if r.relationship == "conflict"
        for c in r.contradictions
    ]


def view(node_id: str, text: str, title: str | None, timestamp: float, encode) -> NodeView:
    sentences = list(dict.fromkeys(split_sentences(text)))
    vectors = encode(sentences)
    whole = encode([text])[0]
    return NodeView(
        id=node_id,
        summary=text,
        context="",
        keywords=[],
        timestamp=timestamp,
        vector=np.asarray(whole),
        text=text,
        title=title,
        sentence_vectors=dict(zip(sentences, vectors, strict=True)),
        document=node_id,
    )


def detected(fact: dict, conflicts: list[tuple[str, str]]) -> bool:
    return any(
        normalized(fact["stale"]) in normalized(old)
        and normalized(fact["current"]) in normalized(new)
        for old, new in conflicts
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="fresh_claims_2", help="a file under bench/data")
    parser.add_argument("--direct", action="store_true", help="the comparison alone, no stores")
    parser.add_argument("--show", action="store_true", help="print every case")
    args = parser.parse_args()
    data = json.loads((ROOT / "bench" / "data" / f"{args.suite}.json").read_text("utf-8"))
    facts, agreeing = data["facts"], data.get("no_conflict", [])
    results: dict[str, list[tuple[str, str]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        embedder = build_embedder(AppConfig().embedding)
        for number, case in enumerate([*facts, *agreeing]):
            if args.direct:
                results[case["id"]] = direct_conflicts(case, embedder.encode_passages)
            else:
                results[case["id"]] = stored_conflicts(case, Path(scratch) / f"c{number}", embedder)
    kinds = sorted({f["kind"] for f in facts})
    print(f"\n{args.suite} ({'direct comparison' if args.direct else 'a store each'})")
    print(f"| {'facts':14} | {'conflict detected':>17} | {'other conflicts':>15} |")
    print(f"|{'-' * 16}|{'-' * 19}|{'-' * 17}|")
    for kind in [None, *kinds]:
        chosen = [f for f in facts if kind is None or f["kind"] == kind]
        hits = sum(detected(f, results[f["id"]]) for f in chosen)
        others = sum(
            1 for f in chosen for old, new in results[f["id"]] if not detected(f, [(old, new)])
        )
        print(f"| {kind or 'all':14} | {f'{hits}/{len(chosen)}':>17} | {others:>15} |")
    wrong = [case for case in agreeing if results[case["id"]]]
    print(f"must-not-conflict pairs with a conflict: {len(wrong)}/{len(agreeing)}")
    if args.show:
        for case in [*facts, *agreeing]:
            found = results[case["id"]]
            mark = (
                ("ok " if detected(case, found) else "MISS")
                if "stale" in case
                else ("FALSE" if found else "ok ")
            )
            print(f"{mark} {case['id']}: {found}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
