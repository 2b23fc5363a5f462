"""Check that the wheels of the workspace move as one version line.

Every ``packages/*/pyproject.toml`` must carry the same static ``version``; every requirement
on a sibling wheel, in ``dependencies`` or in an extra, must pin it with ``==`` that version;
``dex-python-sdk`` must be pinned with ``==`` to one version everywhere; and ``uv.lock`` must
record each wheel at the line's version.

Run ``python scripts/lockstep.py [ROOT]``; it prints each disagreement and exits 1 if there is
any. Only the standard library is needed.
"""

from __future__ import annotations

import re
import sys
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SDK", "Requirement", "Wheel", "check", "load_wheels", "main", "normalize"]

SDK = "dex-python-sdk"
"""The Dex SDK: pinned exactly, to one version, wherever a wheel requires it."""

_REQUIREMENT = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*"
    r"(?:\[(?P<extras>[^\]]*)\])?\s*(?P<specifier>[^;]*?)\s*(?:;.*)?$"
)


def normalize(name: str) -> str:
    """Return the PEP 503 normalized form of a distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True, kw_only=True)
class Requirement:
    """One requirement of a wheel, parsed as far as the checks need.

    Attributes:
        name: The normalized distribution name.
        specifier: The version specifier, e.g. ``"==0.5.0"``; empty when there is none.
        where: ``"dependencies"`` or ``"extra <name>"``, for messages.
    """

    name: str
    specifier: str
    where: str


@dataclass(frozen=True, kw_only=True)
class Wheel:
    """A workspace member as its ``pyproject.toml`` declares it.

    Attributes:
        name: The normalized distribution name.
        version: The static ``project.version``, or ``None`` when it is missing.
        pyproject: The file it was read from.
        requirements: Its requirements, base and extras.
    """

    name: str
    version: str | None
    pyproject: Path
    requirements: tuple[Requirement, ...]


def _parse(requirement: str, where: str) -> Requirement:
    match = _REQUIREMENT.match(requirement)
    if match is None:
        raise ValueError(f"cannot parse requirement {requirement!r} ({where})")
    return Requirement(
        name=normalize(match["name"]),
        specifier=re.sub(r"\s+", "", match["specifier"]),
        where=where,
    )


def load_wheels(root: Path) -> list[Wheel]:
    """Read every ``packages/*/pyproject.toml`` under ``root``.

    Args:
        root: The workspace root.

    Returns:
        The workspace's wheels, sorted by name.
    """
    wheels = []
    for pyproject in sorted(root.glob("packages/*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        requirements = [_parse(r, "dependencies") for r in project.get("dependencies", [])]
        for extra, extra_requirements in project.get("optional-dependencies", {}).items():
            requirements += [_parse(r, f"extra {extra}") for r in extra_requirements]
        wheels.append(
            Wheel(
                name=normalize(project["name"]),
                version=project.get("version"),
                pyproject=pyproject,
                requirements=tuple(requirements),
            )
        )
    return sorted(wheels, key=lambda wheel: wheel.name)


def _locked_versions(root: Path) -> dict[str, str]:
    lock = root / "uv.lock"
    if not lock.is_file():
        return {}
    packages = tomllib.loads(lock.read_text(encoding="utf-8")).get("package", [])
    return {normalize(p["name"]): p.get("version", "") for p in packages}


def _problems(root: Path, wheels: Sequence[Wheel]) -> Iterator[str]:
    if not wheels:
        yield f"no packages/*/pyproject.toml under {root}"
        return
    versions = {wheel.version for wheel in wheels}
    line = max(versions, key=lambda v: sum(wheel.version == v for wheel in wheels))
    names = {wheel.name for wheel in wheels}
    sdk_pins: set[str] = set()
    for wheel in wheels:
        where = wheel.pyproject.relative_to(root)
        if wheel.version is None:
            yield f"{where}: no static project.version (the line is {line})"
        elif wheel.version != line:
            yield f"{where}: version {wheel.version} is off the line {line}"
        for requirement in wheel.requirements:
            if requirement.name in names and requirement.specifier != f"=={line}":
                yield (
                    f"{where}: {requirement.where} requires {requirement.name}"
                    f"{requirement.specifier or ' (unpinned)'}, not =={line}"
                )
            if requirement.name == SDK:
                if not re.fullmatch(r"==[^,*]+", requirement.specifier):
                    yield f"{where}: {SDK} must be pinned with ==, got {requirement.specifier!r}"
                sdk_pins.add(requirement.specifier)
    if len(sdk_pins) > 1:
        yield f"wheels pin {SDK} differently: {', '.join(sorted(sdk_pins))}"
    locked = _locked_versions(root)
    for wheel in wheels:
        if locked and locked.get(wheel.name) != wheel.version:
            yield (
                f"uv.lock records {wheel.name} at {locked.get(wheel.name, 'no version')}, "
                f"its pyproject.toml at {wheel.version}: run `uv lock`"
            )


def check(root: Path) -> list[str]:
    """Return every way in which the wheels under ``root`` leave the version line.

    Args:
        root: The workspace root.

    Returns:
        One message per problem; empty when versions and pins all agree.
    """
    return list(_problems(root, load_wheels(root)))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the check and report it.

    Args:
        argv: ``[ROOT]``; the repository holding this script by default.

    Returns:
        0 when the line holds, 1 otherwise.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    root = Path(args[0]) if args else Path(__file__).resolve().parents[1]
    problems = check(root)
    for problem in problems:
        print(f"lockstep: {problem}", file=sys.stderr)
    if problems:
        return 1
    wheels = load_wheels(root)
    print(f"lockstep: {len(wheels)} wheels at {wheels[0].version}, sibling pins agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
