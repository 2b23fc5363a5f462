"""FileGate, InvocationLog and the wait helpers, across processes where that is the point."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from dex_agents.testing import FileGate, InvocationLog, wait_for_agent_snapshot, wait_until


def _run_children(code: str, count: int, *args: str) -> None:
    """Run ``count`` Python children at once, each with ``args`` and its index in argv."""
    children = [
        subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args, str(index)])
        for index in range(count)
    ]
    assert [child.wait(timeout=60) for child in children] == [0] * count


# FileGate -------------------------------------------------------------------------------------


async def test_a_gate_parks_the_handler_until_the_test_releases_it(tmp_path: Path) -> None:
    gate = FileGate(tmp_path / "state", "tool")
    assert not gate.reached
    parked = asyncio.create_task(FileGate(tmp_path / "state", "tool").wait_for_release())
    await gate.wait_until_reached(timeout=5)
    assert gate.reached
    assert gate.reached_count == 1
    await asyncio.sleep(0.05)
    assert not parked.done()
    gate.release()
    await asyncio.wait_for(parked, timeout=5)
    assert (tmp_path / "state" / "tool.reached").is_file()
    assert (tmp_path / "state" / "tool.released").is_file()


async def test_gates_count_arrivals_from_several_processes_and_reset(tmp_path: Path) -> None:
    code = """
        import asyncio, sys
        from dex_agents.testing import FileGate
        asyncio.run(FileGate(sys.argv[1], "shared").wait_for_release(timeout=30))
    """
    gate = FileGate(tmp_path, "shared")
    children = asyncio.create_task(asyncio.to_thread(_run_children, code, 3, str(tmp_path)))
    await gate.wait_until_reached(timeout=20, count=3)
    assert not children.done()
    gate.release()
    await children
    assert gate.reached_count == 3
    gate.reset()
    assert not gate.reached
    assert not gate.released


async def test_gate_timeouts(tmp_path: Path) -> None:
    gate = FileGate(tmp_path, "never")
    with pytest.raises(TimeoutError, match="gate 'never' to be reached 1 time"):
        await gate.wait_until_reached(timeout=0.1)
    with pytest.raises(TimeoutError, match=r"gate 'never' was not released within 0\.1s"):
        await gate.wait_for_release(timeout=0.1)
    assert gate.reached_count == 1


@pytest.mark.parametrize("name", ["", ".", "..", "a/b"])
def test_a_gate_name_is_a_plain_file_name(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="plain file name"):
        FileGate(tmp_path, name)


# InvocationLog --------------------------------------------------------------------------------


def test_the_log_records_entries_in_order_and_counts_them(tmp_path: Path) -> None:
    log = InvocationLog(tmp_path / "deep" / "calls.jsonl")
    assert log.entries() == []
    assert log.count() == 0
    log.record("tool", "refund", order=7, note="line\nbreak")
    log.record("model", "gpt", tokens=[1, 2])
    log.record("tool", "refund", order=8)
    assert [entry["order"] for entry in log.entries("tool", "refund")] == [7, 8]
    assert log.entries()[0]["note"] == "line\nbreak"
    assert log.count() == 3
    assert log.count("tool") == 2
    assert log.count(name="gpt") == 1
    assert log.count("model", "refund") == 0
    assert {entry["pid"] for entry in log.entries()} == {os.getpid()}
    assert len((tmp_path / "deep" / "calls.jsonl").read_text().splitlines()) == 3


def test_the_log_ignores_a_line_still_being_written(tmp_path: Path) -> None:
    log = InvocationLog(tmp_path / "calls.jsonl")
    log.record("tool", "a")
    with (tmp_path / "calls.jsonl").open("a") as handle:
        handle.write('{"kind": "tool", "na')
    assert log.count() == 1


def test_records_from_many_processes_never_interleave(tmp_path: Path) -> None:
    code = """
        import sys
        from dex_agents.testing import InvocationLog
        log = InvocationLog(sys.argv[1])
        for call in range(200):
            log.record("tool", "write", child=int(sys.argv[2]), call=call, padding="x" * 3000)
    """
    _run_children(code, 4, str(tmp_path / "calls.jsonl"))
    log = InvocationLog(tmp_path / "calls.jsonl")
    assert log.count("tool", "write") == 800
    for child in range(4):
        calls = [entry["call"] for entry in log.entries() if entry["child"] == child]
        assert calls == list(range(200))


def test_fields_must_be_json(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        InvocationLog(tmp_path / "calls.jsonl").record("tool", "x", value=object())


# wait_until -----------------------------------------------------------------------------------


async def test_wait_until_returns_the_first_truthy_value_of_a_sync_or_async_probe() -> None:
    values = iter([0, None, "", "found"])
    assert await wait_until("a value", lambda: next(values), interval=0.001) == "found"

    calls = 0

    async def probe() -> int | None:
        nonlocal calls
        calls += 1
        return calls if calls == 3 else None

    assert await wait_until("the third call", probe, interval=0.001) == 3


async def test_wait_until_times_out_with_the_description() -> None:
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"^timed out after 0.2s waiting for the moon$"):
        await wait_until("the moon", lambda: False, timeout=0.2)
    assert 0.2 <= time.monotonic() - started < 2


async def test_wait_until_retries_a_probe_that_raises_and_chains_the_last_error() -> None:
    attempts = 0

    def probe() -> bool:
        nonlocal attempts
        attempts += 1
        raise ConnectionError(f"down {attempts}")

    with pytest.raises(TimeoutError, match="waiting for the server") as caught:
        await wait_until("the server", probe, timeout=0.1, interval=0.01)
    assert isinstance(caught.value.__cause__, ConnectionError)
    assert str(caught.value.__cause__) == f"down {attempts}"
    assert attempts > 1


async def test_wait_until_cuts_off_a_hanging_async_probe() -> None:
    async def hang() -> bool:
        await asyncio.sleep(60)
        return True

    started = time.monotonic()
    with pytest.raises(TimeoutError, match="waiting for a hanging probe"):
        await wait_until("a hanging probe", hang, timeout=0.2)
    assert time.monotonic() - started < 2


# wait_for_agent_snapshot ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Snapshot:
    pending_interrupts: tuple[str, ...]


class _Sessions:
    def __init__(self) -> None:
        self.reads = 0

    async def get_agent_snapshot(self, session_id: str) -> _Snapshot:
        assert session_id == "session-1"
        self.reads += 1
        return _Snapshot(("approve-1",) if self.reads >= 3 else ())


async def test_wait_for_agent_snapshot_returns_the_probe_result() -> None:
    sessions = _Sessions()
    interrupt = await wait_for_agent_snapshot(
        sessions,
        "session-1",
        lambda snapshot: next(iter(snapshot.pending_interrupts), None),
        description="a pending approval",
    )
    assert interrupt == "approve-1"
    assert sessions.reads == 3


async def test_wait_for_agent_snapshot_times_out_with_the_description() -> None:
    with pytest.raises(TimeoutError, match="waiting for a reply"):
        await wait_for_agent_snapshot(
            _Sessions(), "session-1", lambda _: None, description="a reply", timeout=0.1
        )
