"""MCP servers' tools as dex-agents tools: the ``dex-agents-mcp`` wheel.

It will hold ``McpToolSource``, which offers the tools of MCP servers (stdio and streamable
HTTP) as agent tools. The package is empty until that work lands.
"""

__all__: list[str] = []
