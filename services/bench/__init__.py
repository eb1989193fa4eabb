"""``hindsight bench <suite>``: measurements that compare against a baseline in the same run.

Each suite is a module here with ``add_arguments(parser)`` and ``run(args) -> int``; it keeps heavy
imports inside ``run`` so that building the command line stays fast.
"""

from __future__ import annotations

import argparse
import importlib

SUITES: dict[str, str] = {
    "retrieval": "hindsight.bench.retrieval",
    "inference": "hindsight.bench.inference",
    "working": "hindsight.bench.working",
    "scale": "hindsight.bench.scale",
    "faults": "hindsight.bench.faults",
    "fuzz": "hindsight.bench.fuzz",
    "load": "hindsight.bench.load",
    "poisoning": "hindsight.bench.poisoning",
    "lifecycle": "hindsight.bench.lifecycle",
    "lessons": "hindsight.bench.lessons",
    "corrections": "hindsight.bench.corrections",
    "fleet": "hindsight.bench.fleet",
    "latency": "hindsight.bench.latency",
}
"""Suite name -> module path. A suite module registers itself by being listed here."""


def add_bench_command(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``bench`` and one sub-command per suite."""
    bench = commands.add_parser("bench", help="benchmarks, each against a baseline measured in the same run")
    suites = bench.add_subparsers(dest="suite", required=True, metavar="SUITE")
    for name, module_path in SUITES.items():
        module = importlib.import_module(module_path)
        parser = suites.add_parser(name, help=(module.__doc__ or name).strip().splitlines()[0])
        module.add_arguments(parser)
        parser.set_defaults(run=module.run)
