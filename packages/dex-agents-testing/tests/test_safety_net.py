"""No child outlives its test process: not when it forgets the stack, not when it is killed."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from kit_helpers import HERE, process_exists

from dex_agents.testing import wait_until

# A "test process" that starts a stack and a Worker, writes their PIDs, then either returns
# without leaving the stack (so only the atexit hook can end them) or waits to be killed.
_SCRIPT = """
    import asyncio, json, sys
    from pathlib import Path
    from kit_helpers import make_stack

    async def main(tmp: Path, then: str) -> None:
        stack = make_stack(tmp, tmp / "state")
        await stack.__aenter__()
        worker = await stack.start_worker()
        (tmp / "pids.json").write_text(json.dumps([stack.engine.pid, worker.pid]))
        if then == "hang":
            await asyncio.sleep(600)

    asyncio.run(main(Path(sys.argv[1]), sys.argv[2]))
"""


def _start(tmp_path: Path, then: str) -> subprocess.Popen[bytes]:
    (tmp_path / "state").mkdir()
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_SCRIPT), str(tmp_path), then],
        env={**os.environ, "PYTHONPATH": str(HERE)},
        start_new_session=True,
    )


async def _pids(tmp_path: Path) -> list[int]:
    path = tmp_path / "pids.json"
    await wait_until("the stack's PIDs", path.exists, timeout=30)
    pids: list[int] = json.loads(path.read_text())
    return pids


async def test_an_abandoned_stack_is_killed_when_the_test_process_exits(tmp_path: Path) -> None:
    script = _start(tmp_path, "return")
    try:
        pids = await _pids(tmp_path)
        assert await asyncio.to_thread(script.wait, 30) == 0
        assert not any(process_exists(pid) for pid in pids)
    finally:
        script.kill()
        script.wait()


async def test_children_of_a_killed_test_process_end_themselves(tmp_path: Path) -> None:
    script = _start(tmp_path, "hang")
    try:
        pids = await _pids(tmp_path)
        assert all(process_exists(pid) for pid in pids)
    finally:
        os.killpg(script.pid, signal.SIGKILL)  # only the test process: children have their own
        script.wait()
    await wait_until(
        "the orphaned engine and Worker to exit",
        lambda: not any(process_exists(pid) for pid in pids),
        timeout=15,
    )
