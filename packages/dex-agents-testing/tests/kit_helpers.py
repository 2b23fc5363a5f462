"""Helpers of the test kit's own tests."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import kit_flows

from dex_agents.testing import AgentTestStack

HERE = Path(__file__).resolve().parent


def make_stack(
    tmp_path: Path,
    state_dir: Path,
    *,
    engine_args: Sequence[str] = (),
    max_concurrent_tasks: int = 16,
) -> AgentTestStack:
    """A stack for ``kit_flows`` served by ``python -m kit_worker``."""
    return AgentTestStack(
        tmp_path,
        kit_flows.build_flows(),
        "kit_worker",
        worker_cwd=HERE,
        worker_env={kit_flows.STATE_DIR_ENV: str(state_dir)},
        engine_args=engine_args,
        max_concurrent_tasks=max_concurrent_tasks,
    )


def process_exists(pid: int) -> bool:
    """Whether a live process has this ID (a zombie nobody reaped does not count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        # /proc/<pid>/stat: "pid (comm) state ..."; comm may hold spaces and parentheses.
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"
