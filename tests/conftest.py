"""Fixtures of the repository-level tests: the stand-alone scripts, imported by path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(relative: str) -> ModuleType:
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(f"_script_{path.stem}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Dataclasses resolve their annotations through sys.modules while the module runs.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def lockstep() -> ModuleType:
    """``scripts/lockstep.py``."""
    return _load("scripts/lockstep.py")


@pytest.fixture(scope="session")
def release_check() -> ModuleType:
    """``scripts/release_check.py``."""
    return _load("scripts/release_check.py")


@pytest.fixture(scope="session")
def bench_runner() -> ModuleType:
    """``benchmarks/run.py``."""
    return _load("benchmarks/run.py")
