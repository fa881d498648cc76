"""The `split` role through an OpenAI-compatible endpoint: the model picks where an overlong
section is cut into chunks, among the boundaries the chunker offers (seed 000 §5.2).

One request per document holds its overlong sections as numbered pieces (paragraphs and
sentences) with their token counts; the model answers, per section, the piece numbers that start
a new chunk. A reply is checked (known pieces, ascending, every chunk within the token bounds)
and sent back with the problems; a reply that stays wrong, or a section longer than
`llm.split_max_tokens` (too long to send), keeps the chunker's own cuts, counted as a fallback.
The chunker then takes the chosen cuts wherever they keep the bounds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from memory_bank.errors import LLMError
from memory_bank.llm.ledger import Ledger
from memory_bank.llm.roles import SplitRequest, SplitResult, SplitSection


class _SectionCuts(BaseModel):
    section: int
    cuts: list[int] = Field(default_factory=list)


class SplitReply(BaseModel):
    splits: list[_SectionCuts]


def split_sections(
    request: SplitRequest,
    ask: Callable[..., Any],
    ledger: Ledger,
    max_request_tokens: int,
) -> SplitResult:
    """Cuts for every section of `request`: the model's where it gave valid ones, else the
    chunker's own (see the module docstring). `ask(role, payload, reply_model, check)` is the
    backend's structured call."""
    cuts = [list(section.own_cuts) for section in request.sections]
    sendable = [
        number
        for number, section in enumerate(request.sections)
        if sum(section.tokens) <= max_request_tokens
    ]
    skipped = len(request.sections) - len(sendable)
    for _ in range(skipped):
        ledger.count("split", "fallbacks")
    if not sendable:
        return SplitResult(cuts=cuts)
    payload = {
        "source": request.source,
        "min_tokens": request.min_tokens,
        "max_tokens": request.max_tokens,
        "sections": [
            {
                "section": number,
                "pieces": [
                    {"id": piece, "tokens": tokens, "text": text}
                    for piece, (text, tokens) in enumerate(
                        zip(
                            request.sections[number].pieces,
                            request.sections[number].tokens,
                            strict=True,
                        )
                    )
                ],
            }
            for number in sendable
        ],
    }

    def check(reply: SplitReply) -> list[str]:
        got = sorted(split.section for split in reply.splits)
        if got != sendable:
            return [f"expected one entry per section {sendable}, got {got}"]
        return [
            problem
            for split in reply.splits
            for problem in cut_problems(
                request.sections[split.section], split.cuts, request.min_tokens, request.max_tokens
            )
        ]

    try:
        reply = ask("split", payload, SplitReply, check)
    except LLMError:
        for _ in sendable:
            ledger.count("split", "fallbacks")
        return SplitResult(cuts=cuts)
    for split in reply.splits:
        cuts[split.section] = sorted(set(split.cuts))
    return SplitResult(cuts=cuts)


def cut_problems(
    section: SplitSection, cuts: list[int], min_tokens: int, max_tokens: int
) -> list[str]:
    """What is wrong with cutting `section` at `cuts` (empty: nothing)."""
    pieces = len(section.pieces)
    unknown = [cut for cut in cuts if not 0 < cut < pieces]
    if unknown:
        return [f"cuts {unknown} are not piece ids between 1 and {pieces - 1}"]
    if cuts != sorted(set(cuts)):
        return [f"cuts {cuts} must be ascending and distinct"]
    problems = []
    edges = [0, *cuts, pieces]
    for number, (first, last) in enumerate(zip(edges, edges[1:], strict=False)):
        size = sum(section.tokens[first:last])
        if size > max_tokens:
            problems.append(
                f"the chunk of pieces {first}-{last - 1} has {size} tokens, more than {max_tokens}"
            )
        elif size < min_tokens and 0 < number < len(edges) - 2:
            # The first chunk may join text before the section, the last text after it.
            problems.append(
                f"the chunk of pieces {first}-{last - 1} has {size} tokens, fewer than {min_tokens}"
            )
    return problems
