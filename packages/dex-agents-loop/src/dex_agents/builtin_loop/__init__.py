"""The built-in agent loop: agents defined in Dex terms, without a framework.

``AgentDefinition`` describes the agent, ``function_tool`` turns functions into tools,
``ToolSource`` lists tools at run time, a ``ModelClient`` makes the model calls
(``ScriptedModelClient`` answers from a function), and ``BuiltinLoopAgentRunner`` runs it
inside the session Flow: one ``RunModel`` Step per model call, one Step per tool call.
"""

from dex_agents.builtin_loop._definition import (
    MAX_CONSECUTIVE_TURN_CONTINUATIONS,
    TURN_CONTINUATION_LIMIT_ERROR,
    AgentDefinition,
    ContinueTurn,
    InstructionContext,
    ToolSource,
    TurnContinuation,
    TurnContinuationContext,
    builtin_agent_session_options,
)
from dex_agents.builtin_loop._function_tools import (
    FunctionTool,
    FunctionToolResult,
    PrepareArguments,
    ToolCallContext,
    function_tool,
    tool_errors_visible,
)
from dex_agents.builtin_loop._model import (
    ModelClient,
    ModelInputItem,
    ModelOutputItem,
    ModelOutputWriter,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    ModelToolDefinition,
    ToolResultItem,
    UserTextItem,
    supports_forced_tool_choice,
)
from dex_agents.builtin_loop._runner import (
    BuiltinLoopAgentRunner,
    builtin_agent_session_flow,
    model_call_limit_text,
)
from dex_agents.builtin_loop._scripted import (
    ScriptedModelClient,
    ScriptedModelReply,
    ScriptedToolCall,
)

__all__ = [
    "MAX_CONSECUTIVE_TURN_CONTINUATIONS",
    "TURN_CONTINUATION_LIMIT_ERROR",
    "AgentDefinition",
    "BuiltinLoopAgentRunner",
    "ContinueTurn",
    "FunctionTool",
    "FunctionToolResult",
    "InstructionContext",
    "ModelClient",
    "ModelInputItem",
    "ModelOutputItem",
    "ModelOutputWriter",
    "ModelRequest",
    "ModelResponse",
    "ModelToolCall",
    "ModelToolDefinition",
    "PrepareArguments",
    "ScriptedModelClient",
    "ScriptedModelReply",
    "ScriptedToolCall",
    "ToolCallContext",
    "ToolResultItem",
    "ToolSource",
    "TurnContinuation",
    "TurnContinuationContext",
    "UserTextItem",
    "builtin_agent_session_flow",
    "builtin_agent_session_options",
    "function_tool",
    "model_call_limit_text",
    "supports_forced_tool_choice",
    "tool_errors_visible",
]
