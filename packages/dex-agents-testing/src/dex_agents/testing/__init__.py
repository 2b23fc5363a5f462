"""Test kit for dex-agents: the ``dex-agents-testing`` wheel.

It will hold ``AgentTestStack`` (a private engine plus Worker child processes), ``FileGate``,
``InvocationLog``, Step history, wait helpers and scenarios. The package is empty until that
work lands.
"""

__all__: list[str] = []
