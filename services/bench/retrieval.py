"""Retrieval quality on agent-memory datasets: Hindsight's recall vs plain BM25, in the same run.

For every namespace of every file: a fresh bank; retain each message (id, speaker, time, session)
through the real edge (gRPC ``MemoryService`` or MCP), then ask each query through recall, at the time it
is asked in the data (:func:`~hindsight.bench.datasets.asked_at`), and score the returned source
message ids with the metric of ``shared/bench/README.md``. The BM25 baseline that
README defines is computed on the same messages and queries. Also measured: the share of the gold turns
whose own lines are in the context the edge assembles at 500, 1,000 and 2,000 tokens (averaged as R@k is),
retain throughput, recall latency (p50/p95/p99 as the client sees it) and the peak RSS of the mesh's
processes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import re
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hindsight.bench.provenance import add_env_argument, add_json_argument, add_layers_argument, timing

if TYPE_CHECKING:  # imported in run(): building the command line stays fast
    from hindsight.bench.datasets import Dataset, Namespace, Query
    from hindsight.bench.mesh_process import PeakMemory
    from hindsight.bench.report import FileResult
    from hindsight.bench.transports import Transport

TOP_K = 10
_UNSAFE_BANK = re.compile(r"[^A-Za-z0-9._:@-]+")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of ``hindsight bench retrieval``."""
    parser.add_argument(
        "--data", type=Path, nargs="+", required=True, metavar="FILE", help="benchmark files (uniform format)"
    )
    parser.add_argument(
        "--limit", type=int, default=None, metavar="N", help="only the first N namespaces per file"
    )
    add_json_argument(parser)
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="folder for the PNG charts (default: the folder of --json, else ./bench-results)",
    )
    parser.add_argument(
        "--transport", choices=("grpc", "mcp"), default="grpc", help="how to reach the edge (default: grpc)"
    )
    parser.add_argument(
        "--address",
        default=None,
        metavar="HOST:PORT",
        help="a running edge (gRPC MemoryService, or the MCP endpoint with --transport mcp); "
        "default: start a private embedded mesh",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("HINDSIGHT_TOKEN", ""),
        help="bearer token for --address (default: $HINDSIGHT_TOKEN); a private mesh uses its own",
    )
    parser.add_argument("--batch", type=int, default=100, help="messages per Retain call (default: 100)")
    parser.add_argument(
        "--details", action="store_true", help="put every query's ranked ids (Hindsight and BM25) in the JSON"
    )
    add_layers_argument(parser)
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_env_argument(parser)
    parser.add_argument(
        "--llm",
        action="store_true",
        help="pass this shell's LLM_* settings to the private mesh (default: no LLM)",
    )
    parser.add_argument(
        "--query-time",
        choices=("dataset", "clock"),
        default="dataset",
        help="when each query is asked: 'dataset' (the query's time, else its namespace's last message; "
        "default) or 'clock' (the time of the run)",
    )


def bank_for(run_id: str, file_index: int, namespace_id: str) -> str:
    """A bank id no earlier run used: run, file and namespace, within the bank id alphabet."""
    return f"bench-{run_id}-{file_index}-{_UNSAFE_BANK.sub('_', namespace_id)}"[:128]


def batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    """``items`` in consecutive slices of at most ``size``."""
    for start in range(0, len(items), max(1, size)):
        yield items[start : start + size]


class _Progress:
    """tqdm bars on stderr, or nothing."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def bar(self, total: int, description: str) -> Any:
        if not self.enabled:
            return contextlib.nullcontext(_NoBar())
        from tqdm import tqdm

        return tqdm(
            total=total, desc=description, unit="msg" if "retain" in description else "q", file=sys.stderr
        )


class _NoBar:
    def update(self, count: int = 1) -> None:
        """Nothing to draw."""


@dataclass(frozen=True)
class Options:
    """How a run talks to the edge and what it records."""

    transport: str = "grpc"
    batch_size: int = 100
    layers: tuple[str, ...] = ()
    """Ask only these layers; empty: all of them."""
    progress: bool = False
    details: bool = False
    """Keep every query's ranked ids."""
    query_time: str = "dataset"
    """"dataset": ask each query at its time in the data (see :func:`asked_at`); "clock": at the run's."""
    token: str = ""
    """Bearer token presented to the edge."""


@dataclass
class _Asked:
    """A query as it was asked for its ranking, and the context the edge assembled for it per budget."""

    query: Query
    now: datetime | None
    ranked: list[str]
    contexts: dict[int, str]


async def run_namespace(
    transport: Transport,
    bank_id: str,
    namespace: Namespace,
    result: FileResult,
    options: Options,
    bars: tuple[Any, Any],
) -> None:
    """Retain the namespace's messages, ask its queries, and score Hindsight and BM25 into ``result``."""
    from hindsight.bench.bm25 import Bm25Index
    from hindsight.bench.datasets import QUERY_TIME_FROM_CLOCK, asked_at
    from hindsight.bench.metrics import CONTEXT_BUDGETS, context_recall, first_gold_rank, ids_in_context

    retain_bar, recall_bar = bars
    started = time.perf_counter()
    for batch in batches(namespace.messages, options.batch_size):
        await transport.retain(bank_id, batch)
        retain_bar.update(len(batch))
    result.retain_seconds += time.perf_counter() - started
    bm25 = Bm25Index(namespace.messages)
    texts = {message.id: message.text for message in namespace.messages}
    widest = max(CONTEXT_BUDGETS)
    asked_queries: list[_Asked] = []
    for query in namespace.queries:
        now, source = asked_at(query, namespace)
        if options.query_time == "clock":
            now, source = None, QUERY_TIME_FROM_CLOCK
        asked = time.perf_counter()
        recalled = await transport.recall(bank_id, query.text, TOP_K, options.layers, now, widest)
        result.recall_ms.append((time.perf_counter() - asked) * 1000)
        result.partial += recalled.partial
        for layer, elapsed in recalled.layer_ms.items():
            result.layer_ms.setdefault(layer, []).append(elapsed)
        ranked = recalled.ids
        asked_queries.append(_Asked(query, now, ranked, {widest: recalled.context}))
        baseline = bm25.rank(query.text, TOP_K)
        ours = result.hindsight.add(query.category, ranked, query.gold)
        result.bm25.add(query.category, baseline, query.gold)
        result.note_query(
            query.category, source, first_gold_rank(ranked, query.gold), first_gold_rank(baseline, query.gold)
        )
        if options.details:
            result.details.append(
                {
                    "namespace": namespace.id,
                    "query": query.id,
                    "category": query.category,
                    "gold": list(query.gold),
                    "asked_at": now.isoformat() if now else None,
                    "hindsight": ranked[:TOP_K],
                    "scored": [[round(score, 4), ids] for score, ids in recalled.scored],
                    "bm25": baseline,
                    **{key: round(value, 4) for key, value in ours.items()},
                }
            )
        recall_bar.update(1)
    # The context at the smaller budgets, asked after every ranked recall of the bank: no recall made only
    # for its context comes before a recall whose ranking is scored.
    first_detail = len(result.details) - len(asked_queries)
    for index, item in enumerate(asked_queries):
        for budget in CONTEXT_BUDGETS:
            if budget not in item.contexts:
                again = await transport.recall(
                    bank_id, item.query.text, TOP_K, options.layers, item.now, budget
                )
                item.contexts[budget] = again.context
                result.context_recalls_differing += again.ids != item.ranked
        scores = {b: context_recall(item.contexts[b], item.query.gold, texts) for b in CONTEXT_BUDGETS}
        result.context.add(item.query.category, scores)
        if options.details:
            row = result.details[first_detail + index]
            row["context_recall"] = {str(b): round(value, 4) for b, value in scores.items()}
            row["context_ids"] = {str(b): sorted(ids_in_context(item.contexts[b])) for b in CONTEXT_BUDGETS}


async def run_dataset(
    transport: Transport, dataset: Dataset, run_id: str, file_index: int, options: Options
) -> FileResult:
    """Every namespace of one file, one after another."""
    from hindsight.bench.report import FileResult

    result = FileResult(
        name=dataset.name,
        path=dataset.path,
        namespaces=len(dataset.namespaces),
        messages=dataset.message_count,
        queries=dataset.query_count,
    )
    progress = _Progress(options.progress)
    with (
        progress.bar(dataset.message_count, f"{dataset.name} retain") as retain_bar,
        progress.bar(dataset.query_count, f"{dataset.name} recall") as recall_bar,
    ):
        for namespace in dataset.namespaces:
            bank_id = bank_for(run_id, file_index, namespace.id)
            await run_namespace(transport, bank_id, namespace, result, options, (retain_bar, recall_bar))
    return result


def _endpoints(transport: str, address: str) -> tuple[str, str]:
    """(gRPC address, MCP URL) of a mesh given on the command line."""
    if transport == "grpc":
        return address, ""
    return "", address if address.startswith("http") else f"http://{address}/mcp"


async def run_benchmark(
    datasets: Sequence[Dataset],
    grpc_address: str,
    mcp_url: str,
    options: Options,
    rss: PeakMemory | None = None,
) -> list[FileResult]:
    """Every file through one connection to the edge; banks are fresh (named after a new run id)."""
    from hindsight.bench.transports import open_transport

    run_id = uuid.uuid4().hex[:8]
    results = []
    async with open_transport(options.transport, grpc_address, mcp_url, options.token) as transport:
        for index, dataset in enumerate(datasets):
            if rss is not None:
                rss.reset()
            result = await run_dataset(transport, dataset, run_id, index, options)
            if rss is not None:
                rss.sample()
                result.peak_rss_mb = rss.peak_mb
            results.append(result)
    return results


def run(args: argparse.Namespace) -> int:
    """``hindsight bench retrieval``: print the table, write the JSON and the charts; 0 on success."""
    from hindsight.bench.datasets import load_dataset
    from hindsight.bench.provenance import (
        checkout,
        commit_label,
        mesh_environment,
        parse_assignments,
        recorded_settings,
    )
    from hindsight.bench.report import markdown, write_chart, write_json

    try:
        mesh_settings = parse_assignments(args.env)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.address and (mesh_settings or args.llm):
        print(
            "error: --env and --llm set up the private mesh; a running edge (--address) has its own",
            file=sys.stderr,
        )
        return 2
    code = commit_label(checkout())  # now: the mesh runs the code of the start, whatever lands meanwhile
    datasets = [load_dataset(path, args.limit) for path in args.data]
    started = time.time()
    options = Options(
        transport=args.transport,
        batch_size=args.batch,
        layers=tuple(args.layers),
        progress=not args.no_progress,
        details=args.details,
        token=args.token,
        query_time=args.query_time,
    )
    if args.address:
        grpc_address, mcp_url = _endpoints(args.transport, args.address)
        results = asyncio.run(run_benchmark(datasets, grpc_address, mcp_url, options))
        mesh_seconds, settings = None, None
    else:
        from hindsight.bench.mesh_process import PeakMemory, embedded_mesh
        from hindsight.cli.credentials import client_token

        environ = mesh_environment(mesh_settings, with_llm=args.llm)
        settings = recorded_settings(environ)
        shown = ", ".join(f"{name}={value}" for name, value in settings.items()) or "defaults only"
        print(f"starting an embedded mesh ({shown}) ...", file=sys.stderr, flush=True)
        with embedded_mesh(environ=environ) as (info, supervisor_pid), PeakMemory(supervisor_pid) as rss:
            mesh_seconds = info.startup_seconds
            options = dataclasses.replace(options, token=client_token(Path(info.home)))
            results = asyncio.run(run_benchmark(datasets, info.memory_address, info.mcp_url, options, rss))
    print(markdown(results))
    for result in results:
        if result.partial:
            print(
                f"warning: {result.partial} of {result.queries} recalls on {result.name} were partial "
                "(a layer failed or missed the deadline): see the mesh's logs",
                file=sys.stderr,
            )
    run_info = {
        "commit": code,
        "settings": settings,
        "query_time": args.query_time,
        "transport": args.transport,
        "address": args.address or "embedded",
        "top_k": TOP_K,
        "layers": list(args.layers) or "all",
        "batch": args.batch,
        "limit": args.limit,
        "mesh_startup_seconds": mesh_seconds,
        **timing(started),
    }
    if args.json:
        write_json(args.json, results, run_info, args.details)
        print(f"JSON: {args.json}", file=sys.stderr)
    charts = args.out or (args.json.parent if args.json else Path("bench-results"))
    for result in results:
        print(f"chart: {write_chart(charts, result)}", file=sys.stderr)
    return 0
