"""Docs and entry points agree with the workspace: install table, README commands, CI."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ROOT / "packages"


def _install_table() -> dict[str, tuple[str, str]]:
    """Rows of ``docs/install.md``'s table: wheel -> (import, extra column)."""
    rows = {}
    for line in (ROOT / "docs" / "install.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            rows[cells[0].strip("`").split("`")[0]] = (cells[1], cells[2])
    return rows


def test_install_table_lists_every_wheel_with_its_import_and_extra() -> None:
    rows = _install_table()
    umbrella = tomllib.loads((PACKAGES / "dex-agents" / "pyproject.toml").read_text("utf-8"))
    extras_of = {
        requirement.split("==")[0].split(">=")[0]: extra
        for extra, requirements in umbrella["project"]["optional-dependencies"].items()
        for requirement in requirements
    }
    for member in sorted(PACKAGES.glob("*/pyproject.toml")):
        wheel = member.parent.name
        parts = [
            init.parent.name for init in member.parent.glob("src/dex_agents/[!_]*/__init__.py")
        ]
        module = f"dex_agents.{parts[0]}" if parts else "dex_agents"
        assert wheel in rows, f"docs/install.md has no row for {wheel}"
        imported, extra = rows[wheel]
        assert imported == f"`{module}`"
        assert extra == (f"`{extras_of[wheel]}`" if wheel in extras_of else extra), wheel
        assert wheel in extras_of or extra.startswith("(")
    listed = {cell.strip("`") for _, cell in rows.values() if cell.startswith("`")}
    assert listed == set(umbrella["project"]["optional-dependencies"]), (
        "every extra of dex-agents needs a row in docs/install.md"
    )


def _readme_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```(?:bash|sh)\n(.*?)^```", readme, flags=re.MULTILINE | re.DOTALL)
    return [
        line.strip()
        for block in blocks
        for line in block.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def test_readme_has_two_commands_and_ci_runs_the_second() -> None:
    main_job, test_suite = _readme_commands()
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ci_lines[-1] == test_suite
    assert main_job.startswith('python -m pip install "uv==0.13.9" && ')
    assert test_suite.startswith('python -m pip install "uv==0.13.9" "nox==2026.10.20" && ')


def test_tool_pins_agree_everywhere() -> None:
    workflow = (ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")
    assert 'pip install "uv==0.13.9" "nox==2026.10.20"' in workflow
    root = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert root["tool"]["uv"]["required-version"] == "==0.13.9"
    noxfile = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    assert 'nox.needs_version = ">=2026.10.20"' in noxfile


def test_every_part_has_a_docs_page() -> None:
    for init in PACKAGES.glob("*/src/dex_agents/[!_]*/__init__.py"):
        page = ROOT / "docs" / "parts" / f"{init.parent.name}.md"
        assert page.is_file(), f"{init.parent.name} has no {page.relative_to(ROOT)}"
        assert f"`dex_agents.{init.parent.name}`" in page.read_text(encoding="utf-8")
