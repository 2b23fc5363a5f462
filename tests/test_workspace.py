"""The shape of the workspace: one part per wheel under a ``dex_agents`` root owned by core."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path
from typing import Any

import pytest

from dex_agents._optional_parts import OPTIONAL_PARTS

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ROOT / "packages"
CORE = PACKAGES / "dex-agents-core"
CORE_INIT = CORE / "src" / "dex_agents" / "__init__.py"
UMBRELLA = PACKAGES / "dex-agents"
MEMBERS = sorted(path.parent for path in PACKAGES.glob("*/pyproject.toml"))
OTHERS = [member for member in MEMBERS if member != CORE]


def _project(folder: Path) -> dict[str, Any]:
    text = (folder / "pyproject.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def _part(member: Path) -> str:
    (init,) = member.glob("src/dex_agents/[!_]*/__init__.py")
    return init.parent.name


def test_every_wheel_of_scope_is_a_member() -> None:
    assert {member.name for member in MEMBERS} == {
        "dex-agents",
        "dex-agents-core",
        "dex-agents-engine",
        "dex-agents-litellm",
        "dex-agents-loop",
        "dex-agents-mcp",
        "dex-agents-s3",
        "dex-agents-testing",
        "dex-agents-ui-stream",
    }
    for member in MEMBERS:
        assert _project(member)["project"]["name"] == member.name
        assert (member / "README.md").is_file()


def test_core_root_extends_its_path_first() -> None:
    assert not CORE_INIT.is_symlink()
    body = ast.parse(CORE_INIT.read_text(encoding="utf-8")).body
    assert ast.get_docstring(ast.Module(body=body, type_ignores=[])) is not None
    first, second = body[1], body[2]
    assert ast.unparse(first) == "from pkgutil import extend_path"
    assert ast.unparse(second) == "__path__ = extend_path(__path__, __name__)"
    relative = [
        n
        for n in ast.walk(ast.Module(body=body, type_ignores=[]))
        if isinstance(n, ast.ImportFrom) and n.level
    ]
    assert not relative, "the root module is read from every symlinked copy: import absolutely"
    assert (CORE / "src" / "dex_agents" / "py.typed").is_file()


@pytest.mark.parametrize("member", OTHERS, ids=lambda member: member.name)
def test_part_root_is_a_symlink_to_core(member: Path) -> None:
    init = member / "src" / "dex_agents" / "__init__.py"
    assert init.is_symlink(), f"{init} must be a symlink to {CORE_INIT}"
    assert init.resolve() == CORE_INIT.resolve()
    assert not (member / "src" / "dex_agents" / "py.typed").exists()


@pytest.mark.parametrize("member", OTHERS, ids=lambda member: member.name)
def test_part_builds_leave_out_the_shared_root(member: Path) -> None:
    targets = _project(member)["tool"]["hatch"]["build"]["targets"]
    assert targets["wheel"]["packages"] == ["src/dex_agents"]
    assert "src/dex_agents/__init__.py" in targets["wheel"]["exclude"]
    assert "src/dex_agents/__init__.py" in targets["sdist"]["exclude"]


@pytest.mark.parametrize("member", OTHERS, ids=lambda member: member.name)
def test_each_wheel_holds_one_typed_part(member: Path) -> None:
    parts = [path.parent for path in member.glob("src/dex_agents/[!_]*/__init__.py")]
    assert len(parts) == 1, f"{member.name} must hold exactly one part, has {parts}"
    assert (parts[0] / "py.typed").is_file()


def test_optional_parts_match_the_wheels_and_extras() -> None:
    wheels = {_part(member): member.name for member in OTHERS}
    assert {name: part.wheel for name, part in OPTIONAL_PARTS.items()} == wheels
    umbrella = _project(UMBRELLA)["project"]
    extras = {
        requirement.split("==")[0]: extra
        for extra, requirements in umbrella["optional-dependencies"].items()
        for requirement in requirements
        if requirement.startswith("dex-agents-")
    }
    base = {requirement.split("==")[0] for requirement in umbrella["dependencies"]}
    for name, part in OPTIONAL_PARTS.items():
        assert part.extra == extras.get(part.wheel), name
        if part.extra is None and part.wheel != "dex-agents":
            assert part.wheel in base, f"{part.wheel} comes with a plain pip install dex-agents"


def test_root_workspace_covers_every_member() -> None:
    root = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert root["tool"]["uv"]["package"] is False
    assert root["tool"]["uv"]["workspace"]["members"] == ["packages/*"]
    sources = root["tool"]["uv"]["sources"]
    assert sources == {member.name: {"workspace": True} for member in MEMBERS}
    extras = sorted(_project(UMBRELLA)["project"]["optional-dependencies"])
    assert root["project"]["dependencies"] == [f"dex-agents[{','.join(extras)}]"]
