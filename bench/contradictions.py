"""Contradiction benchmark: after a later add contradicts a stored fact, does `ask` answer with
the current value, keep the superseded one as history, and not state it?

    python bench/contradictions.py                 # the whole HotpotQA corpus as background
    python bench/contradictions.py --corpus facts  # only the paragraphs the cases are about
    python bench/contradictions.py --split dev     # ask only the development half

Two suites over real Wikipedia paragraphs (the HotpotQA corpus under ../shared/eval, or
$MEMORY_BANK_EVAL_DIR):
- "updates" (bench/data/contradictions.json): news-style updates and corrections written for
  this suite, asked directly and through another fact ("dependent": HotpotQA bridge questions,
  or a relation in the same paragraph). Split by fact into a development half and a test half
  (by a hash of the fact id); the mechanism was first worked on with the development half.
- "fact pairs" (bench/data/fact_updates.json): one plain sentence per update, subject +
  relation + new object in other words than the paragraph (CounterFact / MQuAKE style), with
  paraphrased and two-hop questions. Written before the query-time mechanism; after its first
  measurement its failures (and the test half's) were looked at to find what fails in
  general, so it is no longer held out.
- "fresh pairs" (bench/data/fresh_fact_updates.json): the same style, other entities, written
  after that look; held out until its own failures were looked at too (no longer held out).
- "fresh claims" (bench/data/fresh_claims.json), "fresh claims 2"
  (bench/data/fresh_claims_2.json), "fresh claims 3" (bench/data/fresh_claims_3.json),
  "fresh claims 4" (bench/data/fresh_claims_4.json), "fresh claims 5"
  (bench/data/fresh_claims_5.json), "fresh claims 6" (bench/data/fresh_claims_6.json),
  "fresh claims 7" (bench/data/fresh_claims_7.json), "fresh claims 8"
  (bench/data/fresh_claims_8.json), "fresh claims 9" (bench/data/fresh_claims_9.json),
  "fresh claims 10" (bench/data/fresh_claims_10.json), "fresh claims 11"
  (bench/data/fresh_claims_11.json) and "fresh claims 12" (bench/data/fresh_claims_12.json;
  the third to twelfth written blind by helpers before the conflict rules were changed): self-contained paragraphs
  about invented entities and updates worded as new sentences, every value kind; held out while
  building the claims rules (bench/claim_pairs.py reads the second and third ones'
  must-not-conflict pairs too, with --suite fresh_claims_3 for the third).
Steps: ingest the corpus, ask every question (before), add all updates in one later `add`, ask
again (after), and once more with the Query Graph's preference switched off (what `ask` did
before the graph).

A case counts when the answer states the current value, does not state the superseded one,
and the superseded value is retrievable as history (ChatResult.history). It prints a table; it
is not a test.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
import unicodedata
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_bank import MemoryBank  # noqa: E402
from memory_bank.config import AppConfig  # noqa: E402

SUITES = {
    "updates": ROOT / "bench" / "data" / "contradictions.json",
    "fact pairs": ROOT / "bench" / "data" / "fact_updates.json",
    "fresh pairs": ROOT / "bench" / "data" / "fresh_fact_updates.json",
    "fresh claims": ROOT / "bench" / "data" / "fresh_claims.json",
    "fresh claims 2": ROOT / "bench" / "data" / "fresh_claims_2.json",
    "fresh claims 3": ROOT / "bench" / "data" / "fresh_claims_3.json",
    "fresh claims 4": ROOT / "bench" / "data" / "fresh_claims_4.json",
    "fresh claims 5": ROOT / "bench" / "data" / "fresh_claims_5.json",
    "fresh claims 6": ROOT / "bench" / "data" / "fresh_claims_6.json",
    "fresh claims 7": ROOT / "bench" / "data" / "fresh_claims_7.json",
    "fresh claims 8": ROOT / "bench" / "data" / "fresh_claims_8.json",
    "fresh claims 9": ROOT / "bench" / "data" / "fresh_claims_9.json",
    "fresh claims 10": ROOT / "bench" / "data" / "fresh_claims_10.json",
    "fresh claims 11": ROOT / "bench" / "data" / "fresh_claims_11.json",
    "fresh claims 12": ROOT / "bench" / "data" / "fresh_claims_12.json",
}


PAIR_SUITES = (
    "fact pairs",
    "fresh pairs",
    "fresh claims",
    "fresh claims 2",
    "fresh claims 3",
    "fresh claims 4",
    "fresh claims 5",
    "fresh claims 6",
    "fresh claims 7",
    "fresh claims 8",
    "fresh claims 9",
    "fresh claims 10",
    "fresh claims 11",
    "fresh claims 12",
)
# The answer may name a replaced value as history, in the form the answer writes it:
# "Cleveland (previously Columbus, until 2024-03-01)". Stated there, it is not stated as current.
_HISTORY_NOTE = re.compile(r"\s*\(previously [^()]*\)")


def eval_dir() -> Path:
    configured = os.environ.get("MEMORY_BANK_EVAL_DIR")
    return Path(configured) if configured else ROOT.parent / "shared" / "eval"


def normalized(text: str) -> str:
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def states(answer: str, value: str) -> bool:
    return f" {normalized(value)} " in f" {normalized(answer)} "


def split_of(suite: str, fact_id: str) -> str:
    """The "updates" suite in two halves by fact (all questions of a fact in one half)."""
    if suite != "updates":
        return "held-out"
    return "dev" if hashlib.sha256(fact_id.encode()).digest()[0] % 2 == 0 else "test"


def write_corpus(corpus: dict[str, list[str]], titles: list[str], directory: Path) -> None:
    directory.mkdir(parents=True)
    for number, title in enumerate(titles):
        text = " ".join(sentence.strip() for sentence in corpus[title])
        (directory / f"p{number:04d}.md").write_text(f"# {title}\n\n{text}\n", encoding="utf-8")


def ask_all(bank: MemoryBank, cases: list[dict]) -> list[dict]:
    results = []
    for case in cases:
        started = time.perf_counter()
        result = bank.request(case["question"])
        seconds = time.perf_counter() - started
        results.append(
            {
                "answer": result.answer,
                "seconds": seconds,
                "current": states(result.answer, case["current"]),
                "stale": states(_HISTORY_NOTE.sub("", result.answer), case["stale"]),
                "history": any(
                    states(f"{h.superseded_value} {h.superseded_text}", case["stale"])
                    for h in result.history
                ),
            }
        )
    return results


def right(r: dict) -> bool:
    return r["current"] and not r["stale"] and r["history"]


def share(rows: list[dict], test) -> str:
    hits = sum(1 for r in rows if test(r))
    return f"{hits}/{len(rows)} = {100 * hits / max(len(rows), 1):.1f}%" if rows else "-"


def detected(facts: list[dict], conflicts) -> int:
    found = {(c.old_value, c.new_value) for c in conflicts}
    return sum(
        1
        for fact in facts
        if any(
            normalized(fact["stale"]) in normalized(old)
            and normalized(fact["current"]) in normalized(new)
            for old, new in found
        )
    )


def spurious(facts: list[dict], conflicts) -> list:
    return [
        c
        for c in conflicts
        if not any(
            normalized(f["stale"]) in normalized(c.old_value)
            and normalized(f["current"]) in normalized(c.new_value)
            for f in facts
        )
    ]


def ingested_corpus(
    corpus: dict[str, list[str]], titles: list[str], work: Path, cache: Path | None
) -> float:
    """Ingest the corpus into work/store (or copy a cached ingest); the seconds it took."""
    key = hashlib.sha256("\n".join(titles).encode()).hexdigest()[:12]
    cached = cache / f"corpus-{key}" if cache is not None else None
    if cached is not None and (cached / "store").exists():
        shutil.copytree(cached, work / "stores", symlinks=True)
        return 0.0
    write_corpus(corpus, titles, work / "corpus")
    bank = MemoryBank(work / "stores" / "store", AppConfig())
    started = time.perf_counter()
    bank.add(files=[str(work / "corpus")])
    seconds = time.perf_counter() - started
    if cached is not None:
        shutil.copytree(work / "stores", cached, symlinks=True)
    return seconds


def ask_isolated(
    corpus: dict[str, list[str]], facts: list[dict], cases: list[dict]
) -> tuple[list[dict], list[dict]]:
    """Each fact in a store of its own: its paragraph, then the update as raw text in a later
    add, then its questions (with and without the graph's preference)."""
    by_fact: dict[str, list[dict]] = {}
    for case in cases:
        by_fact.setdefault(case["fact"], []).append(case)
    rows: dict[int, tuple[dict, dict]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        embedder = None
        for number, fact in enumerate(facts):
            work = Path(scratch) / f"f{number}"
            write_corpus(corpus, [fact["title"]], work / "fact")
            bank = MemoryBank(work / "store", AppConfig(), embedder=embedder)
            bank.add(files=[str(work / "fact")])
            bank.add(text=fact["update"])
            embedder = bank._shared_embedder()
            chosen = by_fact.get(fact["id"], [])
            after = ask_all(bank, chosen)
            bank._query_service()._current().agent.currency = None
            without = ask_all(bank, chosen)
            for case, a, w in zip(chosen, after, without, strict=True):
                rows[id(case)] = (a, w)
    return [rows[id(c)][0] for c in cases], [rows[id(c)][1] for c in cases]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=["all", "facts"], default="all")
    parser.add_argument("--split", choices=["all", "dev"], default="all")
    parser.add_argument(
        "--suites", default=",".join(SUITES), help=f"comma-separated subset of {', '.join(SUITES)}"
    )
    parser.add_argument("--show", action="store_true", help="print every answer after the update")
    parser.add_argument(
        "--cache", type=Path, help="keep the ingested corpus here and reuse it (iteration only)"
    )
    args = parser.parse_args()

    corpus_file = eval_dir() / "hotpotqa" / "hotpotqa_train_100_corpus.json"
    corpus = json.loads(corpus_file.read_text(encoding="utf-8"))
    chosen_suites = [suite.strip() for suite in args.suites.split(",") if suite.strip()]
    facts = {
        suite: json.loads(SUITES[suite].read_text(encoding="utf-8"))["facts"]
        for suite in chosen_suites
    }
    for fact in (f for suite_facts in facts.values() for f in suite_facts):
        if "paragraph" in fact:  # a self-contained case: its own stored document
            corpus[fact["title"]] = [fact["paragraph"]]
    if args.split == "dev":
        facts = {
            "updates": [
                f for f in facts.get("updates", []) if split_of("updates", f["id"]) == "dev"
            ]
        }
    cases = [
        {
            "suite": suite,
            "split": split_of(suite, fact["id"]),
            "fact": fact["id"],
            "kind": kind,
            "question": question,
            "current": fact["current"],
            "stale": fact["stale"],
        }
        for suite, suite_facts in facts.items()
        for fact in suite_facts
        for kind, question in fact["questions"]
    ]
    all_facts = [fact for suite_facts in facts.values() for fact in suite_facts]
    titles = sorted(corpus) if args.corpus == "all" else sorted({f["title"] for f in all_facts})

    # The fact pairs once more, each in a store of its own (fact, later add, question).
    isolated: dict[str, tuple[list[dict], list[dict]]] = {}
    for suite in PAIR_SUITES:
        chosen = [c for c in cases if c["suite"] == suite]
        if chosen:
            isolated[suite] = ask_isolated(corpus, facts[suite], chosen)

    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        ingest_seconds = ingested_corpus(corpus, titles, work, args.cache)
        bank = MemoryBank(work / "stores" / "store", AppConfig())
        false_before = len(bank.graph().conflicts)
        before = ask_all(bank, cases)
        updates = work / "updates"
        updates.mkdir()
        for fact in all_facts:
            (updates / f"{fact['id']}.md").write_text(fact["update"] + "\n", encoding="utf-8")
        started = time.perf_counter()
        added = bank.add(files=[str(updates)])
        add_seconds = time.perf_counter() - started
        summary = bank.graph()
        agent = bank._query_service()._current().agent
        currency, agent.currency = agent.currency, None
        ask_all(bank, cases)  # warms the question embeddings, so both timings below are alike
        without = ask_all(bank, cases)
        agent.currency = currency
        after = ask_all(bank, cases)

    print(
        f"\nContradiction suites: {len(cases)} questions "
        f"({sum(c['kind'] == 'dependent' for c in cases)} dependent) about {len(all_facts)} facts; "
        f"corpus: {len(titles)} paragraphs"
    )
    print(
        f"ingest {len(titles)} documents {ingest_seconds:.1f} s; add {added.documents} updates "
        f"{add_seconds:.1f} s; graph step of the add: {added.commit.graph if added.commit else {}}"
    )
    wrong = spurious(all_facts, summary.conflicts)
    print(
        "conflicts detected at ingest: "
        + ", ".join(f"{s} {detected(f, summary.conflicts)}/{len(f)}" for s, f in facts.items())
        + f" facts; spurious conflicts: {len(wrong)} ({false_before} among the corpus paragraphs "
        f"before any update, open; {len(wrong) - false_before} with the updates)"
    )
    groups = [
        ("updates, dev half", lambda c: c["suite"] == "updates" and c["split"] == "dev"),
        ("updates, test half", lambda c: c["suite"] == "updates" and c["split"] == "test"),
        ("updates, all", lambda c: c["suite"] == "updates"),
        ("fact pairs", lambda c: c["suite"] == "fact pairs"),
        ("fresh pairs", lambda c: c["suite"] == "fresh pairs"),
        ("fresh claims (held out)", lambda c: c["suite"] == "fresh claims"),
        ("fresh claims 2", lambda c: c["suite"] == "fresh claims 2"),
        ("fresh claims 3 (held out)", lambda c: c["suite"] == "fresh claims 3"),
        ("fresh claims 4 (held out)", lambda c: c["suite"] == "fresh claims 4"),
        ("fresh claims 5 (held out)", lambda c: c["suite"] == "fresh claims 5"),
        ("fresh claims 6 (held out)", lambda c: c["suite"] == "fresh claims 6"),
        ("fresh claims 7 (held out)", lambda c: c["suite"] == "fresh claims 7"),
        ("fresh claims 8 (held out)", lambda c: c["suite"] == "fresh claims 8"),
        ("fresh claims 9 (held out)", lambda c: c["suite"] == "fresh claims 9"),
        ("fresh claims 10 (held out)", lambda c: c["suite"] == "fresh claims 10"),
        ("fresh claims 11 (held out)", lambda c: c["suite"] == "fresh claims 11"),
        ("fresh claims 12 (held out)", lambda c: c["suite"] == "fresh claims 12"),
    ]
    columns = [
        ("before graph", without, lambda r: r["current"] and not r["stale"]),
        ("after", after, right),
        ("after: direct", after, right, "direct"),
        ("after: dependent", after, right, "dependent"),
        ("states current", after, lambda r: r["current"]),
        ("states stale", after, lambda r: r["stale"]),
        ("stale in history", after, lambda r: r["history"]),
    ]
    print(
        "\nscore = the answer states the current value, not the superseded one, and keeps the "
        "superseded one as history; 'before graph' = the same store without the Query Graph's "
        "preference (current value, superseded absent: no history before the graph)"
    )
    header = f"| {'questions':28} |" + "|".join(f" {c[0]:>17} " for c in columns) + "|"
    print(header)
    print(f"|{'-' * 30}|" + "|".join("-" * 19 for _ in columns) + "|")
    for label, chosen in groups:
        picked = [i for i, case in enumerate(cases) if chosen(case)]
        if not picked:
            continue
        cells = []
        for column in columns:
            rows = [
                column[1][i] for i in picked if len(column) < 4 or cases[i]["kind"] == column[3]
            ]
            cells.append(share(rows, column[2]))
        print(f"| {label:28} |" + "|".join(f" {cell:>17} " for cell in cells) + "|")
    for suite, (alone, alone_without) in isolated.items():
        chosen = [c for c in cases if c["suite"] == suite]
        cells = []
        for column in columns:
            data = alone_without if column[1] is without else alone
            rows = [
                row
                for case, row in zip(chosen, data, strict=True)
                if len(column) < 4 or case["kind"] == column[3]
            ]
            cells.append(share(rows, column[2]))
        label = f"{suite}, a store each"
        print(f"| {label:28} |" + "|".join(f" {cell:>17} " for cell in cells) + "|")
    print(
        f"\nask p50 {1000 * median(r['seconds'] for r in after):.0f} ms with the graph's "
        f"preference, {1000 * median(r['seconds'] for r in without):.0f} ms without"
    )
    known = [a for a, b in zip(after, before, strict=True) if b["stale"]]
    print(
        f"\nbefore the update the answer stated the original value for "
        f"{share(before, lambda r: r['stale'])}; of those, after the update: {share(known, right)}"
    )
    if args.show:
        for case, row, earlier in zip(cases, after, before, strict=True):
            mark = "ok " if right(row) else "BAD"
            print(
                f"{mark} [{case['suite']}/{case['split']}/{case['kind']}] {case['question']}"
                f"  (current {case['current']!r}, stale {case['stale']!r})\n"
                f"      -> {row['answer'][:300]}"
            )
            if not right(row):
                print(f"      before the update: {earlier['answer'][:300]}")
        for conflict in wrong:
            print(
                f"spurious: {conflict.description} | {conflict.old_sentence[:100]} | "
                f"{conflict.new_sentence[:100]}"
            )


if __name__ == "__main__":
    main()
