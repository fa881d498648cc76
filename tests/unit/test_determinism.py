"""The same input makes the same store, whatever the process's hash seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample"
FILES = [
    SAMPLE / "articles/machine_learning/transformers_and_attention.md",
    SAMPLE / "notes/engineering/python_concurrency.md",
    SAMPLE / "notes/home/sourdough_baking.md",
    SAMPLE / "meetings/2026-03-14_tidepool_launch_planning.json",
    SAMPLE / "articles/history/lighthouse_keeping_19th_century.pdf",
]
_INGEST = """
import json, sys
from pathlib import Path
from memory_bank.config import AppConfig
from memory_bank.ingest.runner import local_runner
from memory_bank.store.reader import StoreReader

store = Path(sys.argv[1])
local_runner(AppConfig()).run(store, files=sys.argv[2:])
reader = StoreReader(store)
print(json.dumps({
    "store_version": reader.store_version,
    "tree": reader.tree().model_dump(mode="json"),
    "paths": reader.memories().column("path").to_pylist(),
    "keywords": reader.memories().column("keywords").to_pylist(),
}))
"""


def _ingest(store: Path, hash_seed: str) -> dict:
    env = {
        **os.environ,
        "PYTHONHASHSEED": hash_seed,
        "PYTHONPATH": str(REPO),
        "HF_HUB_OFFLINE": "1",
    }
    finished = subprocess.run(
        [sys.executable, "-c", _INGEST, str(store), *map(str, FILES)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=600,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr
    return json.loads(finished.stdout.strip().splitlines()[-1])


def test_two_processes_with_different_hash_seeds_build_the_same_store(tmp_path):
    first = _ingest(tmp_path / "one", "1")
    second = _ingest(tmp_path / "two", "2")
    assert first["tree"] == second["tree"]
    assert first["paths"] == second["paths"]
    assert first["keywords"] == second["keywords"]
    assert first["store_version"] == second["store_version"]
