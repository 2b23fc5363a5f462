"""Run the repository's benchmarks and record their results.

A benchmark is a module ``benchmarks/<name>/bench.py`` that defines ``run()``, returning a
JSON-serialisable ``dict`` of measurements. ``python benchmarks/run.py [NAME ...]`` runs every
benchmark (or only those named) and writes ``benchmarks/results/<name>.json``: the
measurements plus the wall time, the interpreter and the machine they were taken on.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

__all__ = ["discover", "main", "run_benchmark"]

BENCHMARKS = Path(__file__).resolve().parent


def discover(root: Path) -> dict[str, Path]:
    """Find the benchmarks under ``root``.

    Args:
        root: The benchmarks folder.

    Returns:
        Each benchmark's ``bench.py`` by benchmark name, sorted by name.
    """
    return {path.parent.name: path for path in sorted(root.glob("*/bench.py"))}


def run_benchmark(name: str, path: Path) -> dict[str, object]:
    """Import ``path``, call its ``run()``, and describe the result.

    Args:
        name: The benchmark's name.
        path: Its ``bench.py``.

    Returns:
        The record written to ``results/<name>.json``.

    Raises:
        TypeError: The module has no ``run()``, or it returned something other than a dict.
    """
    spec = importlib.util.spec_from_file_location(f"_benchmark_{name}", path)
    if spec is None or spec.loader is None:
        raise TypeError(f"{path} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    run = getattr(module, "run", None)
    if not callable(run):
        raise TypeError(f"{path} defines no run()")
    started_at = datetime.now(UTC)
    start = time.perf_counter()
    measurements = cast("Callable[[], object]", run)()
    seconds = time.perf_counter() - start
    if not isinstance(measurements, Mapping):
        raise TypeError(f"{path}: run() returned {type(measurements).__name__}, not a dict")
    return {
        "benchmark": name,
        "started_at": started_at.isoformat(),
        "seconds": round(seconds, 6),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "results": dict(measurements),
    }


def main(argv: Sequence[str] | None = None, *, root: Path = BENCHMARKS) -> int:
    """Run the benchmarks named in ``argv`` (all when none is named).

    Args:
        argv: Benchmark names; ``sys.argv[1:]`` when ``None``.
        root: The benchmarks folder.

    Returns:
        0 on success (also when there is no benchmark), 2 for an unknown name.
    """
    names = list(sys.argv[1:] if argv is None else argv)
    found = discover(root)
    unknown = sorted(set(names) - set(found))
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(found)}")
        return 2
    selected = {name: found[name] for name in names} if names else found
    if not selected:
        print(f"no benchmarks yet: nothing matches {root.name}/*/bench.py")
        return 0
    results = root / "results"
    results.mkdir(exist_ok=True)
    for name, path in selected.items():
        record = run_benchmark(name, path)
        target = results / f"{name}.json"
        target.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        print(f"{name}: {record['seconds']:.3f}s -> {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
