"""The README's example runs as written: its files go into a folder and pytest runs them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"^```(?:python|toml)\n# (?:tests/)?(\S+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _example_files() -> dict[str, str]:
    """The README's code blocks whose first line names a file, by file name."""
    return dict(_BLOCK.findall(README.read_text(encoding="utf-8")))


def test_every_other_python_block_imports_and_defines_its_code() -> None:
    blocks = re.findall(
        r"^```python\n(.*?)^```", README.read_text("utf-8"), re.MULTILINE | re.DOTALL
    )
    others = [block for block in blocks if not block.startswith("# ")]
    assert others
    for block in others:
        exec(compile(block, str(README), "exec"), {"__name__": "readme_block"})


def test_the_readme_names_every_file_of_its_example() -> None:
    assert sorted(_example_files()) == [
        "pyproject.toml",
        "refund_flows.py",
        "refund_worker.py",
        "test_refund.py",
    ]


def test_the_readme_example_passes(tmp_path: Path) -> None:
    project = tmp_path / "project"
    tests = project / "tests"
    tests.mkdir(parents=True)
    for name, body in _example_files().items():
        folder = project if name == "pyproject.toml" else tests
        (folder / name).write_text(body)
    # A clean pytest run of the example, as its author would start it in their project.
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTEST_", "PYTHONPATH"))
    }
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout
