"""The offline memorize role: turns a chunk into a `MemorizedChunk` with no network and no LLM.

The memory is extractive (seed 000 §4.3: "preserve key facts, numbers, names and
relationships"): maximal marginal relevance over the sentence vectors that the embedder produced
in the same forward pass as the chunk vector, with a bonus for sentences carrying numbers, names
and the chunk's key terms. The title comes from the key terms (see keyterms.py) and the TL;DR is
the most central sentence. Everything is deterministic.

Transcripts: a conversation's markup ("{disfmarker}", "[laughter]"), hesitations ("uh", "um"),
fillers ("sure", "maybe") and filler phrases ("of course", "a bit") are no key terms, a sentence
made of them is vague (it loses relevance by their share), and the TL;DR leaves the markup out;
the memory quotes the turns as said. Without these rules most meeting-transcript titles were
made of markup and hesitations (`disfmarker_ideas_uh_um`; docs/benchmarks.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

import numpy as np

from memory_bank.config import MemorizeConfig
from memory_bank.index.embedding import ChunkEncoding
from memory_bank.memorize.keyterms import extract_keywords, is_stopword, make_title
from memory_bank.schemas import Chunk, MemorizedChunk
from memory_bank.text.lexicon import (
    DISCOURSE_MARKERS,
    DISFLUENCIES,
    LIST_MARKER,
    MARKDOWN_HEADER,
    SPOKEN_FILLER_WORDS,
    TRANSCRIPT_ANNOTATION,
    without_annotations,
)
from memory_bank.text.spoken import clean_verbatim

_LETTER_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_MARKDOWN_EMPHASIS = re.compile(r"\*\*|__|(?<!\w)[*_]|[*_](?!\w)|`")
_CLAUSE_END = re.compile(r"[,;:—–]\s")
_TLDR_MAX_WORDS = 30
_TLDR_MAX_CHARS = 200  # CJK sentences have no spaces, so words alone cannot bound them
_TLDR_MIN_CLAUSE_WORDS = 10  # a long sentence is cut at a clause end only past this many words
_SENTENCE_END = (".", "!", "?", "。", "！", "？")

# Relevance is the cosine to the chunk vector plus these bonuses. The contextual sentence vectors
# of one chunk all sit close to its vector (their cosines spread little), so the bonuses are
# what lets a sentence with a date or a name beat a vague one.
_NUMBER_BONUS = 0.1
_NAME_BONUS = 0.04  # per distinct name, at most three
_KEY_TERM_BONUS = 0.02  # per key term, at most three
_SECTION_LEAD_BONUS = 0.05
_LONG_TLDR_PENALTY = 0.05  # a sentence that must be cut is a worse TL;DR
# In a conversation, times the share of a sentence's words that say nothing (hesitations,
# markup, fillers: `_disfluent_share`): "Uh , yeah , um {disfmarker} sure ." sits near the
# chunk's average like any turn of it, and says nothing.
_DISFLUENCY_PENALTY = 0.25


@dataclass(frozen=True)
class _Unit:
    """A sentence of the chunk, or a Markdown header line split off the sentence it opened."""

    start: int
    end: int
    text: str
    vector_row: int
    is_header: bool


def memorize_offline(
    chunk: Chunk, encoding: ChunkEncoding, index: int, config: MemorizeConfig
) -> MemorizedChunk:
    """Build the memory of one chunk from its text and its sentence embeddings."""
    if not chunk.text.strip():
        raise ValueError(f"chunk {chunk.chunk_id} has no text to memorize")
    if encoding.sentence_spans and encoding.sentence_spans[-1].end > len(chunk.text):
        raise ValueError(f"the encoding given for chunk {chunk.chunk_id} is of another text")
    turn_prefix = _turn_prefix_pattern(chunk.speakers)
    keywords = (
        _spoken_keywords(chunk.text, turn_prefix, chunk.section, config.max_keywords)
        if turn_prefix
        else extract_keywords(chunk.text, chunk.section, config.max_keywords)
    )
    units = _split_units(chunk.text, encoding)
    # Headers are titles, not memory text; a "1." or "---" left alone by the splitter says nothing.
    is_content = [not unit.is_header and _has_letter(unit.text) for unit in units]
    content = [unit for unit, keep in zip(units, is_content, strict=True) if keep] or units
    section_leads = _section_leads(units, is_content)
    relevance = _relevance(content, section_leads, encoding, keywords, turn_prefix)
    if chunk.token_count <= config.short_chunk_tokens:
        memory = chunk.text.strip()
    else:
        # The sentence right after the chunk's opening header says what the section is about.
        must_keep = section_leads[0] if units[0].is_header and section_leads else None
        chosen = _select_memory_units(content, relevance, must_keep, encoding, config)
        memory = _join_units(chunk.text, chosen, turn_prefix)
    return MemorizedChunk(
        index=index,
        title=make_title(keywords, chunk.text, index),
        memory=memory,
        tldr=_tldr(content, relevance, turn_prefix),
        keywords=keywords,
        context=_context(chunk),
        metadata=_metadata(chunk),
    )


def _spoken_keywords(
    text: str, turn_prefix: re.Pattern[str], section: str | None, limit: int
) -> list[str]:
    """Key terms of a conversation: not its speakers (they open every turn), its markup
    ("{vocalsound}"), the phrases speakers fill sentences with ("of course", "a bit"), nor the
    words every meeting says ("sure", "maybe", "alright")."""
    spoken = without_annotations(DISCOURSE_MARKERS.sub(" ", turn_prefix.sub("", text)))
    # Twice as many candidates, so `limit` are left after the fillers are taken out.
    keywords = extract_keywords(spoken, section, 2 * limit)
    said_anywhere = [kw for kw in keywords if not set(kw.split()) <= SPOKEN_FILLER_WORDS]
    return (said_anywhere or keywords)[:limit]


def _has_letter(text: str) -> bool:
    return any(char.isalpha() for char in text)


def _section_leads(units: list[_Unit], is_content: list[bool]) -> list[int]:
    """Positions among the content units of the first content sentence after each header."""
    leads = []
    content_position = -1
    after_header = False
    for unit, keep in zip(units, is_content, strict=True):
        if keep:
            content_position += 1
            if after_header:
                leads.append(content_position)
        after_header = unit.is_header or (after_header and not keep)
    return leads


def _turn_prefix_pattern(speakers: list[str]) -> re.Pattern[str] | None:
    """Matches "[timestamp] Speaker: " at the start of a conversation turn."""
    if not speakers:
        return None
    names = "|".join(re.escape(name) for name in sorted(set(speakers), key=lambda n: (-len(n), n)))
    return re.compile(rf"^[ \t]*(?:\[[^\]\n]*\][ \t]*)?(?:{names}):[ \t]*", re.MULTILINE)


def _split_units(text: str, encoding: ChunkEncoding) -> list[_Unit]:
    """Sentences with a leading header line split off (a header followed by a single newline
    is one span for the sentence splitter); the body keeps the span's vector."""
    units = []
    for row, span in enumerate(encoding.sentence_spans):
        piece = text[span.start : span.end]
        first_line, newline, rest = piece.partition("\n")
        if not MARKDOWN_HEADER.match(first_line):
            units.append(_Unit(span.start, span.end, piece, row, is_header=False))
            continue
        units.append(_Unit(span.start, span.start + len(first_line), first_line, row, True))
        body = rest.strip()
        if newline and body:
            body_start = span.start + len(first_line) + 1 + rest.index(body)
            units.append(_Unit(body_start, body_start + len(body), body, row, is_header=False))
    if not units:  # a text the splitter found nothing in: treat it whole as one sentence
        units.append(_Unit(0, len(text), text.strip(), 0, is_header=False))
    return units


def _relevance(
    content: list[_Unit],
    section_leads: list[int],
    encoding: ChunkEncoding,
    keywords: list[str],
    turn_prefix: re.Pattern[str] | None,
) -> np.ndarray:
    """Per content sentence: cosine to the chunk vector plus bonuses for facts and section leads."""
    vectors = encoding.sentence_vectors[[unit.vector_row for unit in content]]
    # A turn's timestamp and speaker are no facts of the sentence: "[10:02] Bob: Sure." is vague.
    bare = [turn_prefix.sub("", unit.text) if turn_prefix else unit.text for unit in content]
    bonus = np.array([_fact_bonus(text, keywords) for text in bare], dtype=np.float32)
    if turn_prefix:
        bonus -= _DISFLUENCY_PENALTY * np.array([_disfluent_share(text) for text in bare])
    relevance = vectors @ encoding.vector + bonus
    relevance[section_leads] += _SECTION_LEAD_BONUS
    return relevance


def _fact_bonus(sentence: str, keywords: list[str]) -> float:
    """Extra relevance for sentences that carry numbers, names and the chunk's key terms."""
    lowered = sentence.lower()
    words = _LETTER_WORD.findall(LIST_MARKER.sub("", sentence))
    # A capital opening the sentence says nothing; an acronym anywhere does.
    names = {word for word in words[1:] if word[0].isupper()} | {
        word for word in words[:1] if len(word) > 1 and word.isupper()
    }
    key_terms = sum(1 for term in keywords if re.search(rf"\b{re.escape(term)}", lowered))
    return (
        _NUMBER_BONUS * any(char.isdigit() for char in sentence)
        + _NAME_BONUS * min(len(names), 3)
        + _KEY_TERM_BONUS * min(key_terms, 3)
    )


_SPOKEN_WORD = re.compile(r"[\w'’-]+")
_SAYS_NOTHING = DISFLUENCIES | SPOKEN_FILLER_WORDS


def _disfluent_share(sentence: str) -> float:
    """The share of a spoken sentence's words that say nothing: hesitations, transcript markup,
    fillers ("sure", "maybe") and the phrases speakers fill sentences with ("of course")."""
    markup = len(TRANSCRIPT_ANNOTATION.findall(sentence))
    bare = TRANSCRIPT_ANNOTATION.sub(" ", sentence)
    phrase_words = sum(len(phrase.split()) for phrase in DISCOURSE_MARKERS.findall(bare))
    words = [word.lower() for word in _SPOKEN_WORD.findall(DISCOURSE_MARKERS.sub(" ", bare))]
    empty = markup + phrase_words + sum(word in _SAYS_NOTHING for word in words)
    total = markup + phrase_words + len(words)
    return empty / total if total else 0.0


def _select_memory_units(
    content: list[_Unit],
    relevance: np.ndarray,
    must_keep: int | None,
    encoding: ChunkEncoding,
    config: MemorizeConfig,
) -> list[_Unit]:
    """Maximal marginal relevance over the content sentences, taking a sentence while it brings
    the memory closer to `memory_ratio` of the content characters (characters measure length
    for Latin and CJK text alike)."""
    vectors = encoding.sentence_vectors[[unit.vector_row for unit in content]]
    similarity = vectors @ vectors.T
    lengths = np.array([len(unit.text) for unit in content])
    budget = config.memory_ratio * lengths.sum()
    chosen = [must_keep] if must_keep is not None and lengths[must_keep] <= budget else []
    used = int(lengths[chosen].sum())
    candidates = [i for i in range(len(content)) if i not in chosen]
    while candidates and used < budget:
        redundancy = similarity[np.ix_(candidates, chosen)].max(axis=1) if chosen else 0.0
        scores = config.mmr_lambda * relevance[candidates] - (1 - config.mmr_lambda) * redundancy
        best = candidates.pop(int(np.argmax(scores)))  # argmax takes the first of equal scores
        if abs(used + lengths[best] - budget) < budget - used or not chosen:
            chosen.append(best)
            used += int(lengths[best])
    return [content[i] for i in sorted(chosen)]


def _join_units(text: str, units: list[_Unit], turn_prefix: re.Pattern[str] | None) -> str:
    """Join sentences in their original order, keeping paragraph and line breaks between them.
    In a conversation, a sentence from the middle of a turn gets its speaker back."""
    parts: list[str] = []
    previous: _Unit | None = None
    for unit in units:
        line_start = text.rfind("\n", 0, unit.start) + 1
        opens_line = not text[line_start : unit.start].strip()
        if previous is not None:
            gap = text[previous.end : unit.start]
            if re.search(r"\n\s*\n", gap):
                parts.append("\n\n")
            else:
                parts.append("\n" if opens_line else " ")  # a list item, a new turn: new line
        same_line = previous is not None and "\n" not in text[previous.end : unit.start]
        prefix = turn_prefix.match(text, line_start) if turn_prefix and not opens_line else None
        if prefix and not same_line:
            parts.append(f"{prefix.group(0).strip()} … ")
        parts.append(unit.text)
        previous = unit
    return "".join(parts)


def _tldr(content: list[_Unit], relevance: np.ndarray, turn_prefix: re.Pattern[str] | None) -> str:
    """The most central sentence (fact bonuses included, so a vague sentence that merely sits
    near the chunk's average loses to a concrete one), as one plain line ending a sentence."""
    texts = [
        _MARKDOWN_EMPHASIS.sub("", LIST_MARKER.sub("", MARKDOWN_HEADER.sub(r"\2", unit.text)))
        for unit in content
    ]
    if turn_prefix:  # keep who said it, drop when, the transcript's markup and hesitations
        texts = [
            _spoken_quote(
                without_annotations(re.sub(r"^\s*\[[^\]\n]*\]\s*", "", text)), turn_prefix
            )
            for text in texts
        ]
    word_counts = np.array([len(text.split()) for text in texts])
    substantial = (word_counts >= 4) | (np.array([len(text) for text in texts]) >= 12)
    candidates = np.flatnonzero(substantial) if substantial.any() else np.arange(len(content))
    score = relevance - _LONG_TLDR_PENALTY * (word_counts > _TLDR_MAX_WORDS)
    sentence = " ".join(texts[candidates[int(np.argmax(score[candidates]))]].split())
    return _shorten_to_sentence(sentence)


def _spoken_quote(text: str, turn_prefix: re.Pattern[str]) -> str:
    """A turn's sentence in clean verbatim (`text.spoken`), its first spoken word capitalized
    where a hesitation opened it ("Designer: Uh we still" -> "Designer: We still")."""
    cleaned = clean_verbatim(text)
    prefix = turn_prefix.match(cleaned)
    start = prefix.end() if prefix else 0
    if not any(char.isalpha() for char in cleaned[start:]):  # nothing but hesitation
        return text
    return cleaned[:start] + cleaned[start : start + 1].upper() + cleaned[start + 1 :]


def _shorten_to_sentence(sentence: str) -> str:
    """At most about 30 words (cut at a clause end where there is one), ending like a sentence."""
    words = sentence.split(" ")
    if len(words) > _TLDR_MAX_WORDS or len(sentence) > _TLDR_MAX_CHARS:
        head = " ".join(words[:_TLDR_MAX_WORDS])
        if len(head) > _TLDR_MAX_CHARS:
            head = head[:_TLDR_MAX_CHARS]
            if " " in head:  # drop the cut word; CJK text has no spaces and is cut where it is
                head = head[: head.rfind(" ")]
        clause_ends = [
            match.start()
            for match in _CLAUSE_END.finditer(head)
            if len(head[: match.start()].split()) >= _TLDR_MIN_CLAUSE_WORDS
        ]
        kept = (head[: clause_ends[-1]] if clause_ends else head).split(" ")
        while len(kept) > 1 and is_stopword(kept[-1].lower()):
            kept.pop()  # "gave the movement its" -> "gave the movement"
        sentence = " ".join(kept)
    if not sentence.endswith(_SENTENCE_END):
        sentence = sentence.rstrip(",;:-–— ") + "."
    return sentence


def _context(chunk: Chunk) -> str:
    """One line saying where the chunk comes from."""
    origin = chunk.source if chunk.source.startswith("<") else PurePath(chunk.source).name
    if chunk.speakers:
        where = f"conversation between {_join_names(list(dict.fromkeys(chunk.speakers)))}"
        if chunk.first_turn is not None and chunk.last_turn is not None:
            where += f", turns {chunk.first_turn + 1}-{chunk.last_turn + 1}"  # 1-based for people
        if chunk.timestamps:
            first, last = chunk.timestamps[0], chunk.timestamps[-1]
            where += f", {first}" if first == last else f", {first} to {last}"
    elif chunk.section:
        where = chunk.section
    else:
        where = f"part {chunk.position + 1}"
    return " ".join(f"{where} — {origin}".split())


def _join_names(names: list[str]) -> str:
    if len(names) > 4:
        return f"{', '.join(names[:3])} and {len(names) - 3} others"
    if len(names) == 1:
        return names[0]
    return f"{', '.join(names[:-1])} and {names[-1]}"


def _metadata(chunk: Chunk) -> dict[str, object]:
    metadata: dict[str, object] = {
        "source": chunk.source,
        "document_id": chunk.document_id,
        "chunk_id": chunk.chunk_id,
        "token_count": chunk.token_count,
        "start_char": chunk.start_char,
        "end_char": chunk.end_char,
        "section": chunk.section,
    }
    if chunk.speakers:
        metadata.update(
            speakers=list(dict.fromkeys(chunk.speakers)),
            timestamps=list(chunk.timestamps),
            first_turn=chunk.first_turn,
            last_turn=chunk.last_turn,
        )
    return metadata
