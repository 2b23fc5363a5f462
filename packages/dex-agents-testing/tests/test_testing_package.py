"""The dex-agents-testing wheel: a typed part under ``dex_agents``, at the line's version."""

from __future__ import annotations

from importlib import metadata, resources

import dex_agents
import dex_agents.testing


def test_part_imports_beside_the_core_root() -> None:
    from dex_agents import testing

    assert testing is dex_agents.testing
    assert testing.__name__ == "dex_agents.testing"
    assert resources.files(testing).joinpath("py.typed").is_file()


def test_wheel_shares_the_version_line() -> None:
    assert metadata.version("dex-agents-testing") == dex_agents.__version__
