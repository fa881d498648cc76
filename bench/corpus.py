"""The real-text corpus the ingest benchmarks run on (bench/ingest.py, bench/runners.py,
bench/lifecycle.py): built once per size under bench/out/corpus_<tokens>/ from the QMSum
validation meetings, the HotpotQA corpus paragraphs, the FairytaleQA validation stories and
data/sample, then documents recombined from their paragraphs and turns (fixed seed) if short.
"""

from __future__ import annotations

import csv
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memory_bank.evaluation.dataset_files import development_eval_dir
from memory_bank.text.inputs import discover_files
from memory_bank.text.sources import load_file
from memory_bank.text.tokens import count_tokens

REPO = Path(__file__).resolve().parents[1]
EVAL_DATA = development_eval_dir(REPO)
SAMPLE_DATA = REPO / "data" / "sample"
OUT = REPO / "bench" / "out"
RECIPE = "real-v1"  # bump when the corpus recipe changes, so cached corpora are rebuilt
SEED = 0
HOTPOT_PARAGRAPHS_PER_DOCUMENT = 20
MIX_PARAGRAPHS = 20  # paragraphs per recombined article
MIX_MEETING_RUNS, MIX_RUN_TURNS = 4, 60  # recombined meeting: 4 runs of 60 consecutive turns


@dataclass
class SourceFile:
    relative: str  # path under the corpus directory
    content: str
    group: str  # "qmsum", "hotpotqa", "fairytaleqa", "recombined"


@dataclass
class Corpus:
    directory: Path
    documents: int
    tokens: int
    recombined_documents: int
    recombined_tokens: int


def real_sources() -> tuple[list[SourceFile], list[str], list[list[dict[str, str]]]]:
    """The real documents, plus the paragraph and meeting-turn pools that recombination draws on."""
    files: list[SourceFile] = []
    paragraphs: list[str] = []
    meetings: list[list[dict[str, str]]] = []
    for path in sorted((EVAL_DATA / "qmsum" / "val").glob("*.json")):
        turns = [
            {"speaker": turn["speaker"], "text": turn["content"]}
            for turn in json.loads(path.read_text(encoding="utf-8"))["meeting_transcripts"]
            if turn["content"].strip()
        ]
        meetings.append(turns)
        files.append(SourceFile(f"qmsum/{path.name}", json.dumps(turns, indent=0), "qmsum"))

    corpus = json.loads((EVAL_DATA / "hotpotqa" / "hotpotqa_train_100_corpus.json").read_text())
    titled = [(title, "".join(sentences).strip()) for title, sentences in corpus.items()]
    paragraphs.extend(text for _, text in titled)
    for number, first in enumerate(range(0, len(titled), HOTPOT_PARAGRAPHS_PER_DOCUMENT)):
        group = titled[first : first + HOTPOT_PARAGRAPHS_PER_DOCUMENT]
        body = "\n\n".join(f"## {title}\n\n{text}" for title, text in group)
        content = f"# Wikipedia: {group[0][0]} to {group[-1][0]}\n\n{body}\n"
        files.append(SourceFile(f"hotpotqa/paragraphs_{number:03d}.md", content, "hotpotqa"))

    for path in sorted((EVAL_DATA / "fairytaleqa" / "val" / "section-stories").glob("*.csv")):
        with path.open(encoding="utf-8", newline="") as handle:
            sections = [row["text"].strip() for row in csv.DictReader(handle)]
        paragraphs.extend(
            p.strip() for section in sections for p in section.split("\n\n") if p.strip()
        )
        title = path.stem.removesuffix("-story").replace("-", " ").title()
        content = title + "\n\n" + "\n\n".join(sections) + "\n"
        files.append(SourceFile(f"fairytaleqa/{path.stem}.txt", content, "fairytaleqa"))
    return files, paragraphs, meetings


def recombined_source(
    number: int,
    rng: np.random.Generator,
    paragraphs: list[str],
    meetings: list[list[dict[str, str]]],
) -> SourceFile:
    """A new document of real text: alternately a meeting stitched from runs of turns of several
    meetings, and an article of randomly drawn paragraphs (the kinds keep the corpus's mix)."""
    if number % 2 == 0:
        turns: list[dict[str, str]] = []
        for meeting in rng.choice(len(meetings), size=MIX_MEETING_RUNS, replace=False):
            source = meetings[int(meeting)]
            start = int(rng.integers(0, max(1, len(source) - MIX_RUN_TURNS)))
            turns.extend(source[start : start + MIX_RUN_TURNS])
        return SourceFile(
            f"recombined/meeting_{number:05d}.json", json.dumps(turns, indent=0), "recombined"
        )
    picks = rng.choice(len(paragraphs), size=MIX_PARAGRAPHS, replace=False)
    body = "\n\n".join(paragraphs[int(i)] for i in picks)
    return SourceFile(
        f"recombined/article_{number:05d}.md", f"# Collection {number}\n\n{body}\n", "recombined"
    )


def build_corpus(target_tokens: int) -> Corpus:
    """Write (or reuse) a corpus of at least `target_tokens` tokens under bench/out/: data/sample,
    then the real documents in a seeded random order, then recombined ones if still short."""
    directory = OUT / f"corpus_{target_tokens}"
    manifest_file = OUT / f"corpus_{target_tokens}.json"  # outside: the ingest reads every .json
    if manifest_file.is_file() and directory.is_dir():
        manifest = json.loads(manifest_file.read_text())
        if manifest.get("recipe") == RECIPE:
            return Corpus(directory, **manifest["corpus"])
    if directory.exists():
        shutil.rmtree(directory)
    shutil.copytree(SAMPLE_DATA, directory / "sample")
    sample_files = discover_files([directory])
    documents = len(sample_files)
    tokens = sum(count_tokens(load_file(path).text) for path in sample_files)

    files, paragraphs, meetings = real_sources()
    rng = np.random.default_rng(SEED)
    pending = [files[int(i)] for i in rng.permutation(len(files))]
    recombined = recombined_tokens = 0
    while tokens < target_tokens:
        if pending:
            source = pending.pop(0)
        else:
            source = recombined_source(recombined, rng, paragraphs, meetings)
        path = directory / source.relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source.content, encoding="utf-8")
        added = count_tokens(load_file(path).text)  # counted on the text the ingest will read
        tokens += added
        documents += 1
        if source.group == "recombined":
            recombined += 1
            recombined_tokens += added
    corpus = Corpus(directory, documents, tokens, recombined, recombined_tokens)
    summary = {key: value for key, value in vars(corpus).items() if key != "directory"}
    manifest_file.write_text(json.dumps({"recipe": RECIPE, "corpus": summary}, indent=1))
    return corpus
