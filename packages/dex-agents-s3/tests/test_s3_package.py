"""The dex-agents-s3 wheel: a typed part under ``dex_agents``, at the line's version."""

from __future__ import annotations

from importlib import metadata, resources

import dex_agents
import dex_agents.s3


def test_part_imports_beside_the_core_root() -> None:
    from dex_agents import s3

    assert s3 is dex_agents.s3
    assert s3.__name__ == "dex_agents.s3"
    assert resources.files(s3).joinpath("py.typed").is_file()


def test_wheel_shares_the_version_line() -> None:
    assert metadata.version("dex-agents-s3") == dex_agents.__version__
