"""Questions with gold evidence, the evidence units, and the prepared-dataset container.

Evidence is scored in *units*: a HotpotQA supporting sentence, a QMSum transcript turn, or a whole
source (FairytaleQA sections, generic JSONL). A sentence or turn counts as covered when returned
text from its own source contains it (see `EvalDataset.units_covered`). Gold evidence lives only
here, in objects that retrieval never receives: the runner passes `EvalQuestion.question` alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field

from memory_bank.evaluation.metrics import Passage, contains_phrase, normalize_answer
from memory_bank.text.sentences import split_sentences

DatasetFormat = Literal["hotpotqa", "fairytaleqa", "qmsum", "jsonl"]
DATASET_FORMATS: tuple[str, ...] = get_args(DatasetFormat)

# A sentence shorter than this (after normalization) is too common ("yeah ok") to prove that
# its unit was returned; such sentences only count when they are the whole unit.
MIN_EVIDENCE_WORDS = 4


class EvalQuestion(BaseModel):
    """One question with its gold answers and evidence. Retrieval only ever sees `question`."""

    qid: str
    question: str
    answers: list[str]
    gold_sources: list[str]  # corpus-relative POSIX paths of the source files holding the evidence
    gold_units: list[str]  # finer evidence ids (sentence, turn or section), see EvidenceUnit
    answer_scoreable: bool  # False where exact answer matching is meaningless (yes/no, abstractive)
    kind: str = (
        ""  # dataset-specific question type: bridge, comparison, local, summary, specific, ...
    )
    meta: dict[str, Any] = Field(default_factory=dict)


class EvidenceUnit(BaseModel):
    """A gold evidence unit: a piece of `text` inside `source`, or the whole source when text is None."""

    unit_id: str
    source: str
    text: str | None = None


@dataclass(frozen=True)
class EvalDataset:
    """A prepared dataset: the written corpus, the questions and the evidence units (read-only)."""

    name: str
    dataset_format: DatasetFormat
    dataset_dir: Path  # where the original files were read
    dataset_files: list[Path]  # the original files read, hashed into the run manifest
    corpus_dir: Path  # the directory to ingest
    source_files: list[str]  # corpus-relative POSIX paths of every corpus file
    questions: list[EvalQuestion]
    units: dict[str, EvidenceUnit] = field(default_factory=dict)

    def asked_of(self, question: EvalQuestion) -> str | None:
        """The corpus folder of the document a question is asked of, where the dataset defines
        one: a FairytaleQA story, a QMSum meeting (query-based summarization of one given
        transcript). A search may be scoped to it, as a user asking about that document would;
        HotpotQA and generic JSONL questions are asked of the whole corpus (None)."""
        group = question.meta.get(
            {"fairytaleqa": "story", "qmsum": "meeting"}.get(self.dataset_format, "")
        )
        return str(group) if group else None

    def source_paths(self) -> list[Path]:
        """Absolute paths of the corpus files, in a stable order."""
        return [self.corpus_dir / relative for relative in self.source_files]

    def source_key(self, source: str | None) -> str | None:
        """The corpus-relative path of a hit's source, or None when it is not a corpus file.

        Accepts the absolute path given to ingest, a path relative to the working directory, or
        the corpus-relative path itself.
        """
        if source is None:
            return None
        if source in self._known_sources:
            return source
        try:
            relative = Path(source).resolve().relative_to(self._resolved_corpus_dir).as_posix()
        except ValueError:
            return None
        return relative if relative in self._known_sources else None

    def units_covered(self, passage: Passage) -> set[str]:
        """Ids of the evidence units of the passage's source that the passage text covers.

        A whole-source unit is covered by any text from its source; a sentence or turn unit
        when the text contains one of its sentences of at least MIN_EVIDENCE_WORDS words (or
        the whole unit, if it is shorter), compared after answer normalization.
        """
        source = self.source_key(passage.source)
        if source is None:
            return set()
        candidates = self._unit_needles.get(source, [])
        normalized_text = normalize_answer(passage.text) if candidates else ""
        covered: set[str] = set()
        for unit_id, needles in candidates:
            if needles is None or any(
                contains_phrase(normalized_text, needle) for needle in needles
            ):
                covered.add(unit_id)
        return covered

    @cached_property
    def _known_sources(self) -> frozenset[str]:
        return frozenset(self.source_files)

    @cached_property
    def _resolved_corpus_dir(self) -> Path:
        return self.corpus_dir.resolve()

    @cached_property
    def _unit_needles(self) -> dict[str, list[tuple[str, list[str] | None]]]:
        by_source: dict[str, list[tuple[str, list[str] | None]]] = {}
        for unit in self.units.values():
            needles = None if unit.text is None else evidence_needles(unit.text)
            by_source.setdefault(unit.source, []).append((unit.unit_id, needles))
        return by_source


def evidence_needles(text: str) -> list[str]:
    """The normalized phrases whose presence shows that `text` was returned (empty: unmatchable)."""
    sentences = [normalize_answer(sentence) for sentence in split_sentences(text)]
    long_sentences = [
        sentence for sentence in sentences if len(sentence.split()) >= MIN_EVIDENCE_WORDS
    ]
    if long_sentences:
        return long_sentences
    whole = normalize_answer(text)
    return [whole] if whole else []
