"""What makes a benchmark run reproducible: the code it ran and the settings its private mesh got.

The private mesh starts from a clean environment (the basics a process needs, plus only the settings the
benchmark passes), so a variable left in the caller's shell never changes what is measured; the JSON
records the commit and those settings.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BASIC_VARIABLES = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "SYSTEMROOT")
"""What any process needs to run: passed through from the caller, nothing else is."""
LLM_PREFIX = "LLM_"
SETTING_PREFIXES = ("HINDSIGHT_", LLM_PREFIX)
SECRET_WORDS = ("TOKEN", "KEY", "PASSWORD", "SECRET")
HIDDEN = "(set)"


def checkout() -> dict[str, Any]:
    """``commit``: HEAD ("unknown" outside a git checkout); ``dirty``: tracked files have changes."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {"commit": "unknown", "dirty": False}
    return {"commit": head, "dirty": bool(status.strip())}


def commit_label(state: Mapping[str, Any]) -> str:
    """HEAD, with "-dirty" when tracked files had changes (the run measured code no commit holds)."""
    return str(state["commit"]) + ("-dirty" if state.get("dirty") else "")


def add_env_argument(parser: argparse.ArgumentParser) -> None:
    """``--env KEY=VALUE`` (read by :func:`parse_assignments`): the only settings a private mesh gets."""
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting for the private mesh (repeatable); it starts with none of this shell's settings",
    )


LAYERS = ("working", "episodic", "semantic", "reflect")
"""The memory layers a recall may ask."""


def add_layers_argument(parser: argparse.ArgumentParser) -> None:
    """``--layers``: the layers every recall of the bench asks (empty: all, as agents do)."""
    parser.add_argument(
        "--layers",
        nargs="+",
        choices=LAYERS,
        default=[],
        help="ask only these layers (one on its own, or all but one as when it is down; default: all)",
    )


def add_json_argument(parser: argparse.ArgumentParser) -> None:
    """``--json PATH``, where :func:`report_json` writes the bench's report."""
    parser.add_argument(
        "--json", type=Path, default=None, metavar="PATH", help="write the results as JSON here"
    )


def parse_assignments(items: Iterable[str]) -> dict[str, str]:
    """``KEY=VALUE`` items (the ``--env`` flag) as a mapping; a malformed one is a ValueError naming it."""
    result: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or not key.replace("_", "").isalnum():
            raise ValueError(f"--env {item!r}: expected KEY=VALUE")
        result[key] = value
    return result


def mesh_environment(
    settings: Mapping[str, str],
    with_llm: bool = False,
    caller: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a private mesh: the caller's basics plus ``settings``, nothing inherited.

    ``with_llm`` passes the caller's ``LLM_*`` variables through (an LLM only when asked for);
    ``settings`` win over everything.
    """
    source = os.environ if caller is None else caller
    env = {name: source[name] for name in BASIC_VARIABLES if name in source}
    if with_llm:
        env.update({name: value for name, value in source.items() if name.startswith(LLM_PREFIX)})
    env.update(settings)
    return env


def recorded_settings(env: Mapping[str, str]) -> dict[str, str]:
    """The ``HINDSIGHT_*`` and ``LLM_*`` settings of ``env``, secrets shown only as set."""
    return {
        name: HIDDEN if any(word in name for word in SECRET_WORDS) else value
        for name, value in sorted(env.items())
        if name.startswith(SETTING_PREFIXES)
    }


def write_json(path: Path, data: Any) -> None:
    """Write a bench's JSON report to ``path`` (folders created as needed; UTF-8, text as it is)."""
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def report_json(path: Path | None, data: Any) -> None:
    """Write the report where ``--json`` asks (nothing without it) and say where on stderr."""
    if path:
        write_json(path, data)
        print(f"JSON: {path}", file=sys.stderr)


def timing(started: float) -> dict[str, Any]:
    """A report's ``wall_seconds`` since ``started`` (a ``time.time()``) and ``started`` in UTC."""
    return {
        "wall_seconds": round(time.time() - started, 1),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
    }


@dataclass(frozen=True)
class MeshRun:
    """What a report records of a run on one private mesh: the code measured, the mesh's environment (its
    settings are reported, secrets hidden) and when the run started."""

    commit: str
    environ: dict[str, str]
    started: float

    @classmethod
    def start(cls, settings: Mapping[str, str], with_llm: bool = False) -> MeshRun:
        """Taken now: the mesh runs the code checked out at the start, whatever lands meanwhile."""
        return cls(commit_label(checkout()), mesh_environment(settings, with_llm=with_llm), time.time())

    def settings(self) -> dict[str, str]:
        """The mesh's settings as the report shows them (:func:`recorded_settings`)."""
        return recorded_settings(self.environ)

    def timing(self) -> dict[str, Any]:
        """``wall_seconds`` and ``started`` of the run so far (:func:`timing`)."""
        return timing(self.started)
