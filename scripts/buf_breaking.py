"""Check that the contracts under protos/ stay wire-compatible with the ones on main before the change.

Runs ``buf breaking`` (the rules of the working tree's buf.yaml, ``breaking`` section) on each comparison
below; earlier contracts are read from this repository's own history (``git archive``), so nothing is
fetched:

- on a branch that has not landed (``origin/main`` exists and is neither HEAD nor behind it): the working
  tree against the merge base with ``origin/main``, so the branch is checked as a whole;
- otherwise (on main itself, as CI runs on a fresh clone): uncommitted edits under protos/ against HEAD, and
  each of the last few commits that changed protos/ against its parent, so a landing of several commits is
  checked commit by commit even when later commits did not touch the contracts.

    python3 scripts/buf_breaking.py             # exit 1 and list the violations when a change breaks
    python3 scripts/buf_breaking.py --repo DIR  # another checkout (tests use a scratch repository)
"""

from __future__ import annotations

import argparse
import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTRACTS = "protos"
MAIN = "origin/main"


RECENT_CHANGES = 5
"""How many of the latest commits that changed protos/ are each checked against their parent (on main)."""
WORKING_TREE = None


@dataclass(frozen=True)
class Comparison:
    """One ``buf breaking`` run: ``commit`` (None: the working tree) against the contracts of ``against``."""

    commit: str | None
    against: str
    reason: str


@dataclass(frozen=True)
class Verdict:
    """buf's answer for one comparison."""

    comparison: Comparison
    breaking: bool
    output: str


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)


def _commit(repo: Path, revision: str) -> str | None:
    done = _git(repo, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
    return done.stdout.strip() if done.returncode == 0 else None


def comparisons(repo: Path) -> list[Comparison]:
    """What to compare (see the module doc); empty when there are no earlier contracts to compare with."""
    head = _commit(repo, "HEAD")
    if head is None:
        return []
    if _commit(repo, MAIN) is not None:
        merge_base = _git(repo, "merge-base", "HEAD", MAIN).stdout.strip()
        if merge_base and merge_base != head:
            return [Comparison(WORKING_TREE, merge_base, f"the merge base of HEAD and {MAIN}")]
    found = []
    if _git(repo, "diff", "--quiet", "HEAD", "--", CONTRACTS).returncode != 0:
        found.append(Comparison(WORKING_TREE, head, f"HEAD: uncommitted changes of {CONTRACTS}/"))
    changes = _git(repo, "rev-list", f"--max-count={RECENT_CHANGES}", "HEAD", "--", CONTRACTS).stdout.split()
    for change in changes:
        parent = _commit(repo, f"{change}^")
        if parent is not None:  # None: the contracts began there (or a shallow clone stops there)
            found.append(Comparison(change, parent, f"the parent of {change[:12]}, a change of {CONTRACTS}/"))
    return found


def _export(repo: Path, commit: str, into: Path) -> Path:
    """The contracts of ``commit`` as a directory, with the working tree's buf.yaml (today's rules)."""
    tree = into / commit
    if not tree.exists():
        archive = subprocess.run(
            ["git", "archive", "--format=tar", commit, CONTRACTS], cwd=repo, capture_output=True, check=True
        )
        tree.mkdir(parents=True)
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(tree, filter="data")
        shutil.copy2(repo / "buf.yaml", tree / "buf.yaml")
    return tree


def check(repo: Path, buf: Path) -> list[Verdict]:
    """Run ``buf breaking`` for every comparison of ``repo``."""
    verdicts = []
    with tempfile.TemporaryDirectory(prefix="contracts-") as scratch:
        for comparison in comparisons(repo):
            subject = repo if comparison.commit is None else _export(repo, comparison.commit, Path(scratch))
            against = _export(repo, comparison.against, Path(scratch))
            command = [
                str(buf),
                "breaking",
                str(subject),
                "--against",
                str(against),
                "--error-format",
                "text",
            ]
            done = subprocess.run(command, cwd=repo, capture_output=True, text=True, check=False)
            output = (done.stdout + done.stderr).strip().replace(f"{scratch}/", "").replace(f"{repo}/", "")
            if done.returncode not in (0, 100):  # 100: breaking changes found; anything else: buf failed
                raise RuntimeError(f"buf breaking failed ({done.returncode}): {output}")
            verdicts.append(Verdict(comparison, done.returncode == 100, output))
    return verdicts


def default_buf() -> Path:
    """The buf installed beside this interpreter (the test extra's buf-bin), else the one on PATH."""
    beside = Path(sys.executable).with_name("buf")
    if beside.exists():
        return beside
    found = shutil.which("buf")
    if found is None:
        raise SystemExit("buf not found: install the test extra (buf-bin)")
    return Path(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repo", type=Path, default=ROOT, help="repository root (default: this checkout)")
    parser.add_argument("--buf", type=Path, default=None, help="buf binary (default: beside this Python)")
    args = parser.parse_args(argv)
    verdicts = check(args.repo.resolve(), args.buf or default_buf())
    if not verdicts:
        print(f"no earlier {CONTRACTS}/ in this history: nothing to compare")
    for verdict in verdicts:
        subject = "working tree" if verdict.comparison.commit is None else verdict.comparison.commit[:12]
        status = "BREAKING" if verdict.breaking else "ok"
        print(f"{status}: {subject} against {verdict.comparison.against[:12]} ({verdict.comparison.reason})")
        if verdict.output:
            print(verdict.output)
    return 1 if any(verdict.breaking for verdict in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
