"""The dex-agents-ui-stream wheel: a typed part under ``dex_agents``, at the line's version."""

from __future__ import annotations

from importlib import metadata, resources

import dex_agents
import dex_agents.ui_stream


def test_part_imports_beside_the_core_root() -> None:
    from dex_agents import ui_stream

    assert ui_stream is dex_agents.ui_stream
    assert ui_stream.__name__ == "dex_agents.ui_stream"
    assert resources.files(ui_stream).joinpath("py.typed").is_file()


def test_wheel_shares_the_version_line() -> None:
    assert metadata.version("dex-agents-ui-stream") == dex_agents.__version__
