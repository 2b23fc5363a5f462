"""``AgentTestStack``: a private engine, a Client and Worker child processes for one test."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import dex

from dex_agents.testing._engine import EngineHandle
from dex_agents.testing._history import StepHistoryEntry, read_step_history
from dex_agents.testing._processes import ChildProcess
from dex_agents.testing._worker import (
    BLOB_CACHE_DIR_ENV,
    DEFAULT_MAX_CONCURRENT_TASKS,
    MAX_CONCURRENT_TASKS_ENV,
    PARENT_PID_ENV,
    SERVER_ADDRESS_ENV,
    WORKER_READY_LINE,
)

if TYPE_CHECKING:
    from dex_agents import AgentSessionClient, AgentSessionFlow

__all__ = ["AgentTestStack", "WorkerHandle"]

_STACK_FOLDER = "agent-test-stack"
_WORKER_READY_TIMEOUT_SECONDS = 30.0
_WORKER_TERMINATE_TIMEOUT_SECONDS = 10.0
_BLOB_CACHE_BYTES = 64 << 20


class WorkerHandle:
    """A Worker child process started by :meth:`AgentTestStack.start_worker`.

    It runs in its own process group; :meth:`kill` ends it at once, exactly as a crash would.
    Its stdout and stderr are in :attr:`log_path`.
    """

    def __init__(self, process: ChildProcess, index: int) -> None:
        self._process = process
        self.index = index
        """1 for the stack's first Worker, 2 for the next, ..."""

    @property
    def pid(self) -> int:
        """The Worker's process ID (also its process group ID)."""
        return self._process.pid

    @property
    def is_alive(self) -> bool:
        """Whether the Worker process is running."""
        return self._process.is_alive

    @property
    def returncode(self) -> int | None:
        """The exit code (``-9`` after :meth:`kill`), or ``None`` while it runs."""
        return self._process.returncode

    @property
    def log_path(self) -> Path:
        """File with the Worker's stdout and stderr."""
        return self._process.log_path

    def output(self) -> str:
        """What the Worker printed so far."""
        return self._process.output()

    def kill(self) -> None:
        """SIGKILL the Worker's process group and reap it; a no-op once it is gone.

        The engine sees the Worker's streams close: a task it never answered goes to another
        Worker with the same attempt number; one it had sent a frame for fails that attempt.
        """
        self._process.kill()

    async def terminate(self, timeout: float = _WORKER_TERMINATE_TIMEOUT_SECONDS) -> int:
        """Stop the Worker with SIGTERM (it drains its handlers), SIGKILL after ``timeout``.

        Args:
            timeout: Seconds to wait for a clean exit.

        Returns:
            The Worker's exit code (0 after a clean stop).
        """
        return await self._process.terminate(timeout)

    def __repr__(self) -> str:
        state = "running" if self.is_alive else f"exited {self.returncode}"
        return f"WorkerHandle(index={self.index}, pid={self.pid}, {state})"


class AgentTestStack:
    """A private engine, a Client and Worker child processes, for one integration test.

    Entering the stack starts ``dex-agents-engine`` in its own process group with
    ``process-crash-safe`` durability (data under ``tmp_path``) and opens an
    :class:`dex.AsyncClient` for ``flows`` that targets pull Workers. Workers are started
    with :meth:`start_worker`, each a ``python -m <worker_module>`` child that calls
    :func:`~dex_agents.testing.run_agent_worker`. Leaving the stack, normally or through an
    exception, kills every Worker and the engine and closes the Client; an ``atexit`` hook
    kills any child left over if the test process exits without leaving the stack.

    Example::

        async with AgentTestStack(tmp_path, [flow], "my_worker", worker_cwd=HERE) as stack:
            worker = await stack.start_worker()
            await stack.client.start_flow(flow, "flow-1", "input")
            worker.kill()
            await stack.start_worker()

    Args:
        tmp_path: A folder of the test's own; the stack keeps its files in
            ``tmp_path / "agent-test-stack"`` (engine data, logs, blob caches).
        flows: The flows the Client may start; the Worker module serves the same flows.
        worker_module: Module run as ``python -m <worker_module>`` by :meth:`start_worker`.
        worker_cwd: Working directory of Worker processes (the module is found from there);
            ``None`` keeps the test process's.
        worker_env: Extra environment for every Worker process.
        engine_args: Extra ``dex-agents-engine serve`` options, e.g.
            ``("--min-heartbeat-timeout", "1")``.
        max_concurrent_tasks: Handlers each Worker runs at once, unless
            :meth:`start_worker` says otherwise.
    """

    def __init__(
        self,
        tmp_path: Path | str,
        flows: Sequence[dex.Flow[Any]],
        worker_module: str,
        *,
        worker_cwd: Path | str | None = None,
        worker_env: Mapping[str, str] | None = None,
        engine_args: Sequence[str] = (),
        max_concurrent_tasks: int = DEFAULT_MAX_CONCURRENT_TASKS,
    ) -> None:
        self.work_dir = Path(tmp_path) / _STACK_FOLDER
        self.flows = tuple(flows)
        self.worker_module = worker_module
        self.worker_cwd = Path(worker_cwd) if worker_cwd is not None else None
        self.worker_env = dict(worker_env or {})
        self.max_concurrent_tasks = max_concurrent_tasks
        self._engine = EngineHandle(
            self.work_dir / "engine-data", self.work_dir / "engine.log", engine_args
        )
        self._workers: list[WorkerHandle] = []
        self._cache: dex.BlobCache | None = None
        self._client: dex.AsyncClient | None = None

    # Lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._client is not None:
            raise RuntimeError("this AgentTestStack is already running")
        try:
            address = await self._engine.start()
            self._cache = dex.open_blob_cache(
                dex.BlobCacheConfig(
                    directory=str(self.work_dir / "client-cache"), max_bytes=_BLOB_CACHE_BYTES
                )
            )
            self._client = dex.AsyncClient(
                dex.Registry(list(self.flows), allow_async_handlers=True),
                self._cache,
                dex.ClientOptions(
                    server_address=address, worker_target=dex.WorkerTarget(pull=True)
                ),
            )
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(
        self,
        exception_type: type[BaseException] | None,
        exception: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exception is not None:
            self._report_logs()
        await self.aclose()

    async def aclose(self) -> None:
        """Kill every Worker and the engine, close the Client and its cache.

        Leaving the ``async with`` block calls it; calling it again does nothing.
        """
        try:
            for worker in self._workers:
                worker.kill()
            if self._client is not None:
                client, self._client = self._client, None
                await client.close()
        finally:
            self._engine.kill()
            if self._cache is not None:
                cache, self._cache = self._cache, None
                cache.close()

    def _report_logs(self) -> None:
        """Print the children's output to stderr: pytest shows it beside a failed test."""
        children = [("engine", self._engine.log_path, self._engine.output())]
        children += [(f"Worker {w.index}", w.log_path, w.output()) for w in self._workers]
        for name, path, text in children:
            sys.stderr.write(f"--- {name} output ({path}) ---\n{text.strip() or '(none)'}\n")

    # Parts -------------------------------------------------------------------------------

    @property
    def server_address(self) -> str:
        """The engine's ``host:port`` (unchanged by :meth:`EngineHandle.restart`)."""
        return self._engine.address

    @property
    def engine(self) -> EngineHandle:
        """The engine process: ``kill()``, ``await restart()``, ``await terminate()``."""
        return self._engine

    @property
    def client(self) -> dex.AsyncClient:
        """The stack's Client (registered with ``flows``, pull Worker target).

        Raises:
            RuntimeError: The stack is not entered.
        """
        if self._client is None:
            raise RuntimeError("enter the AgentTestStack (async with) before using its client")
        return self._client

    @property
    def workers(self) -> tuple[WorkerHandle, ...]:
        """Every Worker started so far, dead or alive, oldest first."""
        return tuple(self._workers)

    def sessions(self, flow: AgentSessionFlow) -> AgentSessionClient:
        """An ``AgentSessionClient`` for ``flow`` on the stack's Client.

        Args:
            flow: An ``AgentSessionFlow`` that is among the stack's ``flows``.

        Returns:
            ``dex_agents.AgentSessionClient(stack.client, flow)``.
        """
        # Imported on use: the rest of the kit runs plain dex flows without the session layer.
        from dex_agents import AgentSessionClient

        return AgentSessionClient(self.client, flow)

    # Workers -----------------------------------------------------------------------------

    async def start_worker(
        self,
        *,
        env: Mapping[str, str] | None = None,
        max_concurrent_tasks: int | None = None,
    ) -> WorkerHandle:
        """Start a Worker child process and wait until its pull queues are registered.

        The child runs ``python -m <worker_module>`` in ``worker_cwd``, in its own process
        group, with the test process's environment plus ``worker_env``, ``env`` and the
        stack's settings (``DEX_AGENTS_TEST_SERVER_ADDRESS`` and the like).

        Args:
            env: Extra environment for this Worker only.
            max_concurrent_tasks: Handlers this Worker runs at once (default: the stack's).

        Returns:
            The running Worker.

        Raises:
            ChildProcessExitedError: The Worker exited before it was ready (its output is in
                the message).
            TimeoutError: It was not ready within 30 seconds; it is killed.
        """
        index = len(self._workers) + 1
        folder = self.work_dir / "workers"
        environment = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            **self.worker_env,
            **(env or {}),
            SERVER_ADDRESS_ENV: self.server_address,
            MAX_CONCURRENT_TASKS_ENV: str(max_concurrent_tasks or self.max_concurrent_tasks),
            BLOB_CACHE_DIR_ENV: str(folder / f"worker-{index}-cache"),
            PARENT_PID_ENV: str(os.getpid()),
        }
        process = ChildProcess(
            f"Worker {index} (python -m {self.worker_module})",
            [sys.executable, "-m", self.worker_module],
            log_path=folder / f"worker-{index}.log",
            cwd=self.worker_cwd,
            env=environment,
        )
        worker = WorkerHandle(process, index)
        self._workers.append(worker)
        await process.wait_for_line(
            lambda line: line if line == WORKER_READY_LINE else None,
            timeout=_WORKER_READY_TIMEOUT_SECONDS,
            what="readiness",
        )
        return worker

    # History -----------------------------------------------------------------------------

    async def read_step_history(self, flow_id: str) -> list[StepHistoryEntry]:
        """The finished Step methods of a flow, oldest first (see :func:`read_step_history`).

        Args:
            flow_id: The flow (an agent session's ID is its flow ID).

        Returns:
            One entry per finished Step method.
        """
        return await read_step_history(self.server_address, flow_id)
