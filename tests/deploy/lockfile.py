"""Reads requirements/image.lock and checks it against what ``pip install .`` needs, so that the image's
hash-checked, dependency-free install (``--require-hashes --no-deps``) cannot silently miss a distribution.

What ``pip install .`` needs is read from pyproject.toml (the declared pins and the build backend) and then
followed through the installed distributions' metadata, with environment markers and extras evaluated for
this interpreter (Linux, Python 3.11, like the image) and for the earliest Python 3.11 an image base may
have (Debian bookworm's 3.11.2): a requirement that only the earlier release needs is locked too."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
IMAGE_LOCK = ROOT / "requirements" / "image.lock"
PYPROJECT = ROOT / "pyproject.toml"

_PIN = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.+!_-]+)")
_HASH = re.compile(r"--hash=sha256:(?P<digest>[0-9a-f]{64})")


class LockFormatError(ValueError):
    """An entry of the lock is not ``name==version`` followed by sha256 hashes."""


@dataclass(frozen=True)
class LockedDistribution:
    """One pinned distribution and the sha256 of every file pip may pick for it."""

    name: NormalizedName
    version: Version
    hashes: tuple[str, ...]


@dataclass
class Needed:
    """A distribution ``pip install .`` needs: who asks for it and with which specifiers."""

    name: NormalizedName
    requirements: list[tuple[str, Requirement]] = field(default_factory=list)


def parse_lock(text: str) -> dict[NormalizedName, LockedDistribution]:
    """The entries of a pip requirements file that must pin every entry with hashes."""
    entries: dict[NormalizedName, LockedDistribution] = {}
    logical = re.sub(r"\\\n", " ", text)
    for number, line in enumerate(logical.splitlines(), start=1):
        content = line.split(" #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if not content:
            continue
        requirement, *options = content.split()
        pin = _PIN.fullmatch(requirement)
        if pin is None:
            raise LockFormatError(f"entry {number}: {requirement!r} is not an exact name==version pin")
        hashes = tuple(match.group("digest") for option in options if (match := _HASH.fullmatch(option)))
        if not hashes or len(hashes) != len(options):
            raise LockFormatError(f"{requirement}: every entry needs --hash=sha256:<digest> and nothing else")
        name = canonicalize_name(pin.group("name"))
        if name in entries:
            raise LockFormatError(f"{requirement}: pinned twice")
        entries[name] = LockedDistribution(name, Version(pin.group("version")), hashes)
    return entries


def declared_requirements(pyproject: Path = PYPROJECT) -> list[Requirement]:
    """The project's runtime dependencies and its build backend, as pyproject.toml declares them."""
    data = tomllib.loads(pyproject.read_text())
    declared = [*data["project"]["dependencies"], *data["build-system"]["requires"]]
    return [Requirement(line) for line in declared]


EARLIEST_IMAGE_PYTHON = "3.11.2"
"""Debian bookworm's Python, the base scripts/containers/stack.py builds the image on."""


def _applies(requirement: Requirement, extras: frozenset[str], here_only: bool = False) -> bool:
    """Whether ``requirement`` applies on this interpreter or (unless ``here_only``) on the earliest image
    Python."""
    if requirement.marker is None:
        return True
    environments: list[dict[str, str]] = [{}]
    if not here_only:
        environments.append({"python_full_version": EARLIEST_IMAGE_PYTHON})
    return any(
        requirement.marker.evaluate({"extra": extra} | environment)
        for extra in extras | {""}
        for environment in environments
    )


def needed_closure(roots: list[Requirement]) -> tuple[dict[NormalizedName, Needed], list[str]]:
    """Every distribution reached from ``roots`` through installed metadata, and what could not be read."""
    needed: dict[NormalizedName, Needed] = {}
    expanded: dict[NormalizedName, frozenset[str]] = {}  # the extras whose requirements were followed
    problems: list[str] = []
    queue: list[tuple[str, Requirement]] = [("pyproject.toml", requirement) for requirement in roots]
    while queue:
        parent, requirement = queue.pop()
        name = canonicalize_name(requirement.name)
        need = needed.setdefault(name, Needed(name))
        if all(str(requirement) != str(known) or parent != by for by, known in need.requirements):
            need.requirements.append((parent, requirement))
        if name in expanded and set(requirement.extras) <= expanded[name]:
            continue
        extras = expanded.get(name, frozenset()) | set(requirement.extras)
        expanded[name] = extras
        try:
            distribution = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            if _applies(requirement, frozenset(), here_only=True):
                problems.append(
                    f"{name} (needed by {parent}) is not installed here: its dependencies are unknown"
                )
            # else: needed only on an earlier 3.11, so not installed here; the image build's pip check
            # covers its own requirements.
            continue
        for line in distribution.requires or []:
            try:
                child = Requirement(line)
            except InvalidRequirement as exc:
                problems.append(f"{name}: unreadable requirement {line!r}: {exc}")
                continue
            if _applies(child, extras):
                queue.append((name, child))
    return needed, problems


def lock_problems(locked: dict[NormalizedName, LockedDistribution], roots: list[Requirement]) -> list[str]:
    """Why the lock would not install exactly what ``roots`` need; empty when it would."""
    needed, problems = needed_closure(roots)
    for name, need in sorted(needed.items()):
        entry = locked.get(name)
        asked_by = sorted({parent for parent, _ in need.requirements})
        if entry is None:
            problems.append(f"{name} is needed (by {', '.join(asked_by)}) but not pinned in the lock")
            continue
        for parent, requirement in need.requirements:
            if not requirement.specifier.contains(entry.version, prereleases=True):
                problems.append(
                    f"{name}=={entry.version} in the lock does not satisfy {parent}: {requirement}"
                )
    for name in sorted(set(locked) - set(needed)):
        problems.append(f"{name} is pinned in the lock but nothing that pip install . needs asks for it")
    return problems
