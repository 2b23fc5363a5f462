"""The Worker child process: :func:`run_agent_worker` and the settings the stack passes to it.

:meth:`AgentTestStack.start_worker <dex_agents.testing.AgentTestStack.start_worker>` runs
``python -m <worker_module>`` with the settings below in its environment; the module calls
:func:`run_agent_worker`, which serves the flows as a pull Worker and prints
:data:`WORKER_READY_LINE` once every queue is registered with the engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import dex

__all__ = [
    "BLOB_CACHE_DIR_ENV",
    "DEFAULT_MAX_CONCURRENT_TASKS",
    "MAX_CONCURRENT_TASKS_ENV",
    "PARENT_PID_ENV",
    "SERVER_ADDRESS_ENV",
    "WORKER_READY_LINE",
    "run_agent_worker",
]

SERVER_ADDRESS_ENV = "DEX_AGENTS_TEST_SERVER_ADDRESS"
"""Environment variable with the engine's ``host:port``, set for every Worker child."""

MAX_CONCURRENT_TASKS_ENV = "DEX_AGENTS_TEST_MAX_CONCURRENT_TASKS"
"""Environment variable with the Worker's ``max_concurrent_tasks``."""

BLOB_CACHE_DIR_ENV = "DEX_AGENTS_TEST_BLOB_CACHE_DIR"
"""Environment variable naming the Worker's blob cache folder (a temporary one if unset)."""

PARENT_PID_ENV = "DEX_AGENTS_TEST_PARENT_PID"
"""Environment variable with the test process's ID: the Worker exits when that process dies."""

WORKER_READY_LINE = "dex-agents-testing worker ready"
"""The line a Worker child prints on stdout once every pull queue is registered."""

DEFAULT_MAX_CONCURRENT_TASKS = 16
"""Handlers a Worker runs at once unless told otherwise."""

_REGISTRATION_TIMEOUT_SECONDS = 30.0
_PARENT_POLL_SECONDS = 0.25
_PARENT_GONE_EXIT_CODE = 70
_BLOB_CACHE_BYTES = 64 << 20


def run_agent_worker(
    flows: Sequence[dex.Flow[Any]],
    *,
    server_address: str | None = None,
    max_concurrent_tasks: int | None = None,
) -> None:
    """Serve ``flows`` as a pull Worker until SIGTERM or SIGINT: the body of a Worker child.

    Call it from the ``__main__`` block of the module that
    :class:`~dex_agents.testing.AgentTestStack` runs as ``python -m <worker_module>``. Build
    the flows exactly as the test process builds them for its Client.

    Args:
        flows: The flows to serve (async handlers are allowed).
        server_address: The engine's ``host:port``; defaults to
            ``$DEX_AGENTS_TEST_SERVER_ADDRESS``.
        max_concurrent_tasks: Handlers run at once; defaults to
            ``$DEX_AGENTS_TEST_MAX_CONCURRENT_TASKS``, then 16.

    Raises:
        RuntimeError: No server address was given or found in the environment.
    """
    address = server_address or os.environ.get(SERVER_ADDRESS_ENV)
    if not address:
        raise RuntimeError(
            f"run_agent_worker needs the engine's address: pass server_address= or set "
            f"{SERVER_ADDRESS_ENV} (AgentTestStack.start_worker sets it)"
        )
    if max_concurrent_tasks is None:
        max_concurrent_tasks = int(
            os.environ.get(MAX_CONCURRENT_TASKS_ENV) or DEFAULT_MAX_CONCURRENT_TASKS
        )
    asyncio.run(_serve(flows, address, max_concurrent_tasks))


async def _serve(flows: Sequence[dex.Flow[Any]], address: str, max_concurrent_tasks: int) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    watch = asyncio.create_task(_exit_when_parent_dies(os.environ.get(PARENT_PID_ENV)))
    with _blob_cache_directory() as directory:
        cache = dex.open_blob_cache(
            dex.BlobCacheConfig(directory=str(directory), max_bytes=_BLOB_CACHE_BYTES)
        )
        try:
            worker = dex.AsyncWorker(
                dex.Registry(list(flows), allow_async_handlers=True),
                cache,
                dex.WorkerOptions(
                    server_address=address,
                    pull=dex.PullWorkerOptions(max_concurrent_tasks=max_concurrent_tasks),
                ),
            )
            running = asyncio.create_task(worker.start())
            try:
                # A failed start wakes this wait with the start's own error.
                await worker.wait_pull_registered(timeout=_REGISTRATION_TIMEOUT_SECONDS)
            except BaseException:
                await worker.stop()
                await asyncio.gather(running, return_exceptions=True)
                raise
            print(WORKER_READY_LINE, flush=True)
            stopping = asyncio.create_task(stop.wait())
            await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            await worker.stop()
            await running
        finally:
            watch.cancel()
            cache.close()


@contextlib.contextmanager
def _blob_cache_directory() -> Iterator[Path]:
    configured = os.environ.get(BLOB_CACHE_DIR_ENV)
    if configured:
        path = Path(configured)
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="dex-agents-worker-") as directory:
        yield Path(directory)


async def _exit_when_parent_dies(parent_pid: str | None) -> None:
    """Exit at once when the test process that started this Worker is gone.

    A test process killed with SIGKILL runs no cleanup; its orphaned Worker notices that its
    parent changed and ends itself instead of serving a dead test forever.
    """
    if not parent_pid:
        return
    while os.getppid() == int(parent_pid):
        await asyncio.sleep(_PARENT_POLL_SECONDS)
    print("dex-agents-testing: the test process is gone; exiting", file=sys.stderr, flush=True)
    os._exit(_PARENT_GONE_EXIT_CODE)
