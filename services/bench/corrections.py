"""Corrections: does a newer statement win over the old one, and do look-alikes leave it alone?

A generated set (``--seed``; nothing downloaded; see ``corrections_set`` for the families, the split by
template and the JSON-lines format), or ``--cases FILE`` in the same format (any ``kind`` label). A
private mesh runs every case through MCP: a fresh bank, the turns retained one by one, the question
recalled with ``top_k`` 3; the first memory must hold the current value and not the other one. Then the
defences' benign look-alikes (``corrections_benign``) run on that mesh and on a second one with
``HINDSIGHT_DEFENCES=off``; ``benign_kept`` is shown with the defences / shown without (top 5, unflagged).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hindsight.bench.provenance import add_env_argument, add_json_argument

if TYPE_CHECKING:  # imported in run(): building the command line stays fast
    from hindsight.bench.corrections_run import Outcome
    from hindsight.bench.corrections_set import Case

SWITCH = "HINDSIGHT_DEFENCES"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of ``hindsight bench corrections``."""
    parser.add_argument("--seed", type=int, default=31, help="seed of the generated set (default: 31)")
    parser.add_argument(
        "--per-template", type=int, default=4, metavar="N", help="generated cases per template (default: 4)"
    )
    parser.add_argument(
        "--cases", type=Path, default=None, metavar="FILE", help="measure this case file (JSON lines)"
    )
    parser.add_argument(
        "--benign-cases",
        type=Path,
        default=None,
        metavar="FILE",
        help="measure this benign look-alike file for the defences instead of the generated one",
    )
    parser.add_argument(
        "--split",
        choices=("dev", "test", "all"),
        default="test",
        help="which split to measure (cases without a split label are in every split; default: test)",
    )
    parser.add_argument(
        "--limit", type=int, default=0, metavar="N", help="only the first N cases of each kind and language"
    )
    parser.add_argument("--no-benign", action="store_true", help="skip the defences' benign look-alikes")
    parser.add_argument(
        "--benign-only",
        action="store_true",
        help="only the defences' benign look-alikes (no corrections cases)",
    )
    parser.add_argument(
        "--write-cases", type=Path, default=None, metavar="PATH", help="write the measured cases here"
    )
    add_json_argument(parser)
    add_env_argument(parser)
    parser.add_argument("--llm", action="store_true", help="pass this shell's LLM_* settings to the mesh")
    parser.add_argument("--details", action="store_true", help="put every case's outcome in the JSON")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines")


def _limited(cases: list[Case], limit: int) -> list[Case]:
    if limit <= 0:
        return cases
    counts: dict[tuple[str, str], int] = {}
    chosen = []
    for case in cases:
        key = (case.kind, case.lang)
        counts[key] = counts.get(key, 0) + 1
        if counts[key] <= limit:
            chosen.append(case)
    return chosen


def _workload(args: argparse.Namespace) -> tuple[list[Case], list[Case]]:
    from hindsight.bench.corrections_benign import generate_benign
    from hindsight.bench.corrections_set import generate, load_cases, select

    cases = load_cases(args.cases) if args.cases else generate(args.seed, args.per_template)
    cases = [] if args.benign_only else _limited(select(cases, args.split), args.limit)
    if args.no_benign:
        return cases, []
    benign = load_cases(args.benign_cases) if args.benign_cases else generate_benign(args.seed)
    return cases, _limited(select(benign, args.split), args.limit)


def _mesh_pass(
    environ: dict[str, str], cases: list[Case], benign: list[Case], run_id: str, progress: bool
) -> tuple[list[Outcome], list[Outcome]]:
    """One private mesh: the corrections cases, then the benign ones."""
    from hindsight.bench.corrections_run import run_pass
    from hindsight.bench.mesh_process import embedded_mesh
    from hindsight.cli.credentials import client_token

    print(f"starting an embedded mesh ({SWITCH}={environ.get(SWITCH, 'default')}) ...", file=sys.stderr)

    async def both(url: str, token: str) -> tuple[list[Outcome], list[Outcome]]:
        first = await run_pass(url, token, cases, run_id, progress=progress) if cases else []
        second = await run_pass(url, token, benign, run_id + "b", benign=True, progress=progress)
        return first, second

    with embedded_mesh(environ=environ) as (info, _):
        token = client_token(Path(info.home))
        return asyncio.run(both(info.mcp_url, token))


def _benign_figures(on: list[Outcome], off: list[Outcome]) -> dict[str, Any]:
    """Shown with the defences / shown without, over the cases shown without; per kind as well."""
    shown_off = {o.case.id for o in off if o.ok}
    kept = [o for o in on if o.case.id in shown_off]

    def share(group: list[Outcome]) -> dict[str, Any]:
        base = len(group)
        hits = sum(o.ok for o in group)
        return {"shown_without": base, "shown_with": hits, "kept": round(hits / base, 4) if base else None}

    by_kind: dict[str, list[Outcome]] = {}
    by_lang: dict[str, list[Outcome]] = {}
    for outcome in kept:
        by_kind.setdefault(outcome.case.kind, []).append(outcome)
        by_lang.setdefault(outcome.case.lang, []).append(outcome)
    return {
        "cases": len(on),
        **share(kept),
        "by_kind": {name: share(group) for name, group in sorted(by_kind.items())},
        "by_lang": {name: share(group) for name, group in sorted(by_lang.items())},
        "lost": [o.case.id for o in kept if not o.ok],
    }


def _table(data: dict[str, Any]) -> str:
    lines = [f"{'kind':<28} {'lang':<5} {'cases':>6} {'passed':>7} {'rate':>7}"]
    for name, part in data["by_kind_lang"].items():
        kind, lang = name.split("/", 1)
        lines.append(f"{kind:<28} {lang:<5} {part['cases']:>6} {part['passed']:>7} {part['rate']:>7.1%}")
    for name, part in data["by_kind"].items():
        lines.append(f"{name:<28} {'all':<5} {part['cases']:>6} {part['passed']:>7} {part['rate']:>7.1%}")
    for name, part in data["by_lang"].items():
        lines.append(f"{'all':<28} {name:<5} {part['cases']:>6} {part['passed']:>7} {part['rate']:>7.1%}")
    total = data["cases"]
    lines.append(
        f"{'all':<28} {'all':<5} {total:>6} {data['passed']:>7} {data['passed'] / max(total, 1):>7.1%}"
    )
    benign = data.get("benign")
    if benign and benign.get("kept") is not None:
        lines.append(
            "benign look-alikes kept (defences on/off, top 5): "
            f"{benign['shown_with']}/{benign['shown_without']} = {benign['kept']:.1%}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """``hindsight bench corrections``: print the table, write the JSON; 0 on success, 2 on bad input."""
    from hindsight.bench.corrections_run import detail, tally
    from hindsight.bench.corrections_set import CaseFileError, write_cases
    from hindsight.bench.provenance import MeshRun, parse_assignments, recorded_settings, report_json

    try:
        if args.per_template < 1:
            raise ValueError("--per-template: must be at least 1")
        if args.limit < 0:
            raise ValueError("--limit: must not be negative")
        if args.no_benign and args.benign_only:
            raise ValueError("--no-benign and --benign-only: choose one")
        settings = parse_assignments(args.env)
        cases, benign = _workload(args)
    except (CaseFileError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not cases and not benign:
        print(f"error: no cases in split {args.split!r}", file=sys.stderr)
        return 2
    if args.write_cases:
        write_cases(args.write_cases, cases)
        print(f"cases: {args.write_cases}", file=sys.stderr)
    record = MeshRun.start(settings, with_llm=args.llm)
    run_id = uuid.uuid4().hex[:8]
    outcomes, benign_on = _mesh_pass(record.environ, cases, benign, run_id, not args.no_progress)
    benign_data: dict[str, Any] | None = None
    off_environ: dict[str, str] = {}
    if benign:
        off_environ = {**record.environ, SWITCH: "off"}
        _, benign_off = _mesh_pass(off_environ, [], benign, run_id + "o", not args.no_progress)
        benign_data = _benign_figures(benign_on, benign_off)
        if args.details:
            benign_data["outcomes"] = [
                {**detail(on), "shown_without": off.ok} for on, off in zip(benign_on, benign_off, strict=True)
            ]
    splits = sorted({o.case.split for o in outcomes if o.case.split})
    data: dict[str, Any] = {
        **tally(outcomes),
        "split": args.split,
        "by_split": {name: tally([o for o in outcomes if o.case.split == name]) for name in splits},
        "benign_kept": benign_data["kept"] if benign_data else None,
        "benign": benign_data,
        "commit": record.commit,
        "settings": record.settings(),
        "settings_benign_off": recorded_settings(off_environ) if benign else None,
        "set": str(args.cases)
        if args.cases
        else f"generated (seed {args.seed}, {args.per_template} per template)",
        "limit": args.limit,
        "top_k": 3,
        **record.timing(),
    }
    if args.details:
        data["outcomes"] = [detail(o) for o in outcomes]
    print(_table(data))
    report_json(args.json, data)
    return 0
