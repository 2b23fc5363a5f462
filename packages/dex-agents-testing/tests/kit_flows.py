"""Plain dex flows for the test kit's own tests, imported by the tests and by ``kit_worker``.

Handlers find the test's state folder in ``$KIT_STATE_DIR``: they record each real call in
an ``InvocationLog`` there and park at ``FileGate``s there.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dex
from dex import AsyncContext, StepDecision

from dex_agents.testing import FileGate, InvocationLog

STATE_DIR_ENV = "KIT_STATE_DIR"


def state_dir() -> Path:
    return Path(os.environ[STATE_DIR_ENV])


def calls(directory: Path | None = None) -> InvocationLog:
    return InvocationLog((directory or state_dir()) / "calls.jsonl")


class Prepare(dex.Step[str]):
    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        calls().record("step", "Prepare", attempt=context.attempt)
        return dex.go_to(Flaky, input)


class Flaky(dex.Step[str]):
    """Fails its first attempt when the input starts with ``flaky-`` (``final_attempt == 2``)."""

    def get_step_options(self) -> dex.StepOptions:
        return dex.StepOptions(
            execute_retry=dex.RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=3)
        )

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        calls().record("step", "Flaky", attempt=context.attempt)
        if input.startswith("flaky-") and context.attempt == 1:
            raise RuntimeError("the first attempt fails")
        return dex.go_to(Gated, input)


class Gated(dex.Step[str]):
    """Parks at the gate named by its input until the test releases it."""

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        calls().record("step", "Gated", attempt=context.attempt)
        await FileGate(state_dir(), input).wait_for_release()
        return dex.go_to(Finish, input)


class Finish(dex.Step[str]):
    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        calls().record("step", "Finish", attempt=context.attempt)
        return dex.graceful_complete(f"done:{input}")


class GatedFlow(dex.Flow[str]):
    """Prepare -> Flaky -> Gated (parks at the gate named ``input``) -> Finish."""

    def get_steps(self) -> dex.StepList[str]:
        return dex.StepList.start_step(Prepare()).other_steps(Flaky(), Gated(), Finish())


class FanOut(dex.Step[str]):
    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        return dex.go_to_many(*(dex.StepMovement.of(Branch, name) for name in input.split(",")))


class Branch(dex.Step[str]):
    """Parks at the gate of its own name: two Branches at their gates at once run in parallel."""

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        calls().record("step", "Branch", branch=input)
        await FileGate(state_dir(), input).wait_for_release()
        return dex.graceful_complete(input)


class ParallelFlow(dex.Flow[str]):
    """FanOut -> one Branch per comma-separated name, all at once."""

    def get_steps(self) -> dex.StepList[str]:
        return dex.StepList.start_step(FanOut()).other_steps(Branch())


def build_flows() -> list[dex.Flow[str]]:
    return [GatedFlow(), ParallelFlow()]
