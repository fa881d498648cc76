"""Small real stores for the query-side tests: hand-written memories, real embeddings.

Each memory is one short document kept whole (as offline memorize keeps short chunks), placed in
a hand-made two-level tree with READMEs composed from the children, and written by `write_store`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memory_bank.config import AppConfig
from memory_bank.index.embedding import Embedder
from memory_bank.ingest.stages import readme_vectors_of
from memory_bank.schemas import Chunk, DirectoryNode, Document, MemorizedChunk
from memory_bank.store import (
    MemoryParts,
    SentenceRecord,
    StoreSnapshot,
    meta_extra_from_config,
    write_store,
)
from tests.support import shared_embedder  # noqa: F401 - re-exported for the query tests


@dataclass(frozen=True)
class Note:
    title: str
    keywords: tuple[str, ...]
    text: str


# directory path -> (description, notes); parents get their description here too.
ML_TECH_STORE: dict[str, tuple[str, list[Note]]] = {
    "/programming": ("Programming languages and frameworks: Python internals and React.", []),
    "/programming/python": (
        "Python concurrency, asyncio and static typing.",
        [
            Note(
                "python_gil_threading",
                ("gil", "threading", "cpython"),
                "The Global Interpreter Lock (GIL) in CPython allows only one thread to execute Python "
                "bytecode at a time. Threads still help for I/O-bound work because the GIL is released "
                "while waiting on sockets and files. CPU-bound code should use multiprocessing instead.",
            ),
            Note(
                "python_asyncio_event_loop",
                ("asyncio", "event loop", "coroutines"),
                "asyncio runs coroutines on a single-threaded event loop. An await expression suspends "
                "the coroutine until the awaited future completes, letting other tasks run. "
                "asyncio.gather schedules several coroutines concurrently and collects their results.",
            ),
            Note(
                "python_type_hints_mypy",
                ("type hints", "mypy", "typing"),
                "Python type hints annotate function parameters and return values, as introduced by "
                "PEP 484 in Python 3.5. They are not enforced at runtime. A static type checker such as "
                "mypy reads the annotations and reports type errors before the program runs.",
            ),
        ],
    ),
    "/programming/react": (
        "React hooks for state, effects and reusable logic.",
        [
            Note(
                "react_usestate_hook",
                ("react", "hooks", "usestate"),
                "React hooks let function components use state and other React features without "
                "writing a class. The useState hook returns the current state value and a setter "
                "function; calling the setter re-renders the component with the new value.",
            ),
            Note(
                "react_useeffect_hook",
                ("react", "useeffect", "side effects"),
                "The useEffect hook runs side effects such as data fetching or subscriptions after "
                "React renders a component. Its dependency array controls when the effect runs again, "
                "and the function it returns cleans up before the next run.",
            ),
            Note(
                "react_rules_of_hooks",
                ("rules of hooks", "custom hooks"),
                "Hooks must be called at the top level of a component, never inside loops or "
                "conditions, so that React can match each hook call to its state between renders. "
                "Custom hooks are functions whose names start with use and that call other hooks.",
            ),
        ],
    ),
    "/ml": ("Machine learning: transformers, convolutional and recurrent neural networks.", []),
    "/ml/transformers": (
        "Transformer models, self-attention and BERT.",
        [
            Note(
                "transformer_self_attention",
                ("self-attention", "transformer", "queries keys values"),
                "The transformer architecture replaces recurrence with self-attention. Each token is "
                "projected to a query, a key and a value; attention weights are the softmax of the "
                "scaled dot products of queries and keys, and they mix the values.",
            ),
            Note(
                "multi_head_attention",
                ("multi-head attention", "heads"),
                "Multi-head attention runs several attention heads in parallel, each with its own "
                "projections, so the model can attend to different positions and relations at once. "
                "The original transformer used 8 heads with a model dimension of 512.",
            ),
            Note(
                "bert_pretraining",
                ("bert", "masked language model", "pretraining"),
                "BERT is a bidirectional transformer encoder published by Google in 2018. It is "
                "pretrained with masked language modeling, predicting 15 percent of tokens that are "
                "masked out, and with next sentence prediction, then fine-tuned on downstream tasks.",
            ),
        ],
    ),
    "/ml/vision": (
        "Convolutional neural networks for images.",
        [
            Note(
                "cnn_convolution_layers",
                ("cnns", "convolution", "filters"),
                "Convolutional neural networks (CNNs) slide small learned filters over an image to "
                "detect local patterns such as edges and textures. Weight sharing across positions makes "
                "CNNs translation equivariant and far cheaper than fully connected layers.",
            ),
            Note(
                "cnn_pooling_resnet",
                ("pooling", "resnet", "residual connections"),
                "Pooling layers in CNNs downsample feature maps to grow the receptive field. ResNet "
                "added residual connections that let gradients flow through very deep networks of "
                "152 layers.",
            ),
        ],
    ),
    "/ml/sequence": (
        "Recurrent neural networks, LSTMs and GRUs for sequences.",
        [
            Note(
                "rnn_hidden_state",
                ("rnns", "recurrent", "hidden state"),
                "Recurrent neural networks (RNNs) process a sequence one step at a time and carry a "
                "hidden state from each step to the next. Training them with backpropagation through "
                "time suffers from vanishing gradients on long sequences.",
            ),
            Note(
                "lstm_gates",
                ("lstm", "gates", "gru"),
                "Long short-term memory networks (LSTMs) add input, forget and output gates to the "
                "recurrent cell so information can persist over hundreds of steps. The GRU is a "
                "lighter variant with two gates.",
            ),
        ],
    ),
    "/databases": (
        "Relational databases: indexes and transactions.",
        [
            Note(
                "database_btree_indexes",
                ("b-tree", "index", "sql"),
                "Relational databases use B-tree indexes to find rows without scanning the whole "
                "table. A composite index on two columns helps queries that filter on its leading "
                "column.",
            ),
            Note(
                "database_acid_transactions",
                ("acid", "transactions", "isolation"),
                "ACID transactions are atomic, consistent, isolated and durable. PostgreSQL uses "
                "multiversion concurrency control so readers never block writers.",
            ),
        ],
    ),
}

PYTHON_ONLY_STORE: dict[str, tuple[str, list[Note]]] = {
    "/python": ML_TECH_STORE["/programming/python"],
}


def build_store(
    store_dir: Path,
    layout: dict[str, tuple[str, list[Note]]],
    embedder: Embedder,
    readme_vectors: bool = True,
) -> Path:
    """Write `layout` as a complete store at `store_dir` and return the directory.

    `readme_vectors=False` writes a store as it was before ingest stored README vectors.
    """
    documents: list[Document] = []
    chunks: list[Chunk] = []
    memories: list[MemorizedChunk] = []
    placements: dict[str, list[int]] = {}
    for directory, (_, notes) in layout.items():
        for note in notes:
            index = len(memories)
            document_id = hashlib.sha256(note.text.encode("utf-8")).hexdigest()[:16]
            source = f"docs{directory}/{note.title}.md"
            chunk_id = f"{document_id}-00000"
            documents.append(
                Document(
                    document_id=document_id,
                    source=source,
                    title=note.title,
                    kind="markdown",
                    text=note.text,
                )
            )
            chunks.append(
                Chunk(
                    chunk_id=chunk_id,
                    document_id=document_id,
                    source=source,
                    position=0,
                    text=note.text,
                    token_count=len(note.text.split()),
                    start_char=0,
                    end_char=len(note.text),
                )
            )
            memories.append(
                MemorizedChunk(
                    index=index,
                    title=note.title,
                    memory=note.text,
                    tldr=note.text.split(". ")[0].rstrip(".") + ".",
                    keywords=list(note.keywords),
                    metadata={
                        "source": source,
                        "document_id": document_id,
                        "chunk_id": chunk_id,
                        "token_count": len(note.text.split()),
                    },
                )
            )
            placements.setdefault(directory, []).append(index)

    encodings = embedder.encode_chunks([chunk.text for chunk in chunks]) if chunks else []
    sentences: list[SentenceRecord] = []
    sentence_vectors = []
    for memory, chunk, encoding in zip(memories, chunks, encodings, strict=True):
        for number, span in enumerate(encoding.sentence_spans):
            sentences.append(
                SentenceRecord(
                    chunk_id=chunk.chunk_id,
                    index=memory.index,
                    sentence=number,
                    start_char=span.start,
                    end_char=span.end,
                    text=chunk.text[span.start : span.end],
                )
            )
            sentence_vectors.append(encoding.sentence_vectors[number])

    tree = _tree(layout, placements)
    readmes = _readmes(tree, layout, memories)
    parts = MemoryParts(
        documents=documents,
        chunks=chunks,
        memories=memories,
        memory_vectors=np.array([e.vector for e in encodings], dtype=np.float32).reshape(-1, 384),
        sentences=sentences,
        sentence_vectors=np.array(sentence_vectors, dtype=np.float32).reshape(-1, 384),
    )
    snapshot = StoreSnapshot(
        parts=parts,
        tree=tree,
        readmes=readmes,
        meta=meta_extra_from_config(AppConfig()),
        readme_vectors=readme_vectors_of(tree, parts) if readme_vectors else None,
    )
    write_store(store_dir, snapshot)
    return store_dir


def _tree(
    layout: dict[str, tuple[str, list[Note]]], placements: dict[str, list[int]]
) -> DirectoryNode:
    nodes = {"/": DirectoryNode(path="/", name="", description="Everything in this memory.")}
    for directory in sorted(layout, key=lambda path: path.count("/")):
        parent = directory.rsplit("/", 1)[0] or "/"
        node = DirectoryNode(
            path=directory,
            name=directory.rsplit("/", 1)[1],
            description=layout[directory][0],
            chunk_indices=placements.get(directory, []),
        )
        nodes[directory] = node
        nodes[parent].children.append(node)
    return nodes["/"]


def _readmes(
    tree: DirectoryNode, layout: dict[str, tuple[str, list[Note]]], memories: list[MemorizedChunk]
) -> dict[str, str]:
    readmes = {}
    for node in tree.iter_nodes():
        heading = "Memory" if node.path == "/" else node.name.replace("_", " ").title()
        description = layout[node.path][0] if node.path in layout else node.description
        lines = [f"# {heading}", "", description, "", "## Contents", ""]
        lines += [f"- **{child.name}/**: {layout[child.path][0]}" for child in node.children]
        lines += [f"- **{memories[i].title}.md**: {memories[i].tldr}" for i in node.chunk_indices]
        readmes[node.path] = "\n".join(lines) + "\n"
    return readmes
