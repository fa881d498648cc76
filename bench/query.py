"""Query latency: POST /query and POST /search through Ray Serve, and in-process hybrid search.

    python bench/query.py [--sizes 1000 10000] [--requests 200] [--clients 1 8] [--skip-100k]
    python bench/query.py --sweep [--sweep-clients 1 8 32 64] [--sweep-replicas 1 2]

`--sweep` measures only the behaviour under load instead (bench/serve_load.py): req/s, p50,
p95, p99 and 503s of POST /query with 1-64 closed-loop clients against 1 and 2 replicas.

Prints one table: p50/p95 latency of /query and /search at each store size with 1 and N
concurrent clients (threads, one httpx client each, 127.0.0.1 only), next to a trivial Serve
endpoint measured in the same run (the floor of any endpoint on this machine), then
`Searcher.search(mode="hybrid")` in this process at 100k chunks.

Stores are synthesized, not ingested (real ingestion embeds about 20 chunks/s here): every
memory is 2-6 real sentences (HotpotQA Wikipedia paragraphs and QMSum meeting turns) sampled
from a pool of POOL_SIZE sentences that is embedded once; each sentence reuses its real vector
plus small Gaussian noise, the chunk vector is their normalized mean, and memorize, the
taxonomy, the READMEs, their vectors (as ingest embeds them) and `write_store` (an HNSW faiss
index from 20k memories on) are the project's own. The 100k store, used only for in-process
hybrid search, which never reads READMEs, skips the README vectors (21k READMEs, about half an
hour on one thread). Pool and stores are cached under bench/out/. Questions are 10-word
fragments of pool sentences, never the same text twice in one run: the retriever caches query
vectors, and a repeated question would measure that cache rather than the model.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from memory_bank.config import AppConfig  # noqa: E402
from memory_bank.evaluation.dataset_files import development_eval_dir  # noqa: E402
from memory_bank.index.embedding import ChunkEncoding, Embedder  # noqa: E402
from memory_bank.schemas import Chunk, Document  # noqa: E402
from memory_bank.store.layout import is_store  # noqa: E402
from memory_bank.store.reader import StoreReader  # noqa: E402
from memory_bank.text.sentences import Span, split_sentences  # noqa: E402
from tests.load_client import free_port  # noqa: E402

EVAL_DATA = development_eval_dir(REPO)
OUT = REPO / "bench" / "out" / "query"
POOL_SIZE = 6000
NOISE = 0.005  # per dimension: cosine to the real sentence vector about 0.995
CHUNKS_PER_DOCUMENT = 8
PLAN_LIMIT = 10_000  # above this, flat_fallback instead of plan_taxonomy (minutes otherwise)
# v3: README vectors are subtree means, at every size
RECIPE = f"pool{POOL_SIZE}-noise{NOISE}-doc{CHUNKS_PER_DOCUMENT}-v3"
IN_PROCESS_SIZE = 100_000
TARGETS = {"query_p50": 50.0, "query_p95": 150.0, "hybrid_100k_p50": 20.0}
WARMUP_PER_CLIENT = 3  # untimed requests per client (or in-process) before timing starts


# --- the sentence pool --------------------------------------------------------------------------


@dataclass
class Pool:
    sentences: list[str]
    vectors: np.ndarray  # (len(sentences), 384), L2-normalized


def real_sentences() -> list[str]:
    """Wikipedia sentences (HotpotQA corpus) and longer meeting turns (QMSum), deduplicated."""
    found: set[str] = set()
    corpus = json.loads((EVAL_DATA / "hotpotqa" / "hotpotqa_train_100_corpus.json").read_text())
    for paragraph in corpus.values():
        for sentence in paragraph if isinstance(paragraph, list) else [paragraph]:
            found.add(" ".join(str(sentence).split()))
    for meeting in sorted((EVAL_DATA / "qmsum" / "val").glob("*.json")):
        for turn in json.loads(meeting.read_text())["meeting_transcripts"]:
            found.update(" ".join(s.split()) for s in split_sentences(turn["content"]))
    return sorted(s for s in found if 8 <= len(s.split()) <= 60)


def load_pool(embedder: Embedder) -> Pool:
    texts_file, vectors_file = OUT / "pool.json", OUT / "pool_vectors.npy"
    if texts_file.exists() and vectors_file.exists():
        return Pool(json.loads(texts_file.read_text()), np.load(vectors_file))
    candidates = real_sentences()
    rng = np.random.default_rng(0)
    chosen = sorted(
        rng.choice(len(candidates), size=min(POOL_SIZE, len(candidates)), replace=False)
    )
    sentences = [candidates[i] for i in chosen]
    print(f"embedding a pool of {len(sentences)} real sentences once ...", flush=True)
    vectors = embedder.encode(sentences)
    OUT.mkdir(parents=True, exist_ok=True)
    texts_file.write_text(json.dumps(sentences))
    np.save(vectors_file, vectors)
    return Pool(sentences, vectors)


# --- synthetic stores ---------------------------------------------------------------------------


def _normalized(vectors: np.ndarray) -> np.ndarray:
    return (vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)).astype(np.float32)


def synthesize_store(store: Path, size: int, pool: Pool, config: AppConfig) -> str:
    """Write a store of `size` memories (cached); returns how its tree was made."""
    tree_kind = "plan_taxonomy" if size <= PLAN_LIMIT else "flat_fallback"
    if is_store(store):
        meta = StoreReader(store).meta
        if meta.get("bench_recipe") == RECIPE and meta.get("total_chunks") == size:
            return tree_kind
    from memory_bank.ingest.stages import (
        assemble_parts,
        compose_readmes,
        ensure_valid_tree,
        readme_vectors_of,
    )
    from memory_bank.memorize.extractive import memorize_offline
    from memory_bank.store.files import assign_chunk_paths
    from memory_bank.store.snapshot import StoreSnapshot
    from memory_bank.store.writer import meta_extra_from_config, write_store
    from memory_bank.taxonomy import TaxonomyItem, flat_fallback, plan_taxonomy
    from memory_bank.text.tokens import count_tokens

    started = time.perf_counter()
    rng = np.random.default_rng(size)
    documents: list[Document] = []
    chunks: list[Chunk] = []
    encodings: list[ChunkEncoding] = []
    for first in range(0, size, CHUNKS_PER_DOCUMENT):
        texts = []
        for _ in range(min(CHUNKS_PER_DOCUMENT, size - first)):
            picks = rng.choice(len(pool.sentences), size=int(rng.integers(2, 7)), replace=False)
            spans, cursor = [], 0
            for pick in picks:
                spans.append(Span(cursor, cursor + len(pool.sentences[pick])))
                cursor = spans[-1].end + 1
            noisy = _normalized(pool.vectors[picks] + rng.normal(0, NOISE, (len(picks), 384)))
            texts.append(" ".join(pool.sentences[pick] for pick in picks))
            encodings.append(ChunkEncoding(_normalized(noisy.mean(axis=0)), spans, noisy))
        document = _document(texts, first // CHUNKS_PER_DOCUMENT)
        documents.append(document)
        offset = 0
        for position, text in enumerate(texts):
            chunks.append(
                Chunk(
                    chunk_id=f"{document.document_id}-{position:05d}",
                    document_id=document.document_id,
                    source=document.source,
                    position=position,
                    text=text,
                    token_count=count_tokens(text),
                    start_char=offset,
                    end_char=offset + len(text),
                )
            )
            offset += len(text) + 2
    memories = [
        memorize_offline(chunk, encoding, index, config.memorize)
        for index, (chunk, encoding) in enumerate(zip(chunks, encodings, strict=True))
    ]
    parts = assemble_parts(chunks, encodings, memories)
    parts.documents = documents
    indices = [memory.index for memory in parts.memories]
    if tree_kind == "plan_taxonomy":
        items = [TaxonomyItem.from_memory(memory) for memory in parts.memories]
        tree = plan_taxonomy(items, parts.memory_vectors, config.taxonomy)
        tree = ensure_valid_tree(tree, indices, config.taxonomy)
    else:
        tree = flat_fallback(indices, config.taxonomy)
    readmes = compose_readmes(
        tree,
        parts.memories,
        assign_chunk_paths(tree, parts.memories),
        config.taxonomy,
        None,  # the offline roles
    )
    readme_vectors = readme_vectors_of(tree, parts)
    writing_started = time.perf_counter()
    snapshot = StoreSnapshot(
        parts=parts,
        tree=tree,
        readmes=readmes,
        meta={**meta_extra_from_config(config), "bench_recipe": RECIPE},
        readme_vectors=readme_vectors,
    )
    write_store(store, snapshot, taxonomy_config=config.taxonomy)
    print(f"  write_store took {time.perf_counter() - writing_started:.0f} s", flush=True)
    print(
        f"synthesized {store.name}: {size} memories in {time.perf_counter() - started:.0f} s",
        flush=True,
    )
    return tree_kind


def _document(chunk_texts: list[str], number: int) -> Document:
    """A synthetic source document made of its chunks, separated by blank lines."""
    text = "\n\n".join(chunk_texts)
    source = f"synthetic/document_{number:05d}.md"
    document_id = hashlib.sha256(text.encode()).hexdigest()[:16]
    return Document(
        document_id=document_id, source=source, title=source, kind="markdown", text=text
    )


class Questions:
    """10-word fragments of pool sentences in a seeded random order, each handed out once."""

    def __init__(self, pool: Pool, seed: int) -> None:
        order = np.random.default_rng(seed).permutation(len(pool.sentences))
        fragments = (" ".join(pool.sentences[i].split()[:10]) for i in order)
        self._unused = list(dict.fromkeys(fragments))  # sentences may share their first words
        self._next = 0

    def take(self, count: int) -> list[str]:
        if self._next + count > len(self._unused):
            raise SystemExit(f"the pool has too few sentences for {count} more distinct questions")
        taken = self._unused[self._next : self._next + count]
        self._next += count
        return taken


# --- measuring ----------------------------------------------------------------------------------


@dataclass
class Row:
    size: str
    what: str
    clients: int | str
    latencies_ms: list[float]
    seconds: float

    def cells(self) -> list[str]:
        p50, p95 = np.percentile(self.latencies_ms, [50, 95])
        rate = f"{len(self.latencies_ms) / self.seconds:.1f}" if self.seconds else "-"
        return [
            self.size,
            self.what,
            str(self.clients),
            str(len(self.latencies_ms)),
            f"{p50:.1f}",
            f"{p95:.1f}",
            rate,
        ]

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.latencies_ms, q))


def time_http(
    url: str, bodies: list[dict], clients: int, warmup_bodies: list[dict]
) -> tuple[list[float], float]:
    """POST each body once, spread over `clients` threads with one connection each.

    Every thread first sends its share of `warmup_bodies` untimed (opening its connection); the
    timed part starts for all threads at once, and the returned seconds cover only that part.
    """
    import httpx

    start_line = threading.Barrier(clients + 1, timeout=1800)

    def worker(warmup: list[dict], share: list[dict]) -> list[float]:
        latencies = []
        with httpx.Client(timeout=600.0) as http:
            for body in warmup:
                http.post(url, json=body).raise_for_status()
            start_line.wait()
            for body in share:
                started = time.perf_counter()
                http.post(url, json=body).raise_for_status()
                latencies.append((time.perf_counter() - started) * 1000)
        return latencies

    shares = [(warmup_bodies[i::clients], bodies[i::clients]) for i in range(clients)]
    with ThreadPoolExecutor(clients) as threads:
        futures = [threads.submit(worker, *share) for share in shares]
        start_line.wait()
        started = time.perf_counter()
        results = [future.result() for future in futures]
    return [ms for share in results for ms in share], time.perf_counter() - started


def time_calls(
    call: Callable[[str], object], inputs: list[str], warmup_inputs: list[str]
) -> list[float]:
    for text in warmup_inputs:
        call(text)
    latencies = []
    for text in inputs:
        started = time.perf_counter()
        call(text)
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def floor_application():
    """A Serve deployment with a FastAPI ingress that returns {"ok": true} and does nothing else."""
    from fastapi import FastAPI
    from ray import serve

    floor_api = FastAPI()

    @serve.deployment(name="Floor", ray_actor_options={"num_cpus": 0})
    @serve.ingress(floor_api)
    class Floor:
        @floor_api.post("/")
        def ping(self) -> dict[str, bool]:
            return {"ok": True}

    return Floor.bind()


def serve_rows(
    stores: dict[int, Path], pool: Pool, args: argparse.Namespace, config: AppConfig
) -> list[Row]:
    import ray
    from ray import serve

    from actors.serve_app import APP_NAME, build_app_for

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}},
    )
    rows: list[Row] = []
    try:
        port = free_port()
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        base = f"http://127.0.0.1:{port}"
        serve.run(floor_application(), name="floor", route_prefix="/floor")
        for size, store in stores.items():
            started = time.perf_counter()
            serve.run(build_app_for(store, config), name=APP_NAME, route_prefix="/")
            print(
                f"deployed the {size}-chunk store in {time.perf_counter() - started:.1f} s",
                flush=True,
            )
            questions = Questions(pool, seed=size)
            endpoints: dict[str, tuple[str, Callable[[str], dict]]] = {
                "floor {ok}": ("/floor/", lambda text: {}),
                "/search hybrid": ("/search", lambda text: {"query": text, "top_k": 5}),
                "/query": ("/query", lambda text: {"question": f"What is said about {text}?"}),
            }
            for what, (path, body) in endpoints.items():
                for clients in args.clients:
                    warmup = [body(text) for text in questions.take(WARMUP_PER_CLIENT * clients)]
                    bodies = [body(text) for text in questions.take(args.requests)]
                    latencies, seconds = time_http(base + path, bodies, clients, warmup)
                    rows.append(Row(f"{size:,}", what, clients, latencies, seconds))
                    print("  " + "  ".join(rows[-1].cells()), flush=True)
    finally:
        serve.shutdown()
        ray.shutdown()
    return rows


def in_process_rows(store: Path, pool: Pool, embedder: Embedder, requests: int) -> list[Row]:
    """Searcher.search(hybrid) in this process, and what its parts cost."""
    from memory_bank.index.corpus import StoreCorpus
    from memory_bank.index.hybrid import HybridSearch
    from memory_bank.index.search import Searcher

    started = time.perf_counter()
    hybrid = HybridSearch(StoreCorpus(StoreReader(store)), embedder, AppConfig().retrieval)
    searcher = Searcher(hybrid)
    searcher.search("warm up", top_k=5, mode="hybrid")
    print(
        f"opened the {store.name} store in-process in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    questions = Questions(pool, seed=7)
    # The parts get their query vectors straight from the model, so none of these texts is in
    # the search's query cache when "hybrid search" (which embeds through it) is timed.
    warmup, texts = questions.take(WARMUP_PER_CLIENT), questions.take(requests)
    vectors = dict(zip(warmup + texts, embedder.encode(warmup + texts), strict=True))
    size = f"{hybrid.corpus.num_chunks:,}"
    parts = {
        "hybrid search": lambda text: searcher.search(text, top_k=5, mode="hybrid"),
        "  query embed": lambda text: embedder.encode([text]),
        "  bm25 scores": hybrid.bm25_scores,
        "  faiss top-50": lambda text: hybrid.vector_candidates(vectors[text], 50),
        "  hybrid rescore": lambda text: hybrid.hybrid_candidates(text, vectors[text]),
    }
    return [
        Row(size, what, "in-proc", time_calls(call, texts, warmup), 0.0)
        for what, call in parts.items()
    ]


def print_table(rows: list[Row]) -> None:
    header = ["chunks", "endpoint", "clients", "n", "p50 ms", "p95 ms", "req/s"]
    table = [header] + [row.cells() for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for number, line in enumerate(table):
        print(
            "  ".join(
                cell.rjust(width) if i > 1 else cell.ljust(width)
                for i, (cell, width) in enumerate(zip(line, widths, strict=True))
            )
        )
        if number == 0:
            print("  ".join("-" * width for width in widths))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument(
        "--requests", type=int, default=200, help="requests per (size, endpoint, clients)"
    )
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8])
    parser.add_argument(
        "--skip-100k", action="store_true", help="skip the in-process 100k measurement"
    )
    parser.add_argument(
        "--runtime",
        choices=("torch", "onnx"),
        default=None,
        help="embedding runtime (default: config)",
    )
    parser.add_argument("--precision", default=None, help="embedding precision (default: config)")
    parser.add_argument(
        "--query-precision", default=None, help="query precision, onnx (default: config)"
    )
    parser.add_argument(
        "--in-process-only", action="store_true", help="only the in-process 100k measurement"
    )
    parser.add_argument("--sweep", action="store_true", help="the concurrency sweep only")
    parser.add_argument("--sweep-clients", type=int, nargs="+", default=[1, 8, 32, 64, 128])
    parser.add_argument("--sweep-replicas", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--sweep-seconds", type=float, default=20.0, help="per row")
    parser.add_argument(
        "--sweep-config", help="YAML config (its serve: section); default: built-in"
    )
    args = parser.parse_args()
    if args.sweep:
        from bench.serve_load import print_sweep, sweep
        from memory_bank.config import load_config

        settings = load_config(args.sweep_config)
        rows = sweep(
            args.sweep_clients, args.sweep_replicas, args.sweep_seconds, free_port(), settings
        )
        print_sweep(rows, args.sweep_seconds)
        return

    config = AppConfig()
    # One embedding thread, as in a Serve replica (actors/serve_model.py).
    chosen = {
        "num_threads": 1,
        "runtime": args.runtime,
        "precision": args.precision,
        "query_precision": args.query_precision,
    }
    config.embedding = config.embedding.model_validate(
        {**config.embedding.model_dump(), **{k: v for k, v in chosen.items() if v is not None}}
    )
    embedder = Embedder(config.embedding)
    pool = load_pool(embedder)
    sizes = [] if args.in_process_only else sorted(set(args.sizes))
    stores = {size: OUT / f"store_{size}" for size in sizes}
    made = {size: synthesize_store(store, size, pool, config) for size, store in stores.items()}
    if not args.skip_100k:
        stores_100k = OUT / f"store_{IN_PROCESS_SIZE}"
        made[IN_PROCESS_SIZE] = synthesize_store(stores_100k, IN_PROCESS_SIZE, pool, config)

    rows = serve_rows(stores, pool, args, config) if stores else []
    if not args.skip_100k:
        rows += in_process_rows(stores_100k, pool, embedder, args.requests)

    print()
    print(
        f"Stores: synthetic ({RECIPE}); memories = 2-6 real sentences from a pool of "
        f"{len(pool.sentences)} (HotpotQA corpus + QMSum transcripts), real MiniLM vectors + "
        f"N(0, {NOISE}) noise, offline memorize, READMEs composed, written by write_store; trees: "
        + ", ".join(f"{size:,} {kind}" for size, kind in made.items())
        + "."
    )
    print(
        "Serve: 1 replica (1 CPU, 1 torch thread), ray.init(num_cpus=2), 127.0.0.1; clients are "
        "threads in this process, one httpx connection each. In-process: 1 embedding thread "
        f"({config.embedding.runtime}, precision {config.embedding.precision}, queries "
        f"{config.embedding.query_precision})."
    )
    print()
    print_table(rows)
    print()
    for row in rows:
        if row.what == "/query" and row.clients == 1 and row.size == f"{10_000:,}":
            print(
                f"target /query @10k, 1 client: p50 {row.percentile(50):.1f} ms (<= {TARGETS['query_p50']:.0f}), "
                f"p95 {row.percentile(95):.1f} ms (<= {TARGETS['query_p95']:.0f})"
            )
        if row.what == "hybrid search":
            print(
                f"target in-process hybrid @{row.size}: p50 {row.percentile(50):.1f} ms "
                f"(<= {TARGETS['hybrid_100k_p50']:.0f})"
            )


if __name__ == "__main__":
    main()
