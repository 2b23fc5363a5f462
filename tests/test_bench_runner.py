"""``benchmarks/run.py``: discovery, result files, and the empty case."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest


def test_no_benchmarks_is_not_an_error(
    bench_runner: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert bench_runner.main([], root=tmp_path) == 0
    assert "no benchmarks yet" in capsys.readouterr().out
    assert not (tmp_path / "results").exists()


def test_benchmark_results_are_written(bench_runner: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "adding").mkdir()
    (tmp_path / "adding" / "bench.py").write_text(
        "def run():\n    return {'sum': sum(range(1000))}\n", encoding="utf-8"
    )
    assert bench_runner.main([], root=tmp_path) == 0
    record = json.loads((tmp_path / "results" / "adding.json").read_text(encoding="utf-8"))
    assert record["benchmark"] == "adding"
    assert record["results"] == {"sum": 499500}
    assert record["seconds"] >= 0
    assert {"python", "platform", "cpu_count", "started_at"} <= record.keys()


def test_unknown_names_and_bad_modules_fail(bench_runner: ModuleType, tmp_path: Path) -> None:
    assert bench_runner.main(["nope"], root=tmp_path) == 2
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "bench.py").write_text("def run():\n    return 1\n", encoding="utf-8")
    with pytest.raises(TypeError, match="not a dict"):
        bench_runner.main(["broken"], root=tmp_path)
