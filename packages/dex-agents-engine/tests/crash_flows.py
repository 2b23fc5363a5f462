"""Flows for crash tests, importable by Worker child processes.

Handlers record each real invocation in ``$ENGINE_TEST_STATE/log`` and park at file gates
(``<name>.reached`` written by the handler, ``<name>.release`` written by the test).
"""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta
from pathlib import Path

import dex
from dex import AsyncContext, StepDecision


def state_dir() -> Path:
    return Path(os.environ["ENGINE_TEST_STATE"])


def log(entry: str) -> None:
    with (state_dir() / "log").open("a") as handle:
        handle.write(entry + "\n")


def read_log(directory: Path) -> list[str]:
    path = directory / "log"
    return path.read_text().splitlines() if path.exists() else []


async def gate(name: str) -> None:
    (state_dir() / f"{name}.reached").write_text("")
    while not (state_dir() / f"{name}.release").exists():
        await asyncio.sleep(0.02)


class Start(dex.Step[str]):
    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        log(f"start {context.attempt}")
        return dex.go_to(Silent, input)


class Silent(dex.Step[str]):
    """Parks without sending any frame: a Worker death returns the task unstarted."""

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        log(f"silent {context.attempt}")
        await gate("silent")
        return dex.go_to(Finish, input)


class Finish(dex.Step[str]):
    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        log(f"finish {context.attempt}")
        return dex.graceful_complete(f"done:{input}")


class SilentFlow(dex.Flow[str]):
    def get_steps(self) -> dex.StepList[str]:
        return dex.StepList.start_step(Start()).other_steps(Silent(), Finish())


class Write(dex.Step[str]):
    """Heartbeats first (the task has started), then parks; one attempt only."""

    def get_step_options(self) -> dex.StepOptions:
        return dex.StepOptions(
            execute_retry=dex.RetryPolicy(maximum_attempts=1),
            heartbeat_timeout=timedelta(seconds=30),
        ).on_execute_failure_proceed_to(Recover)

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        log(f"write {context.attempt}")
        await context.heartbeat("started")
        await gate("write")
        return dex.graceful_complete("written")


class Recover(dex.Step[str]):
    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        error = context.recovery_error
        log(f"recover {error.error_type if error else None}")
        return dex.graceful_complete(f"recovered:{error.error_type if error else ''}")


class WriteFlow(dex.Flow[str]):
    def get_steps(self) -> dex.StepList[str]:
        return dex.StepList.start_step(Write()).other_steps(Recover())


FLOWS = [SilentFlow(), WriteFlow()]
