"""The built-in agent loop for dex-agents: the ``dex-agents-loop`` wheel.

It will hold the built-in agent loop: ``AgentDefinition``, ``function_tool``, ``ToolSource``,
the ``ModelClient`` protocol, ``ScriptedModelClient`` and ``BuiltinLoopAgentRunner``. The
package is empty until that work lands.
"""

__all__: list[str] = []
