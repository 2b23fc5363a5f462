"""Fixtures for the LiteLLM client's tests: model servers on loopback."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from litellm_servers import LlamaServer  # noqa: E402 - found through the path entry above


@pytest.fixture(scope="session")
def llama_server() -> Iterator[LlamaServer]:
    """llama-cpp-python's OpenAI-compatible server with SmolLM2-135M, once per test process."""
    server = LlamaServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
