"""Recall latency on one conversation: quiet, sequential; p50/p95/p99, each layer's share, CPU per recall.

A private mesh retains one namespace of a ``--data`` file (``--namespace``; default: the one with the most
messages), then asks its questions as recalls, one after another, each at its time in the data: one warm-up
round, then ``--repeat`` timed rounds. Reported over the timed rounds: recall wall time as the client sees
it (p50/p95/p99); each layer's time inside the edge (its report in the reply: p50, p95, and its share of
the recall's time: the layers run side by side, so shares do not add up to 1); and the CPU each process
of the mesh and this client spent per recall (user + system, read through psutil before and after, as
``bench load`` does). Latency depends on what else runs on the machine, CPU per recall far less: compare
settings (``--env``) in runs on one machine, and CPU between any. The CPU the mesh spends while nobody
asks (``idle_cpu_ms_per_s``, measured just before) tells how much of it is background work.
``--profile DIR`` adds a py-spy profile of each service over the timed rounds (see
:mod:`~hindsight.bench.profiling`); its latencies then carry the sampler's cost.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hindsight.bench.metrics import percentile
from hindsight.bench.provenance import add_env_argument, add_json_argument

if TYPE_CHECKING:  # imported in run(): building the command line stays fast
    from hindsight.bench.datasets import Namespace
    from hindsight.bench.load import CpuMeter
    from hindsight.bench.transports import Transport

TOP_K = 10
QUANTILES = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
IDLE_SECONDS = 2.0
CLIENT = "bench-client"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of ``hindsight bench latency``."""
    from hindsight.bench.scale_data import DEFAULT_DATA

    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA[0],
        metavar="FILE",
        help=f"benchmark file (uniform format; default: {DEFAULT_DATA[0]})",
    )
    parser.add_argument(
        "--namespace",
        default=None,
        metavar="ID",
        help="the conversation (default: the one with most messages)",
    )
    parser.add_argument("--repeat", type=int, default=3, metavar="N", help="timed rounds (default: 3)")
    parser.add_argument(
        "--warmup", type=int, default=1, metavar="N", help="untimed rounds first (default: 1)"
    )
    parser.add_argument(
        "--queries", type=int, default=None, metavar="N", help="only the namespace's first N questions"
    )
    parser.add_argument("--top-k", type=int, default=TOP_K, metavar="K", help=f"top_k (default: {TOP_K})")
    parser.add_argument("--batch", type=int, default=100, help="messages per Retain call (default: 100)")
    parser.add_argument(
        "--transport", choices=("grpc", "mcp"), default="grpc", help="how to reach the edge (default: grpc)"
    )
    add_env_argument(parser)
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        metavar="DIR",
        help="profile each service with py-spy over the timed rounds; raw stacks and the summary go here",
    )
    parser.add_argument(
        "--profile-rate", type=int, default=100, metavar="HZ", help="py-spy samples per second (default: 100)"
    )
    add_json_argument(parser)
    parser.add_argument("--no-progress", action="store_true", help="no progress lines")


def _check(args: argparse.Namespace) -> str:
    """The first bad argument, as a message naming it; empty when all are fine."""
    if args.repeat < 1:
        return "--repeat: must be at least 1"
    if args.warmup < 0:
        return "--warmup: must be zero or more"
    if args.queries is not None and args.queries < 1:
        return "--queries: must be at least 1"
    if args.top_k < 1 or args.batch < 1:
        return "--top-k / --batch: must be at least 1"
    if args.profile_rate < 1:
        return "--profile-rate: must be at least 1"
    return ""


def pick_namespace(namespaces: Sequence[Namespace], wanted: str | None) -> Namespace:
    """The namespace named ``wanted``, else the one with most messages (the first of equals)."""
    if wanted is not None:
        for namespace in namespaces:
            if namespace.id == wanted:
                return namespace
        known = ", ".join(ns.id for ns in namespaces[:10])
        raise ValueError(f"--namespace {wanted!r}: not in the file (it has {known}...)")
    if not namespaces:
        raise ValueError("--data: the file has no namespace")
    return max(namespaces, key=lambda ns: len(ns.messages))


@dataclass
class Rounds:
    """What the timed rounds measured."""

    recall_ms: list[float] = field(default_factory=list)
    layer_ms: dict[str, list[float]] = field(default_factory=dict)
    layer_share: dict[str, list[float]] = field(default_factory=dict)
    partial: int = 0
    retain_seconds: float = 0.0
    cpu_ms_per_recall: dict[str, float] = field(default_factory=dict)
    idle_cpu_ms_per_s: dict[str, float] = field(default_factory=dict)
    wall_seconds: float = 0.0
    """Of the timed rounds."""


def quantiles(values: Sequence[float]) -> dict[str, float]:
    return {name: round(percentile(values, share), 2) for name, share in QUANTILES}


async def _round(
    transport: Transport, bank: str, namespace: Namespace, args: argparse.Namespace, rounds: Rounds | None
) -> None:
    """Every question once, one after another; timed into ``rounds`` unless it is None (warm-up)."""
    from hindsight.bench.datasets import asked_at

    for query in namespace.queries[: args.queries]:
        now, _ = asked_at(query, namespace)
        asked = time.perf_counter()
        recalled = await transport.recall(bank, query.text, args.top_k, (), now)
        elapsed = (time.perf_counter() - asked) * 1000
        if rounds is None:
            continue
        rounds.recall_ms.append(elapsed)
        rounds.partial += recalled.partial
        for layer, ms in recalled.layer_ms.items():
            rounds.layer_ms.setdefault(layer, []).append(ms)
            rounds.layer_share.setdefault(layer, []).append(ms / elapsed if elapsed > 0 else 0.0)


def _per_second(before: dict[str, float], after: dict[str, float], seconds: float) -> dict[str, float]:
    used = {name: (after[name] - before.get(name, 0.0)) * 1000 / seconds for name in after}
    return {name: round(ms, 1) for name, ms in sorted(used.items(), key=lambda item: -item[1])}


async def measure(
    transport: Transport,
    namespace: Namespace,
    args: argparse.Namespace,
    meter: CpuMeter | None = None,
    profiler: Any = None,
) -> Rounds:
    """Retain the namespace into a fresh bank, the warm-up rounds, the idle CPU, then the timed rounds.

    ``profiler``: a callable returning a context manager that samples while the timed rounds run.
    """
    import contextlib

    from hindsight.bench.load import CpuMeter
    from hindsight.bench.retrieval import batches

    progress = not args.no_progress
    bank = f"latency-{uuid.uuid4().hex[:8]}"
    rounds = Rounds()
    started = time.perf_counter()
    for batch in batches(namespace.messages, args.batch):
        await transport.retain(bank, batch)
    rounds.retain_seconds = time.perf_counter() - started
    for index in range(args.warmup):
        if progress:
            print(f"warm-up round {index + 1}/{args.warmup}", file=sys.stderr, flush=True)
        await _round(transport, bank, namespace, args, None)
    if meter is not None:
        before = meter.snapshot()
        await asyncio.sleep(IDLE_SECONDS)
        rounds.idle_cpu_ms_per_s = _per_second(before, meter.snapshot(), IDLE_SECONDS)
    sampling = profiler() if profiler is not None else contextlib.nullcontext()
    with sampling:
        before = meter.snapshot() if meter is not None else {}
        started = time.perf_counter()
        for index in range(args.repeat):
            if progress:
                print(f"timed round {index + 1}/{args.repeat}", file=sys.stderr, flush=True)
            await _round(transport, bank, namespace, args, rounds)
        rounds.wall_seconds = time.perf_counter() - started
        if meter is not None:
            per_op = CpuMeter.per_op(before, meter.snapshot(), len(rounds.recall_ms))
            rounds.cpu_ms_per_recall = per_op
    return rounds


def summary(rounds: Rounds, namespace: Namespace, args: argparse.Namespace) -> dict[str, Any]:
    """The contract JSON of a run (without its commit and settings)."""
    cpu = dict(rounds.cpu_ms_per_recall)
    mesh = {name: ms for name, ms in cpu.items() if name not in ("total", CLIENT)}
    return {
        "namespace": namespace.id,
        "turns": len(namespace.messages),
        "questions": len(namespace.queries[: args.queries]),
        "rounds": args.repeat,
        "warmup_rounds": args.warmup,
        "recalls": len(rounds.recall_ms),
        "partial": rounds.partial,
        "top_k": args.top_k,
        "transport": args.transport,
        "recall_ms": quantiles(rounds.recall_ms),
        "recall_ms_mean": round(sum(rounds.recall_ms) / max(1, len(rounds.recall_ms)), 2),
        "layer_ms": {layer: round(percentile(ms, 0.5), 2) for layer, ms in sorted(rounds.layer_ms.items())},
        "layer_ms_p95": {
            layer: round(percentile(ms, 0.95), 2) for layer, ms in sorted(rounds.layer_ms.items())
        },
        "layer_share": {
            layer: round(sum(shares) / len(shares), 3) for layer, shares in sorted(rounds.layer_share.items())
        },
        "cpu_ms_per_recall": cpu,
        "cpu_ms_per_recall_mesh": round(sum(mesh.values()), 2),
        "idle_cpu_ms_per_s": rounds.idle_cpu_ms_per_s,
        "retain_msg_per_s": round(len(namespace.messages) / rounds.retain_seconds, 1)
        if rounds.retain_seconds
        else None,
        "timed_seconds": round(rounds.wall_seconds, 1),
    }


def markdown(data: dict[str, Any]) -> str:
    """The run as a few lines and a table of the layers."""
    q = data["recall_ms"]
    lines = [
        f"{data['namespace']}: {data['turns']} turns, {data['recalls']} recalls "
        f"({data['questions']} questions x {data['rounds']} rounds), {data['partial']} partial",
        f"recall ms: p50 {q['p50']}  p95 {q['p95']}  p99 {q['p99']}  (mean {data['recall_ms_mean']})",
        "",
        "| layer | p50 ms | p95 ms | share of recall |",
        "|---|---:|---:|---:|",
    ]
    for layer, ms in data["layer_ms"].items():
        lines.append(f"| {layer} | {ms} | {data['layer_ms_p95'][layer]} | {data['layer_share'][layer]:.0%} |")
    if data["cpu_ms_per_recall"]:
        shares = ", ".join(f"{name} {ms}" for name, ms in data["cpu_ms_per_recall"].items())
        lines += ["", f"CPU ms per recall: {shares} (mesh {data['cpu_ms_per_recall_mesh']})"]
    if data["idle_cpu_ms_per_s"]:
        idle = ", ".join(f"{name} {ms}" for name, ms in data["idle_cpu_ms_per_s"].items() if ms >= 1)
        lines.append(f"CPU ms per second while idle: {idle or 'none above 1'}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """``hindsight bench latency``: print the table, write the JSON; 0 on success, 2 on bad input."""
    from hindsight.bench import profiling
    from hindsight.bench.datasets import load_dataset
    from hindsight.bench.load import CpuMeter
    from hindsight.bench.mesh_process import embedded_mesh
    from hindsight.bench.provenance import MeshRun, parse_assignments, report_json, write_json
    from hindsight.bench.transports import open_transport
    from hindsight.cli.credentials import client_token

    problem = _check(args)
    try:
        if problem:
            raise ValueError(problem)
        settings = parse_assignments(args.env)
        namespace = pick_namespace(load_dataset(args.data).namespaces, args.namespace)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    spy = profiling.py_spy() if args.profile else None
    if args.profile and spy is None:
        print("note: py-spy is not installed (pip install py-spy): no profile", file=sys.stderr)
    record = MeshRun.start(settings)
    if not args.no_progress:
        print(f"starting an embedded mesh for {namespace.id} ...", file=sys.stderr, flush=True)
    with embedded_mesh(environ=record.environ) as (info, supervisor_pid):
        meter = CpuMeter(supervisor_pid, info.children, client=CLIENT)
        token = client_token(Path(info.home))

        def profiler() -> Any:
            assert spy is not None and args.profile is not None
            return profiling.recording(spy, info.children, args.profile, args.profile_rate)

        async def session() -> Rounds:
            async with open_transport(args.transport, info.memory_address, info.mcp_url, token) as transport:
                return await measure(transport, namespace, args, meter, profiler if spy else None)

        rounds = asyncio.run(session())
    data: dict[str, Any] = {"commit": record.commit, "settings": record.settings(), "data": str(args.data)}
    data.update(summary(rounds, namespace, args))
    print(markdown(data))
    if spy is not None and args.profile is not None:
        cpu = data["cpu_ms_per_recall"]
        profiles = {
            name: profiling.summarise(
                args.profile / f"{name}.txt", args.profile_rate, len(rounds.recall_ms), cpu.get(name)
            )
            for name in info.children
        }
        data["profile"] = {"rate_hz": args.profile_rate, "folder": str(args.profile), "services": profiles}
        write_json(args.profile / "summary.json", data)
        print("\n" + profiling.markdown(profiles))
    report_json(args.json, data)
    return 0
