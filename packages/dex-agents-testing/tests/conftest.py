"""The test kit's own tests: helper modules beside this file, and their fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
# pytest runs with --import-mode=importlib, which puts no test folder on sys.path. The tests
# import ``kit_flows`` and ``kit_helpers`` by name, as the Worker child (``python -m
# kit_worker``, run in this folder) does. Appended, not prepended, so these modules never
# shadow another package's test helpers.
if str(HERE) not in sys.path:
    sys.path.append(str(HERE))


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    """The folder shared with Worker processes (gates and the invocation log)."""
    path = tmp_path / "state"
    path.mkdir()
    return path
