"""Text in other languages: titles, directory names and retrieval of a small multilingual suite.

    python bench/multilingual.py [--config FILE] [--modes bm25,vector,hybrid] [--show-tree]

Ingests bench/data/multilingual.json (short encyclopedia-style paragraphs in Japanese, Chinese,
German, French and English, written for this suite, each with questions in its own language)
with the offline backend in-process, then asks every question in each mode and prints, per
language, recall@1 and @5 of the question's own paragraph, and each document's memory title and
directory. Quality only (deterministic): no lock needed. `--config` picks the embedder.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from memory_bank.app.bank import MemoryBank  # noqa: E402
from memory_bank.config import load_config  # noqa: E402
from memory_bank.store.reader import StoreReader  # noqa: E402

SUITE = REPO / "bench" / "data" / "multilingual.json"
LANGUAGES = ("ja", "zh", "de", "fr", "en")


def write_corpus(documents: list[dict], folder: Path) -> None:
    for document in documents:
        (folder / document["file"]).write_text(document["text"] + "\n", encoding="utf-8")


def recall_table(bank: MemoryBank, documents: list[dict], modes: list[str]) -> list[list[str]]:
    rows = []
    for mode in modes:
        found: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
        for document in documents:
            for question in document["questions"]:
                hits = bank.search(question, top_k=5, mode=mode)
                files = [Path(hit.source).name for hit in hits]
                found[document["lang"]].append(
                    (files[:1] == [document["file"]], document["file"] in files)
                )
        for language in (*LANGUAGES, "all"):
            results = (
                [result for values in found.values() for result in values]
                if language == "all"
                else found[language]
            )
            if results:
                at1 = 100 * sum(first for first, _ in results) / len(results)
                at5 = 100 * sum(any_ for _, any_ in results) / len(results)
                rows.append([mode, language, str(len(results)), f"{at1:.1f}", f"{at5:.1f}"])
    return rows


def placement_rows(store: Path, documents: list[dict]) -> list[list[str]]:
    memories = StoreReader(store).memories().select(["source", "path"]).to_pylist()
    language = {document["file"]: document["lang"] for document in documents}
    rows = []
    for memory in sorted(memories, key=lambda row: (row["source"], row["path"])):
        source = Path(memory["source"]).name
        rows.append([language.get(source, "?"), source, memory["path"]])
    return sorted(rows, key=lambda row: LANGUAGES.index(row[0]) if row[0] in LANGUAGES else 9)


def print_table(header: list[str], rows: list[list[str]]) -> None:
    table = [header, *rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for number, line in enumerate(table):
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)))
        if number == 0:
            print("  ".join("-" * width for width in widths))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=None)
    parser.add_argument("--modes", default="bm25,vector,hybrid")
    args = parser.parse_args()
    documents = json.loads(SUITE.read_text(encoding="utf-8"))["documents"]
    config = load_config(args.config)
    with tempfile.TemporaryDirectory() as work:
        corpus, store = Path(work) / "corpus", Path(work) / "store"
        corpus.mkdir()
        write_corpus(documents, corpus)
        bank = MemoryBank(store, config=config)
        bank.add(files=[corpus])
        questions = sum(len(document["questions"]) for document in documents)
        print(
            f"{len(documents)} documents, {questions} questions; embedding "
            f"{config.embedding.runtime} "
            f"{config.embedding.precision}"
        )
        print()
        print_table(["lang", "source", "stored at"], placement_rows(store, documents))
        print()
        print_table(
            ["mode", "lang", "n", "R@1", "R@5"],
            recall_table(bank, documents, args.modes.split(",")),
        )


if __name__ == "__main__":
    main()
