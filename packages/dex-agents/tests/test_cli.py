"""The ``dex-agents`` command: version, help, and hand-off to the engine's command."""

from __future__ import annotations

import sys
from importlib.metadata import version
from types import ModuleType

import pytest

import dex_agents.cli
from dex_agents.cli import main


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"dex-agents {version('dex-agents')}\n"


def test_no_command_prints_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "engine" in capsys.readouterr().err


def test_unknown_arguments_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--no-such-flag"])
    assert exited.value.code == 2
    assert "unrecognized arguments: --no-such-flag" in capsys.readouterr().err


@pytest.fixture
def engine_calls(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Stand in for ``dex_agents.engine._cli`` and record what the command hands it."""
    calls: list[list[str]] = []

    def engine_main(args: list[str]) -> int:
        calls.append(args)
        return 7

    module = ModuleType("dex_agents.engine._cli")
    module.main = engine_main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "dex_agents.engine._cli", module)
    return calls


def test_engine_arguments_are_forwarded_in_order(engine_calls: list[list[str]]) -> None:
    argv = ["engine", "serve", "--address", "127.0.0.1:8801", "--data-dir", ".dex-data", "-h"]
    assert main(argv) == 7
    assert engine_calls == [argv[1:]]


def test_engine_without_its_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # ``None`` in sys.modules makes the import fail as if the module did not exist.
    monkeypatch.setitem(sys.modules, "dex_agents.engine._cli", None)
    assert main(["engine", "serve"]) == 1
    assert "the engine command is not available" in capsys.readouterr().err


def test_cli_part_is_typed() -> None:
    from importlib import resources

    assert resources.files(dex_agents.cli).joinpath("py.typed").is_file()
    assert version("dex-agents") == dex_agents.__version__
