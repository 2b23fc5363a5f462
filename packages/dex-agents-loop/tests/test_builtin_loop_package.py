"""The dex-agents-loop wheel: a typed part under ``dex_agents``, at the line's version."""

from __future__ import annotations

from importlib import metadata, resources

import dex_agents
import dex_agents.builtin_loop


def test_part_imports_beside_the_core_root() -> None:
    from dex_agents import builtin_loop

    assert builtin_loop is dex_agents.builtin_loop
    assert builtin_loop.__name__ == "dex_agents.builtin_loop"
    assert resources.files(builtin_loop).joinpath("py.typed").is_file()


def test_wheel_shares_the_version_line() -> None:
    assert metadata.version("dex-agents-loop") == dex_agents.__version__
