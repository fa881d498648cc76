"""The `split` role: where an overlong section is cut into chunks (seed 000 §5.2: split points
chosen for semantic completeness, at topic boundaries, never mid-sentence).

Offline, the chunker's own cuts stand and the role is not even asked (`split_chooser` is None).
With a model, the overlong sections of all the documents being chunked are sent together, as
numbered pieces (paragraphs and sentences) with their token counts, at most
`llm.split_max_tokens` tokens of pieces per request; the model answers, per section, the piece
numbers that start a new chunk. A reply is checked (known pieces, ascending, every chunk within
the token bounds) and sent back with the problems; a request whose replies stay wrong, or a
section longer than `llm.split_max_tokens` (too long to send), keeps the chunker's own cuts,
counted as fallbacks. The chunker then takes the chosen cuts wherever they keep the bounds.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from memory_bank.config import ChunkConfig
from memory_bank.errors import LLMError
from memory_bank.llm.seam import LLM, RoleModel, prompt
from memory_bank.schemas import Document
from memory_bank.text.chunking import SectionSplit, SplitChooser

ROLE = "split"


class SplitSection(RoleModel):
    """A section longer than a chunk: its text as pieces between the boundaries a chunk may end
    at (paragraphs, sentences), with their token counts. A cut is the number of the piece it
    starts (1 .. len(pieces) - 1); `own_cuts` are the cuts the chunker makes by itself."""

    source: str
    pieces: list[str]
    tokens: list[int]
    own_cuts: list[int]


class SplitRequest(RoleModel):
    """Overlong sections, of one document or several."""

    sections: list[SplitSection]
    min_tokens: int = Field(ge=1)
    max_tokens: int = Field(ge=2)


class SplitResult(RoleModel):
    cuts: list[list[int]]  # per section, ascending piece numbers


class _SectionCuts(BaseModel):
    section: int
    cuts: list[int] = Field(default_factory=list)


class SplitReply(BaseModel):
    splits: list[_SectionCuts]


def split_chooser(llm: LLM | None, config: ChunkConfig) -> SplitChooser | None:
    """The split role as the chunker's chooser of cuts; None offline (the chunker's own cuts
    are the offline role's, so it is not asked and does no work for it)."""
    if llm is None:
        return None

    def choose(asked: list[tuple[Document, list[SectionSplit]]]) -> list[list[list[int]] | None]:
        sections = [
            SplitSection(
                source=doc.source,
                pieces=[doc.text[start:end] for start, end, _ in section.pieces],
                tokens=[tokens for _, _, tokens in section.pieces],
                own_cuts=list(section.own_cuts),
            )
            for doc, doc_sections in asked
            for section in doc_sections
        ]
        request = SplitRequest(
            sections=sections, min_tokens=config.min_tokens, max_tokens=config.max_tokens
        )
        cuts = iter(split_sections(request, llm).cuts)
        return [[next(cuts) for _ in doc_sections] for _, doc_sections in asked]

    return choose


def split_sections(request: SplitRequest, llm: LLM) -> SplitResult:
    """Cuts for every section of `request`: the model's where it gave valid ones, else the
    chunker's own (see the module docstring)."""
    cuts = [list(section.own_cuts) for section in request.sections]
    budget = llm.config.split_max_tokens
    batches: list[list[int]] = []
    used = budget
    for number, section in enumerate(request.sections):
        size = sum(section.tokens)
        if size > budget:
            llm.ledger.count(ROLE, "fallbacks")
            continue
        if used + size > budget:
            batches.append([])
            used = 0
        batches[-1].append(number)
        used += size
    answered = llm.overlapped(lambda numbers: _ask(request, numbers, llm), batches)
    for batch, chosen in zip(batches, answered, strict=True):
        for number, section_cuts in zip(batch, chosen, strict=True):
            if section_cuts is not None:
                cuts[number] = section_cuts
    return SplitResult(cuts=cuts)


def _ask(request: SplitRequest, numbers: list[int], llm: LLM) -> list[list[int] | None]:
    """The model's cuts of the sections `numbers` (None each when its replies stay wrong)."""
    sections = request.sections
    payload = {
        "min_tokens": request.min_tokens,
        "max_tokens": request.max_tokens,
        "sections": [
            {
                "section": number,
                "source": sections[number].source,
                "pieces": [
                    {"id": piece, "tokens": tokens, "text": text}
                    for piece, (text, tokens) in enumerate(
                        zip(sections[number].pieces, sections[number].tokens, strict=True)
                    )
                ],
            }
            for number in numbers
        ],
    }

    def check(reply: SplitReply) -> list[str]:
        got = sorted(split.section for split in reply.splits)
        if got != numbers:
            return [f"expected one entry per section {numbers}, got {got}"]
        return [
            problem
            for split in reply.splits
            for problem in cut_problems(
                sections[split.section], split.cuts, request.min_tokens, request.max_tokens
            )
        ]

    try:
        reply = llm.complete(ROLE, prompt(__package__, ROLE), payload, SplitReply, check=check)
    except LLMError:
        for _ in numbers:
            llm.ledger.count(ROLE, "fallbacks")
        return [None] * len(numbers)
    chosen = {split.section: sorted(set(split.cuts)) for split in reply.splits}
    return [chosen[number] for number in numbers]


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
