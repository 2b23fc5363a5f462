"""The dex-agents-mcp wheel: a typed part under ``dex_agents``, at the line's version."""

from __future__ import annotations

from importlib import metadata, resources

import dex_agents
import dex_agents.mcp


def test_part_imports_beside_the_core_root() -> None:
    from dex_agents import mcp

    assert mcp is dex_agents.mcp
    assert mcp.__name__ == "dex_agents.mcp"
    assert resources.files(mcp).joinpath("py.typed").is_file()


def test_wheel_shares_the_version_line() -> None:
    assert metadata.version("dex-agents-mcp") == dex_agents.__version__
