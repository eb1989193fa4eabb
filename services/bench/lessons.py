"""Lessons: does a lesson reach the context for a similar task, and stay out of unrelated ones?

A generated set (``--seed``; nothing downloaded): failed episodes across software, operations, travel,
purchasing, events, writing and household tasks, in English and Chinese, each with its lesson; requests
for a similar task in other words and about other entities (a plan, a question, a complaint); unrelated
requests (everyday questions, and everyday tasks asked with the same templates); everyday facts in the
same banks, and a question about each. Dev and test are split by domain and by request template.
A private mesh writes the episodes, reflects and recalls each request with ``top_k`` 3. Reported per
split: the lesson in the top 3 for similar tasks (``hit_at_3``), no lesson in the top 3 for unrelated
ones (``clean_at_3``), the lesson first in the context (``first_in_context``), how often an unrelated
request returns at most one memory (the relevance floor at work), and the asked fact in the top 3 for
questions about the facts (``facts.hit_at_3``: the floor must not silence real questions).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from pathlib import Path
from typing import Any

from hindsight.bench.lessons_set import SPLITS
from hindsight.bench.provenance import LAYERS, add_env_argument, add_json_argument, add_layers_argument


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of ``hindsight bench lessons``."""
    parser.add_argument("--seed", type=int, default=30, help="seed of the generated set (default: 30)")
    parser.add_argument(
        "--split",
        choices=SPLITS,
        default="test",
        help="the split whose figures head the JSON and the table (both are measured; default: test)",
    )
    parser.add_argument(
        "--per-episode", type=int, default=3, metavar="N", help="similar requests per episode (default: 3)"
    )
    add_json_argument(parser)
    add_env_argument(parser)
    parser.add_argument("--llm", action="store_true", help="pass this shell's LLM_* settings to the mesh")
    add_layers_argument(parser)
    parser.add_argument("--details", action="store_true", help="put every request's outcome in the JSON")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines")


def _table(data: dict[str, Any]) -> str:
    lines = [f"{'split':<6} {'lang':<5} {'similar':>8} {'hit@3':>7} {'first':>7} {'unrel.':>7} "
             f"{'clean@3':>8} {'<=1 ret':>8} {'facts':>6} {'fact@3':>7}"]  # fmt: skip
    for name, part in data["by_split_lang"].items():
        split, lang = name.split("-")
        lines.append(
            f"{split:<6} {lang:<5} {part['similar']['cases']:>8} {part['similar']['hit_at_3']:>7.1%} "
            f"{part['first_in_context']:>7.1%} {part['unrelated']['cases']:>7} "
            f"{part['unrelated']['clean_at_3']:>8.1%} {part['unrelated']['at_most_one_returned']:>8.1%} "
            f"{part['facts']['cases']:>6} {part['facts']['hit_at_3']:>7.1%}"
        )
    for split, part in data["by_split"].items():
        lines.append(
            f"{split:<6} {'all':<5} {part['similar']['cases']:>8} {part['similar']['hit_at_3']:>7.1%} "
            f"{part['first_in_context']:>7.1%} {part['unrelated']['cases']:>7} "
            f"{part['unrelated']['clean_at_3']:>8.1%} {part['unrelated']['at_most_one_returned']:>8.1%} "
            f"{part['facts']['cases']:>6} {part['facts']['hit_at_3']:>7.1%}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """``hindsight bench lessons``: print the table, write the JSON; 0 on success, 2 on bad input."""
    from hindsight.bench.lessons_run import figures, run_pass
    from hindsight.bench.lessons_set import generate
    from hindsight.bench.mesh_process import embedded_mesh
    from hindsight.bench.provenance import MeshRun, parse_assignments, report_json
    from hindsight.cli.credentials import client_token

    try:
        if args.per_episode < 1:
            raise ValueError("--per-episode: must be at least 1")
        settings = parse_assignments(args.env)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    banks = generate(args.seed, args.per_episode)
    record = MeshRun.start(settings, with_llm=args.llm)
    print("starting an embedded mesh ...", file=sys.stderr, flush=True)
    with embedded_mesh(environ=record.environ) as (info, _):
        token = client_token(Path(info.home))
        result = asyncio.run(
            run_pass(
                info.memory_address, token, banks, uuid.uuid4().hex[:8], not args.no_progress, args.layers
            )
        )
    by_split = {s: figures([o for o in result.outcomes if o.split == s]) for s in SPLITS}
    by_split_lang = {
        bank.name: figures([o for o in result.outcomes if o.bank == bank.name]) for bank in banks
    }
    data: dict[str, Any] = {
        **by_split[args.split],
        "split": args.split,
        "by_split": by_split,
        "by_split_lang": by_split_lang,
        "commit": record.commit,
        "settings": record.settings(),
        "counts": {
            "banks": len(banks),
            "episodes": result.episodes,
            "lessons": result.lessons,
            "distractors": result.distractors,
        },
        "set": f"generated (seed {args.seed}, {args.per_episode} similar requests per episode)",
        "top_k": 3,
        "layers": list(args.layers) or list(LAYERS),
        **record.timing(),
    }
    if args.details:
        data["outcomes"] = [
            {"bank": o.bank, "request": o.request, "similar": o.similar, "ok": o.ok, "first": o.first,
             "fact": o.fact, "returned": o.returned, "top": list(o.top)}
            for o in result.outcomes
        ]  # fmt: skip
    print(_table(data))
    report_json(args.json, data)
    return 0
