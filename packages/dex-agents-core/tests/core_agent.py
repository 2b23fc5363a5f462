"""The agent of the core's integration tests, built the same way by the test and its Worker.

Tools log every real invocation to ``$CORE_TEST_STATE/invocations.jsonl`` and, when their
arguments say ``"gate": "<name>"``, park at that FileGate so a test can kill the Worker at
the exact moment the tool runs.
"""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta
from pathlib import Path

import dex
from scripted_runner import Answer, Call, ScriptedRunner, Tools

from dex_agents import (
    AgentSessionFlow,
    AgentSessionOptions,
    BuiltInTool,
    DeferredToolExecution,
    DeferredToolOutcome,
    ToolCallStepOptions,
    ToolEffect,
    ToolExecutionError,
    ToolExecutionResult,
    ToolInputRequested,
    ToolPolicy,
)
from dex_agents.testing import FileGate, InvocationLog

FLOW_TYPE = "CoreTestAgent"


def state_dir() -> Path:
    return Path(os.environ["CORE_TEST_STATE"])


def invocations() -> InvocationLog:
    return InvocationLog(state_dir() / "invocations.jsonl")


async def _tool(call: DeferredToolExecution) -> DeferredToolOutcome:
    import json

    arguments = json.loads(call.tool_call.arguments or "{}")
    name = call.tool_call.tool_name
    invocations().record(
        "tool",
        name,
        key=call.idempotency_key,
        attempt=call.attempt,
        answers=list(call.input_answers),
    )
    gate = arguments.get("gate")
    if gate:
        await FileGate(state_dir(), gate).wait_for_release(timeout=60)
    if name == "fail_visibly":
        raise ToolExecutionError("the order does not exist")
    if name in ("broken_read", "brittle_read", "broken_write"):
        raise RuntimeError(f"{name} is broken")
    if name == "hanging_read":
        await asyncio.sleep(120)
    if name == "asker" and not call.input_answers:
        return ToolInputRequested(
            question="Which color?", choices=("red", "blue"), allows_free_text=False
        )
    return ToolExecutionResult(output=f"{name} ok {list(call.input_answers)}")


def _calls(*calls: Call) -> list[Tools | Answer]:
    return [Tools(calls), Answer("done")]


SCRIPT = {
    "read": _calls(Call("r1", "lookup", {"gate": "tool"})),
    "idempotent": _calls(Call("w1", "save", {"gate": "tool"})),
    "slow model": _calls(Call("g1", "lookup", {"gate": "tool"})),
    "model fails": _calls(Call("m1", "save", {"id": 3})),
    "broken read": _calls(Call("br1", "broken_read", {})),
    "plain tool": _calls(Call("pt1", "lookup", {})),
    "broken write": _calls(Call("bw1", "broken_write", {})),
    "brittle read": _calls(Call("bb1", "brittle_read", {})),
    "hanging read": _calls(Call("h1", "hanging_read", {})),
    "charge": _calls(Call("n1", "charge", {"gate": "tool"})),
    "mystery": _calls(Call("u1", "mystery", {"gate": "tool"})),
    "approve": _calls(Call("a1", "refund", {"amount": 5})),
    "parallel": _calls(
        Call("p1", "lookup", {"gate": "left"}), Call("p2", "save", {"gate": "right"})
    ),
    "ask": _calls(Call("q1", "ask_user", {"question": "Size?", "choices": ["S", "M"]})),
    "wait": _calls(Call("t1", "durable_wait", {"duration_seconds": 2, "reason": "cool down"})),
    "tool question": _calls(Call("i1", "asker", {})),
    "visible failure": _calls(Call("f1", "fail_visibly", {})),
    "bad ids": [Tools([Call("x/1", "lookup", {})]), Answer("never")],
    "bad ask": _calls(Call("b1", "ask_user", {"question": " "})),
    "starved": [
        Tools(
            [
                Call("s1", "lookup", {"gate": "left"}),
                Call("s2", "lookup", {"gate": "right"}),
                Call("s3", "charge", {}),
            ]
        ),
        Answer("done"),
    ],
}

TOOLS = dict.fromkeys(
    (
        "lookup",
        "save",
        "charge",
        "mystery",
        "refund",
        "asker",
        "fail_visibly",
        "broken_read",
        "brittle_read",
        "hanging_read",
        "broken_write",
    ),
    _tool,
)

POLICIES = {
    "lookup": ToolPolicy(ToolEffect.READ),
    "save": ToolPolicy(ToolEffect.IDEMPOTENT_WRITE),
    "charge": ToolPolicy(ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False),
    "mystery": ToolPolicy(ToolEffect.UNCLASSIFIED, requires_approval=False),
    "refund": ToolPolicy(ToolEffect.NON_IDEMPOTENT_WRITE),
    "asker": ToolPolicy(ToolEffect.READ),
    "fail_visibly": ToolPolicy(ToolEffect.READ),
    "broken_read": ToolPolicy(ToolEffect.READ),
    "brittle_read": ToolPolicy(ToolEffect.READ),
    "hanging_read": ToolPolicy(ToolEffect.READ),
    "broken_write": ToolPolicy(ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False),
}

# Tool Step settings of their own (ToolCallStepOptionsProvider); a single-attempt Step
# ignores the retry policy.
STEP_OPTIONS = {
    "brittle_read": ToolCallStepOptions(
        retry_policy=dex.RetryPolicy(maximum_attempts=2, initial_interval=timedelta(seconds=1))
    ),
    "hanging_read": ToolCallStepOptions(
        execute_method_timeout=timedelta(seconds=1),
        retry_policy=dex.RetryPolicy(maximum_attempts=1),
    ),
    "broken_write": ToolCallStepOptions(retry_policy=dex.RetryPolicy(maximum_attempts=5)),
}


def build_flow() -> AgentSessionFlow:
    deadline = os.environ.get("CORE_TEST_INTERRUPT_DEADLINE")
    return AgentSessionFlow(
        ScriptedRunner(SCRIPT, TOOLS, STEP_OPTIONS),
        flow_type=FLOW_TYPE,
        options=AgentSessionOptions(
            tool_policies=POLICIES,
            built_in_tools=frozenset({BuiltInTool.ASK_USER, BuiltInTool.DURABLE_WAIT}),
            interrupt_deadline=timedelta(seconds=int(deadline)) if deadline else None,
            message_window_size=4,
            message_chunk_size=2,
        ),
    )
