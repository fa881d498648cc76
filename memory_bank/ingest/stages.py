"""The ingest stages as plain typed functions.

Read sources -> chunk -> embed (chunk + sentence vectors in one pass) -> memorize -> plan the
taxonomy -> compose READMEs bottom-up -> embed READMEs; `commit.py` puts them together into a
new store version.
Both executors (in-process, `executor.py`, and Ray, `pipeline/`) call these same functions; where
a stage has independent pieces (files to read, coarse groups to plan, subtrees to describe) it
takes the executor's map instead of knowing where the pieces run.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from memory_bank.config import ChunkConfig, MemorizeConfig, TaxonomyConfig
from memory_bank.errors import NothingToIngestError
from memory_bank.index.embedding import ChunkEncoding
from memory_bank.llm.ledger import add_usage, take_usage
from memory_bank.llm.seam import LLM
from memory_bank.memorize.role import MemorizeRequest, memorize
from memory_bank.schemas import Chunk, DirectoryNode, Document, MemorizedChunk
from memory_bank.store.snapshot import MemoryParts
from memory_bank.store.tables import SentenceRecord
from memory_bank.tasks import TaskMap, run_serially
from memory_bank.taxonomy import TaxonomyItem, flat_fallback, validate_taxonomy
from memory_bank.taxonomy.organize_role import organize
from memory_bank.taxonomy.readme import (
    NO_SUMMARY,
    ReadmeFileEntry,
    ReadmeHighlight,
    SubtreeSummary,
)
from memory_bank.taxonomy.readme_role import readmes
from memory_bank.taxonomy.roles import OrganizeRequest, ReadmeRequest, readme_requests
from memory_bank.taxonomy.summary import (
    index_text,
    index_words,
    subtree_highlights,
    subtree_index_terms,
    subtree_key_terms,
    subtree_mean_vectors,
)
from memory_bank.text import chunking
from memory_bank.text.chunking import SplitChooser
from memory_bank.text.inputs import SourceLoad, load_sources
from memory_bank.text.sources import FileReader, document_from_text
from memory_bank.text.split_role import split_chooser


def read_inputs(
    files: Iterable[str | Path] | None,
    text: str | None,
    read_files: FileReader | None = None,
    follow_links: bool = False,
) -> SourceLoad:
    """Load every given file/directory and the raw text; bad files are skipped, not raised."""
    loaded = load_sources(list(files or []), read_files=read_files, follow_links=follow_links)
    raw = document_from_text(text) if text else None
    if raw is not None and all(doc.document_id != raw.document_id for doc in loaded.documents):
        loaded.documents.append(raw)
    return loaded


def require_something(loaded: SourceLoad, files_given: bool) -> None:
    """Raise only when files were given and not one of them could be read."""
    if files_given and not loaded.documents and loaded.skipped:
        reasons = "\n  ".join(loaded.skipped)
        raise NothingToIngestError(f"nothing could be ingested:\n  {reasons}")


def chunk_documents(
    documents: Sequence[Document], config: ChunkConfig, llm: LLM | None = None
) -> list[Chunk]:
    """Chunks of every document (as `stream_chunks` makes them, all at once); overlong sections
    split where the split role says (offline, the chunker's own cuts)."""
    return [chunk for chunk, _ in stream_chunks(documents, config, llm)]


# A document longer than this is chunked one window at a time (cut between paragraphs), so a
# huge file's first memories are made, journaled and shown while the rest is still being cut;
# shorter ones are chunked together up to this many characters (one split request for them).
STREAM_WINDOW_CHARS = 1 << 20


def stream_chunks(
    documents: Sequence[Document], config: ChunkConfig, llm: LLM | None = None
) -> Iterator[tuple[Chunk, bool]]:
    """Every document's chunks, in order, each with whether it is its document's last. A long
    document (not a conversation, whose chunks follow its turns) is cut window by window, at
    the same places every run, so a resumed ingest finds the same chunks."""
    choose = split_chooser(llm, config)
    for group, windowed in _stream_groups(documents):
        if windowed:
            chunks: Iterable[Chunk] = _windowed_chunks(group[0], config, choose)
        else:
            chunks = chunking.chunk_documents(group, config, choose)
        previous: Chunk | None = None
        for chunk in chunks:
            if previous is not None:
                yield previous, chunk.document_id != previous.document_id
            previous = chunk
        if previous is not None:
            yield previous, True


def _stream_groups(documents: Sequence[Document]) -> Iterator[tuple[list[Document], bool]]:
    """Consecutive documents of at most `STREAM_WINDOW_CHARS` together; a longer one alone,
    marked to be windowed."""
    group: list[Document] = []
    size = 0
    for doc in documents:
        if not doc.turns and len(doc.text) > STREAM_WINDOW_CHARS:
            if group:
                yield group, False
                group, size = [], 0
            yield [doc], True
            continue
        if group and size + len(doc.text) > STREAM_WINDOW_CHARS:
            yield group, False
            group, size = [], 0
        group.append(doc)
        size += len(doc.text)
    if group:
        yield group, False


def _windowed_chunks(
    doc: Document, config: ChunkConfig, choose: SplitChooser | None
) -> Iterator[Chunk]:
    position, start = 0, 0
    while start < len(doc.text):
        end = len(doc.text)
        if end - start > STREAM_WINDOW_CHARS:
            cut = doc.text.rfind("\n\n", start + 1, start + STREAM_WINDOW_CHARS)
            end = cut if cut > start else start + STREAM_WINDOW_CHARS
        window = doc.model_copy(update={"text": doc.text[start:end]})
        for chunk in chunking.chunk_document(window, config, choose):
            yield chunk.model_copy(
                update={
                    "chunk_id": f"{doc.document_id}-{position:05d}",
                    "position": position,
                    "start_char": chunk.start_char + start,
                    "end_char": chunk.end_char + start,
                }
            )
            position += 1
        start = end


def memorize_encoded(
    chunks: Sequence[Chunk],
    encodings: Sequence[ChunkEncoding],
    first_index: int,
    config: MemorizeConfig,
    llm: LLM | None,
) -> MemoryParts:
    """Memorize embedded chunks with the memorize role; memory indices start at
    `first_index`, in chunk order."""
    request = MemorizeRequest(
        chunks=list(chunks), first_index=first_index, config=config, encodings=list(encodings)
    )
    return assemble_parts(chunks, encodings, memorize(request, llm))


def assemble_parts(
    chunks: Sequence[Chunk], encodings: Sequence[ChunkEncoding], memories: Sequence[MemorizedChunk]
) -> MemoryParts:
    """Gather memorized chunks, their vectors and their sentence records, in the given order."""
    parts = MemoryParts(chunks=list(chunks), memories=list(memories))
    for chunk, encoding, memory in zip(chunks, encodings, memories, strict=True):
        for number, span in enumerate(encoding.sentence_spans):
            parts.sentences.append(
                SentenceRecord(
                    chunk_id=chunk.chunk_id,
                    index=memory.index,
                    sentence=number,
                    start_char=span.start,
                    end_char=span.end,
                    text=chunk.text[span.start : span.end],
                )
            )
    if encodings:
        parts.memory_vectors = np.stack([e.vector for e in encodings]).astype(np.float32)
        parts.sentence_vectors = np.concatenate([e.sentence_vectors for e in encodings]).astype(
            np.float32
        )
    return parts


def taxonomy_items(memories: Sequence[MemorizedChunk]) -> list[TaxonomyItem]:
    return [TaxonomyItem.from_memory(memory) for memory in memories]


def plan_tree(
    memories: Sequence[MemorizedChunk],
    vectors: np.ndarray,
    config: TaxonomyConfig,
    llm: LLM | None,
    map_groups: TaskMap = run_serially,
) -> DirectoryNode:
    """Plan the whole tree with the organize role (independent groups through `map_groups`);
    a plan that still fails validation is replaced by the flat fallback."""
    request = OrganizeRequest(items=taxonomy_items(memories), vectors=vectors, config=config)
    tree = organize(request, llm, map_groups).tree
    return ensure_valid_tree(tree, [memory.index for memory in memories], config)


def ensure_valid_tree(
    tree: DirectoryNode, indices: Sequence[int], config: TaxonomyConfig
) -> DirectoryNode:
    if validate_taxonomy(tree, len(indices), config):
        return flat_fallback(indices, config)
    return tree


def subtree_summaries(
    tree: DirectoryNode,
    memories: Sequence[MemorizedChunk],
    vectors: np.ndarray,
    chunk_paths: Mapping[int, str],
    map_subtrees: TaskMap = run_serially,
    known_words: Mapping[int, Sequence[str]] | None = None,
    only: Collection[str] | None = None,
) -> dict[str, SubtreeSummary]:
    """What every directory's README says of its subtree (`taxonomy.summary`): the TL;DRs of
    its central and diverse memories, its most telling key terms, and its index: the words of
    its memories (title, keywords and memory text), the most telling first. `vectors` row i
    belongs to `memories[i]`. Reading the words of the memories not in `known_words` (memory
    index -> words, as stored beside the store's tables) takes one call of `map_subtrees` per
    top-level subtree; ranking them is cheap. `only`: the directories whose summary is wanted
    (default: all)."""
    by_index = {memory.index: memory for memory in memories}
    row_of = {memory.index: row for row, memory in enumerate(memories)}
    highlights = subtree_highlights(tree, vectors, row_of)
    key_terms = subtree_key_terms(
        tree, {memory.index: memory.keywords for memory in memories}, only
    )
    known = known_words or {}
    texts = {
        memory.index: index_text(memory.title, memory.keywords, memory.memory)
        for memory in memories
        if memory.index not in known
    }
    words: dict[int, Sequence[str]] = {index: known[index] for index in by_index if index in known}
    for part in map_subtrees(
        index_words, [(texts_part,) for texts_part in _by_subtree(tree, texts)]
    ):
        words.update(part)
    index_terms = subtree_index_terms(tree, texts, words, only)
    return {
        node.path: SubtreeSummary(
            highlights=tuple(
                ReadmeHighlight(
                    text=by_index[index].tldr, file=_relative_to(chunk_paths[index], node.path)
                )
                for index in highlights.get(node.path, [])
            ),
            key_terms=tuple(key_terms.get(node.path, [])),
            index_terms=tuple(index_terms.get(node.path, [])),
        )
        for node in tree.iter_nodes()
        if only is None or node.path in only
    }


def _by_subtree(tree: DirectoryNode, texts: Mapping[int, str]) -> list[dict[int, str]]:
    """`texts` split by top-level subtree (the root's own memories apart), none empty; memories
    without a text are left out."""
    parts = [
        {i: texts[i] for node in subtree.iter_nodes() for i in node.chunk_indices if i in texts}
        for subtree in tree.children
    ]
    parts.append({i: texts[i] for i in tree.chunk_indices if i in texts})
    return [part for part in parts if part]


def _relative_to(chunk_path: str, directory: str) -> str:
    prefix = directory.strip("/")
    return chunk_path.removeprefix(prefix + "/") if prefix else chunk_path


def compose_readmes(
    tree: DirectoryNode,
    memories: Sequence[MemorizedChunk],
    chunk_paths: Mapping[int, str],
    config: TaxonomyConfig,
    llm: LLM | None,
    map_subtrees: TaskMap = run_serially,
    vectors: np.ndarray | None = None,
) -> dict[str, str]:
    """README text of every directory of `tree` (tree path -> text); with `vectors` (row i
    for `memories[i]`) each README says what its whole subtree holds (`subtree_summaries`).

    Above `coarse_threshold` memories each top-level subtree is composed by one call of
    `map_subtrees` (a README depends only on its directory, its children and its highlights, so
    the parts are independent); a small tree is composed in one go, where shipping parts would
    cost more.
    """
    large = len(memories) > config.coarse_threshold
    subtrees = (
        subtree_summaries(
            tree, memories, vectors, chunk_paths, map_subtrees if large else run_serially
        )
        if vectors is not None
        else {}
    )
    if not large:
        return compose_subtree_readmes(tree, memories, chunk_paths, llm, subtrees)
    by_index = {memory.index: memory for memory in memories}
    calls = []
    for subtree in tree.children:
        indices = [i for node in subtree.iter_nodes() for i in node.chunk_indices]
        part = [by_index[i] for i in indices]
        part_subtrees = {
            node.path: subtrees[node.path] for node in subtree.iter_nodes() if node.path in subtrees
        }
        paths = {i: chunk_paths[i] for i in indices}
        calls.append((subtree, part, paths, llm, part_subtrees))
    texts: dict[str, str] = {}
    for part, usage in map_subtrees(_subtree_readmes_and_usage, calls):
        texts.update(part)
        add_usage(llm, usage)
    root = ReadmeRequest(
        node=tree,
        child_dirs=list(tree.children),
        files=[],
        subtree=subtrees.get("/", NO_SUMMARY),
    )
    texts["/"] = readmes([root], llm)[0]
    return texts


def _subtree_readmes_and_usage(
    node: DirectoryNode,
    memories: Sequence[MemorizedChunk],
    chunk_paths: Mapping[int, str],
    llm: LLM | None,
    subtrees: Mapping[str, SubtreeSummary],
) -> tuple[dict[str, str], dict]:
    """`compose_subtree_readmes` and the LLM usage it recorded: on Ray the LLM is a copy in a
    task, whose ledger would be lost (in this process, taking and adding it back is a no-op)."""
    texts = compose_subtree_readmes(node, memories, chunk_paths, llm, subtrees)
    return texts, take_usage(llm).model_dump(mode="json")


def compose_subtree_readmes(
    node: DirectoryNode,
    memories: Sequence[MemorizedChunk],
    chunk_paths: Mapping[int, str],
    llm: LLM | None,
    subtrees: Mapping[str, SubtreeSummary] | None = None,
) -> dict[str, str]:
    """README text for `node` and every directory below it (tree path -> text), each from the
    readme role."""
    by_index = {memory.index: memory for memory in memories}
    files_by_directory = {
        directory.path: [
            ReadmeFileEntry(
                name=chunk_paths[i].rsplit("/", 1)[-1],
                title=by_index[i].title,
                tldr=by_index[i].tldr,
            )
            for i in directory.chunk_indices
        ]
        for directory in node.iter_nodes()
    }
    requests = readme_requests(node, files_by_directory, subtrees)
    return {
        request.node.path: text
        for request, text in zip(requests, readmes(requests, llm), strict=True)
    }


def readme_vectors_of(tree: DirectoryNode, parts: MemoryParts) -> dict[str, np.ndarray]:
    """The vector of every README (tree path -> vector): its subtree's mean memory direction
    (`subtree_mean_vectors`), so a commit embeds no README text."""
    row_of = {memory.index: row for row, memory in enumerate(parts.memories)}
    return subtree_mean_vectors(tree, parts.memory_vectors, row_of)
