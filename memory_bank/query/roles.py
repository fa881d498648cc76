"""What the `answer` role takes and gives (`answer_role`): the question, the evidence an agent
read, the claims the Query Graph knows of it; the answer, its sources and a confidence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import Field

from memory_bank.llm.seam import RoleModel
from memory_bank.schemas import HistoryNote

if TYPE_CHECKING:
    from memory_bank.index.corpus import StoreCorpus


class AnswerEvidence(RoleModel):
    """One memory file an agent read. The sentence texts and vectors (the chunk's own, from
    `.bank/sentences.parquet`) and the memory vector serve the offline, extractive answer."""

    path: str  # store-relative memory file
    text: str  # the memory text read
    chunk_id: str | None = None
    index: int | None = None  # memory index (orders equal scores, as the store does)
    vector: np.ndarray | None = None
    sentences: list[str] | None = None
    sentence_vectors: np.ndarray | None = None


def memory_evidence(
    corpus: StoreCorpus,
    index: int,
    text: str,
    chunk_id: str | None = None,
    sentences: tuple[Sequence[str], np.ndarray] | None = None,
) -> AnswerEvidence:
    """Memory `index` of `corpus`, read as `text`, with its sentences and their vectors (the
    chunk's stored ones unless `sentences` are given; without any, it is not quoted)."""
    texts, vectors = sentences if sentences is not None else corpus.chunk_sentences(index)
    return AnswerEvidence(
        path=corpus.chunk_path(index),
        text=text,
        chunk_id=chunk_id,
        index=index,
        vector=corpus.memory_vectors()[index],
        sentences=list(texts) or None,
        sentence_vectors=vectors if len(texts) else None,
    )


class ClaimHistory(RoleModel):
    """What the Query Graph knows of a claim in the evidence: `superseded` -- a
    later claim replaced it (the answer must not state it; `current_*` is what replaced it);
    `current` -- it replaced an earlier claim (the answer may state it, with the history);
    `bridge` -- a replaced claim about something the evidence names (`about`), in a memory not
    read: where the answer quotes a sentence naming it, `current_sentence` joins the answer."""

    kind: Literal["superseded", "current", "bridge"]
    chunk: int  # the evidence's `index` (or position) whose text states the claim
    sentence: str  # the claim's sentence in that evidence
    old_value: str
    new_value: str
    current_sentence: str = ""
    current_path: str | None = None  # the evidence path of the current claim, when a file
    current_chunk: int | None = None
    current_vector: np.ndarray | None = None  # offline: the current sentence's embedding
    note: HistoryNote
    about: list[str] = Field(default_factory=list)  # a bridge: name keys of what it is about


class AnswerRequest(RoleModel):
    """Answer synthesis from the evidence an agent gathered (seed 000 §6.1: also the forced
    answer after max_iterations). `claims`: the superseded and current claims of the evidence
    (from the Query Graph), so the answer states what is current."""

    question: str
    evidence: list[AnswerEvidence]
    query_vector: np.ndarray | None = None  # offline: the question's embedding
    system_prompt: str | None = None
    claims: list[ClaimHistory] = Field(default_factory=list)


class AnswerResult(RoleModel):
    answer: str
    sources: list[str]  # evidence paths the answer rests on, most important first
    confidence: float = Field(ge=0.0, le=1.0)
    found: bool = True  # False: the evidence does not answer the question
    notes: str = ""
    history: list[HistoryNote] = Field(default_factory=list)  # what the answer's claims replaced
