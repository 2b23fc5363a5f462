"""``scripts/lockstep.py``: one version line, exact sibling pins, an exact SDK pin."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A copy of the repository's pyproject files and lock, free to be broken."""
    for path in [*ROOT.glob("packages/*/pyproject.toml"), ROOT / "uv.lock"]:
        target = tmp_path / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_the_repository_holds_the_line(lockstep: ModuleType) -> None:
    assert lockstep.check(ROOT) == []
    assert lockstep.main([str(ROOT)]) == 0


def test_a_changed_version_fails(lockstep: ModuleType, workspace: Path) -> None:
    assert lockstep.check(workspace) == []
    _edit(
        workspace / "packages/dex-agents-mcp/pyproject.toml",
        'version = "0.5.0"',
        'version = "0.5.1"',
    )
    problems = lockstep.check(workspace)
    assert "packages/dex-agents-mcp/pyproject.toml: version 0.5.1 is off the line 0.5.0" in problems
    assert any("uv.lock records dex-agents-mcp at 0.5.0" in problem for problem in problems)
    assert lockstep.main([str(workspace)]) == 1


def test_a_loose_sibling_pin_fails(lockstep: ModuleType, workspace: Path) -> None:
    _edit(
        workspace / "packages/dex-agents/pyproject.toml",
        '"dex-agents-mcp==0.5.0"',
        '"dex-agents-mcp>=0.5"',
    )
    assert lockstep.check(workspace) == [
        "packages/dex-agents/pyproject.toml: extra mcp requires dex-agents-mcp>=0.5, not ==0.5.0"
    ]


def test_an_unpinned_sdk_fails(lockstep: ModuleType, workspace: Path) -> None:
    _edit(
        workspace / "packages/dex-agents-core/pyproject.toml",
        "dex-python-sdk==1.23.0",
        "dex-python-sdk>=1.23",
    )
    core = "packages/dex-agents-core/pyproject.toml"
    assert lockstep.check(workspace) == [
        f"{core}: dex-python-sdk must be pinned with ==, got '>=1.23'",
        "wheels pin dex-python-sdk differently: ==1.23.0, >=1.23",
    ]


def test_a_missing_version_fails(lockstep: ModuleType, workspace: Path) -> None:
    _edit(workspace / "packages/dex-agents-s3/pyproject.toml", 'version = "0.5.0"\n', "")
    problems = lockstep.check(workspace)
    assert (
        "packages/dex-agents-s3/pyproject.toml: no static project.version (the line is 0.5.0)"
        in problems
    )
