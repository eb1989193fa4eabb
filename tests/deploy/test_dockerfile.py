"""The image: hadolint finds nothing, the base is pinned, the runtime user is not root, the health check is
``hindsight healthcheck``, models come from pip packages at build time, and .dockerignore keeps secrets and
local state out of the build context while keeping what the build copies."""

from __future__ import annotations

import fnmatch
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
HADOLINT = Path(sys.executable).with_name("hadolint")


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in joined.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, rest = stripped.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    return out


def final_stage() -> list[tuple[str, str]]:
    steps = instructions()
    last_from = max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM")
    return steps[last_from:]


def test_hadolint_finds_nothing_to_fix() -> None:
    done = subprocess.run([str(HADOLINT), "--no-color", str(DOCKERFILE)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_base_image_is_pinned_to_an_exact_python_release_and_used_by_both_stages() -> None:
    steps = instructions()
    (arg,) = [rest for keyword, rest in steps if keyword == "ARG" and rest.startswith("PYTHON_IMAGE=")]
    assert re.fullmatch(r"PYTHON_IMAGE=python:3\.11\.\d+-slim-\w+(@sha256:[0-9a-f]{64})?", arg)
    froms = [rest for keyword, rest in steps if keyword == "FROM"]
    assert len(froms) == 2 and all(f.startswith("${PYTHON_IMAGE}") for f in froms)


def test_the_runtime_stage_runs_as_a_numeric_non_root_user_with_hindsight_as_entrypoint() -> None:
    stage = dict(final_stage())
    user = stage["USER"].split(":")
    assert all(part.isdigit() and int(part) > 0 for part in user)
    assert stage["ENTRYPOINT"] == '["hindsight"]'
    assert "hindsight healthcheck" in stage["HEALTHCHECK"].replace('", "', " ").replace('"', "")


def test_nothing_is_downloaded_except_python_packages_and_the_models_come_with_them() -> None:
    text = DOCKERFILE.read_text()
    assert not re.search(r"\b(curl|wget|git clone|huggingface|hf_hub)\b", text)
    assert not any(keyword == "ADD" for keyword, _ in instructions())
    (check,) = re.findall(r'python -c "([^"]+)"', text)
    subprocess.run([sys.executable, "-c", check], check=True, capture_output=True)


def test_the_build_context_excludes_secrets_and_local_state_but_keeps_what_the_build_copies() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]

    def ignored(path: str) -> bool:
        return any(fnmatch.fnmatch(path, p) or fnmatch.fnmatch(path, p.removeprefix("**/")) for p in patterns)

    for private in (".env", ".venv", ".git", ".hindsight", "tests", "k8s"):
        assert ignored(private), private
    copied = [
        rest.split()[:-1] for keyword, rest in instructions() if keyword == "COPY" and "--from" not in rest
    ]
    for sources in copied:
        for source in sources:
            assert not ignored(source), source
            assert (ROOT / source).exists(), source
