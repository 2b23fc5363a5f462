"""Friendly errors for the parts of ``dex_agents`` that other wheels bring.

Each part of the package (``dex_agents.mcp``, ``dex_agents.litellm``, ...) ships in a wheel of
its own. When that wheel is not installed, a plain ``import dex_agents.litellm`` would fail
with a bare ``No module named 'dex_agents.litellm'``. The finder installed here sits last on
``sys.meta_path``, so it is asked only after every regular finder came up empty, and turns
that failure into a ``ModuleNotFoundError`` that names the wheel and the install command.

A consequence: ``importlib.util.find_spec("dex_agents.<part>")`` and
``hasattr(dex_agents, "<part>")`` raise for a missing part instead of returning ``None`` or
``False``. Probe for a part with ``try: import ... except ImportError`` instead.
"""

from __future__ import annotations

import importlib
import importlib.abc
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec

__all__ = [
    "OPTIONAL_PARTS",
    "MissingPartFinder",
    "OptionalPart",
    "install_missing_part_finder",
    "missing_part_message",
    "optional_part_module",
]

_ROOT = "dex_agents"


@dataclass(frozen=True, kw_only=True)
class OptionalPart:
    """A part of ``dex_agents`` that a wheel other than ``dex-agents-core`` brings.

    Attributes:
        wheel: The distribution that ships the part, e.g. ``"dex-agents-mcp"``.
        extra: The extra of the ``dex-agents`` umbrella wheel that pulls the part in, or
            ``None`` when a plain ``pip install dex-agents`` already brings it.
    """

    wheel: str
    extra: str | None = None


OPTIONAL_PARTS: Mapping[str, OptionalPart] = MappingProxyType(
    {
        "builtin_loop": OptionalPart(wheel="dex-agents-loop"),
        "cli": OptionalPart(wheel="dex-agents"),
        "engine": OptionalPart(wheel="dex-agents-engine"),
        "litellm": OptionalPart(wheel="dex-agents-litellm", extra="litellm"),
        "mcp": OptionalPart(wheel="dex-agents-mcp", extra="mcp"),
        "s3": OptionalPart(wheel="dex-agents-s3", extra="s3"),
        "testing": OptionalPart(wheel="dex-agents-testing"),
        "ui_stream": OptionalPart(wheel="dex-agents-ui-stream"),
    }
)
"""Every part of ``dex_agents`` outside core, by sub-module name."""


def missing_part_message(name: str) -> str:
    """Return the error message for the part ``dex_agents.<name>`` when its wheel is missing.

    Args:
        name: The part's sub-module name, e.g. ``"litellm"``.

    Returns:
        A message naming the wheel and the ``pip install`` command that brings it.

    Raises:
        KeyError: ``name`` is not an optional part.
    """
    part = OPTIONAL_PARTS[name]
    requirement = "dex-agents" if part.extra is None else f"dex-agents[{part.extra}]"
    return f"{_ROOT}.{name} needs the {part.wheel} wheel: pip install '{requirement}'"


class MissingPartFinder(importlib.abc.MetaPathFinder):
    """A last-in-line meta path finder that explains missing optional parts."""

    def find_spec(
        self,
        fullname: str,
        _path: Sequence[str] | None,
        _target: ModuleType | None = None,
        /,
    ) -> ModuleSpec | None:
        """Raise for ``dex_agents.<part>`` of a known part; decline every other name.

        Args:
            fullname: The module being imported.
            _path: The parent package's ``__path__`` (unused).
            _target: The module being reloaded, if any (unused).

        Returns:
            ``None`` for every module that is not a known optional part.

        Raises:
            ModuleNotFoundError: ``fullname`` is a known optional part. The finder is reached
                only when no regular finder found it, so its wheel is not installed.
        """
        root, _, name = fullname.partition(".")
        if root != _ROOT or name not in OPTIONAL_PARTS:
            return None
        raise ModuleNotFoundError(missing_part_message(name), name=fullname)


def install_missing_part_finder() -> MissingPartFinder:
    """Append the finder to ``sys.meta_path`` once, and return the installed instance.

    Returns:
        The finder on ``sys.meta_path``.
    """
    for finder in sys.meta_path:
        if isinstance(finder, MissingPartFinder):
            return finder
    finder = MissingPartFinder()
    sys.meta_path.append(finder)
    return finder


def optional_part_module(name: str) -> ModuleType:
    """Import and return ``dex_agents.<name>`` for the module ``__getattr__`` of the root.

    Args:
        name: The attribute looked up on ``dex_agents``.

    Returns:
        The imported part.

    Raises:
        AttributeError: ``name`` is not an optional part.
        ModuleNotFoundError: The part's wheel is not installed.
    """
    if name not in OPTIONAL_PARTS:
        msg = f"module {_ROOT!r} has no attribute {name!r}"
        raise AttributeError(msg, name=name)
    return importlib.import_module(f"{_ROOT}.{name}")
