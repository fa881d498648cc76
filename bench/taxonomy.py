"""Is the directory tree navigable? Groups, names and READMEs measured. Not a test.

    python bench/taxonomy.py [--work bench/out/taxonomy] [--eval-dir DIR] [--qmsum-meetings 35]
                             [--only mixed,sample,retrieval,reference] [--big-store STORE]
                             [--halves]

Builds (once, cached under --work) a store of each development dataset with the normal ingest
(HotpotQA's 994 paragraphs, every FairytaleQA val story, the first --qmsum-meetings QMSum val
meetings); every run then re-plans each store with the current code (`MemoryBank.rebuild`: new
tree, names and READMEs from the stored memories and vectors, nothing memorized again) and prints:

- mixed: the memories and vectors of the three stores planned as one corpus (what an ingest of
  all three would plan): top-level purity and NMI against the dataset label, leaf purity by
  source document for stories (a FairytaleQA story) and meetings (a QMSum meeting), the top-level
  directories with what they hold, and the time of planning and of composing the READMEs.
- sample: data/sample ingested into its own store; top-level purity against the folder each file
  sits in (articles/history, notes/home, meetings, ...), and the tree printed.
- retrieval: per dataset and question kind, hybrid search against collapsed-tree search (the
  READMEs' contribution) and the README-only descent (beam 1 and 3, see `index/descent.py`):
  hit@5 (a gold source among the top 5 sources), descent hit (a gold source in a reached leaf),
  passage recall@2 and @5,
  evidence recall and answer-token recall (ROUGE-1 recall) within 512 and 2k tokens.
  Thematic kinds: FairytaleQA `summary` (gold spans several sections) and QMSum `general`
  ("Summarize the whole meeting": no spans, answer-token recall only).
  `hybrid-doc` / `tree-doc`: the same searches scoped to the document the question is asked of
  (the QMSum meeting, the FairytaleQA story: `MemoryBank.search(within=...)`, tree mode with
  the READMEs mostly about it), as the datasets define the task; unscoped rows kept beside them.
  Not run on HotpotQA (its questions are asked of the whole corpus).
  `--halves`: each kind's rows also for half A and half B of the questions, split by the
  document they are asked of (stories, meetings: alternate ones in name order) or, asked of the
  whole corpus, by question id parity (HotpotQA). Choose and tune on half A, report B beside it:
  the thematic margins rest on about a dozen questions.
- reference: what flat search's own choice is worth to a descent, on the datasets with gold
  sources: hybrid hit@1 / @2 / @5, and a gold source in the leaf that holds hybrid's best chunk
  (the leaf a descent reaches when it always goes where flat search's best passage is). The
  descent's beam-1 target (0.85 of hit@5) reads against these.
- --big-store: the planning and README time (no embedding) on another store's memories, e.g.
  the 1M-token corpus store of bench/ingest.py.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from jobs.evaluate import (  # noqa: E402
    SCOPED_MODES,
    corpus_sources_by_document,
    ingest_corpus,
    run_questions,
)
from memory_bank.app.bank import MemoryBank  # noqa: E402
from memory_bank.config import AppConfig  # noqa: E402
from memory_bank.evaluation import EvalDataset, default_token_counter, prepare_dataset  # noqa: E402
from memory_bank.evaluation.dataset_files import development_eval_dir  # noqa: E402
from memory_bank.evaluation.scoring import QuestionResult, score_question  # noqa: E402
from memory_bank.evaluation.store_index import StoreIndex  # noqa: E402
from memory_bank.evaluation.tree_metrics import (  # noqa: E402
    composition,
    leaf_of,
    nmi,
    purity,
    top_level_of,
)
from memory_bank.ingest.stages import compose_readmes, plan_tree  # noqa: E402
from memory_bank.schemas import DirectoryNode, MemorizedChunk  # noqa: E402
from memory_bank.store.files import assign_chunk_paths  # noqa: E402
from memory_bank.store.reader import StoreReader  # noqa: E402
from memory_bank.store.tables import memories_from_table  # noqa: E402

SAMPLE = REPO / "data" / "sample"
DATASETS = ("hotpotqa", "fairytaleqa", "qmsum")
MODES = ("hybrid", "tree", "descent1", "descent3", "hybrid-doc", "tree-doc")
BUDGETS = (512, 2048)
console = Console(width=160) if not Console().is_terminal else Console()


# --- stores -------------------------------------------------------------------------------------


def dataset_for(name: str, eval_dir: Path, work: Path, qmsum_meetings: int) -> EvalDataset:
    if name == "hotpotqa":
        return prepare_dataset(eval_dir / "hotpotqa", "hotpotqa", work / name)
    if name == "fairytaleqa":
        return prepare_dataset(eval_dir / "fairytaleqa" / "val", "fairytaleqa", work / name)
    return prepare_dataset(
        eval_dir / "qmsum" / "val", "qmsum", work / name, max_groups=qmsum_meetings
    )


def fresh_plan(bank: MemoryBank) -> dict[str, float]:
    """Re-plan the store with the current code; the commit's stage seconds."""
    summary = bank.rebuild()
    return {
        stage.removeprefix("commit: "): seconds
        for stage, seconds in summary.stage_seconds.items()
        if stage.startswith("commit: ")
    }


def load_memories(store: Path) -> tuple[list[MemorizedChunk], np.ndarray]:
    reader = StoreReader(store)
    return memories_from_table(reader.memories()), reader.memory_vectors()


# --- mixed corpus -------------------------------------------------------------------------------


def document_label(dataset: str, source: str, corpus_dir: Path) -> str:
    """The source document: a story (FairytaleQA), a meeting (QMSum), a paragraph (HotpotQA)."""
    path = Path(source).resolve()
    if path.is_relative_to(corpus_dir.resolve()):
        relative = path.relative_to(corpus_dir.resolve())
    else:  # a store copied from another --work: the part below its corpus folder
        parts = path.parts
        relative = Path(*parts[len(parts) - parts[::-1].index(corpus_dir.name) :])
    return f"{dataset}:{relative.parts[0] if dataset != 'hotpotqa' else relative.as_posix()}"


def timed_plan(
    memories: Sequence[MemorizedChunk], vectors: np.ndarray, config: AppConfig
) -> tuple[DirectoryNode, float, float]:
    """The tree of `memories` and its READMEs as an ingest makes them (offline backend);
    returns the tree, planning seconds and README seconds (no embedding)."""
    began = time.perf_counter()
    tree = plan_tree(memories, vectors, config.taxonomy, None)
    planned = time.perf_counter()
    paths = assign_chunk_paths(tree, memories)
    compose_readmes(tree, memories, paths, config.taxonomy, None, vectors=vectors)
    return tree, planned - began, time.perf_counter() - planned


def mixed_corpus(stores: dict[str, tuple[Path, EvalDataset]], config: AppConfig) -> None:
    memories: list[MemorizedChunk] = []
    vectors: list[np.ndarray] = []
    dataset_of: dict[int, str] = {}
    document_of: dict[int, str] = {}
    for name, (store, dataset) in stores.items():
        stored, stored_vectors = load_memories(store)
        for memory in stored:
            index = len(memories)
            memories.append(memory.model_copy(update={"index": index}))
            dataset_of[index] = name
            document_of[index] = document_label(name, memory.metadata["source"], dataset.corpus_dir)
        vectors.append(stored_vectors)
    tree, plan_seconds, readme_seconds = timed_plan(memories, np.concatenate(vectors), config)
    top = top_level_of(tree)
    leaves = leaf_of(tree)
    table = Table(title=f"mixed corpus: {len(memories)} memories of {len(stores)} datasets")
    for column in ("measure", "value"):
        table.add_column(column, justify="right" if column == "value" else "left")
    table.add_row("top-level directories", str(len(tree.children)))
    table.add_row("top-level purity (dataset)", f"{purity(top, dataset_of):.3f}")
    table.add_row("top-level NMI (dataset)", f"{nmi(top, dataset_of):.3f}")
    for name, kind in (("fairytaleqa", "story"), ("qmsum", "meeting")):
        labels = {i: document_of[i] for i, dataset in dataset_of.items() if dataset == name}
        if labels:
            table.add_row(f"leaf purity by {kind}", f"{purity(leaves, labels):.3f}")
    table.add_row("leaves", str(len(tree.leaves())))
    table.add_row("plan seconds (grouping + names)", f"{plan_seconds:.1f}")
    table.add_row("README seconds (no embedding)", f"{readme_seconds:.1f}")
    console.print(table)
    groups = composition(top, dataset_of, [child.name for child in tree.children])
    listing = Table(title="mixed corpus: top-level directories")
    for column in ("directory", "memories", *stores, "subdirectories"):
        listing.add_column(column)
    for child in tree.children:
        counts = groups[child.name]
        shown = ", ".join(grandchild.name for grandchild in child.children[:6])
        more = f" (+{len(child.children) - 6})" if len(child.children) > 6 else ""
        listing.add_row(
            child.name,
            str(sum(counts.values())),
            *(str(counts.get(name, 0)) for name in stores),
            shown + more,
        )
    console.print(listing)


# --- sample corpus ------------------------------------------------------------------------------


def folder_label(source: str) -> str:
    """The folder of a sample file below data/sample ("articles/history")."""
    parts = Path(source).parts
    start = max(i for i in range(len(parts) - 1) if parts[i : i + 2] == ("data", "sample")) + 2
    return "/".join(parts[start:-1]) or "."


def sample_corpus(work: Path, config: AppConfig) -> None:
    store = work / "sample" / "store"
    bank = MemoryBank(store, config=config)
    if not StoreReader.is_store(store):
        bank.add(files=[SAMPLE])
    seconds = fresh_plan(bank)
    reader = StoreReader(store)
    memories = memories_from_table(reader.memories())
    labels = {memory.index: folder_label(memory.metadata["source"]) for memory in memories}
    tree = reader.tree()
    top = top_level_of(tree)
    console.print(
        f"sample corpus: {len(memories)} memories, {len(tree.children)} top-level directories, "
        f"top-level purity against folders {purity(top, labels):.3f}, NMI {nmi(top, labels):.3f} "
        f"(plan {seconds.get('plan', 0):.2f}s, READMEs {seconds.get('readme', 0):.2f}s)"
    )
    documents_of: dict[str, Counter[str]] = defaultdict(Counter)
    for memory in memories:
        for node in tree.iter_nodes():
            if memory.index in node.chunk_indices:
                documents_of[node.path][Path(memory.metadata["source"]).stem] += 1
    print_tree(tree, documents_of)
    console.print("\nroot README:\n" + reader.path("README.md").read_text(encoding="utf-8"))


def print_tree(tree: DirectoryNode, documents_of: dict[str, Counter[str]]) -> None:
    def walk(node: DirectoryNode, depth: int) -> None:
        for child in node.children:
            held = sum(len(leaf.chunk_indices) for leaf in child.leaves())
            line = f"{'    ' * depth}{child.name}/ ({held})"
            if child.is_leaf():
                documents = ", ".join(
                    f"{name}×{count}" for name, count in documents_of[child.path].most_common()
                )
                line += f"  {documents}"
            console.print(line, highlight=False, markup=False)
            walk(child, depth + 1)

    walk(tree, 0)


# --- retrieval ----------------------------------------------------------------------------------


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def metric(
    results: Sequence[QuestionResult], read: Callable[[QuestionResult], float | bool | None]
) -> float | None:
    return mean([float(value) for result in results if (value := read(result)) is not None])


def question_halves(dataset: EvalDataset) -> dict[str, str]:
    """ "A" or "B" per question id: alternate documents in name order (a story or meeting's
    questions stay together), or for questions asked of no document the parity of the id
    (hexadecimal HotpotQA ids; another id's CRC-32)."""
    documents = sorted({d for q in dataset.questions if (d := dataset.asked_of(q)) is not None})
    position = {document: i for i, document in enumerate(documents)}
    halves: dict[str, str] = {}
    for question in dataset.questions:
        document = dataset.asked_of(question)
        if document is not None:
            number = position[document]
        else:
            try:
                number = int(question.qid, 16)
            except ValueError:
                number = zlib.crc32(question.qid.encode())
        halves[question.qid] = "AB"[number % 2]
    return halves


def retrieval(
    stores: dict[str, tuple[Path, EvalDataset]],
    config: AppConfig,
    modes: Sequence[str],
    halves: bool = False,
) -> None:
    _, count_tokens = default_token_counter()
    table = Table(
        title="retrieval by question kind (hybrid / tree / descent beam 1 / beam 3 / "
        "hybrid and tree scoped to the question's own story or meeting)"
    )
    for column in ("dataset", "kind", "n", "mode", "H@5", "hit", "R@2", "R@5"):
        table.add_column(
            column, justify="left" if column in ("dataset", "kind", "mode") else "right"
        )
    for budget in BUDGETS:
        table.add_column(f"ER@{budget}", justify="right")
        table.add_column(f"TokR@{budget}", justify="right")
    for store, dataset in stores.values():
        bank = MemoryBank(store, config=config)
        # Scoped modes only where questions are asked of one document (elsewhere they repeat
        # the unscoped ones).
        asked_of_one = any(dataset.asked_of(question) for question in dataset.questions)
        modes_here = [mode for mode in modes if asked_of_one or mode not in SCOPED_MODES]
        results, _ = run_questions(
            bank, dataset, modes_here, count_tokens, top_k=50, max_iterations=10
        )
        half_of = question_halves(dataset)
        by_kind: dict[tuple[str, str], list[QuestionResult]] = defaultdict(list)
        for result in results:
            kinds = ["all", result.kind] if result.kind else ["all"]
            for kind in kinds:
                by_kind[(kind, result.mode)].append(result)
                if halves:
                    by_kind[(f"{kind} {half_of[result.qid]}", result.mode)].append(result)
        for kind in sorted({kind for kind, _ in by_kind}, key=lambda k: (k != "all", k)):
            for mode in modes_here:
                chosen = by_kind.get((kind, mode), [])
                if not chosen:
                    continue
                cells = [
                    metric(chosen, lambda r: r.hit_at_k.get(5)),
                    metric(chosen, lambda r: r.hit),
                    metric(chosen, lambda r: r.recall_at_k.get(2)),
                    metric(chosen, lambda r: r.recall_at_k.get(5)),
                ]
                for budget in BUDGETS:
                    cells.append(metric(chosen, lambda r, b=budget: r.evidence_recall.get(b)))
                    cells.append(metric(chosen, lambda r, b=budget: r.answer_token_recall.get(b)))
                table.add_row(
                    dataset.name,
                    kind,
                    str(len(chosen)),
                    mode,
                    *("-" if value is None else f"{100 * value:.1f}" for value in cells),
                )
        table.add_section()
    console.print(table)


def flat_reference(stores: dict[str, tuple[Path, EvalDataset]], config: AppConfig) -> None:
    _, count_tokens = default_token_counter()
    table = Table(
        title="flat search as a descent would use it (hybrid; questions with gold sources)"
    )
    for column in ("dataset", "n", "hit@1", "hit@2", "hit@5", "leaf of best hit", "leaf size"):
        table.add_column(column, justify="left" if column == "dataset" else "right")
    for store, dataset in stores.values():
        bank = MemoryBank(store, config=config)
        index = StoreIndex(bank.store, corpus_sources_by_document(dataset))
        leaves = {leaf.path.strip("/"): leaf for leaf in bank.tree().leaves()}
        hits_at: Counter[int] = Counter()
        leaf_hits = asked = 0
        for question in dataset.questions:
            if not question.gold_sources:
                continue
            asked += 1
            hits = bank.search(question.question, top_k=5, mode="hybrid")
            scored = score_question(
                dataset,
                question,
                index.hit_passages(hits),
                mode="hybrid",
                latency_seconds=0.0,
                count_tokens=count_tokens,
                ks=(1, 2, 5),
            )
            hits_at.update(k for k, hit in scored.hit_at_k.items() if hit)
            best = next((hit for hit in hits if hit.kind == "chunk"), None)
            if best is None:
                continue
            leaf = leaves[best.chunk_path.strip("/").rpartition("/")[0]]
            members = bank.search(
                question.question, top_k=len(leaf.chunk_indices), mode="hybrid", under=leaf.path
            )
            in_leaf = score_question(
                dataset,
                question,
                index.hit_passages(members),
                mode="hybrid",
                latency_seconds=0.0,
                count_tokens=count_tokens,
                ks=(len(leaf.chunk_indices),),
            )
            leaf_hits += any(in_leaf.hit_at_k.values())
        sizes = [len(leaf.chunk_indices) for leaf in leaves.values()]
        table.add_row(
            dataset.name,
            str(asked),
            *(f"{100 * hits_at[k] / max(asked, 1):.1f}" for k in (1, 2, 5)),
            f"{100 * leaf_hits / max(asked, 1):.1f}",
            f"{sum(sizes) / max(len(sizes), 1):.1f}",
        )
    console.print(table)


# --- main ---------------------------------------------------------------------------------------


def big_store_cost(store: Path, config: AppConfig) -> None:
    memories, vectors = load_memories(store)
    tree, plan_seconds, readme_seconds = timed_plan(memories, vectors, config)
    console.print(
        f"big store {store}: {len(memories)} memories -> {len(tree.children)} top-level, "
        f"{len(tree.leaves())} leaves; plan {plan_seconds:.1f}s, READMEs {readme_seconds:.1f}s "
        "(no embedding)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=REPO / "bench" / "out" / "taxonomy")
    parser.add_argument("--eval-dir", type=Path, default=development_eval_dir(REPO))
    parser.add_argument("--qmsum-meetings", type=int, default=35)
    parser.add_argument("--only", default="mixed,sample,retrieval,reference")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--big-store", type=Path, default=None)
    parser.add_argument(
        "--halves", action="store_true", help="rows for half A and half B of each kind too"
    )
    args = parser.parse_args(argv)
    parts = {part.strip() for part in args.only.split(",") if part.strip()}
    config = AppConfig()
    stores: dict[str, tuple[Path, EvalDataset]] = {}
    if parts & {"mixed", "retrieval", "reference"}:
        for name in [part.strip() for part in args.datasets.split(",") if part.strip()]:
            dataset = dataset_for(name, args.eval_dir, args.work, args.qmsum_meetings)
            bank = MemoryBank(args.work / name / "store", config=config)
            ingest_corpus(bank, dataset)
            seconds = fresh_plan(bank)
            console.print(
                f"{dataset.name}: re-planned, plan {seconds.get('plan', 0):.1f}s, READMEs "
                f"{seconds.get('readme', 0):.1f}s, README vectors "
                f"{seconds.get('readme vectors', 0):.1f}s",
                highlight=False,
            )
            stores[name] = (bank.store, dataset)
    if "mixed" in parts:
        mixed_corpus(stores, config)
    if "sample" in parts:
        sample_corpus(args.work, config)
    if "retrieval" in parts:
        modes = [mode.strip() for mode in args.modes.split(",")]
        retrieval(stores, config, modes, halves=args.halves)
    if "reference" in parts:
        flat_reference(stores, config)
    if args.big_store is not None:
        big_store_cost(args.big_store, config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
