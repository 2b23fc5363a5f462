"""Durable agent sessions for Dex.

``dex_agents`` is shared by every wheel of the dex-agents version line: this root module
comes from ``dex-agents-core``, and each other wheel adds one part beneath it
(``dex_agents.builtin_loop``, ``dex_agents.mcp``, ...). The source tree of every other wheel
holds this same file as a symlink, so whichever copy Python finds first in an editable
workspace, the package spans all of them.

Importing a part whose wheel is not installed raises ``ModuleNotFoundError`` naming the
wheel and the ``pip install`` that brings it.
"""

# First statement: spread the package over every directory that holds a ``dex_agents`` part.
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

from importlib.metadata import version as _distribution_version
from typing import TYPE_CHECKING

from dex_agents._builtin_tools import (
    BUILT_IN_TOOL_DEFINITIONS,
    QUESTION_DEADLINE_PASSED_ERROR,
    QUESTION_DECLINED_TEXT,
    BuiltInTool,
    BuiltInToolDefinition,
)
from dex_agents._client import AgentSessionClient
from dex_agents._events import AgentEvent, AgentEventType, AgentEventWriter
from dex_agents._flow import AGENT_SESSION_ACTIVE_STEP_SEARCH_MODE, AgentSessionFlow
from dex_agents._interrupts import (
    AgentInterrupt,
    AgentInterruptResolution,
    AnswerQuestionRequest,
    InterruptKind,
    QuestionResolution,
    ResolveInterruptRequest,
)
from dex_agents._messages import (
    AgentMessage,
    AgentUserMessage,
    FrameworkMessage,
    MessageRole,
    message_sequence_key,
)
from dex_agents._notes import build_turn_failure_note
from dex_agents._optional_parts import install_missing_part_finder as _install_missing_part_finder
from dex_agents._optional_parts import optional_part_module as _optional_part_module
from dex_agents._options import AgentSessionOptions, RunModelLimit
from dex_agents._persistence import (
    AGENT_EVENTS_STREAM_NAME,
    SESSION_PERSISTENCE,
    SessionPersistence,
)
from dex_agents._policies import ToolEffect, ToolPolicy, idempotency_key
from dex_agents._runner import (
    AgentFrameworkRunner,
    AgentTurnContext,
    AgentTurnOutcome,
    DeferredToolCall,
    DeferredToolExecution,
    DeferredToolOutcome,
    ToolCallsRequested,
    ToolCallStepOptions,
    ToolCallStepOptionsProvider,
    ToolExecutionError,
    ToolExecutionResult,
    ToolInputRequested,
    ToolOutcomeUnknownError,
    TurnCompleted,
    TurnContinued,
    UnfinishedTurnMessageBuilder,
)
from dex_agents._snapshot import (
    AgentMessagesPage,
    AgentSnapshot,
    ListAgentMessagesRequest,
    QueuedUserMessage,
)
from dex_agents._state import (
    AgentSessionStartInput,
    AgentState,
    AgentStatus,
    AgentUsage,
    InteractionMode,
    ModelCallMetadata,
)
from dex_agents._storage import AgentMessageChunk, AgentMessageIndex
from dex_agents._tool_calls import (
    ATTEMPT_NOT_STARTED_ERROR_TYPE,
    MISSING_TOOL_RESULT_TEXT,
    TOOL_CALL_NOT_RUN_ERROR_PREFIX,
    AgentToolCall,
    ToolCallCompleted,
    ToolCallStatus,
    describe_tool_call_outcome,
)

__version__: str = _distribution_version("dex-agents-core")
"""The version of the installed ``dex-agents-core`` wheel; every wheel of the line shares it."""

__all__ = [
    "AGENT_EVENTS_STREAM_NAME",
    "AGENT_SESSION_ACTIVE_STEP_SEARCH_MODE",
    "ATTEMPT_NOT_STARTED_ERROR_TYPE",
    "BUILT_IN_TOOL_DEFINITIONS",
    "MISSING_TOOL_RESULT_TEXT",
    "QUESTION_DEADLINE_PASSED_ERROR",
    "QUESTION_DECLINED_TEXT",
    "SESSION_PERSISTENCE",
    "TOOL_CALL_NOT_RUN_ERROR_PREFIX",
    "AgentEvent",
    "AgentEventType",
    "AgentEventWriter",
    "AgentFrameworkRunner",
    "AgentInterrupt",
    "AgentInterruptResolution",
    "AgentMessage",
    "AgentMessageChunk",
    "AgentMessageIndex",
    "AgentMessagesPage",
    "AgentSessionClient",
    "AgentSessionFlow",
    "AgentSessionOptions",
    "AgentSessionStartInput",
    "AgentSnapshot",
    "AgentState",
    "AgentStatus",
    "AgentToolCall",
    "AgentTurnContext",
    "AgentTurnOutcome",
    "AgentUsage",
    "AgentUserMessage",
    "AnswerQuestionRequest",
    "BuiltInTool",
    "BuiltInToolDefinition",
    "DeferredToolCall",
    "DeferredToolExecution",
    "DeferredToolOutcome",
    "FrameworkMessage",
    "InteractionMode",
    "InterruptKind",
    "ListAgentMessagesRequest",
    "MessageRole",
    "ModelCallMetadata",
    "QuestionResolution",
    "QueuedUserMessage",
    "ResolveInterruptRequest",
    "RunModelLimit",
    "SessionPersistence",
    "ToolCallCompleted",
    "ToolCallStatus",
    "ToolCallStepOptions",
    "ToolCallStepOptionsProvider",
    "ToolCallsRequested",
    "ToolEffect",
    "ToolExecutionError",
    "ToolExecutionResult",
    "ToolInputRequested",
    "ToolOutcomeUnknownError",
    "ToolPolicy",
    "TurnCompleted",
    "TurnContinued",
    "UnfinishedTurnMessageBuilder",
    "__version__",
    "build_turn_failure_note",
    "describe_tool_call_outcome",
    "idempotency_key",
    "message_sequence_key",
]

_install_missing_part_finder()

if not TYPE_CHECKING:
    # Hidden from type checkers, which resolve ``dex_agents.<part>`` as sub-modules themselves
    # and would otherwise accept any attribute of ``dex_agents``.
    def __getattr__(name: str) -> object:
        """Import an optional part on ``from dex_agents import <part>``.

        Without this hook a missing part would surface as a bare "cannot import name" error;
        with it, the error names the wheel and the extra that bring the part.
        """
        return _optional_part_module(name)
