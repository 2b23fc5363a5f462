"""Tool effects and the policy that picks a call's Step, retries and approval."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "ToolEffect",
    "ToolPolicy",
    "idempotency_key",
    "resolve_tool_policy",
    "uses_single_attempt_step",
]


class ToolEffect(StrEnum):
    """What a tool call may do to the world, which decides how it is retried.

    ``read`` and ``idempotent_write`` calls run in ``CallTool`` with up to three attempts;
    ``non_idempotent_write`` and ``unclassified`` calls run in ``CallSingleAttemptTool``
    once, and need approval by default.
    """

    READ = "read"
    IDEMPOTENT_WRITE = "idempotent_write"
    NON_IDEMPOTENT_WRITE = "non_idempotent_write"
    UNCLASSIFIED = "unclassified"

    @property
    def requires_approval_by_default(self) -> bool:
        """Whether a call with this effect waits for approval unless a policy says not."""
        return self in (ToolEffect.NON_IDEMPOTENT_WRITE, ToolEffect.UNCLASSIFIED)


@dataclass(frozen=True)
class ToolPolicy:
    """How the session treats one tool.

    Attributes:
        effect: The tool's effect.
        requires_approval: ``None`` uses the effect's default.
    """

    effect: ToolEffect
    requires_approval: bool | None = None

    @property
    def is_approval_required(self) -> bool:
        """Whether a call waits in ``AwaitToolApproval`` before it runs."""
        if self.requires_approval is None:
            return self.effect.requires_approval_by_default
        return self.requires_approval


def resolve_tool_policy(
    name: str,
    policies: Mapping[str, ToolPolicy],
    default_effect: ToolEffect,
    framework_effect: ToolEffect | None = None,
) -> ToolPolicy:
    """The policy for a tool: an explicit one, else framework metadata, else the default."""
    explicit = policies.get(name)
    if explicit is not None:
        return explicit
    return ToolPolicy(framework_effect if framework_effect is not None else default_effect)


def uses_single_attempt_step(effect: ToolEffect) -> bool:
    """Whether calls with this effect run once (``CallSingleAttemptTool``)."""
    return effect in (ToolEffect.NON_IDEMPOTENT_WRITE, ToolEffect.UNCLASSIFIED)


def idempotency_key(flow_id: str, turn_id: str, tool_call_id: str) -> str:
    """``<flowId>/<turnId>/<toolCallId>``: the same on every attempt of one call."""
    return f"{flow_id}/{turn_id}/{tool_call_id}"
