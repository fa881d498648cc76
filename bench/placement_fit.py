"""How new memories fit a store's leaves: the measurements behind `memory_bank.taxonomy.fit`.

    python bench/placement_fit.py STORE [STORE ...] [--max-memories N] [--percentiles 1,5,10]

STOREs are built stores of different corpora, e.g. those `bench/evaluate.py --all-dev --out DIR`
leaves in DIR/hotpotqa/store, DIR/fairytaleqa-val/store and DIR/qmsum-val/store. Nothing is
written to them: each store's memories and vectors are read, every 7th source group (a
FairytaleQA story, a QMSum meeting, a HotpotQA paragraph) is held out, and the tree of the rest
is planned as an ingest would plan it (at most --max-memories of them, for a smaller store). On
that tree it reports:

* leave-one-out fits of the stored memories to their own leaf (the calibration data);
* best-leaf fits of held-out memories of the same corpus (in-domain: memories of stored
  documents, and whole new documents) and of every other store's memories (out-of-domain), and
  the share of each below the threshold each percentile rule gives;
* batches run through `place_memories`: held-out groups of the same corpus (in-domain adds) and
  groups of the other corpora (out-of-domain adds), each added alone, and how many of them start
  a new top-level directory and with what share of their memories.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from memory_bank.config import TaxonomyConfig  # noqa: E402
from memory_bank.schemas import DirectoryNode, MemorizedChunk  # noqa: E402
from memory_bank.store.reader import StoreReader  # noqa: E402
from memory_bank.store.tables import memories_from_table  # noqa: E402
from memory_bank.taxonomy import TaxonomyItem, plan_taxonomy  # noqa: E402
from memory_bank.taxonomy.fit import (  # noqa: E402
    best_leaf_fits,
    fit_threshold,
    leaf_directions,
    leave_one_out_fits,
)
from memory_bank.taxonomy.placement import MAX_GROWTH, place_memories  # noqa: E402

HOLD_OUT_EVERY = 7
MIN_BATCH = 5  # small groups (a HotpotQA paragraph) are added several at a time
MAX_BATCHES = 12  # per (store, corpus) pair: enough to see a rate, quick to run
SHOWN = (1, 5, 10, 25, 50)


@dataclass
class Corpus:
    name: str
    memories: list[MemorizedChunk]
    vectors: np.ndarray
    groups: list[list[int]]  # rows of each source group, in source order


def load(store: Path) -> Corpus:
    reader = StoreReader(store)
    memories = memories_from_table(reader.memories())
    vectors = np.asarray(reader.memory_vectors(), dtype=np.float32)
    sources = [PurePosixPath(str(memory.metadata["source"])) for memory in memories]
    # A group is the first path part below the corpus folder: a story or meeting folder, or a
    # file of a flat corpus.
    depth = len(PurePosixPath(os.path.commonpath([str(source) for source in sources])).parts)
    by_group: dict[str, list[int]] = {}
    for row, source in enumerate(sources):
        by_group.setdefault(source.parts[min(depth, len(source.parts) - 1)], []).append(row)
    groups = [by_group[key] for key in sorted(by_group)]
    return Corpus(store.parent.name or store.name, memories, vectors, groups)


def items_for(memories: Sequence[MemorizedChunk], first: int = 0) -> list[TaxonomyItem]:
    return [
        TaxonomyItem.from_memory(memory.model_copy(update={"index": first + offset}))
        for offset, memory in enumerate(memories)
    ]


def batches(groups: Sequence[list[int]], limit: int) -> list[list[int]]:
    """Groups bundled to at least MIN_BATCH rows, at most `limit` rows, MAX_BATCHES of them."""
    found: list[list[int]] = []
    current: list[int] = []
    for group in groups:
        current.extend(group)
        if len(current) >= MIN_BATCH:
            found.append(current[:limit])
            current = []
        if len(found) == MAX_BATCHES:
            break
    return found


def percentiles(values: np.ndarray) -> str:
    return " ".join(f"{value:.3f}" for value in np.percentile(values, SHOWN))


def below(values: np.ndarray, thresholds: Sequence[float]) -> str:
    return " ".join(f"{np.mean(values < t):.0%}" for t in thresholds)


@dataclass
class Fold:
    tree: DirectoryNode
    base_rows: list[int]  # the stored memories (rows of the corpus)
    same_documents: list[int]  # held-out memories of stored documents
    new_groups: list[list[int]]  # held-out groups


def plan_fold(corpus: Corpus, fold: int, max_memories: int, config: TaxonomyConfig) -> Fold:
    """Every HOLD_OUT_EVERY-th group (from `fold` on) and every 8th other memory held out; the
    tree of the rest planned as an ingest would plan it."""
    kept = [group for k, group in enumerate(corpus.groups) if k % HOLD_OUT_EVERY != fold]
    kept_rows = sorted(row for group in kept for row in group)[:max_memories]
    return Fold(
        tree=plan_taxonomy(
            items_for([corpus.memories[row] for k, row in enumerate(kept_rows) if k % 8 != 4]),
            corpus.vectors[[row for k, row in enumerate(kept_rows) if k % 8 != 4]],
            config,
        ),
        base_rows=[row for k, row in enumerate(kept_rows) if k % 8 != 4],
        same_documents=[row for k, row in enumerate(kept_rows) if k % 8 == 4],
        new_groups=[group for k, group in enumerate(corpus.groups) if k % HOLD_OUT_EVERY == fold],
    )


@dataclass
class AddCounts:
    adds: int = 0
    started: int = 0  # adds that started a new top-level directory
    memories: int = 0  # memories of those adds
    moved_in: int = 0  # of which in the new directory

    def __str__(self) -> str:
        share = (
            f", {self.moved_in / self.memories:.0%} of their memories in it" if self.started else ""
        )
        return f"{self.started}/{self.adds} adds start a new directory{share}"


def run_adds(
    fold: Fold,
    base: Corpus,
    source: Corpus,
    rows_batches: list[list[int]],
    config: TaxonomyConfig,
    counts: AddCounts,
) -> None:
    """Add each batch alone to the fold's tree with `place_memories`; count what happened."""
    items = items_for([base.memories[row] for row in fold.base_rows])
    vectors = base.vectors[fold.base_rows]
    old_names = {child.name for child in fold.tree.children}
    for rows in rows_batches:
        new = list(range(len(items), len(items) + len(rows)))
        all_items = items + items_for([source.memories[row] for row in rows], len(items))
        all_vectors = np.concatenate([vectors, source.vectors[rows]])
        placed = place_memories(fold.tree, all_items, all_vectors, new, config)
        fresh = [c for c in placed.children if c.name not in old_names] if placed else []
        counts.adds += 1
        if fresh:
            counts.started += 1
            counts.memories += len(rows)
            counts.moved_in += sum(len(leaf.chunk_indices) for c in fresh for leaf in c.leaves())


def measure(base: Corpus, others: Sequence[Corpus], max_memories: int, rules: Sequence[float]):
    config = TaxonomyConfig()
    fold = plan_fold(base, 3, max_memories, config)
    vectors = base.vectors[fold.base_rows]
    loo = leave_one_out_fits(fold.tree, vectors)
    thresholds = [float(np.percentile(loo, rule)) for rule in rules]
    print(
        f"\n== {base.name}: {len(fold.base_rows)} memories, {len(fold.tree.leaves())} leaves, "
        f"{len(fold.tree.children)} top-level; threshold {fit_threshold(fold.tree, vectors):.3f}"
    )
    print(f"  percentiles {SHOWN}; share below the p{'/p'.join(map(str, rules))} thresholds")
    print(f"  {'leave-one-out (n=' + str(len(loo)) + ')':38s} {percentiles(loo)}")
    directions = leaf_directions(fold.tree, vectors)
    new_documents = [row for group in fold.new_groups for row in group]
    samples = [("in: memories of stored documents", base, fold.same_documents)]
    samples.append(("in: new documents", base, new_documents))
    samples += [(f"out: {other.name}", other, list(range(len(other.memories)))) for other in others]
    for label, corpus, rows in samples:
        if not rows:
            continue
        fits = best_leaf_fits(directions, corpus.vectors[rows])
        print(f"  {label + ' (n=' + str(len(rows)) + ')':38s} {percentiles(fits)}  ", end="")
        print(f"below: {below(fits, thresholds)}")
    # In-domain adds over every fold, so there are enough of them to see a rare new directory.
    same, new = AddCounts(), AddCounts()
    for number in range(HOLD_OUT_EVERY):
        current = fold if number == 3 else plan_fold(base, number, max_memories, config)
        limit = int(MAX_GROWTH * len(current.base_rows))
        stored = [
            current.same_documents[k : k + 30] for k in range(0, len(current.same_documents), 30)
        ]
        run_adds(current, base, base, stored, config, same)
        run_adds(current, base, base, batches(current.new_groups, limit), config, new)
    print(f"  {'in: memories of stored documents':38s} {same}")
    print(f"  {'in: new documents':38s} {new}")
    limit = int(MAX_GROWTH * len(fold.base_rows))
    for other in others:
        counts = AddCounts()
        run_adds(fold, base, other, batches(other.groups, limit), config, counts)
        print(f"  {'out: ' + other.name:38s} {counts}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stores", nargs="+", type=Path)
    parser.add_argument("--max-memories", type=int, default=100_000)
    parser.add_argument("--percentiles", default="1,5,10")
    args = parser.parse_args(argv)
    corpora = [load(store) for store in args.stores]
    rules = [float(value) for value in args.percentiles.split(",")]
    for corpus in corpora:
        others = [other for other in corpora if other is not corpus]
        measure(corpus, others, args.max_memories, rules)
    return 0


if __name__ == "__main__":
    sys.exit(main())
