"""The engine tests' harness: an engine process, SDK Clients and Workers, polling.

Kept apart from ``conftest.py`` so test modules import it by a name no other package uses.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import dex

HERE = Path(__file__).resolve().parent


class EngineProcess:
    """``dex-agents-engine serve`` in a child process, restartable on the same port."""

    def __init__(self, data_dir: Path, *extra: str) -> None:
        self.data_dir = data_dir
        self.extra = extra
        self.address = "127.0.0.1:0"
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> str:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dex_agents.engine",
                "serve",
                "--address",
                self.address,
                "--data-dir",
                str(self.data_dir),
                "--durability",
                "process-crash-safe",
                "--min-heartbeat-timeout",
                "1",
                *self.extra,
            ],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if "listening on" not in line:
            self.process.kill()
            raise RuntimeError(f"the engine did not start: {line!r}")
        self.address = line.rsplit(" ", 1)[1].strip()
        return self.address

    def kill(self) -> None:
        """SIGKILL the engine and wait for it."""
        if self.process is not None:
            if self.process.poll() is None:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
            if self.process.stdout is not None:
                self.process.stdout.close()

    def terminate(self) -> int:
        """SIGTERM the engine; return its exit code."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=20)
        if self.process.stdout is not None:
            self.process.stdout.close()
        return code

    def restart(self) -> None:
        self.kill()
        self.start()


class Stack:
    """An engine, an AsyncClient, and in-process AsyncWorkers for a set of flows."""

    def __init__(self, engine: EngineProcess, tmp_path: Path) -> None:
        self.engine = engine
        self.tmp_path = tmp_path
        self._workers: list[tuple[dex.AsyncWorker, asyncio.Task[None]]] = []
        self._caches: list[dex.BlobCache] = []
        self._clients: list[dex.AsyncClient] = []

    def _cache(self) -> dex.BlobCache:
        cache = dex.open_blob_cache(
            dex.BlobCacheConfig(
                directory=str(self.tmp_path / f"cache-{len(self._caches)}"), max_bytes=64 << 20
            )
        )
        self._caches.append(cache)
        return cache

    async def worker(
        self, flows: Sequence[dex.Flow[Any]], *, max_concurrent_tasks: int = 8, **pull: int
    ) -> dex.AsyncWorker:
        registry = dex.Registry(list(flows), allow_async_handlers=True)
        worker = dex.AsyncWorker(
            registry,
            self._cache(),
            dex.WorkerOptions(
                server_address=self.engine.address,
                pull=dex.PullWorkerOptions(max_concurrent_tasks=max_concurrent_tasks, **pull),
            ),
        )
        task = asyncio.create_task(worker.start())
        await worker.wait_pull_registered(timeout=20)
        self._workers.append((worker, task))
        return worker

    def client(self, flows: Sequence[dex.Flow[Any]]) -> dex.AsyncClient:
        registry = dex.Registry(list(flows), allow_async_handlers=True)
        client = dex.AsyncClient(
            registry,
            self._cache(),
            dex.ClientOptions(
                server_address=self.engine.address, worker_target=dex.WorkerTarget(pull=True)
            ),
        )
        self._clients.append(client)
        return client

    async def stop_worker(self, worker: dex.AsyncWorker) -> None:
        for entry in list(self._workers):
            if entry[0] is worker:
                self._workers.remove(entry)
                await worker.stop()
                await asyncio.gather(entry[1], return_exceptions=True)

    async def close(self) -> None:
        for worker, task in self._workers:
            await worker.stop()
            await asyncio.gather(task, return_exceptions=True)
        for client in self._clients:
            await client.close()
        for cache in self._caches:
            cache.close()


class WorkerProcess:
    """A pull Worker in a child process (its own process group), killable with SIGKILL."""

    def __init__(self, address: str, flows: str, state_dir: Path, *, max_tasks: int = 4) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                str(HERE / "worker_main.py"),
                address,
                flows,
                str(state_dir),
                str(max_tasks),
            ],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])},
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if line.strip() != "ready":
            self.kill()
            raise RuntimeError(f"the Worker did not start: {line!r}")

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


async def wait_until(
    description: str, probe: Callable[[], object], timeout: float = 20.0
) -> object:
    """Poll ``probe`` (sync or async) until it returns a truthy value."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = probe()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return result
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {description}")
        await asyncio.sleep(0.05)
