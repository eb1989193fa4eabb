"""Repository checks that run with the tests: lint, types, contract style and generated-code freshness."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_generated_protobuf_code_matches_the_protos() -> None:
    result = _run(sys.executable, "scripts/gen_protos.py", "--check")
    assert result.returncode == 0, result.stderr + result.stdout


def test_protos_pass_buf_lint() -> None:
    result = _run(str(BIN / "buf"), "lint")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_finds_no_lint_errors_and_code_is_formatted() -> None:
    lint = _run(sys.executable, "-m", "ruff", "check", ".")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    formatting = _run(sys.executable, "-m", "ruff", "format", "--check", ".")
    assert formatting.returncode == 0, formatting.stdout + formatting.stderr


def test_mypy_type_checks_the_services() -> None:
    result = _run(sys.executable, "-m", "mypy", "services", "scripts")
    assert result.returncode == 0, result.stdout + result.stderr
