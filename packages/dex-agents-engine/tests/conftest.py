"""Fixtures for the engine's conformance tests: a real engine process and the real SDK.

Every test talks to ``python -m dex_agents.engine serve`` over loopback with the
unmodified ``dex-python-sdk`` (AsyncClient, AsyncWorker or a Worker child process).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from engine_harness import EngineProcess, Stack, WorkerProcess  # noqa: E402 - path entry above


@pytest.fixture
def engine_process(tmp_path: Path) -> Iterator[EngineProcess]:
    engine = EngineProcess(tmp_path / "engine")
    engine.start()
    try:
        yield engine
    finally:
        engine.kill()


@pytest.fixture
async def stack(engine_process: EngineProcess, tmp_path: Path) -> AsyncIterator[Stack]:
    built = Stack(engine_process, tmp_path)
    try:
        yield built
    finally:
        await built.close()


@pytest.fixture
def worker_processes() -> Iterator[list[WorkerProcess]]:
    started: list[WorkerProcess] = []
    try:
        yield started
    finally:
        for worker in started:
            worker.kill()
