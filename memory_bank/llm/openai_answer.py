"""The `answer` role through an OpenAI-compatible endpoint: an answer written by the model from
the evidence an agent read (the memory files, with their chunk ids), citing the files it used.

The reply is checked: its sources must be evidence the agent read (a made-up path is sent back),
its confidence within 0..1. A reply that stays unusable falls back to the offline extractive
answer when the request carries what that needs (the question's vector and the sentences of
the evidence), else to "not found", counted either way. The confidence reported to the user is
not the model's word alone: the agent scales it by how much of what is cited it really read.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from memory_bank.errors import LLMError
from memory_bank.llm.instructions import role_instructions
from memory_bank.llm.roles import AnswerRequest, AnswerResult


class AnswerReply(BaseModel):
    answer: str
    sources: list[str] = Field(default_factory=list)
    confidence: float = 0.5
    found: bool = True


def answer_with_model(backend: Any, request: AnswerRequest) -> AnswerResult:
    """The answer role of `backend` (an `OpenAIBackend`); see the module docstring."""
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

    instructions = role_instructions("answer")
    if request.system_prompt:
        instructions += f"\n\n{request.system_prompt.strip()}"
    model, temperature = backend.chat_model
    try:
        reply = backend.client.structured(
            "answer", instructions, payload, AnswerReply, model, temperature, check
        )
    except LLMError:
        backend.ledger.count("answer", "fallbacks")
        if request.query_vector is not None and any(e.sentences for e in request.evidence):
            return backend.offline.answer(request)
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
