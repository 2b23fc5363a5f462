"""Checks of the built release files, run by ``nox -s build``.

``python scripts/release_check.py dist DIST ROOT`` checks the wheels and sdists in ``DIST``
against the workspace at ``ROOT``: one wheel and one sdist per member at its version, only
``dex-agents-core`` ships ``dex_agents/__init__.py`` (and the root ``py.typed``), every other
wheel ships exactly its own part with its own ``py.typed``, and nothing ships a symlink.

``python -I scripts/release_check.py imports --workspace ROOT --parts a,b [--missing c,d]``
runs inside a virtual environment that holds the installed wheels: it imports every module
of ``dex_agents`` (none may come from ``ROOT``), both as ``import dex_agents.<part>`` and as
``from dex_agents import <part>``, and checks that each part named by ``--missing`` fails
with the error that names its wheel. Only the standard library is needed.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import pkgutil
import re
import stat
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Iterator, Sequence
from importlib.abc import InspectLoader
from pathlib import Path

__all__ = ["check_dist", "check_imports", "main"]

_CORE = "dex-agents-core"


def _members(root: Path) -> dict[str, tuple[str, str | None]]:
    """Map each member's distribution name to (version, part); core's part is ``None``."""
    members: dict[str, tuple[str, str | None]] = {}
    for pyproject in sorted(root.glob("packages/*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        parts = sorted(
            init.parent.name for init in pyproject.parent.glob("src/dex_agents/[!_]*/__init__.py")
        )
        if project["name"] == _CORE:
            members[project["name"]] = (project["version"], None)
        elif len(parts) == 1:
            members[project["name"]] = (project["version"], parts[0])
        else:
            raise ValueError(f"{pyproject.parent.name} must hold one part, has {parts}")
    return members


def _wheel_problems(path: Path, part: str | None) -> Iterator[str]:
    with zipfile.ZipFile(path) as wheel:
        infos = wheel.infolist()
    names = {info.filename for info in infos}
    for info in infos:
        if stat.S_ISLNK(info.external_attr >> 16):
            yield f"{path.name}: {info.filename} is a symlink"
    package_files = {n for n in names if n.startswith("dex_agents/")}
    if part is None:
        for required in ("dex_agents/__init__.py", "dex_agents/py.typed"):
            if required not in names:
                yield f"{path.name}: {required} is missing"
        return
    for shared in ("dex_agents/__init__.py", "dex_agents/py.typed"):
        if shared in names:
            yield f"{path.name}: ships {shared}, which belongs to {_CORE} alone"
    for required in (f"dex_agents/{part}/__init__.py", f"dex_agents/{part}/py.typed"):
        if required not in names:
            yield f"{path.name}: {required} is missing"
    strays = sorted(n for n in package_files if not n.startswith(f"dex_agents/{part}/"))
    strays = [n for n in strays if n not in {"dex_agents/__init__.py", "dex_agents/py.typed"}]
    if strays:
        yield f"{path.name}: files outside dex_agents/{part}/: {', '.join(strays)}"


def _sdist_problems(path: Path, part: str | None) -> Iterator[str]:
    with tarfile.open(path) as sdist:
        members = sdist.getmembers()
    prefix = path.name.removesuffix(".tar.gz")
    names = {member.name for member in members}
    for member in members:
        if member.issym() or member.islnk():
            yield f"{path.name}: {member.name} is a link"
    root_init = f"{prefix}/src/dex_agents/__init__.py"
    if part is None and root_init not in names:
        yield f"{path.name}: {root_init} is missing"
    if part is not None and root_init in names:
        yield f"{path.name}: ships {root_init}, which belongs to {_CORE} alone"


def check_dist(dist: Path, root: Path) -> list[str]:
    """Check the built files in ``dist`` against the workspace members under ``root``.

    Args:
        dist: The output folder of ``uv build --all-packages``.
        root: The workspace root.

    Returns:
        One message per problem; empty when the release files are right.
    """
    problems: list[str] = []
    expected: set[str] = set()
    for name, (version, part) in _members(root).items():
        stem = f"{re.sub(r'[-_.]+', '_', name)}-{version}"
        wheel, sdist = dist / f"{stem}-py3-none-any.whl", dist / f"{stem}.tar.gz"
        expected |= {wheel.name, sdist.name}
        for path, problems_of in ((wheel, _wheel_problems), (sdist, _sdist_problems)):
            if path.is_file():
                problems += problems_of(path, part)
            else:
                problems.append(f"{path.name} was not built")
    strays = sorted(p.name for p in dist.iterdir() if p.name not in expected | {".gitignore"})
    if strays:
        problems.append(f"unexpected files in {dist}: {', '.join(strays)}")
    return problems


def check_imports(
    workspace: Path, parts: Sequence[str], missing: Sequence[str]
) -> tuple[list[str], list[str]]:
    """Import every installed module of ``dex_agents``, and each missing part, as users do.

    Args:
        workspace: The source tree; no imported module may come from it.
        parts: The parts that must import, e.g. ``["mcp", "s3"]``.
        missing: The parts that must fail with the error naming their wheel.

    Returns:
        The names of the modules imported, and one message per problem.
    """
    # Imported here: they must come from the environment being checked.
    import dex_agents
    from dex_agents._optional_parts import missing_part_message

    problems: list[str] = []
    for part in parts:
        module = importlib.import_module(f"dex_agents.{part}")
        imported = getattr(__import__("dex_agents", fromlist=[part]), part)
        if imported is not module:
            problems.append(f"from dex_agents import {part} gave another module")
        if not Path(module.__file__ or "").with_name("py.typed").is_file():
            problems.append(f"dex_agents.{part} has no py.typed beside it")

    def raise_error(name: str) -> None:
        raise ImportError(name)

    for info in pkgutil.walk_packages(dex_agents.__path__, "dex_agents.", onerror=raise_error):
        if info.name.endswith(".__main__"):
            # A ``python -m`` entry runs its command when imported: compile it, don't run it.
            spec = importlib.util.find_spec(info.name)
            loader = None if spec is None else spec.loader
            if not isinstance(loader, InspectLoader) or loader.get_code(info.name) is None:
                problems.append(f"{info.name} cannot be loaded")
            continue
        importlib.import_module(info.name)
    names = sorted(name for name in sys.modules if name.split(".")[0] == "dex_agents")
    for name in names:
        origin = Path(getattr(sys.modules[name], "__file__", None) or "").resolve()
        if origin.is_relative_to(workspace.resolve()) or not origin.is_relative_to(
            Path(sys.prefix).resolve()
        ):
            problems.append(f"{name} comes from {origin}, not from the installed wheels")

    for part in missing:
        expected = missing_part_message(part)
        for statement in (f"import dex_agents.{part}", f"from dex_agents import {part}"):
            try:
                if statement.startswith("import"):
                    importlib.import_module(f"dex_agents.{part}")
                else:
                    __import__("dex_agents", fromlist=[part])
            except ModuleNotFoundError as error:
                if str(error) != expected:
                    problems.append(f"{statement} raised {error!r}, not {expected!r}")
            else:
                problems.append(f"{statement} succeeded without its wheel")
    return names, problems


def main(argv: Sequence[str] | None = None) -> int:
    """Run one of the checks; see the module docstring.

    Args:
        argv: The command-line arguments; ``sys.argv[1:]`` when ``None``.

    Returns:
        0 when the check passes, 1 otherwise.
    """
    parser = argparse.ArgumentParser(prog="release_check")
    commands = parser.add_subparsers(dest="command", required=True)
    dist = commands.add_parser("dist")
    dist.add_argument("dist", type=Path)
    dist.add_argument("root", type=Path)
    imports = commands.add_parser("imports")
    imports.add_argument("--workspace", type=Path, required=True)
    imports.add_argument("--parts", default="")
    imports.add_argument("--missing", default="")
    args = parser.parse_args(argv)

    if args.command == "dist":
        problems = check_dist(args.dist, args.root)
        summary = f"{len(list(args.dist.glob('*.whl')))} wheels and sdists are right"
    else:
        names, problems = check_imports(
            args.workspace,
            [p for p in args.parts.split(",") if p],
            [p for p in args.missing.split(",") if p],
        )
        summary = f"imported {len(names)} modules from {sys.prefix}: {', '.join(names)}"
        if args.missing:
            summary += f"; missing parts name their wheel: {args.missing}"
    for problem in problems:
        print(f"release_check: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"release_check: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
