"""Poll with a deadline instead of sleeping: :func:`wait_until`, :func:`wait_for_agent_snapshot`."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar, overload

__all__ = ["AgentSnapshotSource", "wait_for_agent_snapshot", "wait_until"]

T = TypeVar("T")
SnapshotT_co = TypeVar("SnapshotT_co", covariant=True)
SnapshotT = TypeVar("SnapshotT")

_DEFAULT_TIMEOUT_SECONDS = 30.0
_DEFAULT_INTERVAL_SECONDS = 0.05


class AgentSnapshotSource(Protocol[SnapshotT_co]):
    """Anything that reads an agent session's snapshot, such as ``AgentSessionClient``."""

    def get_agent_snapshot(self, session_id: str, /) -> Awaitable[SnapshotT_co]:
        """Read the current snapshot of one session."""
        ...


@overload
async def wait_until(
    description: str,
    probe: Callable[[], Awaitable[T | None]],
    *,
    timeout: float = ...,
    interval: float = ...,
) -> T: ...


@overload
async def wait_until(
    description: str,
    probe: Callable[[], T | None],
    *,
    timeout: float = ...,
    interval: float = ...,
) -> T: ...


async def wait_until(
    description: str,
    probe: Callable[[], object],
    *,
    timeout: float = _DEFAULT_TIMEOUT_SECONDS,
    interval: float = _DEFAULT_INTERVAL_SECONDS,
) -> object:
    """Call ``probe`` until it returns a truthy value; return that value.

    ``probe`` may be a plain or an async callable. An exception it raises counts as "not
    yet": the next call comes after ``interval``, and if the deadline passes, the last
    exception is chained to the :class:`TimeoutError`. An async probe that hangs is cut off
    at the deadline.

    Example::

        run_id = await wait_until("the flow's first Step", lambda: gate.reached, timeout=10)

    Args:
        description: What is awaited, for the error message.
        probe: Returns a falsy value until the condition holds.
        timeout: Seconds until giving up; the probe runs at least once.
        interval: Seconds between calls.

    Returns:
        The probe's first truthy result.

    Raises:
        TimeoutError: ``timed out after {timeout}s waiting for {description}``.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last_error: Exception | None = None
    while True:
        try:
            result = probe()
            if inspect.isawaitable(result):
                async with asyncio.timeout_at(max(deadline, loop.time() + interval)):
                    result = await result
        except Exception as error:  # "not yet": retried until the deadline
            last_error = error
        else:
            if result:
                return result
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise TimeoutError(
                f"timed out after {timeout}s waiting for {description}"
            ) from last_error
        await asyncio.sleep(min(interval, remaining))


async def wait_for_agent_snapshot(
    sessions: AgentSnapshotSource[SnapshotT],
    session_id: str,
    probe: Callable[[SnapshotT], T | None],
    *,
    description: str,
    timeout: float = _DEFAULT_TIMEOUT_SECONDS,
) -> T:
    """Read a session's snapshot until ``probe(snapshot)`` is truthy; return that value.

    Example::

        interrupt = await wait_for_agent_snapshot(
            sessions,
            "session-1",
            lambda snapshot: next(iter(snapshot.pending_interrupts), None),
            description="a pending approval",
        )

    Args:
        sessions: An ``AgentSessionClient`` (anything with ``get_agent_snapshot``).
        session_id: The session to watch.
        probe: Called with each snapshot; returns a falsy value until the state is there.
        description: What is awaited, for the error message.
        timeout: Seconds until giving up.

    Returns:
        The probe's first truthy result.

    Raises:
        TimeoutError: The probe stayed falsy (or reading failed) for ``timeout`` seconds.
    """

    async def read() -> T | None:
        return probe(await sessions.get_agent_snapshot(session_id))

    return await wait_until(description, read, timeout=timeout)
