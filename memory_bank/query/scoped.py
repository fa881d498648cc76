"""Answers from part of a store only: what a question asked within some documents or one
directory (an API key limited to them) gets instead of a free exploration of the tree.

The navigation agent reads READMEs, greps and follows links across the whole store; none of
that can be confined without showing what lies outside. Here the question's evidence is the
best memories of a scoped hybrid search (`index.scope`: candidates, BM25 normalization and title
links all stay inside the scope; those far below the best left unread, as the agent leaves them),
handed to the `answer` role as the agent would hand the chunks it
read. The Query Graph's claims are kept only where what replaced a claim is in the
scope too: a newer claim from elsewhere would bring its sentence into the answer.
"""

from __future__ import annotations

from memory_bank.index.scope import SearchScope
from memory_bank.index.search import Searcher
from memory_bank.llm.seam import LLM
from memory_bank.query.answer_role import answer
from memory_bank.query.answer_sentences import NOT_FOUND_THRESHOLD
from memory_bank.query.currency import Currency
from memory_bank.query.descent_policy import NOT_FOUND_ANSWER, READ_CUTOFF
from memory_bank.query.roles import AnswerRequest, ClaimHistory, memory_evidence
from memory_bank.schemas import ChatResult, TrajectoryStep
from memory_bank.store.tables import directory_of

# Memories read for a navigate answer within a scope; research reads twice as many.
SCOPED_READS = 4


def answer_within(
    question: str,
    scope: SearchScope,
    searcher: Searcher,
    llm: LLM | None,
    currency: Currency | None = None,
    reads: int = SCOPED_READS,
    system_prompt: str | None = None,
) -> ChatResult:
    """Answer `question` from the best `reads` memories within `scope` (see the module
    docstring), by the answer role asking `llm` (None: the extractive answer); the trajectory
    shows the scoped search and the memories read."""
    corpus = searcher.corpus
    found = searcher.search(question, top_k=reads, mode="hybrid", scope=scope)
    best = max((hit.score for hit in found), default=0.0)
    # As the agent does: a memory far below the best match is not worth reading.
    hits = [hit for hit in found if hit.kind == "chunk" and hit.score >= READ_CUTOFF * best]
    steps = [
        TrajectoryStep(
            number=1,
            action="search",
            target=question,
            detail=f"-> {len(hits)} memories within the allowed part of the store",
        )
    ]
    indices = [index for hit in hits if (index := corpus.index_of_path(hit.chunk_path)) is not None]
    if not indices:
        return _result(question, steps, [], NOT_FOUND_ANSWER, 0.0, "nothing in scope matched")
    memories = corpus.reader.memories().column("memory")
    evidence = [memory_evidence(corpus, index, memories[index].as_py()) for index in indices]
    steps += [TrajectoryStep(action="read", target=item.path) for item in evidence]
    query_vector = searcher.hybrid.encode_query(question)
    claims: list[ClaimHistory] = []
    if currency is not None:
        within = searcher.resolve(scope)
        claims = [
            claim
            for claim in currency.claims(indices, question, query_vector)
            if _claim_in_scope(claim, within.in_scope if within is not None else None, corpus)
        ]
    result = answer(
        AnswerRequest(
            question=question,
            evidence=evidence,
            query_vector=query_vector,
            system_prompt=system_prompt,
            claims=claims,
        ),
        llm,
    )
    read = [item.path for item in evidence]
    if not result.found:
        confidence = min(result.confidence, NOT_FOUND_THRESHOLD - 0.01)
        return _result(question, steps, read, NOT_FOUND_ANSWER, confidence, "not found")
    sources = [path for path in result.sources if path in read] or read
    steps.append(TrajectoryStep(action="answer", detail=f"from {len(sources)} files"))
    answered = _result(
        question, steps, read, result.answer, result.confidence, result.notes, sources
    )
    answered.chunk_ids = [corpus.reader.memories().column("chunk_id")[i].as_py() for i in indices]
    answered.history = result.history
    return answered


def _claim_in_scope(claim: ClaimHistory, in_scope, corpus) -> bool:
    if in_scope is None:
        return True
    chunks = [claim.current_chunk]
    if claim.current_path is not None:
        chunks.append(corpus.index_of_path(claim.current_path))
    return all(chunk is None or bool(in_scope[chunk]) for chunk in chunks) and (
        claim.current_path is None or chunks[-1] is not None
    )


def _result(
    question: str,
    steps: list[TrajectoryStep],
    read: list[str],
    answer: str,
    confidence: float,
    notes: str,
    sources: list[str] | None = None,
) -> ChatResult:
    return ChatResult(
        question=question,
        answer=answer,
        sources=sources or [],
        confidence=round(max(confidence, 0.0), 3),
        files_read=read,
        dirs_explored=sorted({directory_of(path) for path in read}),
        trajectory="\n".join(step.render() for step in steps),
        steps=steps,
        notes=notes,
    )
