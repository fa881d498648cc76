"""The split, place and organize-per-subtree roles of the `openai` backend through the real client
and the loopback server, their fallbacks, and the typed roles later issues fill in."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from memory_bank.app.bank import MemoryBank
from memory_bank.config import AppConfig, ChunkConfig, TaxonomyConfig
from memory_bank.index.embedding import Embedder
from memory_bank.ingest.executor import LocalExecutor
from memory_bank.ingest.stages import chunk_documents
from memory_bank.llm.endpoint import OpenAICompatible
from memory_bank.research import roles as research_roles
from memory_bank.schemas import Document
from memory_bank.session import roles as session_roles
from memory_bank.store.reader import StoreReader
from memory_bank.taxonomy import validate_taxonomy
from memory_bank.taxonomy.items import TaxonomyItem
from memory_bank.taxonomy.organize_role import organize
from memory_bank.taxonomy.roles import OrganizeRequest
from tests.llm_roles import register_literal_model
from tests.loopback_llm import LoopbackLLM, loopback_llm_server

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"

llm_server = pytest.fixture(loopback_llm_server)


@pytest.fixture
def llm(llm_server: LoopbackLLM) -> LoopbackLLM:
    llm_server.reset()
    return register_literal_model(llm_server)


def _llm_settings(llm: LoopbackLLM, tmp_path: Path, **overrides: object) -> dict:
    return {
        "backend": "openai",
        "base_url": llm.base_url,
        "model": "loopback-1",
        "cache_dir": str(tmp_path / "llm-cache"),
        "timeout_seconds": 5,
        **overrides,
    }


def _long_section_document(name: str = "long") -> Document:
    sentences = [
        f"Sentence {n} of the {name} section talks about topic {n // 4} in some detail here."
        for n in range(40)
    ]
    text = "# Short intro\n\nAn opening paragraph.\n\n# Long section\n\n" + " ".join(sentences)
    return Document(
        document_id=f"doc-{name}", source=f"{name}.md", title=name, kind="markdown", text=text
    )


def test_the_split_role_chooses_the_cuts_of_an_overlong_section(
    llm: LoopbackLLM, tmp_path: Path
) -> None:
    config = ChunkConfig(min_tokens=20, max_tokens=120)
    document = _long_section_document()
    own = chunk_documents([document], config, None)
    backend = OpenAICompatible(AppConfig.model_validate({"llm": _llm_settings(llm, tmp_path)}).llm)
    chosen = chunk_documents([document], config, backend)

    (request,) = llm.requests_for("split")
    assert all(chunk.token_count <= config.max_tokens for chunk in chosen)
    assert "".join(c.text for c in chosen).replace(" ", "") == "".join(c.text for c in own).replace(
        " ", ""
    )
    # The literal model cuts as late as fits; the chunker itself evens the pieces out.
    assert [c.end_char for c in chosen] != [c.end_char for c in own]
    assert backend.ledger.peek().roles["split"].calls == 1
    assert "pieces" in request["body"]["messages"][1]["content"]

    again = chunk_documents([document], config, OpenAICompatible(backend.config))
    assert [c.text for c in again] == [c.text for c in chosen]
    assert len(llm.requests_for("split")) == 1  # the same section again: from the cache


def test_the_overlong_sections_of_several_documents_go_in_one_split_request(
    llm: LoopbackLLM, tmp_path: Path
) -> None:
    config = ChunkConfig(min_tokens=20, max_tokens=120)
    documents = [_long_section_document(name) for name in ("rivers", "violins", "compilers")]
    settings = AppConfig.model_validate({"llm": _llm_settings(llm, tmp_path)}).llm
    together = chunk_documents(documents, config, OpenAICompatible(settings))

    (request,) = llm.requests_for("split")
    sources = [section["source"] for section in _role_input(request)["sections"]]
    assert sources == ["rivers.md", "violins.md", "compilers.md"]
    # Each document is cut as it would be on its own (asked one by one, with another cache).
    alone = OpenAICompatible(settings.model_copy(update={"cache": False}))
    one_by_one = [chunk for doc in documents for chunk in chunk_documents([doc], config, alone)]
    assert [c.text for c in together] == [c.text for c in one_by_one]
    assert len(llm.requests_for("split")) == 1 + len(documents)


def test_split_requests_stay_within_the_token_budget(llm: LoopbackLLM, tmp_path: Path) -> None:
    config = ChunkConfig(min_tokens=20, max_tokens=120)
    documents = [_long_section_document(name) for name in ("rivers", "violins", "compilers")]
    section_tokens = 750  # a little more than each long section here
    settings = AppConfig.model_validate(
        {"llm": _llm_settings(llm, tmp_path, split_max_tokens=2 * section_tokens)}
    ).llm
    chunk_documents(documents, config, OpenAICompatible(settings))
    asked = [len(_role_input(r)["sections"]) for r in llm.requests_for("split")]
    assert sorted(asked) == [1, 2]
    for record in llm.requests_for("split"):
        pieces = [p for s in _role_input(record)["sections"] for p in s["pieces"]]
        assert sum(piece["tokens"] for piece in pieces) <= settings.split_max_tokens


def test_split_replies_that_break_the_bounds_keep_the_chunkers_cuts(
    llm: LoopbackLLM, tmp_path: Path
) -> None:
    llm.handle("split", lambda data, _: {"splits": [{"section": 0, "cuts": [1]}]})
    config = ChunkConfig(min_tokens=20, max_tokens=120)
    document = _long_section_document()
    backend = OpenAICompatible(AppConfig.model_validate({"llm": _llm_settings(llm, tmp_path)}).llm)
    chosen = chunk_documents([document], config, backend)
    assert [c.text for c in chosen] == [c.text for c in chunk_documents([document], config, None)]
    usage = backend.ledger.take().roles["split"]
    assert (usage.calls, usage.repairs, usage.fallbacks) == (3, 2, 1)


def _items(count: int) -> tuple[list[TaxonomyItem], np.ndarray]:
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(4, 384))
    vectors = np.stack([centers[i % 4] + 0.05 * rng.normal(size=384) for i in range(count)])
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    topics = ["rivers", "volcanoes", "violins", "compilers"]
    items = [
        TaxonomyItem(
            index=i, title=f"{topics[i % 4]}_note_{i}", tldr=f"A note on {topics[i % 4]}.",
            keywords=[topics[i % 4]],
        )
        for i in range(count)
    ]  # fmt: skip
    return items, vectors


def test_organize_plans_each_coarse_group_in_its_own_request(
    llm: LoopbackLLM, tmp_path: Path
) -> None:
    taxonomy = TaxonomyConfig(coarse_threshold=20)
    items, vectors = _items(60)
    backend = OpenAICompatible(AppConfig.model_validate({"llm": _llm_settings(llm, tmp_path)}).llm)

    result = organize(OrganizeRequest(items=items, vectors=vectors, config=taxonomy), backend)
    requests = llm.requests_for("organize")
    assert len(requests) >= 2 and not result.fallbacks
    sizes = [len(_role_input(r)["memories"]) for r in requests]
    assert sum(sizes) == 60 and max(sizes) < 60  # no request holds the whole store
    assert validate_taxonomy(result.tree, 60, taxonomy) == []
    assert {child.name.split("_")[0] for child in result.tree.children} <= {
        "rivers",
        "volcanoes",
        "violins",
        "compilers",
    }  # the model's names for the groups
    assert backend.ledger.take().roles["organize"].calls == len(requests)


def test_a_group_whose_plans_stay_invalid_gets_the_offline_plan(
    llm: LoopbackLLM, tmp_path: Path
) -> None:
    taxonomy = TaxonomyConfig(coarse_threshold=20)
    items, vectors = _items(60)
    backend = OpenAICompatible(AppConfig.model_validate({"llm": _llm_settings(llm, tmp_path)}).llm)
    llm.handle("organize", lambda data, _: {"leaves": [{"path": "/x", "memories": [0]}]})
    result = organize(OrganizeRequest(items=items, vectors=vectors, config=taxonomy), backend)
    groups = len(llm.requests_for("organize")) // 3
    assert groups >= 2 and sum("offline plan" in f for f in result.fallbacks) == groups
    assert validate_taxonomy(result.tree, 60, taxonomy) == []
    assert backend.ledger.take().roles["organize"].fallbacks == groups


def _role_input(record: dict) -> dict:
    import json

    content = record["body"]["messages"][1]["content"]
    return json.loads(content.split("```json\n")[1].split("\n```")[0])


def _science_store(
    llm: LoopbackLLM, tmp_path: Path, embedder: Embedder
) -> tuple[MemoryBank, AppConfig, Path]:
    """A store of the sample's science articles but the last, which is returned to add."""
    config = AppConfig.model_validate({"llm": _llm_settings(llm, tmp_path)})
    bank = MemoryBank(
        tmp_path / "store", config=config, executor=lambda c: LocalExecutor(c, embedder)
    )
    science = sorted((SAMPLE / "articles" / "science").glob("*.md"))
    bank.add(files=[str(path) for path in science[:-1]])
    return bank, config, science[-1]


def test_an_add_is_placed_by_the_model_among_the_closest_leaves(
    llm: LoopbackLLM, tmp_path: Path, embedder: Embedder
) -> None:
    bank, config, last = _science_store(llm, tmp_path, embedder)
    before = StoreReader(tmp_path / "store").memories().column("path").to_pylist()
    summary = bank.add(files=[str(last)])
    assert summary.placed and summary.llm["roles"]["place"]["calls"] >= 1
    (request, *_) = llm.requests_for("place")
    memory = _role_input(request)["memories"][0]
    assert 1 <= len(memory["candidates"]) <= config.llm.place_candidates
    after = StoreReader(tmp_path / "store").memories().column("path").to_pylist()
    assert before == after[: len(before)] or summary.commit.moved_memories > 0


def test_a_placement_outside_the_candidates_falls_back_to_the_offline_one(
    llm: LoopbackLLM, tmp_path: Path, embedder: Embedder
) -> None:
    bank, config, last = _science_store(llm, tmp_path, embedder)
    llm.handle(
        "place",
        lambda data, _: {
            "placements": [{"id": m["id"], "directory": "/a/b/c/d"} for m in data["memories"]]
        },
    )
    summary = bank.add(files=[str(last)])
    usage = summary.llm["roles"]["place"]
    assert usage["fallbacks"] == 1 and usage["repairs"] == config.llm.repair_attempts
    assert summary.placed


def test_the_backend_travels_to_tasks_as_its_settings(tmp_path: Path) -> None:
    config = AppConfig.model_validate(
        {"llm": {"backend": "openai", "base_url": "http://127.0.0.1:9/v1"}}
    ).llm
    backend = OpenAICompatible(config)
    backend.ledger.count("organize", "repairs")
    copy = pickle.loads(pickle.dumps(backend))
    assert copy.config == config and copy.ledger.peek().roles == {}


def test_the_session_and_research_roles_are_typed_for_the_issues_that_fill_them() -> None:
    analysis = session_roles.AnalyzeResult.model_validate(
        {
            "relationships": [
                {
                    "existing_node_id": "node_b",
                    "relationship": "conflict",
                    "confidence": 0.95,
                    "reasoning": "A says the CEO is Alice, B says Bob",
                    "conflict_description": "CEO",
                }
            ]
        }
    )
    assert analysis.relationships[0].relationship == "conflict"
    with pytest.raises(ValueError):
        session_roles.PlanResult(task_goal="g", completed_tasks=[], pending_tasks=["a", "b"])
    plan = research_roles.SearchPlan(info_needs=["Who?"], tools=["keyword", "vector"])
    assert plan.page_index == []
    for model in (
        session_roles.ClassifyResult,
        session_roles.StructureResult,
        session_roles.IntegrateResult,
        research_roles.ResearchResult,
        research_roles.ReflectionDecision,
    ):
        assert model.model_json_schema()["type"] == "object"
