"""Contradiction benchmark: after a later document contradicts a stored fact, does `ask` answer
with the current value, keep the superseded one as history, and not state it?

    python bench/contradictions.py                 # the whole HotpotQA corpus as background
    python bench/contradictions.py --corpus facts  # only the paragraphs the cases are about

Cases: bench/data/contradictions.json -- real Wikipedia paragraphs (the HotpotQA corpus under
../shared/eval, or $MEMORY_BANK_EVAL_DIR), each fact contradicted by an update written for this
suite, asked directly and through another fact ("dependent": the original HotpotQA bridge
questions, or a relation in the same paragraph). Steps: ingest the corpus, ask every question
(before), add all updates in one `add`, ask again (after), and once more with the graph's
preference for current claims switched off (what `ask` did before the Query Graph).

A case counts as answered from the current fact when the answer states the current value,
does not state the superseded one, and the superseded value is retrievable as history
(ChatResult.history). It prints a table; it is not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_bank import MemoryBank  # noqa: E402
from memory_bank.config import AppConfig  # noqa: E402

CASES = ROOT / "bench" / "data" / "contradictions.json"


def eval_dir() -> Path:
    configured = os.environ.get("MEMORY_BANK_EVAL_DIR")
    return Path(configured) if configured else ROOT.parent / "shared" / "eval"


def normalized(text: str) -> str:
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def states(answer: str, value: str) -> bool:
    return f" {normalized(value)} " in f" {normalized(answer)} "


def write_corpus(corpus: dict[str, list[str]], titles: list[str], directory: Path) -> None:
    directory.mkdir(parents=True)
    for number, title in enumerate(titles):
        text = " ".join(sentence.strip() for sentence in corpus[title])
        (directory / f"p{number:04d}.md").write_text(f"# {title}\n\n{text}\n", encoding="utf-8")


def ask_all(bank: MemoryBank, cases: list[dict]) -> list[dict]:
    results = []
    for case in cases:
        result = bank.request(case["question"])
        results.append(
            {
                "answer": result.answer,
                "current": states(result.answer, case["current"]),
                "stale": states(result.answer, case["stale"]),
                "history": any(
                    states(f"{h.superseded_value} {h.superseded_text}", case["stale"])
                    for h in result.history
                ),
            }
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=["all", "facts"], default="all")
    parser.add_argument("--show", action="store_true", help="print every answer after the update")
    args = parser.parse_args()

    suite = json.loads(CASES.read_text(encoding="utf-8"))
    corpus_file = eval_dir() / "hotpotqa" / "hotpotqa_train_100_corpus.json"
    corpus = json.loads(corpus_file.read_text(encoding="utf-8"))
    facts = suite["facts"]
    cases = [
        {
            "fact": fact["id"],
            "kind": kind,
            "question": question,
            "current": fact["current"],
            "stale": fact["stale"],
        }
        for fact in facts
        for kind, question in fact["questions"]
    ]
    titles = sorted(corpus) if args.corpus == "all" else sorted({f["title"] for f in facts})

    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        write_corpus(corpus, titles, work / "corpus")
        updates = work / "updates"
        updates.mkdir()
        for fact in facts:
            (updates / f"{fact['id']}.md").write_text(fact["update"] + "\n", encoding="utf-8")
        bank = MemoryBank(work / "store", AppConfig())
        started = time.perf_counter()
        ingest = bank.add(files=[str(work / "corpus")])
        ingest_seconds = time.perf_counter() - started
        false_before = len(bank.graph().conflicts)
        before = ask_all(bank, cases)
        started = time.perf_counter()
        added = bank.add(files=[str(updates)])
        add_seconds = time.perf_counter() - started
        summary = bank.graph()
        after = ask_all(bank, cases)
        agent = bank._query_service()._current().agent
        agent.currency = None
        without = ask_all(bank, cases)

    expected = {(f["stale"].lower(), f["current"].lower()) for f in facts}
    found = {(c.old_value.lower(), c.new_value.lower()) for c in summary.conflicts}
    detected = sum(
        1
        for fact in facts
        if any(
            normalized(fact["stale"]) in normalized(old)
            and normalized(fact["current"]) in normalized(new)
            for old, new in found
        )
    )
    spurious = [
        c
        for c in summary.conflicts
        if not any(
            normalized(s) in normalized(c.old_value) and normalized(n) in normalized(c.new_value)
            for s, n in expected
        )
    ]

    def share(rows: list[dict], test, kinds=("direct", "dependent")) -> str:
        chosen = [r for r, case in zip(rows, cases, strict=True) if case["kind"] in kinds]
        hits = sum(1 for r in chosen if test(r))
        return f"{hits}/{len(chosen)} = {100 * hits / max(len(chosen), 1):.1f}%"

    def right(r: dict) -> bool:
        return r["current"] and not r["stale"] and r["history"]

    print(
        f"\nContradiction suite: {len(facts)} facts, {len(cases)} questions "
        f"({sum(c['kind'] == 'dependent' for c in cases)} dependent); corpus: {len(titles)} paragraphs"
    )
    print(
        f"ingest {ingest.documents} documents {ingest_seconds:.1f} s; add {added.documents} updates "
        f"{add_seconds:.1f} s; graph step of the add: {added.commit.graph if added.commit else {}}"
    )
    print(
        f"conflicts detected: {detected}/{len(facts)} facts; spurious conflicts: {len(spurious)} "
        f"(of which {false_before} among the {len(titles)} corpus paragraphs before any update)"
    )
    rows = [
        ("before the update: answer states the original value", before, lambda r: r["stale"]),
        (
            "after, without the graph's preference: states the superseded value",
            without,
            lambda r: r["stale"],
        ),
        (
            "after, without the graph's preference: current value, superseded absent",
            without,
            lambda r: r["current"] and not r["stale"],
        ),
        ("after: states the current value", after, lambda r: r["current"]),
        ("after: states the superseded value", after, lambda r: r["stale"]),
        ("after: superseded value in the answer's history", after, lambda r: r["history"]),
        ("after: current, superseded absent, kept as history (the score)", after, right),
    ]
    print(f"\n| {'measure':72} | {'all':>16} | {'direct':>16} | {'dependent':>16} |")
    print(f"|{'-' * 74}|{'-' * 18}|{'-' * 18}|{'-' * 18}|")
    for label, data, test in rows:
        print(
            f"| {label:72} | {share(data, test):>16} | {share(data, test, ('direct',)):>16} | {share(data, test, ('dependent',)):>16} |"
        )
    found_before = [r["stale"] for r in before]
    known = [a for a, f in zip(after, found_before, strict=True) if f]
    hits = sum(1 for r in known if right(r))
    print(
        f"\nscore on the questions answered right before the update: {hits}/{len(known)} = "
        f"{100 * hits / max(len(known), 1):.1f}%"
    )
    if args.show:
        for case, row in zip(cases, after, strict=True):
            mark = "ok " if right(row) else "BAD"
            print(f"{mark} [{case['kind']}] {case['question']}\n      -> {row['answer'][:300]}")
        for conflict in spurious:
            print(
                f"spurious: {conflict.description} | {conflict.old_sentence[:100]} | {conflict.new_sentence[:100]}"
            )


if __name__ == "__main__":
    main()
