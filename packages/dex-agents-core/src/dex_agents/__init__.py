"""Durable agent sessions for Dex.

``dex_agents`` is shared by every wheel of the dex-agents version line: this root module
comes from ``dex-agents-core``, and each other wheel adds one part beneath it
(``dex_agents.builtin_loop``, ``dex_agents.mcp``, ...). The source tree of every other wheel
holds this same file as a symlink, so whichever copy Python finds first in an editable
workspace, the package spans all of them.

Importing a part whose wheel is not installed raises ``ModuleNotFoundError`` naming the
wheel and the ``pip install`` that brings it.
"""

# First statement: spread the package over every directory that holds a ``dex_agents`` part.
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

from importlib.metadata import version as _distribution_version
from typing import TYPE_CHECKING

from dex_agents._optional_parts import install_missing_part_finder as _install_missing_part_finder
from dex_agents._optional_parts import optional_part_module as _optional_part_module

__version__: str = _distribution_version("dex-agents-core")
"""The version of the installed ``dex-agents-core`` wheel; every wheel of the line shares it."""

__all__ = ["__version__"]

_install_missing_part_finder()

if not TYPE_CHECKING:
    # Hidden from type checkers, which resolve ``dex_agents.<part>`` as sub-modules themselves
    # and would otherwise accept any attribute of ``dex_agents``.
    def __getattr__(name: str) -> object:
        """Import an optional part on ``from dex_agents import <part>``.

        Without this hook a missing part would surface as a bare "cannot import name" error;
        with it, the error names the wheel and the extra that bring the part.
        """
        return _optional_part_module(name)
