"""requirements/image.lock pins, with sha256 hashes, exactly the distributions ``pip install .`` needs, so
the image's ``pip install --require-hashes --no-deps`` gets every one of them and nothing else. When a
test here fails after a dependency change, regenerate the lock with ``python3 scripts/lock_image.py``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.deploy.lockfile import (
    IMAGE_LOCK,
    PYPROJECT,
    LockedDistribution,
    LockFormatError,
    declared_requirements,
    lock_problems,
    parse_lock,
)


def _without_entry(text: str, name: str) -> str:
    """The lock text with one distribution's entry (pin, hashes and annotations) removed."""
    pattern = re.compile(rf"^{re.escape(name)}==.*?(?=^\S)", re.MULTILINE | re.DOTALL)
    removed, count = pattern.subn("", text, count=1)
    assert count == 1, name
    return removed


def test_every_entry_is_an_exact_pin_with_sha256_hashes() -> None:
    locked = parse_lock(IMAGE_LOCK.read_text())
    assert len(locked) > 30
    assert all(entry.hashes for entry in locked.values())
    assert not re.search(
        r"^\s*(-e|--editable|--index-url|--extra-index-url|--find-links|-f)\b",
        IMAGE_LOCK.read_text(),
        re.MULTILINE,
    )


def test_the_lock_pins_exactly_what_pip_install_of_the_project_needs() -> None:
    problems = lock_problems(parse_lock(IMAGE_LOCK.read_text()), declared_requirements())
    assert not problems, "\n".join(problems)


def test_every_declared_dependency_is_locked_at_its_declared_pin() -> None:
    locked = parse_lock(IMAGE_LOCK.read_text())
    for requirement in declared_requirements():
        entry = locked[canonicalize_name(requirement.name)]
        assert requirement.specifier.contains(entry.version), (requirement, entry.version)


def test_the_build_backend_and_the_extras_distributions_are_locked_but_no_test_tools() -> None:
    locked = parse_lock(IMAGE_LOCK.read_text())
    assert "setuptools" in locked  # installed from the lock: the build runs without build isolation
    assert "psycopg-binary" in locked  # psycopg[binary]
    assert not {"pytest", "ruff", "mypy", "rank-bm25", "matplotlib", "buf-bin"} & set(locked)


def test_a_declared_dependency_missing_from_the_lock_is_reported() -> None:
    text = IMAGE_LOCK.read_text()
    problems = lock_problems(parse_lock(_without_entry(text, "snowballstemmer")), declared_requirements())
    assert problems == ["snowballstemmer is needed (by pyproject.toml) but not pinned in the lock"]
    roots = [*declared_requirements(), Requirement("rank-bm25==0.2.2")]
    assert any(p.startswith("rank-bm25 is needed") for p in lock_problems(parse_lock(text), roots))


def test_a_missing_transitive_dependency_a_stale_entry_and_a_wrong_pin_are_reported() -> None:
    text = IMAGE_LOCK.read_text()
    transitive = parse_lock(_without_entry(text, "pydantic-core"))
    assert any(
        p.startswith("pydantic-core is needed (by pydantic)")
        for p in lock_problems(transitive, declared_requirements())
    )
    locked = parse_lock(text)
    six = canonicalize_name("six")
    stale = locked | {six: LockedDistribution(six, Version("1.17.0"), ("0" * 64,))}
    assert any(
        p.startswith("six is pinned in the lock but nothing")
        for p in lock_problems(stale, declared_requirements())
    )
    moved = dict(locked)
    psutil = canonicalize_name("psutil")
    moved[psutil] = LockedDistribution(psutil, Version("7.0.0"), locked[psutil].hashes)
    assert any(
        "psutil==7.0.0 in the lock does not satisfy" in p
        for p in lock_problems(moved, declared_requirements())
    )


@pytest.mark.parametrize(
    ("entry", "complaint"),
    [
        ("psutil==7.2.2\n", "every entry needs --hash"),
        ("psutil>=7 --hash=sha256:" + "a" * 64 + "\n", "not an exact name==version pin"),
        ("-e .\n", "not an exact name==version pin"),
        ("psutil==7.2.2 --hash=md5:abc\n", "every entry needs --hash"),
        (
            "psutil==7.2.2 --hash=sha256:" + "a" * 64 + "\npsutil==7.2.2 --hash=sha256:" + "b" * 64 + "\n",
            "twice",
        ),
    ],
)
def test_an_entry_without_a_hash_or_an_exact_pin_is_refused(entry: str, complaint: str) -> None:
    with pytest.raises(LockFormatError, match=complaint):
        parse_lock(entry)


def test_the_lock_is_read_from_the_same_declarations_the_package_is_built_from(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        PYPROJECT.read_text().replace('"psutil==7.2.2",', '"psutil==7.2.2",\n    "rank-bm25==0.2.2",', 1)
    )
    roots = declared_requirements(pyproject)
    assert Requirement("rank-bm25==0.2.2") in roots
    problems = lock_problems(parse_lock(IMAGE_LOCK.read_text()), roots)
    assert any(p.startswith("rank-bm25 is needed (by pyproject.toml)") for p in problems)
