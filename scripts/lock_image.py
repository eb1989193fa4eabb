"""Regenerate requirements/image.lock, the hash-pinned list of every distribution the image installs.

The Dockerfile installs this file with ``pip install --require-hashes --no-deps``, so a changed, substituted
or unlisted file on the index fails the build instead of landing in the image. The lock covers the
project's runtime dependencies and their whole transitive closure (no test or bench extras), plus the
build backend from ``[build-system] requires``, for Linux and Python 3.11 like the image; every file the
index offers for a pinned release is hashed, so x86_64 and aarch64 builds both verify.

    python3 scripts/lock_image.py            # keep existing pins, add or drop what pyproject.toml changed
    python3 scripts/lock_image.py --upgrade  # re-resolve every unpinned transitive dependency

pip-tools runs from a throwaway virtual environment. Local pip configuration (extra indexes, wheel
directories, constraints) is ignored on purpose: the hashes must be those of the files the image build
downloads from the public index, not of a local copy.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements" / "image.lock"
PIP_TOOLS = "pip-tools==7.6.2"
BUILD_INPUTS = ("pyproject.toml", "setup.py", "README.md", "NOTICE", "services")
"""What the Dockerfile copies to build the package: enough for the backend to report its metadata."""
_LOCAL_PIP_SETTINGS = (
    "PIP_CONFIG_FILE",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    "PIP_CONSTRAINT",
    "PIP_NO_INDEX",
)


def _public_index_env() -> dict[str, str]:
    """The environment with every local pip index setting removed, so pip's default index applies."""
    env = {key: value for key, value in os.environ.items() if key not in _LOCAL_PIP_SETTINGS}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _python_is_the_image_python() -> None:
    if sys.version_info[:2] != (3, 11) or not sys.platform.startswith("linux"):
        raise SystemExit("run this with Python 3.11 on Linux: the lock resolves markers for the image")


def lock(upgrade: bool) -> None:
    """Resolve and hash the image's requirements into requirements/image.lock."""
    _python_is_the_image_python()
    env = _public_index_env()
    with tempfile.TemporaryDirectory(prefix="image-lock-") as scratch:
        work = Path(scratch)
        tools = work / "tools"
        venv.EnvBuilder(with_pip=True).create(tools)
        python = tools / "bin" / "python"
        subprocess.run([str(python), "-m", "pip", "install", "-q", PIP_TOOLS], env=env, check=True)
        source = work / "source"
        source.mkdir()
        for name in BUILD_INPUTS:
            origin = ROOT / name
            if origin.is_dir():
                shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(origin, source / name)
        command = [
            str(tools / "bin" / "pip-compile"),
            "--quiet",
            "--generate-hashes",
            "--allow-unsafe",
            "--strip-extras",
            "--build-deps-for",
            "wheel",
            "--no-emit-index-url",
            "--no-emit-find-links",
            "--no-emit-trusted-host",
            "--output-file",
            str(LOCK),
            *(["--upgrade"] if upgrade else []),
            "pyproject.toml",
        ]
        # The lock's header names this script as the way to regenerate it.
        subprocess.run(
            command,
            cwd=source,
            env=env | {"CUSTOM_COMPILE_COMMAND": "python3 scripts/lock_image.py"},
            check=True,
        )
    print(f"wrote {LOCK.relative_to(ROOT)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--upgrade", action="store_true", help="re-resolve unpinned transitive dependencies")
    args = parser.parse_args(argv)
    lock(upgrade=args.upgrade)
    return 0


if __name__ == "__main__":
    sys.exit(main())
