"""Split a `Document` into token-bounded chunks along its structure (seed 000 §5.2).

The text is first cut into *blocks*: Markdown header lines, and paragraphs between blank lines
(a fenced code block stays one block). In a conversation the blocks are the turns, plus the
header lines before a turn (session headers), so chunks start and end on turn boundaries; only a
turn too long for one chunk is cut inside, at sentences. A block too large to move around freely
is cut into sentences, and a sentence that is still too large into runs of tokens. These pieces
are the *atoms*; a chunk is a run of atoms.

Chunks are then made one after the other. From the current atom, every cut that keeps the chunk
within [min_tokens, max_tokens] is scored and the cheapest taken:

* where the cut falls: before a header (cheapest, more so for higher-level headers), between
  blocks, between sentences, inside a sentence or after a paragraph that ends in ":" and
  announces the next block (last resorts), or between a header and its text (practically never);
* every header a chunk swallows costs, so sections that can stand alone stay apart;
* a cut that leaves the next section too short to stand alone is charged for the header the next
  chunk will then have to swallow. So a short section joins the section after it, unless that
  one starts at a higher-level header (a short `###` part just before a new `#` chapter) and the
  short section fits into the chunk before it;
* inside a section longer than max_tokens, pieces of equal size are preferred.

Where a section is longer than max_tokens, the split points may be chosen by someone else (the
`split` role, `text.split_role`): `chunk_documents(..., choose_splits=...)` offers every such
section of all the documents at once, each as a `SectionSplit` (its pieces between admissible
boundaries, and the cuts the chunker itself would make there), and packs a document again with
the chosen boundaries as the cheapest cuts. A chosen cut that would break the token bounds is
not taken; the chunker's own choice stands there. Without a chooser nothing of this runs.

Only the last chunk of a document may be shorter than min_tokens. Sizes are planned from token
counts of the atoms (each piece of text is encoded about once), a little inside the bounds to
absorb counting differences at the joins; every chunk is then counted exactly, and one that still
exceeds max_tokens is cut again, so max_tokens always holds (min_tokens could then, in principle,
be missed by the pieces of such a re-cut chunk).
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate

from tiktoken import Encoding

from memory_bank.config import ChunkConfig
from memory_bank.schemas import Chunk, Document
from memory_bank.text.lexicon import header_of
from memory_bank.text.sentences import split_sentence_spans
from memory_bank.text.tokens import get_encoding

# Cost of ending a chunk right before an atom of each kind. Relative sizes matter, not values.
_CUT_BEFORE_HEADER = 0.0  # plus _HEADER_LEVEL_STEP per header level below 1
_HEADER_LEVEL_STEP = 0.1
_CUT_BETWEEN_BLOCKS = 2.0
_CUT_AT_INNER_BLANK_LINE = 3.0  # a blank line inside a turn or a code block
_CUT_BETWEEN_SENTENCES = 4.0
_CUT_INSIDE_SENTENCE = 12.0
_CUT_AFTER_HEADER = 50.0
# Between a paragraph ending in ":" and what it announces (a list, a quote, a code block).
_CUT_AFTER_LEAD_IN = 12.0
# Cost of a header inside a chunk: more than any cut inside a section, so sections stay apart.
_SWALLOW_HEADER = 3.0  # plus _SWALLOW_LEVEL_STEP per level above ######: `#` costs the most
_SWALLOW_LEVEL_STEP = 0.5
_SHORT_LAST_CHUNK = 1.0
_BALANCE_WEIGHT = 1.5
_ESTIMATE_MARGIN = 0.02  # share of max_tokens kept spare for counting errors at the joins
# A boundary another party chose inside an overlong section: cheaper than any cut of our own.
_CHOSEN_CUT = -100.0
# Text with more characters than this per allowed token is split without being counted whole
# first: tokens that long are rare, and a wrong guess only adds cut options.
_MAX_CHARS_PER_TOKEN = 32

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True, slots=True)
class _Block:
    start: int
    end: int
    header_level: int = 0  # 1-6 for a Markdown header line
    title: str = ""  # header text
    turn: int | None = None  # conversations: the turn this block belongs to


@dataclass(frozen=True, slots=True)
class _Atom:
    start: int
    end: int
    tokens: int
    cut_cost: float  # cost of ending a chunk right before this atom
    joint_tokens: int  # estimated tokens of the whitespace between the previous atom and this one
    header_level: int = 0
    turn: int | None = None


@dataclass(frozen=True, slots=True)
class _Bounds:
    low: int  # smallest planned chunk (except the last)
    high: int  # largest planned chunk
    atom_cap: int  # largest atom; small enough that some cut always lands in [low, high]


@dataclass(frozen=True)
class SectionSplit:
    """A section too long for one chunk, offered to a split chooser.

    `pieces` are the section's text between the boundaries a chunk may end at (paragraphs,
    sentences), as (start, end) character offsets into the document with their token counts;
    a cut is named by the number of the piece it starts. `own_cuts` are the cuts the chunker
    would make (ascending piece numbers, never 0)."""

    pieces: tuple[tuple[int, int, int], ...]
    own_cuts: tuple[int, ...]
    atom_starts: tuple[int, ...]  # the atom each piece starts at (internal)

    @property
    def tokens(self) -> int:
        return sum(tokens for _, _, tokens in self.pieces)


# Given documents with their overlong sections, the cuts to make in each section (per document,
# piece numbers, one list per section, in order); None for a document keeps its own cuts.
SplitChooser = Callable[[list[tuple[Document, list[SectionSplit]]]], list[list[list[int]] | None]]


@dataclass
class _Plan:
    """One document's atoms and how they are packed into chunks."""

    doc: Document
    blocks: list[_Block]
    atoms: list[_Atom]
    packed: list[tuple[int, int]]


def chunk_document(
    doc: Document, config: ChunkConfig, choose_splits: SplitChooser | None = None
) -> list[Chunk]:
    """Split `doc` into chunks of at most `config.max_tokens` tokens (deterministic for a
    deterministic `choose_splits`; see the module docstring)."""
    return chunk_documents([doc], config, choose_splits)


def chunk_documents(
    docs: Sequence[Document], config: ChunkConfig, choose_splits: SplitChooser | None = None
) -> list[Chunk]:
    """The chunks of every document, in order; `choose_splits` is asked once for the overlong
    sections of all of them."""
    bounds = _plan_bounds(config)
    encoding = get_encoding(config.encoding)
    plans = [_plan(doc, bounds, encoding) for doc in docs]
    if choose_splits is not None:
        _choose(plans, bounds, choose_splits)
    return [chunk for plan in plans for chunk in _chunks(plan, encoding, config)]


def _plan(doc: Document, bounds: _Bounds, encoding: Encoding) -> _Plan:
    blocks = (
        _conversation_blocks(doc)
        if _has_usable_turns(doc)
        else _text_blocks(doc.text, 0, len(doc.text))
    )
    atoms = _atoms(doc.text, blocks, encoding, bounds.atom_cap)
    return _Plan(doc, blocks, atoms, _pack(atoms, bounds) if atoms else [])


def _chunks(plan: _Plan, encoding: Encoding, config: ChunkConfig) -> list[Chunk]:
    doc, blocks, atoms, packed = plan.doc, plan.blocks, plan.atoms, plan.packed
    if not atoms:
        return []
    runs = _fit_runs(doc.text, atoms, packed, encoding, config.max_tokens)
    runs = _merge_short_runs(doc.text, atoms, runs, encoding, config)
    headers = [(block.start, block.title) for block in blocks if block.header_level]
    header_starts = [start for start, _ in headers]
    chunks: list[Chunk] = []
    for position, (first, last, token_count) in enumerate(runs):
        start, end = atoms[first].start, atoms[last - 1].end
        header_index = bisect.bisect_right(header_starts, start) - 1
        turns = [atom.turn for atom in atoms[first:last] if atom.turn is not None]
        chunks.append(
            Chunk(
                chunk_id=f"{doc.document_id}-{position:05d}",
                document_id=doc.document_id,
                source=doc.source,
                position=position,
                text=doc.text[start:end],
                token_count=token_count,
                start_char=start,
                end_char=end,
                section=headers[header_index][1] if header_index >= 0 else None,
                **(_turn_fields(doc, min(turns), max(turns)) if turns else {}),
            )
        )
    return chunks


def _choose(plans: list[_Plan], bounds: _Bounds, choose_splits: SplitChooser) -> None:
    """Each plan with overlong sections packed again where `choose_splits` picks other cuts."""
    asked = [
        (plan, sections)
        for plan in plans
        if (sections := _overlong_sections(plan.atoms, plan.packed, bounds))
    ]
    if not asked:
        return
    chosen = choose_splits([(plan.doc, sections) for plan, sections in asked])
    for (plan, sections), cuts in zip(asked, chosen, strict=True):
        plan.packed = _chosen_splits(plan.atoms, plan.packed, bounds, sections, cuts)


def _chosen_splits(
    atoms: list[_Atom],
    packed: list[tuple[int, int]],
    bounds: _Bounds,
    sections: list[SectionSplit],
    chosen: list[list[int]] | None,
) -> list[tuple[int, int]]:
    """`packed` again with the `chosen` boundaries inside overlong sections made the cheapest
    cuts; `packed` itself when it keeps the chunker's own."""
    if chosen is None or [list(c) for c in chosen] == [list(s.own_cuts) for s in sections]:
        return packed
    preferred = {
        section.atom_starts[piece]
        for section, cuts in zip(sections, chosen, strict=True)
        for piece in cuts
        if 0 < piece < len(section.pieces)
    }
    favoured = [
        replace(atom, cut_cost=_CHOSEN_CUT) if index in preferred else atom
        for index, atom in enumerate(atoms)
    ]
    return _pack(favoured, bounds)


def _overlong_sections(
    atoms: Sequence[_Atom], packed: list[tuple[int, int]], bounds: _Bounds
) -> list[SectionSplit]:
    """Every section longer than a chunk, as pieces between the cuts a chunk may end at
    (block, paragraph and sentence boundaries, and wherever the chunker cuts itself)."""
    sizes = _Sizes(atoms)
    own_starts = {first for first, _ in packed}
    sections: list[SectionSplit] = []
    first = 0
    while first < len(atoms):
        end = sizes.section_end(first)
        if sizes.size(first, end) > bounds.high:
            starts = [first] + [
                index
                for index in range(first + 1, end)
                if atoms[index].cut_cost <= _CUT_BETWEEN_SENTENCES or index in own_starts
            ]
            pieces = tuple(
                (atoms[start].start, atoms[stop - 1].end, sizes.size(start, stop))
                for start, stop in zip(starts, [*starts[1:], end], strict=True)
            )
            own = tuple(
                number for number, start in enumerate(starts) if number and start in own_starts
            )
            sections.append(SectionSplit(pieces, own, tuple(starts)))
        first = end
    return sections


def _plan_bounds(config: ChunkConfig) -> _Bounds:
    # Planned sizes are off by a token or two at the joins: plan a little inside the bounds.
    margin = max(2, round(_ESTIMATE_MARGIN * config.max_tokens))
    margin = min(margin, (config.max_tokens - config.min_tokens - 1) // 2)
    low, high = config.min_tokens + margin, config.max_tokens - margin
    return _Bounds(low=low, high=high, atom_cap=high - low)


# ------------------------------------------------------------------------------------ blocks


def _text_blocks(text: str, start: int, end: int) -> list[_Block]:
    """Header lines and blank-line separated paragraphs of text[start:end], whitespace-trimmed."""
    blocks: list[_Block] = []
    block_start: int | None = None
    fence: str | None = None
    line_start = start
    for line in text[start:end].split("\n"):
        line_end = line_start + len(line)
        if fence is not None:  # inside a fenced code block nothing is a boundary
            if line.strip().startswith(fence):
                fence = None
        elif opening := _FENCE.match(line):
            fence = opening.group(1)
            block_start = line_start if block_start is None else block_start
        elif not line.strip():
            _close_block(text, block_start, line_start, blocks)
            block_start = None
        elif header := header_of(line):
            _close_block(text, block_start, line_start, blocks)
            block_start = None
            level, title = header
            blocks.append(
                _Block(*_trim(text, line_start, line_end), header_level=level, title=title)
            )
        elif block_start is None:
            block_start = line_start
        line_start = line_end + 1
    _close_block(text, block_start, end, blocks)
    return blocks


def _close_block(text: str, start: int | None, end: int, blocks: list[_Block]) -> None:
    if start is None:
        return
    start, end = _trim(text, start, end)
    if end > start:
        blocks.append(_Block(start, end))


def _has_usable_turns(doc: Document) -> bool:
    offsets = doc.turn_offsets
    return (
        bool(doc.turns)
        and len(offsets) == len(doc.turns)
        and all(a < b for a, b in zip(offsets, offsets[1:], strict=False))
        and offsets[0] >= 0
        and offsets[-1] < len(doc.text)
    )


def _conversation_blocks(doc: Document) -> list[_Block]:
    """One block per turn, plus the header lines (session headers) that precede a turn."""
    offsets = doc.turn_offsets
    blocks = _text_blocks(doc.text, 0, offsets[0])
    for turn, start in enumerate(offsets):
        end = offsets[turn + 1] if turn + 1 < len(offsets) else len(doc.text)
        pieces = _text_blocks(doc.text, start, end)
        # Header lines at the end of a turn's stretch of text introduce the next turn.
        trailing = len(pieces)
        while trailing > 1 and pieces[trailing - 1].header_level:
            trailing -= 1
        if trailing:
            blocks.append(_Block(pieces[0].start, pieces[trailing - 1].end, turn=turn))
        blocks.extend(pieces[trailing:])
    return blocks


# ------------------------------------------------------------------------------------- atoms


def _atoms(text: str, blocks: Sequence[_Block], encoding: Encoding, cap: int) -> list[_Atom]:
    atoms: list[_Atom] = []
    previous: _Block | None = None
    for block in blocks:
        if block.header_level:
            cut_cost = _CUT_BEFORE_HEADER + _HEADER_LEVEL_STEP * (block.header_level - 1)
        elif previous is not None and previous.header_level:
            cut_cost = _CUT_AFTER_HEADER
        elif previous is not None and text[previous.end - 1] == ":":
            cut_cost = _CUT_AFTER_LEAD_IN
        else:
            cut_cost = _CUT_BETWEEN_BLOCKS
        # The blank line between blocks is a token of its own after a word; after punctuation
        # tiktoken folds it into the punctuation's token.
        joint = 1 if atoms and text[atoms[-1].end - 1].isalnum() else 0
        tokens = _count_within(encoding, text[block.start : block.end], cap)
        if tokens is not None:
            atoms.append(
                _Atom(
                    block.start, block.end, tokens, cut_cost, joint, block.header_level, block.turn
                )
            )
        else:
            for index, (start, end, count, inner_cost) in enumerate(
                _split_block(text, block, encoding, cap)
            ):
                if index == 0:
                    atoms.append(
                        _Atom(start, end, count, cut_cost, joint, block.header_level, block.turn)
                    )
                else:
                    atoms.append(_Atom(start, end, count, inner_cost, 0, turn=block.turn))
        previous = block
    return atoms


def _split_block(
    text: str, block: _Block, encoding: Encoding, cap: int
) -> list[tuple[int, int, int, float]]:
    """Sentence pieces (token runs for overlong sentences) as (start, end, tokens, cut cost)."""
    spans = split_sentence_spans(text[block.start : block.end])
    # Each piece runs to the next sentence start, so nothing the splitter leaves out is lost.
    starts = [block.start] + [block.start + span.start for span in spans[1:]]
    pieces: list[tuple[int, int, int, float]] = []
    for index, piece_start in enumerate(starts):
        start, end = _trim(
            text, piece_start, starts[index + 1] if index + 1 < len(starts) else block.end
        )
        if end <= start:
            continue
        gap = text[pieces[-1][1] : start] if pieces else ""
        cost = _CUT_AT_INNER_BLANK_LINE if gap.count("\n") >= 2 else _CUT_BETWEEN_SENTENCES
        tokens = _count_within(encoding, text[start:end], cap)
        if tokens is not None:
            pieces.append((start, end, tokens, cost))
            continue
        runs = _token_runs(text, start, end, encoding, cap)
        for run_index, (run_start, run_end, run_tokens) in enumerate(runs):
            pieces.append(
                (run_start, run_end, run_tokens, cost if run_index == 0 else _CUT_INSIDE_SENTENCE)
            )
    return pieces


def _count_within(encoding: Encoding, text: str, cap: int) -> int | None:
    """The token count of `text` if it is at most `cap`, else None."""
    if len(text) > cap * _MAX_CHARS_PER_TOKEN:
        return None
    tokens = len(encoding.encode_ordinary(text))
    return tokens if tokens <= cap else None


def _token_runs(
    text: str, start: int, end: int, encoding: Encoding, cap: int
) -> list[tuple[int, int, int]]:
    """Cut text[start:end] at token boundaries into runs of at most `cap` tokens each."""
    _, offsets = encoding.decode_with_offsets(encoding.encode_ordinary(text[start:end]))
    window = cap
    while True:
        cuts = sorted({start + offsets[i] for i in range(window, len(offsets), window)} - {start})
        runs: list[tuple[int, int, int]] = []
        for run_start, run_end in zip([start, *cuts], [*cuts, end], strict=True):
            run_start, run_end = _trim(text, run_start, run_end)
            if run_end > run_start:
                runs.append(
                    (run_start, run_end, len(encoding.encode_ordinary(text[run_start:run_end])))
                )
        overshoot = max(tokens for _, _, tokens in runs) - cap
        if overshoot <= 0 or window == 1:
            return runs
        window = max(1, window - overshoot)  # re-encoding a run can merge differently at its edges


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


# ----------------------------------------------------------------------------------- packing


class _Sizes:
    """Planned token sizes of atom runs, and where sections end, in constant time each."""

    def __init__(self, atoms: Sequence[_Atom]) -> None:
        self.count = len(atoms)
        self._token_sums = [0, *accumulate(atom.tokens for atom in atoms)]
        self._joint_sums = [0, *accumulate(atom.joint_tokens for atom in atoms)]
        self._next_header = [self.count] * (self.count + 1)
        for index in range(self.count - 1, -1, -1):
            self._next_header[index] = (
                index if atoms[index].header_level else self._next_header[index + 1]
            )

    def size(self, first: int, last: int) -> int:
        """Planned tokens of atoms[first:last] (the joint before the first atom is not counted)."""
        tokens = self._token_sums[last] - self._token_sums[first]
        return tokens + self._joint_sums[last] - self._joint_sums[first + 1]

    def section_end(self, index: int) -> int:
        """Index of the first header atom after `index`, or the atom count."""
        return self._next_header[min(index + 1, self.count)]


def _pack(atoms: Sequence[_Atom], bounds: _Bounds) -> list[tuple[int, int]]:
    """Group atoms into runs [first, last) by the cheapest admissible cut, one chunk at a time."""
    sizes = _Sizes(atoms)
    runs: list[tuple[int, int]] = []
    first = 0
    while first < len(atoms):
        section_end = sizes.section_end(first)
        section_size = sizes.size(first, section_end)
        # In a section too long for one chunk, aim for equal pieces.
        pieces = math.ceil(section_size / bounds.high)
        target = section_size / pieces if pieces > 1 else None
        best_last, best_cost = first + 1, math.inf
        swallowed = 0.0
        for last in range(first + 1, len(atoms) + 1):
            planned = sizes.size(first, last)
            if planned > bounds.high:
                break
            if last == len(atoms):
                cost = swallowed
            elif planned >= bounds.low:
                cost = atoms[last].cut_cost + swallowed + _leftover_cost(atoms, sizes, last, bounds)
                if target is not None and last < section_end:
                    cost += _BALANCE_WEIGHT * abs(planned - target) / bounds.high
            else:
                cost = math.inf
            if cost < best_cost:
                best_last, best_cost = last, cost
            if last < len(atoms) and atoms[last].header_level:
                swallowed += _swallow_cost(atoms[last].header_level)
        runs.append((first, best_last))
        first = best_last
    return runs


def _swallow_cost(header_level: int) -> float:
    return _SWALLOW_HEADER + _SWALLOW_LEVEL_STEP * (6 - header_level)


def _leftover_cost(atoms: Sequence[_Atom], sizes: _Sizes, cut: int, bounds: _Bounds) -> float:
    """What a cut before atoms[cut] costs later, if the section it starts is too short alone."""
    section_end = sizes.section_end(cut)
    if sizes.size(cut, section_end) >= bounds.low:
        return 0.0
    if section_end == len(atoms):
        return _SHORT_LAST_CHUNK
    return _swallow_cost(atoms[section_end].header_level)


def _fit_runs(
    text: str,
    atoms: Sequence[_Atom],
    runs: list[tuple[int, int]],
    encoding: Encoding,
    max_tokens: int,
) -> list[tuple[int, int, int]]:
    """Count each run exactly; cut again any run whose real count exceeds max_tokens."""
    fitted: list[tuple[int, int, int]] = []
    pending = list(reversed(runs))
    while pending:
        first, last = pending.pop()
        tokens = len(encoding.encode_ordinary(text[atoms[first].start : atoms[last - 1].end]))
        if tokens <= max_tokens or last - first == 1:
            # A single atom is at most atom_cap < max_tokens tokens by construction.
            fitted.append((first, last, tokens))
            continue
        sub_atoms = atoms[first:last]
        # Below the planned size, so the run is cut at least once.
        planned = _Sizes(sub_atoms).size(0, len(sub_atoms))
        high = max(1, min(planned, max_tokens) - (tokens - max_tokens) - 1)
        sub_runs = _pack(
            sub_atoms, _Bounds(low=min(high, max(1, high // 2)), high=high, atom_cap=high)
        )
        pending.extend(reversed([(first + a, first + b) for a, b in sub_runs]))
    return fitted


def _merge_short_runs(
    text: str,
    atoms: Sequence[_Atom],
    runs: list[tuple[int, int, int]],
    encoding: Encoding,
    config: ChunkConfig,
) -> list[tuple[int, int, int]]:
    """Join a run that came out below min_tokens (a planning slip) to the next, if they fit."""
    merged: list[tuple[int, int, int]] = []
    index = 0
    while index < len(runs):
        first, last, tokens = runs[index]
        while tokens < config.min_tokens and index + 1 < len(runs):
            next_last = runs[index + 1][1]
            joined = len(
                encoding.encode_ordinary(text[atoms[first].start : atoms[next_last - 1].end])
            )
            if joined > config.max_tokens:
                break
            last, tokens, index = next_last, joined, index + 1
        merged.append((first, last, tokens))
        index += 1
    return merged


def _turn_fields(doc: Document, first_turn: int, last_turn: int) -> dict[str, object]:
    turns = doc.turns[first_turn : last_turn + 1]
    return {
        "first_turn": first_turn,
        "last_turn": last_turn,
        "speakers": list(dict.fromkeys(turn.speaker for turn in turns)),
        "timestamps": list(dict.fromkeys(turn.timestamp for turn in turns if turn.timestamp)),
    }
