"""Repository checks that run with the tests: lint, types, contract style, contract compatibility with main
(buf breaking) and generated-code freshness."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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


def _breaking_check(repo: Path) -> subprocess.CompletedProcess[str]:
    return _run(sys.executable, "scripts/buf_breaking.py", "--repo", str(repo), "--buf", str(BIN / "buf"))


def test_protos_have_no_breaking_change_against_the_contracts_on_main_before_the_change() -> None:
    result = _breaking_check(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    shallow = _run("git", "rev-parse", "--is-shallow-repository").stdout.strip() == "true"
    assert shallow or "ok: " in result.stdout, result.stdout  # a full history has earlier contracts


_CONTRACT = """syntax = "proto3";

package demo.v1;

// A demo message.
message Note {
  // The text.
  string text = 1;
  // The author.
  string author = 2;%s
}
"""


class _Scratch:
    """A throwaway git repository with the project's buf.yaml and one contract, to run the check on."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "protos" / "demo" / "v1").mkdir(parents=True)
        (root / "buf.yaml").write_text((ROOT / "buf.yaml").read_text())
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        done = subprocess.run(
            [
                "git",
                "-c",
                "user.name=test",
                "-c",
                "user.email=test@example.invalid",
                "-c",
                "commit.gpgsign=false",
                *args,
            ],
            cwd=self.root,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    def write(self, body: str) -> None:
        (self.root / "protos" / "demo" / "v1" / "demo.proto").write_text(body)

    def commit(self, message: str) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD")


WITHOUT_AUTHOR = _CONTRACT.replace("  // The author.\n  string author = 2;", "") % ""
WITH_TAGS = _CONTRACT % "\n  // Labels.\n  repeated string tags = 3;"


def test_the_breaking_check_reports_a_removed_field_committed_or_not(tmp_path: Path) -> None:
    repo = _Scratch(tmp_path)
    repo.write(_CONTRACT % "")
    first = repo.commit("contract")
    assert _breaking_check(tmp_path).returncode == 0  # no earlier contracts: nothing to compare
    repo.write(WITHOUT_AUTHOR)
    uncommitted = _breaking_check(tmp_path)
    assert uncommitted.returncode == 1, uncommitted.stdout + uncommitted.stderr
    assert f"BREAKING: working tree against {first[:12]} (HEAD" in uncommitted.stdout
    assert (
        'protos/demo/v1/demo.proto:6:1:Previously present field "2" with name "author"' in uncommitted.stdout
    )
    repo.commit("drop a field")
    (tmp_path / "README").write_text("a later commit that does not touch the contracts\n")
    repo.commit("docs")
    landed = _breaking_check(tmp_path)  # on main, clean tree: the last change of protos/ is still checked
    assert landed.returncode == 1, landed.stdout + landed.stderr
    assert f"against {first[:12]} (the parent of" in landed.stdout


def test_the_breaking_check_accepts_a_new_field(tmp_path: Path) -> None:
    repo = _Scratch(tmp_path)
    repo.write(_CONTRACT % "")
    repo.commit("contract")
    repo.write(WITH_TAGS)
    assert _breaking_check(tmp_path).returncode == 0
    repo.commit("add a field")
    result = _breaking_check(tmp_path)
    assert result.returncode == 0 and "ok: " in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize("landed", [False, True])
def test_a_change_of_several_commits_is_caught_before_and_after_it_lands(
    tmp_path: Path, landed: bool
) -> None:
    repo = _Scratch(tmp_path)
    repo.write(_CONTRACT % "")
    base = repo.commit("contract")
    repo.git("update-ref", "refs/remotes/origin/main", base)
    repo.write(WITHOUT_AUTHOR)
    dropped = repo.commit("drop a field")
    repo.write(WITHOUT_AUTHOR.replace("}\n", "  // Labels.\n  repeated string tags = 3;\n}\n"))
    repo.commit("add a field: harmless alone, but the change as a whole still breaks")
    if landed:  # main now ends with both commits, as in a fresh clone of main
        repo.git("update-ref", "refs/remotes/origin/main", "HEAD")
    result = _breaking_check(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    if landed:  # each recent change of the contracts against its parent: the dropping commit is named
        assert f"BREAKING: {dropped[:12]} against {base[:12]}" in result.stdout, result.stdout
    else:  # the branch as a whole against the contracts on main
        assert f"BREAKING: working tree against {base[:12]} (the merge base" in result.stdout, result.stdout


def test_ruff_finds_no_lint_errors_and_code_is_formatted() -> None:
    lint = _run(sys.executable, "-m", "ruff", "check", ".")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    formatting = _run(sys.executable, "-m", "ruff", "format", "--check", ".")
    assert formatting.returncode == 0, formatting.stdout + formatting.stderr


def test_mypy_type_checks_the_services(tmp_path: Path) -> None:
    # services/ is installed as the package hindsight through an import hook that mypy cannot follow:
    # checked as services.*, no `from hindsight.x import y` would resolve and none would be type-checked.
    # Through a link named hindsight, mypy names the modules as the code imports them (from __init__.py up).
    (tmp_path / "hindsight").symlink_to(ROOT / "services", target_is_directory=True)
    result = _run(sys.executable, "-m", "mypy", str(tmp_path / "hindsight"), "scripts")
    assert result.returncode == 0, result.stdout + result.stderr
