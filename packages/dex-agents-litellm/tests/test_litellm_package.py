"""The dex-agents-litellm wheel: a typed part under ``dex_agents``, at the line's version."""

from __future__ import annotations

from importlib import metadata, resources

import dex_agents
import dex_agents.litellm


def test_part_imports_beside_the_core_root() -> None:
    from dex_agents import litellm

    assert litellm is dex_agents.litellm
    assert litellm.__name__ == "dex_agents.litellm"
    assert resources.files(litellm).joinpath("py.typed").is_file()


def test_wheel_shares_the_version_line() -> None:
    assert metadata.version("dex-agents-litellm") == dex_agents.__version__
