"""The ``dex_agents`` root: version, and errors that name the wheel of a missing part."""

from __future__ import annotations

import importlib
import sys
from importlib.metadata import version

import pytest

import dex_agents
from dex_agents import _optional_parts
from dex_agents._optional_parts import (
    OPTIONAL_PARTS,
    MissingPartFinder,
    OptionalPart,
    missing_part_message,
)


def test_version_comes_from_the_installed_wheel() -> None:
    from dex_agents import __version__

    assert __version__ == version("dex-agents-core")
    assert "__version__" in dex_agents.__all__


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name, value in vars(dex_agents).items()
        if not name.startswith("_") and not isinstance(value, type(sys))
    } - {"TYPE_CHECKING", "extend_path"}  # the root module's own plumbing
    assert set(dex_agents.__all__) - {"__version__"} == public
    assert len(dex_agents.__all__) == len(set(dex_agents.__all__))


def test_missing_part_messages_name_the_wheel_and_the_extra() -> None:
    assert missing_part_message("litellm") == (
        "dex_agents.litellm needs the dex-agents-litellm wheel: pip install 'dex-agents[litellm]'"
    )
    assert missing_part_message("mcp") == (
        "dex_agents.mcp needs the dex-agents-mcp wheel: pip install 'dex-agents[mcp]'"
    )
    assert missing_part_message("builtin_loop") == (
        "dex_agents.builtin_loop needs the dex-agents-loop wheel: pip install 'dex-agents'"
    )


def test_finder_is_installed_once_and_after_the_path_finder() -> None:
    finders = [f for f in sys.meta_path if isinstance(f, MissingPartFinder)]
    assert len(finders) == 1
    assert _optional_parts.install_missing_part_finder() is finders[0]
    position = sys.meta_path.index(finders[0])
    assert any(f is importlib.machinery.PathFinder for f in sys.meta_path[:position])


def test_finder_declines_other_modules() -> None:
    finder = MissingPartFinder()
    assert finder.find_spec("dex_agents._optional_parts", None) is None
    assert finder.find_spec("dex_agents.litellm.sub", None) is None
    assert finder.find_spec("litellm", None) is None


def test_finder_raises_for_every_known_part() -> None:
    finder = MissingPartFinder()
    for name in OPTIONAL_PARTS:
        with pytest.raises(ModuleNotFoundError) as caught:
            finder.find_spec(f"dex_agents.{name}", None)
        assert caught.value.name == f"dex_agents.{name}"
        assert str(caught.value) == missing_part_message(name)


@pytest.fixture
def missing_part(monkeypatch: pytest.MonkeyPatch) -> str:
    """Register a part whose wheel no environment has, as if it were never installed."""
    name = "not_installed_part"
    parts = {**OPTIONAL_PARTS, name: OptionalPart(wheel="dex-agents-not-installed", extra="nip")}
    monkeypatch.setattr(_optional_parts, "OPTIONAL_PARTS", parts)
    return name


def test_import_of_a_missing_part_names_the_extra(missing_part: str) -> None:
    expected = (
        f"dex_agents.{missing_part} needs the dex-agents-not-installed wheel: "
        "pip install 'dex-agents[nip]'"
    )
    with pytest.raises(ModuleNotFoundError, match=r"^dex_agents\.not_installed_part needs") as e:
        importlib.import_module(f"dex_agents.{missing_part}")
    assert str(e.value) == expected
    # What ``from dex_agents import <part>`` runs.
    with pytest.raises(ModuleNotFoundError) as e:
        __import__("dex_agents", fromlist=[missing_part])
    assert str(e.value) == expected


def test_root_attributes_other_than_parts_stay_missing() -> None:
    with pytest.raises(AttributeError, match="no attribute 'not_a_part'"):
        dex_agents.not_a_part  # type: ignore[attr-defined]  # noqa: B018
    assert not hasattr(dex_agents, "not_a_part")
