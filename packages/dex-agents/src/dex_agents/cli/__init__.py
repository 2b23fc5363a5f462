"""The ``dex-agents`` command: the umbrella wheel's entry point.

Run ``dex-agents --help`` for the sub-commands.
"""

from dex_agents.cli._main import main

__all__ = ["main"]
