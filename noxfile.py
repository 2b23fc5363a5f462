"""Every check a developer or CI runs on the dex-agents workspace.

``nox`` runs the default sessions (lint, typecheck, lockstep, tests, build); ``nox -s bench``
runs the benchmarks. Each session syncs ``uv.lock`` into its own virtual environment
(``uv sync --frozen``), so what runs is exactly what is locked.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import tomllib
from pathlib import Path

import nox

nox.needs_version = ">=2026.10.20"
nox.options.default_venv_backend = "uv"
nox.options.error_on_external_run = True
nox.options.sessions = ["lint", "typecheck", "lockstep", "tests", "build"]

ROOT = Path(__file__).resolve().parent
PACKAGES = ROOT / "packages"
CORE = "dex-agents-core"

# LiteLLM would fetch its model cost map from the network at import time.
TEST_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def _parts() -> dict[str, str]:
    """Map each wheel's folder to its part of ``dex_agents`` (core: ``""``)."""
    parts = {CORE: ""}
    for init in sorted(PACKAGES.glob("*/src/dex_agents/[!_]*/__init__.py")):
        parts[init.parents[2].parent.name] = init.parent.name
    return parts


def _sync(session: nox.Session, *selection: str) -> None:
    """Install the locked workspace into the session's environment.

    Args:
        session: The running session.
        *selection: ``uv sync`` selection arguments; every member, extra and the dev group
            when empty.
    """
    selection = selection or ("--all-packages", "--all-extras", "--group", "dev")
    session.run_install(
        "uv",
        "sync",
        "--frozen",
        *selection,
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
    )


@nox.session
def lint(session: nox.Session) -> None:
    """Ruff: lint rules and formatting, over the whole repository."""
    _sync(session, "--only-group", "lint")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """Mypy, strict, over every part (one ``-p`` each) and the repository's scripts."""
    _sync(session)
    packages = [
        arg
        for part in _parts().values()
        for arg in ("-p", f"dex_agents.{part}" if part else "dex_agents")
    ]
    session.run("mypy", *packages)
    # Files and packages cannot share one mypy run.
    session.run(
        "mypy", "noxfile.py", "scripts/lockstep.py", "scripts/release_check.py", "benchmarks/run.py"
    )


@nox.session
def lockstep(session: nox.Session) -> None:
    """Fail when the wheels' versions, sibling pins, SDK pin or ``uv.lock`` disagree."""
    session.run("python", "scripts/lockstep.py", str(ROOT))
    session.run("uv", "lock", "--check")


@nox.session
def tests(session: nox.Session) -> None:
    """Pytest over every package's tests and ``tests/``, in parallel.

    ``nox -s tests -- dex-agents-mcp`` narrows the run to that package's tests; other
    arguments after ``--`` go to pytest as they are.
    """
    _sync(session)
    targets: list[str] = []
    pytest_args: list[str] = []
    for arg in session.posargs:
        if (PACKAGES / arg / "pyproject.toml").is_file():
            package_tests = PACKAGES / arg / "tests"
            if not any(package_tests.glob("**/test_*.py")):
                session.error(f"{arg} has no tests in {package_tests.relative_to(ROOT)}")
            targets.append(str(package_tests.relative_to(ROOT)))
        else:
            pytest_args.append(arg)
    workers = os.environ.get("DEX_AGENTS_TEST_WORKERS", "auto")
    session.run("pytest", "-n", workers, *pytest_args, *targets, env=TEST_ENV)


@nox.session
def build(session: nox.Session) -> None:
    """Build every wheel and sdist, then import every module from the wheels alone.

    The wheels go into two fresh virtual environments outside the workspace: one with the
    umbrella and every extra (every part must import, with ``python -I``), and one with
    ``dex-agents-core`` alone (every other part must fail with the error naming its wheel).
    """
    scratch = Path(tempfile.mkdtemp(prefix="dex-agents-build-"))
    try:
        dist = scratch / "dist"
        session.run("uv", "build", "--all-packages", "--no-sources", "--out-dir", str(dist))
        session.run("python", "scripts/release_check.py", "dist", str(dist), str(ROOT))

        constraints = scratch / "constraints.txt"
        session.run(
            "uv",
            "export",
            "--frozen",
            "--all-packages",
            "--all-extras",
            "--no-dev",
            "--no-emit-workspace",
            "--no-hashes",
            "--quiet",
            "--output-file",
            str(constraints),
        )
        wheels = {w.name.split("-")[0].replace("_", "-"): w for w in dist.glob("*.whl")}
        umbrella = tomllib.loads((PACKAGES / "dex-agents" / "pyproject.toml").read_text("utf-8"))
        extras = ",".join(sorted(umbrella["project"]["optional-dependencies"]))
        full = [
            f"dex-agents[{extras}] @ {wheels.pop('dex-agents').as_uri()}",
            *map(str, wheels.values()),
        ]
        optional = [part for part in _parts().values() if part]
        _smoke(session, scratch / "full", full, constraints, parts=optional, missing=[])
        _smoke(
            session, scratch / "core", [str(wheels[CORE])], constraints, parts=[], missing=optional
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _smoke(
    session: nox.Session,
    venv: Path,
    requirements: list[str],
    constraints: Path,
    *,
    parts: list[str],
    missing: list[str],
) -> None:
    """Install ``requirements`` into a new ``venv`` and run the import check there."""
    python = venv / "bin" / "python"
    session.run("uv", "venv", "--quiet", "--python", str(Path(session.bin) / "python"), str(venv))
    with session.chdir(venv):
        session.run(
            "uv",
            "pip",
            "install",
            "--quiet",
            "--python",
            str(python),
            "--constraint",
            str(constraints),
            *requirements,
        )
    session.run(
        str(python),
        "-I",
        str(ROOT / "scripts" / "release_check.py"),
        "imports",
        "--workspace",
        str(ROOT),
        "--parts",
        ",".join(parts),
        "--missing",
        ",".join(missing),
        external=True,
        env=TEST_ENV,
    )
    if parts:
        session.run(str(venv / "bin" / "dex-agents"), "--version", external=True)


@nox.session
def bench(session: nox.Session) -> None:
    """Run every benchmark under ``benchmarks/`` and write results to ``benchmarks/results/``."""
    _sync(session)
    session.run("python", "benchmarks/run.py", *session.posargs, env=TEST_ENV)
