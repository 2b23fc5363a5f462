"""Options of a session Flow."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta

from dex_agents._builtin_tools import BuiltInTool
from dex_agents._policies import ToolEffect, ToolPolicy
from dex_agents._storage import StorageLimits

__all__ = ["AgentSessionOptions", "RunModelLimit"]

_MiB = 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class RunModelLimit:
    """Timeouts and retries of ``RunModel``.

    Attributes:
        timeout: One attempt's limit.
        heartbeat_timeout: Longest silence of an attempt (the session heartbeats every
            20 seconds while a model call runs).
        maximum_attempts: Attempts in all, the first included.
        retry_budget: Time from the first attempt after which no retry starts.
    """

    timeout: timedelta = timedelta(minutes=15)
    heartbeat_timeout: timedelta = timedelta(minutes=2)
    maximum_attempts: int = 3
    retry_budget: timedelta = timedelta(minutes=30)


@dataclass(frozen=True, kw_only=True)
class AgentSessionOptions:
    """How a session Flow treats tools, interrupts, events and storage.

    Attributes:
        tool_policies: Policies by tool name; others use framework metadata or
            ``default_tool_effect``.
        default_tool_effect: Effect of a tool without a policy.
        event_stream_capacity_bytes: Byte budget of the ``AgentEvents`` Stream.
        interrupt_deadline: How long an approval or question may wait; ``None`` waits
            forever.
        built_in_tools: Built-in tools the session offers and routes.
        max_durable_wait: Longest ``durable_wait``.
        plan_mode_enabled: Whether messages may ask for planning turns.
        run_model_limit: ``RunModel``'s timeouts and retries.
        tool_timeout: One tool call attempt's limit.
        message_window_size: Messages kept one per instance.
        message_chunk_size: Most messages per chunk.
        message_chunk_max_bytes: Most encoded bytes per chunk (at most 8 MiB).
        retained_message_limit: Messages always kept after compaction; ``None`` keeps all.
    """

    tool_policies: Mapping[str, ToolPolicy] = field(default_factory=dict)
    default_tool_effect: ToolEffect = ToolEffect.UNCLASSIFIED
    event_stream_capacity_bytes: int = 10 * _MiB
    interrupt_deadline: timedelta | None = None
    built_in_tools: frozenset[BuiltInTool] = frozenset()
    max_durable_wait: timedelta = timedelta(days=365)
    plan_mode_enabled: bool = False
    run_model_limit: RunModelLimit = field(default_factory=RunModelLimit)
    tool_timeout: timedelta = timedelta(minutes=15)
    message_window_size: int = 64
    message_chunk_size: int = 32
    message_chunk_max_bytes: int = _MiB
    retained_message_limit: int | None = 1000

    def __post_init__(self) -> None:
        if self.event_stream_capacity_bytes <= 0:
            raise ValueError("event_stream_capacity_bytes must be positive")
        if self.interrupt_deadline is not None and self.interrupt_deadline <= timedelta(0):
            raise ValueError("interrupt_deadline must be positive")
        if self.max_durable_wait < timedelta(seconds=1):
            raise ValueError("max_durable_wait must be at least one second")
        if self.run_model_limit.maximum_attempts < 1:
            raise ValueError("run_model_limit.maximum_attempts must be at least 1")
        unknown = sorted(set(map(str, self.built_in_tools)) - {tool.value for tool in BuiltInTool})
        if unknown:
            raise ValueError(f"unknown built-in tools: {unknown}")
        if BuiltInTool.WRITE_TODOS in self.built_in_tools or self.plan_mode_enabled:
            raise ValueError("write_todos and plan mode are not available in this release yet")
        self.storage_limits()  # validates the window and chunk sizes

    def storage_limits(self) -> StorageLimits:
        """The message window and chunk limits these options set."""
        return StorageLimits(
            window_size=self.message_window_size,
            chunk_size=self.message_chunk_size,
            chunk_max_bytes=self.message_chunk_max_bytes,
        )
