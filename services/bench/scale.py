"""Recall latency as one bank grows to 100k turns among 50 others, new vector backend vs the previous one.

On a private embedded mesh per backend (``HINDSIGHT_QDRANT_BACKEND``: ``edge``, then ``local`` up to
``--local-cap-s``): a small bank asked alone; 50 other banks of 2k turns; then one bank grown through
1k, 3k, 10k, 30k and 100k turns. At each size: retain msg/s of the step (batches of 100 through the
edge's gRPC ``MemoryService``), recall p50/p95/p99 right after the write (concurrency 1 and 8) and
again once ``--settle-s`` have passed, each layer's time inside recall, RSS per service and disk. Last,
the small bank again, beside everything else. The text is the dev files' real messages with fresh ids
and times; the queries are their questions (the bench measures latency, not quality).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hindsight.bench.provenance import SECRET_WORDS, add_json_argument, timing
from hindsight.bench.provenance import checkout as commit

if TYPE_CHECKING:  # imported in run(): building the command line stays fast
    from hindsight.bench.scale_data import BankStream, Corpus
    from hindsight.bench.scale_report import BackendResult, Pass
    from hindsight.bench.transports import Transport
    from hindsight.cli.mesh import MeshInfo

TOP_K = 10
CONCURRENCY = 8
BACKEND_ENV = "HINDSIGHT_QDRANT_BACKEND"
NEW_BACKEND, PREVIOUS_BACKEND = "edge", "local"
STORE_VARIABLES = ("DATABASE_URL", "REDIS_URL", "QDRANT_URL", "HINDSIGHT_QDRANT_PATH")
"""Left out of the mesh's environment: each backend gets fresh embedded stores, measured on its own disk."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of ``hindsight bench scale``."""
    from hindsight.bench.scale_data import DEFAULT_DATA

    parser.add_argument(
        "--data",
        type=Path,
        nargs="+",
        default=list(DEFAULT_DATA),
        metavar="FILE",
        help="benchmark files whose messages and questions are reused (default: the three dev files)",
    )
    parser.add_argument(
        "--max-turns", type=int, default=100_000, metavar="N", help="largest size of the grown bank"
    )
    parser.add_argument(
        "--other-banks", type=int, default=50, metavar="N", help="banks beside it (default: 50)"
    )
    parser.add_argument(
        "--other-turns", type=int, default=2000, metavar="N", help="turns in each (default: 2000)"
    )
    parser.add_argument(
        "--small-turns", type=int, default=500, metavar="N", help="turns in the small bank (default: 500)"
    )
    parser.add_argument(
        "--queries", type=int, default=100, metavar="N", help="recalls per pass (default: 100)"
    )
    parser.add_argument("--batch", type=int, default=100, help="turns per Retain call (default: 100)")
    parser.add_argument(
        "--settle-s",
        type=float,
        default=60.0,
        metavar="S",
        help="the second pass at each size starts this long after the write (default: 60)",
    )
    parser.add_argument(
        "--local-cap-s",
        type=float,
        default=600.0,
        metavar="S",
        help="time cap of the previous backend's run, mesh start excluded (default: 600)",
    )
    parser.add_argument(
        "--compare-other-banks",
        type=int,
        default=5,
        metavar="N",
        help="other banks in the side-by-side comparison with the previous backend, which cannot hold"
        " the full background within its cap (default: 5)",
    )
    parser.add_argument("--no-compare", action="store_true", help="measure only the new backend")
    add_json_argument(parser)
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="folder for the PNG (default: the folder of --json, else ./bench-results)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


class CapReached(Exception):
    """The backend's time cap passed while it was growing."""


@dataclass(frozen=True)
class Plan:
    """What one backend's run does (the same for both backends)."""

    sizes: tuple[int, ...]
    other_banks: int
    other_turns: int
    small_turns: int
    queries: tuple[str, ...]
    batch: int = 100
    settle_s: float = 60.0
    progress: bool = True


def _bar(total: int, description: str, enabled: bool, unit: str) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=description, unit=unit, file=sys.stderr, disable=not enabled, leave=False)


@dataclass(frozen=True)
class Retained:
    """One retain of a range of turns."""

    seconds: float
    unindexed: int
    """Batches the edge stored (durably) without indexing them within its deadline."""


async def retain_range(
    transport: Transport,
    stream: BankStream,
    span: range,
    plan: Plan,
    deadline: float | None = None,
    bar: Any = None,
) -> Retained:
    """Retain the turns ``span`` of a bank in batches; stops at ``deadline`` (monotonic), if any."""
    unindexed = 0
    began = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if bar is None:
            bar = stack.enter_context(_bar(len(span), f"{stream.bank_id} retain", plan.progress, "turn"))
        for first in range(span.start, span.stop, plan.batch):
            if deadline is not None and time.monotonic() > deadline:
                raise CapReached
            batch = stream.turns(first, min(span.stop, first + plan.batch))
            try:
                await transport.retain(stream.bank_id, batch)
            except RuntimeError:  # stored but not indexed in time: counted, not fatal
                unindexed += 1
            bar.update(len(batch))
    return Retained(time.perf_counter() - began, unindexed)


async def recall_pass(
    transport: Transport, bank_id: str, plan: Plan, concurrency: int, written_at: float, label: str
) -> Pass:
    """Every query once, ``concurrency`` at a time; each recall timed as the client sees it."""
    from hindsight.bench.scale_report import Pass

    result = Pass(concurrency=concurrency, after_write_s=time.monotonic() - written_at)
    pending = iter(plan.queries)
    with _bar(len(plan.queries), label, plan.progress, "q") as bar:

        async def worker() -> None:
            for query in pending:  # shared: each query is taken by one worker
                asked = time.perf_counter()
                recalled = await transport.recall(bank_id, query, TOP_K)
                result.add((time.perf_counter() - asked) * 1000, recalled.layer_ms, recalled.partial)
                bar.update(1)

        began = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        result.wall_s = time.perf_counter() - began
    return result


async def _settle(written_at: float, settle_s: float) -> None:
    """Wait until ``settle_s`` have passed since the write (the bench's own pacing, not a test's)."""
    await asyncio.sleep(max(0.0, written_at + settle_s - time.monotonic()))


async def measure_backend(
    backend: str, info: MeshInfo, supervisor_pid: int, corpus: Corpus, plan: Plan, cap_s: float | None
) -> BackendResult:
    """One backend's run on its mesh: small bank alone, the other banks, the growth, the small bank again."""
    from hindsight.bench.scale_data import BankStream
    from hindsight.bench.scale_report import BackendResult, SizeResult, SmallBank
    from hindsight.bench.scale_resources import data_disk, mesh_memory
    from hindsight.bench.transports import open_transport
    from hindsight.cli.credentials import client_token

    run_id = uuid.uuid4().hex[:6]
    pool = len(corpus.messages)
    started = time.monotonic()
    deadline = started + cap_s if cap_s is not None else None
    result = BackendResult(backend, cap_s=cap_s, mesh_startup_s=info.startup_seconds)
    small = BankStream(corpus, f"scale-{run_id}-small", offset=pool // 2)
    big = BankStream(corpus, f"scale-{run_id}-big")
    stored = 0
    token = client_token(Path(info.home))
    async with open_transport("grpc", info.memory_address, "", token) as transport:
        await retain_range(transport, small, range(plan.small_turns), plan)
        written = time.monotonic()
        await _settle(written, plan.settle_s)
        result.small_bank = SmallBank(plan.small_turns)
        result.small_bank.alone = await recall_pass(
            transport, small.bank_id, plan, 1, written, "small bank alone"
        )
        try:
            began = time.perf_counter()
            total = plan.other_banks * plan.other_turns
            with _bar(total, f"{plan.other_banks} other banks retain", plan.progress, "turn") as bar:
                for index in range(plan.other_banks):
                    # Each bank starts elsewhere in the pool (a prime stride): banks do not all open alike.
                    other = BankStream(corpus, f"scale-{run_id}-other{index}", offset=(index * 7919) % pool)
                    await retain_range(transport, other, range(plan.other_turns), plan, deadline, bar)
                    result.background_turns += plan.other_turns
            result.background_s = time.perf_counter() - began
            for turns in plan.sizes:
                retained = await retain_range(transport, big, range(stored, turns), plan, deadline)
                written = time.monotonic()
                size = SizeResult(
                    turns=turns,
                    store_turns=plan.small_turns + result.background_turns + turns,
                    retained=turns - stored,
                    retain_s=retained.seconds,
                    unindexed=retained.unindexed,
                )
                stored = turns
                size.recall = await recall_pass(transport, big.bank_id, plan, 1, written, f"{turns} recall")
                size.recall_c8 = await recall_pass(
                    transport, big.bank_id, plan, CONCURRENCY, written, f"{turns} recall c8"
                )
                size.memory = mesh_memory(supervisor_pid, info.children)
                size.disk_mb = data_disk(Path(info.home))
                await _settle(written, plan.settle_s)
                size.settled = await recall_pass(transport, big.bank_id, plan, 1, written, f"{turns} settled")
                result.sizes.append(size)
                if deadline is not None and time.monotonic() > deadline and turns != plan.sizes[-1]:
                    raise CapReached
        except CapReached:
            result.capped = True
        result.small_bank.others_turns = result.background_turns + stored
        result.small_bank.crowded = await recall_pass(
            transport, small.bank_id, plan, 1, written, "small bank beside the others"
        )
    result.wall_s = time.monotonic() - started
    return result


def mesh_environment(backend: str) -> dict[str, str]:
    """This process's environment minus the store variables, with the backend chosen."""
    env = {name: value for name, value in os.environ.items() if name not in STORE_VARIABLES}
    env[BACKEND_ENV] = backend
    return env


def settings_overrides() -> dict[str, str]:
    """The ``HINDSIGHT_*`` settings this run's environment sets (secrets left out): empty means defaults."""
    return {
        name: value
        for name, value in sorted(os.environ.items())
        if name.startswith("HINDSIGHT_") and not any(word in name for word in SECRET_WORDS)
    }


def run_info(
    args: argparse.Namespace, plan: Plan, started: float, backends: Sequence[str], checkout: dict[str, Any]
) -> dict[str, Any]:
    """``run``: the commit (taken at the start), every setting of the bench and the mesh's overrides."""
    settings = {key: value for key, value in asdict(plan).items() if key not in ("queries", "progress")} | {
        "queries": len(plan.queries),
        "top_k": TOP_K,
        "concurrency": [1, CONCURRENCY],
        "backends": list(backends),
        "local_cap_s": None if args.no_compare else args.local_cap_s,
        "compare_other_banks": None if args.no_compare else args.compare_other_banks,
        "max_turns": args.max_turns,
        "data": [str(path) for path in args.data],
        "env": settings_overrides(),
    }
    return {
        **checkout,
        "settings": settings,
        **timing(started),
    }


def run(args: argparse.Namespace) -> int:
    """``hindsight bench scale``: print the tables, write the JSON and the PNG; 0 on success."""
    from hindsight.bench.mesh_process import embedded_mesh
    from hindsight.bench.provenance import write_json as write_report
    from hindsight.bench.scale_data import Corpus, size_schedule
    from hindsight.bench.scale_report import gains, markdown_backend, markdown_gain, report, write_chart

    started = time.time()
    checkout = commit()  # now: the services run the code of the start, whatever lands meanwhile
    corpus = Corpus.load(args.data)
    plan = Plan(
        sizes=tuple(size_schedule(args.max_turns)),
        other_banks=args.other_banks,
        other_turns=args.other_turns,
        small_turns=args.small_turns,
        queries=tuple(corpus.query_set(args.queries)),
        batch=args.batch,
        settle_s=args.settle_s,
        progress=not args.no_progress,
    )
    backends = [NEW_BACKEND] if args.no_compare else [NEW_BACKEND, PREVIOUS_BACKEND]
    results: list[BackendResult] = []
    compared: BackendResult | None = None

    def measure(backend: str, measured: Plan, cap: float | None) -> BackendResult:
        print(f"{backend}: starting an embedded mesh ...", file=sys.stderr, flush=True)
        with embedded_mesh(environ=mesh_environment(backend)) as (info, supervisor_pid):
            result = asyncio.run(measure_backend(backend, info, supervisor_pid, corpus, measured, cap))
        print(markdown_backend(result))
        return result

    def save() -> None:  # after each run, so a later failure keeps what was measured
        if args.json:
            previous = results[1] if len(results) > 1 else None
            info = run_info(args, plan, started, backends, checkout)
            write_report(args.json, report(results[0], previous, info, compared))

    results.append(measure(NEW_BACKEND, plan, None))
    save()
    if not args.no_compare:
        side_by_side = replace(plan, other_banks=min(plan.other_banks, args.compare_other_banks))
        results.append(measure(PREVIOUS_BACKEND, side_by_side, args.local_cap_s))
        reached = tuple(size.turns for size in results[1].sizes)
        if reached:  # the new backend again, under exactly the previous one's conditions
            compared = measure(NEW_BACKEND, replace(side_by_side, sizes=reached), None)
        save()
        if compared is not None:
            print(markdown_gain(gains(compared, results[1]), NEW_BACKEND, PREVIOUS_BACKEND))
    for result in results:
        partial = sum(
            size.recall.partial + size.recall_c8.partial + (size.settled.partial if size.settled else 0)
            for size in result.sizes
        )
        if partial:
            print(
                f"warning: {partial} recalls on {result.backend} were partial "
                "(a layer failed or missed the deadline)",
                file=sys.stderr,
            )
    if args.json:
        print(f"JSON: {args.json}", file=sys.stderr)
    charts = args.out or (args.json.parent if args.json else Path("bench-results"))
    print(f"chart: {write_chart(charts / 'scale-latency.png', results)}", file=sys.stderr)
    print(f"wall time: {time.time() - started:.0f} s", file=sys.stderr)
    return 0
