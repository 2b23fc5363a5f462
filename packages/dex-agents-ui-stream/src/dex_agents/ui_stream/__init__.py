"""Browser streams for dex-agents sessions: the ``dex-agents-ui-stream`` wheel.

It will hold snapshot JSON and Server-Sent Event frames that let a browser follow an agent
session. The package is empty until that work lands.
"""

__all__: list[str] = []
