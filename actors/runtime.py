"""Starting or joining Ray for the driver, the plain Ray tasks more than one part uses, and
what a worker process holds once: its embedding model, its LLM."""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from memory_bank.config import EmbeddingConfig, LLMConfig, RayConfig, usable_cores
from memory_bank.index.embedding import Embedder
from memory_bank.llm import open_llm
from memory_bank.llm.seam import LLM

R = TypeVar("R")

logger = logging.getLogger(__name__)

# Workers must never reach for a model hub: the model comes from the installed package.
_WORKER_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def ensure_ray(config: RayConfig, llm: LLMConfig | None = None) -> bool:
    """Connect to Ray: an already-initialized session, `config.address`, RAY_ADDRESS, or a new
    local instance with the machine's CPUs. Returns True when this call started Ray.

    With an `openai` backend, the API key's environment variable is passed on to the workers
    (Ray's runtime environment, never a file or a log), since they make LLM calls too."""
    import ray

    if ray.is_initialized():
        return False
    address = config.address or os.environ.get("RAY_ADDRESS")
    runtime_env = {"env_vars": dict(_WORKER_ENV)}
    if llm is not None and llm.backend != "offline" and os.environ.get(llm.api_key_env):
        runtime_env["env_vars"][llm.api_key_env] = os.environ[llm.api_key_env]
    if address:
        logger.info("joining Ray at %s", address)
        ray.init(
            address=address,
            runtime_env=runtime_env,
            log_to_driver=False,
            logging_level=logging.WARNING,
        )
    else:
        if os.environ.get("RAY_AUTH_MODE") is None:
            # Ray announces, on every start, that the local cluster it starts uses token auth
            # (its default); the announcement is noise on a CLI's stderr.
            logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(
                logging.ERROR
            )
        ray.init(
            num_cpus=config.num_cpus,
            include_dashboard=False,
            runtime_env=runtime_env,
            log_to_driver=False,
            logging_level=logging.WARNING,
        )
    _quiet_ray_data()
    return True


def _quiet_ray_data() -> None:
    """Ray Data prints its own progress bars; the CLI draws its own display instead."""
    from ray.data import DataContext

    logging.getLogger("ray.data").setLevel(logging.WARNING)
    # ... and warns, once, that the bars it was told to leave out are left out.
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)
    context = DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    if hasattr(context, "enable_operator_progress_bars"):
        context.enable_operator_progress_bars = False


def map_on_tasks(
    function: Callable[..., R],
    calls: Sequence[tuple[Any, ...]],
    num_cpus: float,
    single_here: bool = True,
) -> list[R]:
    """Each call of `function` as a Ray task; results in call order. A single call runs
    here (`single_here`): a task would add a worker's start and the transfers, and no
    parallelism; a caller whose process must stay free for others (a shared actor) says no."""
    if single_here and len(calls) <= 1:
        return [function(*arguments) for arguments in calls]
    import ray

    # Ray's default placement: the caller's node while it is less than half busy (its workers
    # are warm), then the others. SPREAD from the first call was slower on the local cluster
    # (bench/ingest.py --nodes): every node paid cold workers for short tasks.
    task = ray.remote(function).options(num_cpus=num_cpus)
    shared = put_shared(calls)
    return ray.get([task.remote(*(shared.get(id(a), a) for a in arguments)) for arguments in calls])


_SCALARS = (str, bytes, int, float, bool, type(None))


def put_shared(calls: Sequence[tuple[Any, ...]]) -> dict[int, Any]:
    """An argument object that several calls share (the sentence vectors of a graph step's
    analysis calls), put in the object store once: its reference, by the object's id. Ray hands
    each task the object itself, read from its node's store, not a copy sent with every call."""
    import ray

    uses = Counter(id(a) for arguments in calls for a in arguments if not isinstance(a, _SCALARS))
    objects = {id(a): a for arguments in calls for a in arguments}
    return {key: ray.put(objects[key]) for key, count in uses.items() if count > 1}


# Fewer texts than this per task cost more in a worker's model load than they save.
MIN_TEXTS_PER_ENCODE_TASK = 64


def encode_on_task(texts: list[str], config: EmbeddingConfig, num_cpus: float) -> np.ndarray:
    """Embed short texts (graph contexts) in Ray tasks, as many as the cluster has room for at
    `num_cpus` each and `MIN_TEXTS_PER_ENCODE_TASK` texts apiece (the caller never loads the
    model). A commit's re-embedded contexts grow with the store: in one task they would be one
    node's work however many nodes there are."""
    import ray

    task = ray.remote(_encode_texts).options(num_cpus=num_cpus)
    slots = int(ray.cluster_resources().get("CPU", 1) // max(num_cpus, 1e-9))
    parts = max(1, min(slots, len(texts) // MIN_TEXTS_PER_ENCODE_TASK))
    if parts == 1:
        return ray.get(task.remote(texts, config))
    # Every part-th text, so the parts hold long and short texts alike.
    vectors = ray.get([task.remote(texts[part::parts], config) for part in range(parts)])
    found = np.zeros((len(texts), vectors[0].shape[1]), dtype=np.float32)
    for part, rows in enumerate(vectors):
        found[part::parts] = rows
    return found


# The embedder of this worker process per embedding config: Ray reuses idle workers for later
# tasks of the same job, so the graph step's re-embedding loads the model once per worker rather
# than once per task.
_WORKER_EMBEDDERS: dict[str, Embedder] = {}


def _encode_texts(texts: list[str], config: EmbeddingConfig) -> np.ndarray:
    return worker_embedder(config).encode_passages(texts)


def worker_embedder(config: EmbeddingConfig) -> Embedder:
    """This worker process's embedder for `config` (loaded by its first task)."""
    from memory_bank.index.embedders import build_embedder

    key = config.model_dump_json()
    if key not in _WORKER_EMBEDDERS:
        # Ray sets OMP_NUM_THREADS in workers to their CPUs; the model may use every core the
        # worker may run on, like the embedding actors (not more: threads on one core wait).
        threads = config.num_threads or usable_cores()
        _WORKER_EMBEDDERS.clear()  # one model per worker at most
        _WORKER_EMBEDDERS[key] = build_embedder(config.model_copy(update={"num_threads": threads}))
    return _WORKER_EMBEDDERS[key]


# The LLM of this worker process per LLM config: the root of a Ray process (an actor, a Serve
# replica, a Ray Data stage's worker) opens it once and passes it down, so the process has one
# client, one connection pool and one ledger.
_WORKER_LLMS: dict[str, LLM | None] = {}


def worker_llm(config: LLMConfig) -> LLM | None:
    """This process's LLM for `config` (None for the offline backend)."""
    key = config.model_dump_json()
    if key not in _WORKER_LLMS:
        _WORKER_LLMS[key] = open_llm(config)
    return _WORKER_LLMS[key]
