"""The `answer` role: an answer from the evidence an agent read, with its sources and a
confidence (seed 000 §6.1; also the forced answer after max_iterations).

Offline: the extractive answer (`answering.extractive_answer`). With a model: an answer written
by the model from the evidence (the memory files, with their chunk ids), citing the files it
used. The reply is checked: its sources must be evidence the agent read (a made-up path is sent
back), its confidence within 0..1. A reply that stays unusable falls back to the extractive
answer when the request carries what that needs (the question's vector and the sentences of
the evidence), else to "not found", counted either way. The confidence reported to the user is
not the model's word alone: the agent scales it by how much of what is cited it really read.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from memory_bank.errors import LLMError
from memory_bank.llm.seam import LLM, prompt
from memory_bank.query.answering import extractive_answer
from memory_bank.query.roles import AnswerRequest, AnswerResult

ROLE = "answer"


class AnswerReply(BaseModel):
    answer: str
    sources: list[str] = Field(default_factory=list)
    confidence: float = 0.5
    found: bool = True


def answer(request: AnswerRequest, llm: LLM | None) -> AnswerResult:
    """The answer to `request` (see the module docstring)."""
    if llm is None:
        return extractive_answer(request)
    if not request.evidence:
        return AnswerResult(answer="", sources=[], confidence=0.0, found=False, notes="no evidence")
    paths = [evidence.path for evidence in request.evidence]
    payload: dict[str, Any] = {
        "question": request.question,
        "evidence": [
            {"path": evidence.path, "chunk_id": evidence.chunk_id, "text": evidence.text}
            for evidence in request.evidence
        ],
    }
    superseded = [claim for claim in request.claims if claim.kind == "superseded"]
    if superseded:
        payload["superseded_claims"] = [
            {
                "superseded": claim.sentence,
                "current": claim.current_sentence or claim.note.current_text,
                "recorded_at": claim.note.recorded_at,
                "superseded_at": claim.note.superseded_at,
            }
            for claim in superseded
        ]

    def check(reply: AnswerReply) -> list[str]:
        problems = [
            f"source {source!r} is not one of the evidence paths {paths}"
            for source in reply.sources
            if source.lstrip("/") not in paths
        ]
        if not 0.0 <= reply.confidence <= 1.0:
            problems.append(f"confidence {reply.confidence} is not between 0 and 1")
        if reply.found and not reply.answer.strip():
            problems.append("the answer is empty (say found: false if the evidence lacks it)")
        return problems

    instructions = prompt(__package__, ROLE)
    if request.system_prompt:
        instructions += f"\n\n{request.system_prompt.strip()}"
    try:
        reply = llm.complete(ROLE, instructions, payload, AnswerReply, check=check, purpose="chat")
    except LLMError:
        llm.ledger.count(ROLE, "fallbacks")
        if request.query_vector is not None and any(e.sentences for e in request.evidence):
            return extractive_answer(request)
        return AnswerResult(
            answer="", sources=[], confidence=0.0, found=False, notes="no usable answer"
        )
    sources = list(dict.fromkeys(source.lstrip("/") for source in reply.sources))
    return AnswerResult(
        answer=reply.answer.strip(),
        sources=sources,
        confidence=reply.confidence,
        found=reply.found and bool(reply.answer.strip()),
        history=list({claim.note.conflict_id: claim.note for claim in superseded}.values()),
    )
