"""The image: hadolint finds nothing, the base is pinned, the runtime user is not root, the health check is
``hindsight healthcheck``, models come from pip packages at build time, every distribution is installed
from the hash-pinned lock with nothing resolved at build time, and .dockerignore keeps secrets and local
state out of the build context while keeping what the build copies."""

from __future__ import annotations

import fnmatch
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
HADOLINT = Path(sys.executable).with_name("hadolint")
LOCK = "requirements/image.lock"


def instructions(text: str | None = None) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", DOCKERFILE.read_text() if text is None else text)
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


def pip_installs(steps: list[tuple[str, str]]) -> list[list[str]]:
    """The arguments after ``pip install`` of every command in every RUN, in order."""
    found = []
    for keyword, rest in steps:
        if keyword != "RUN":
            continue
        lexer = shlex.shlex(rest, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
        for i in range(len(words) - 1):
            if re.fullmatch(r"(.*/)?pip(3(\.\d+)?)?", words[i]) and words[i + 1] == "install":
                end = next((j for j in range(i + 2, len(words)) if words[j] in {"&&", "||", ";", "|"}), None)
                found.append(words[i + 2 : end])
    return found


def unlocked_installs(steps: list[tuple[str, str]]) -> list[str]:
    """pip installs that could fetch something the lock does not pin and hash; empty when there are none."""
    problems = []
    installs = pip_installs(steps)
    files = [args[i + 1] for args in installs for i, arg in enumerate(args[:-1]) if arg == "-r"]
    if files != [LOCK]:
        problems.append(f"dependencies must come from {LOCK} alone, not {files}")
    for args in installs:
        if "--no-deps" not in args:
            problems.append(
                f"pip install {' '.join(args)}: without --no-deps pip resolves dependencies itself"
            )
        if "-r" in args and "--require-hashes" not in args:
            problems.append(f"pip install {' '.join(args)}: the lock must be installed with --require-hashes")
        if "-r" not in args:
            targets = [a for a in args if not a.startswith("-")]
            if targets != ["."] or "--no-build-isolation" not in args:
                problems.append(
                    f"pip install {' '.join(args)}: only the project itself, built with the locked backend "
                    "(--no-build-isolation)"
                )
    return problems


def test_every_distribution_is_installed_from_the_hash_lock_and_nothing_is_resolved_at_build_time() -> None:
    steps = instructions()
    assert not unlocked_installs(steps), unlocked_installs(steps)
    copies = [i for i, (keyword, rest) in enumerate(steps) if keyword == "COPY" and LOCK in rest.split()]
    installs = [i for i, (keyword, rest) in enumerate(steps) if keyword == "RUN" and LOCK in rest]
    assert copies and installs and copies[0] < installs[0]
    build = next(rest for keyword, rest in steps if keyword == "RUN" and "--no-build-isolation" in rest)
    assert "pip check" in build, "the build must fail when the lock lacks a dependency of the package"
    assert (ROOT / LOCK).is_file()


@pytest.mark.parametrize(
    ("run", "complaint"),
    [
        ("pip install --no-deps --no-build-isolation .", "must come from"),
        (f"pip install --no-deps -r {LOCK} && pip install --no-build-isolation .", "without --no-deps"),
        (
            f"pip install --no-deps -r {LOCK} && pip install --no-deps --no-build-isolation .",
            "--require-hashes",
        ),
        (
            f"pip install --require-hashes --no-deps -r {LOCK} && pip install --no-deps .",
            "--no-build-isolation",
        ),
        (
            f"pip install --require-hashes --no-deps -r {LOCK} && pip install --no-deps requests",
            "only the project",
        ),
        (f"pip install --require-hashes --no-deps -r {LOCK} -r extra.txt", "must come from"),
        (f"pip3 install --require-hashes -r {LOCK}", "without --no-deps"),
    ],
)
def test_an_install_that_could_fetch_an_unlocked_file_is_reported(run: str, complaint: str) -> None:
    problems = unlocked_installs(instructions(f"FROM python:3.11\nRUN {run}\n"))
    assert any(complaint in problem for problem in problems), problems


def test_the_runtime_stage_owns_the_mount_point_of_the_semantic_volume() -> None:
    """A named volume starts out with the image's owner of its mount point: the runtime user must own it,
    or the semantic layer's in-process engine cannot write on a read-only root."""
    from tests.deploy.compose import compose

    filled = {"POSTGRES_PASSWORD": "x", "HINDSIGHT_INTERNAL_TOKEN": "x", "HINDSIGHT_TOKENS": "x=y"}
    (volume,) = compose(filled)["services"]["semantic"]["volumes"]
    mount = volume.split(":")[1]
    user = dict(final_stage())["USER"].split(":")
    runs = " ".join(rest for keyword, rest in final_stage() if keyword == "RUN")
    assert re.search(rf"install -d -o {user[0]} -g {user[1]} (-m \d+ )?{re.escape(mount)}(\s|$)", runs), runs
