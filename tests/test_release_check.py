"""``scripts/release_check.py``: what the build session refuses in built files."""

from __future__ import annotations

import zipfile
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _wheel(path: Path, names: list[str]) -> None:
    with zipfile.ZipFile(path, "w") as wheel:
        for name in names:
            wheel.writestr(name, "")


def test_a_part_wheel_shipping_the_root_is_refused(
    release_check: ModuleType, tmp_path: Path
) -> None:
    wheel = tmp_path / "dex_agents_mcp-0.5.0-py3-none-any.whl"
    _wheel(
        wheel, ["dex_agents/__init__.py", "dex_agents/mcp/__init__.py", "dex_agents/mcp/py.typed"]
    )
    assert list(release_check._wheel_problems(wheel, "mcp")) == [
        f"{wheel.name}: ships dex_agents/__init__.py, which belongs to dex-agents-core alone"
    ]


def test_a_part_wheel_without_py_typed_or_with_strays_is_refused(
    release_check: ModuleType, tmp_path: Path
) -> None:
    wheel = tmp_path / "dex_agents_s3-0.5.0-py3-none-any.whl"
    _wheel(wheel, ["dex_agents/s3/__init__.py", "dex_agents/mcp/__init__.py"])
    assert list(release_check._wheel_problems(wheel, "s3")) == [
        f"{wheel.name}: dex_agents/s3/py.typed is missing",
        f"{wheel.name}: files outside dex_agents/s3/: dex_agents/mcp/__init__.py",
    ]


def test_missing_builds_are_reported(release_check: ModuleType, tmp_path: Path) -> None:
    problems = release_check.check_dist(tmp_path, ROOT)
    assert "dex_agents_core-0.5.0-py3-none-any.whl was not built" in problems
    assert "dex_agents-0.5.0.tar.gz was not built" in problems
