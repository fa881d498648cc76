"""A store version's graph snapshot as layers, and loading a graph (see persist.py).

A commit links the previous version's layers and the checkpoints since as new layers (hard
links: the files are never changed), so it writes nothing of the graph it did not change; when
the layers grow past `MAX_LAYERS` or their bytes past `LAYERS_SHARE` of the first layer's, or the
first layer holds no usable node stems (written before they were stored), it writes the whole
graph as one layer instead (compaction).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from memory_bank.graph.graph import QueryGraph
from memory_bank.graph.persist import (
    FORMAT,
    GRAPH_DIR,
    GRAPH_META,
    GraphState,
    all_records,
    apply_records,
    checkpoints,
    read_meta,
    read_seq,
    stored_stems_usable,
    write_records,
)
from memory_bank.store import layout

LAYERS_DIR = "layers"
MAX_LAYERS = 12
LAYERS_SHARE = 0.5  # later layers' bytes, against the first one's, that trigger compaction


@dataclass(frozen=True)
class GraphSnapshot:
    """The graph as a new store version is to hold it: the live version's snapshot (`base`,
    its `.bank/graph/`; None: none) and the checkpoints after it up to `seq`. Small: what it
    names is read from disk when the version is written."""

    seq: int
    base: Path | None
    log_dir: Path
    alpha: float = 0.5

    def write(self, bank_dir: Path) -> None:
        """Into a version being built (its `.bank/` directory)."""
        write_snapshot(bank_dir / GRAPH_DIR, self.base, self.log_dir, self.seq, self.alpha)


def live_snapshot(live: Path | None) -> Path | None:
    """The graph snapshot of the live version in `live` (None: no version yet)."""
    return live / layout.BANK_DIR / GRAPH_DIR if live is not None else None


def snapshot_layers(directory: Path) -> list[Path] | None:
    """The record directories of a snapshot, in order (a snapshot from before layers: itself);
    None when there is no snapshot."""
    meta = read_meta(directory)
    if meta is None:
        return None
    layers = meta.get("layers")
    return [directory] if layers is None else [directory / LAYERS_DIR / name for name in layers]


def write_snapshot(
    directory: Path, base: Path | None, log_dir: Path, seq: int, alpha: float = 0.5
) -> None:
    """The graph snapshot of a new version in `directory`: the snapshot `base` (the live
    version's, or None) and the checkpoints after it up to `seq`, as layers (see the module
    docstring)."""
    base_layers = snapshot_layers(base) if base is not None else []
    base_seq = read_seq(base) if base is not None and base_layers else 0
    pending = [(n, path) for n, path in checkpoints(log_dir, after=base_seq) if n <= seq]
    layered = base_layers is not None and (not base_layers or base_layers != [base])
    if (
        layered
        and [n for n, _ in pending] == list(range(base_seq + 1, seq + 1))
        and not _compaction_due([*base_layers, *(path for _, path in pending)])
    ):
        names = [layer.name for layer in base_layers] + [path.name for _, path in pending]
        for layer in [*base_layers, *(path for _, path in pending)]:
            _link_tree(layer, directory / LAYERS_DIR / layer.name)
    else:
        state = load_graph_state(base, log_dir, alpha, upto=seq)
        names = [f"{seq:09d}-all"]
        write_records(directory / LAYERS_DIR / names[0], all_records(state), seq)
    (directory / GRAPH_META).write_text(
        json.dumps({"format": FORMAT, "seq": seq, "layers": names}), encoding="utf-8"
    )


def _compaction_due(layers: list[Path]) -> bool:
    """Too many layers, later layers too large against the first, or a first layer (the bulk
    of the graph) without usable node stems (`stored_stems_usable`): compacted once, the
    graph loads without tokenizing its nodes from then on. A later layer without them (a
    checkpoint of a process running older code) is only tokenized as it loads, so such a
    process does not make every commit write the whole graph."""
    if len(layers) > MAX_LAYERS or (layers and not stored_stems_usable(layers[0])):
        return True
    sizes = [sum(p.stat().st_size for p in layer.iterdir() if p.is_file()) for layer in layers]
    return bool(sizes) and sum(sizes[1:]) > LAYERS_SHARE * sizes[0]


def _link_tree(source: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for path in source.iterdir():
        if path.is_file():
            try:
                os.link(path, target / path.name)
            except OSError:
                shutil.copyfile(path, target / path.name)


def load_graph_state(
    snapshot_dir: Path | None, log_dir: Path, alpha: float = 0.5, upto: int | None = None
) -> GraphState:
    """The snapshot in `snapshot_dir` (None or missing: empty) with every later checkpoint
    (up to `upto`, when given)."""
    state = GraphState(graph=QueryGraph(alpha=alpha))
    if snapshot_dir is not None and snapshot_dir.is_dir():
        for layer in snapshot_layers(snapshot_dir) or []:  # upserted layer after layer
            apply_records(state, layer)
        state.seq = read_seq(snapshot_dir)
    for seq, path in checkpoints(log_dir, after=state.seq):
        if upto is not None and seq > upto:
            break
        apply_records(state, path)
        state.seq = seq
    return state
