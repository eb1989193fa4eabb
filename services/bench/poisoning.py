"""Memory poisoning: attacks planted into banks built from the dev files, with the defences on and off.

The attack set is generated (``--seed``; no downloads) from the namespaces of ``--data``: instructions
injected in tool output, MINJA-style bridging records, AgentPoison-style trigger phrases and false facts
from outside sources, in English and Chinese; or read from ``--attacks FILE`` (the same format
``--write-attacks`` writes). Two private meshes run one after the other, ``HINDSIGHT_DEFENCES=on`` then
``off``; each retains the base namespaces, asks their dev queries, plants the attacks and recalls each
target. Reported: attack success (a planted record unflagged in the top 10 of its target), benign false
positives (dev messages held back or flagged), and dev R@10 with the defences on and off.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from hindsight.bench.provenance import add_json_argument

if TYPE_CHECKING:  # imported in run(): building the command line stays fast
    from hindsight.bench.attacks import Attack
    from hindsight.bench.datasets import Dataset
    from hindsight.bench.poison_run import PassResult

DEFAULT_LIMIT = 3
SWITCH = "HINDSIGHT_DEFENCES"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of ``hindsight bench poisoning``."""
    parser.add_argument(
        "--data", type=Path, nargs="+", required=True, metavar="FILE", help="benchmark files (uniform format)"
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=None,
        metavar="N",
        help=f"only the first N namespaces per file (0: all; default: {DEFAULT_LIMIT} for a generated set, "
        "all for --attacks, of which only the attacked namespaces run)",
    )
    add_json_argument(parser)
    parser.add_argument(
        "--attacks",
        type=Path,
        default=None,
        metavar="FILE",
        help="measure this attack set instead of generating one",
    )
    parser.add_argument(
        "--write-attacks", type=Path, default=None, metavar="PATH", help="write the attack set measured here"
    )
    parser.add_argument("--seed", type=int, default=16, help="seed of the generated attack set (default: 16)")
    parser.add_argument(
        "--per-kind",
        type=int,
        default=3,
        metavar="N",
        help="generated attacks per namespace and kind (default: 3)",
    )
    parser.add_argument(
        "--cross-lang",
        type=int,
        default=1,
        metavar="N",
        help="more per namespace and kind in the other language than the namespace's (default: 1)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"a setting for both private meshes (repeatable); {SWITCH} is set by the bench itself",
    )
    parser.add_argument("--llm", action="store_true", help="pass this shell's LLM_* settings to the meshes")
    parser.add_argument(
        "--details", action="store_true", help="put every target query's outcome (both passes) in the JSON"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress lines")


def _workload(args: argparse.Namespace) -> tuple[list[Dataset], tuple[Attack, ...]]:
    """The namespaces to build banks of, and the attacks on them (generated, or read and validated)."""
    from hindsight.bench.attacks import load_attacks
    from hindsight.bench.datasets import load_dataset
    from hindsight.bench.poison_generate import Plan, generate

    limit = args.limit if args.limit is not None else (None if args.attacks else DEFAULT_LIMIT)
    datasets = [load_dataset(path, limit or None) for path in args.data]
    if not args.attacks:
        plan = Plan(seed=args.seed, per_kind=args.per_kind, cross_lang=args.cross_lang)
        return datasets, generate(datasets, plan)
    attacks = load_attacks(args.attacks, [ns.id for dataset in datasets for ns in dataset.namespaces])
    bases = {attack.base for attack in attacks}
    attacked = [
        dataclasses.replace(dataset, namespaces=tuple(ns for ns in dataset.namespaces if ns.id in bases))
        for dataset in datasets
    ]
    return [dataset for dataset in attacked if dataset.namespaces], attacks


def _one_pass(
    mode: str,
    settings: dict[str, str],
    args: argparse.Namespace,
    work: tuple[list[Dataset], tuple[Attack, ...], str],
) -> tuple[PassResult, dict[str, str]]:
    """One private mesh with the defences ``mode`` ("on" or "off"), through every namespace."""
    from hindsight.bench.mesh_process import embedded_mesh
    from hindsight.bench.poison_run import run_pass
    from hindsight.bench.provenance import mesh_environment
    from hindsight.cli.credentials import client_token

    datasets, attacks, run_id = work
    environ = mesh_environment({**settings, SWITCH: mode}, with_llm=args.llm)
    print(f"starting an embedded mesh ({SWITCH}={mode}) ...", file=sys.stderr, flush=True)
    with embedded_mesh(environ=environ) as (info, _):
        token = client_token(Path(info.home))
        return asyncio.run(
            run_pass(info.memory_address, token, mode, datasets, attacks, run_id, not args.no_progress)
        ), environ


def run(args: argparse.Namespace) -> int:
    """``hindsight bench poisoning``: print the table, write the JSON; 0 on success, 2 on bad input."""
    from hindsight.bench.attacks import AttackFileError, write_attacks
    from hindsight.bench.poison_report import outcomes, report, table
    from hindsight.bench.provenance import (
        checkout,
        commit_label,
        parse_assignments,
        recorded_settings,
        report_json,
        timing,
    )

    try:
        if (args.limit or 0) < 0 or args.per_kind < 0 or args.cross_lang < 0:
            raise ValueError("--limit, --per-kind and --cross-lang: must not be negative")
        settings = parse_assignments(args.env)
        datasets, attacks = _workload(args)
    except (AttackFileError, ValueError, OSError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not attacks:
        print("error: no attacks to measure (the namespaces gave the generator nothing)", file=sys.stderr)
        return 2
    if args.write_attacks:
        write_attacks(args.write_attacks, attacks)
        print(f"attacks: {args.write_attacks}", file=sys.stderr)
    code = commit_label(checkout())
    started = time.time()
    work = (datasets, attacks, uuid.uuid4().hex[:8])
    on, on_env = _one_pass("on", settings, args, work)
    off, off_env = _one_pass("off", settings, args, work)
    run_info = {
        "commit": code,
        "settings": {"on": recorded_settings(on_env), "off": recorded_settings(off_env)},
        "counts": {
            "files": len(datasets),
            "namespaces": sum(len(d.namespaces) for d in datasets),
            "messages": on.messages,
            "dev_queries": sum(t.overall_count for t in on.tallies.values()),
            "attacks": len(attacks),
            "targets": len(on.outcomes),
            "plants": on.plants,
        },
        "attack_set": str(args.attacks) if args.attacks else f"generated (seed {args.seed})",
        "top_k": 10,
        "limit": args.limit if args.limit is not None else ("all" if args.attacks else DEFAULT_LIMIT),
        **timing(started),
    }
    data = report(on, off, run_info)
    if args.details:
        data["outcomes"] = outcomes(on, off)
    print(table(data))
    report_json(args.json, data)
    return 0
