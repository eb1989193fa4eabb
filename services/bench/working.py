"""Working memory: SearchRecent latency and token-estimate accuracy on a benchmark namespace.

Serves the working layer in this process on a real Redis, appends one namespace's messages (each
message's session as the session id), then times every query through gRPC SearchRecent. The token
estimate is compared with the exact tokenizer on the same messages.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid
from pathlib import Path

DEFAULT_DATA = Path("..") / "shared" / "bench" / "data" / "locomo-dev.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``hindsight bench working``."""
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="benchmark file (default: %(default)s)"
    )
    parser.add_argument("--namespace", type=int, default=0, help="index of the namespace to load")
    parser.add_argument(
        "--redis-url",
        default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/15"),
        help="Redis to use; the run's keys are deleted afterwards",
    )
    parser.add_argument("--repeat", type=int, default=3, help="times each query is asked")


async def _run(args: argparse.Namespace) -> int:
    import redis.asyncio as aioredis

    from hindsight.bench.datasets import load_dataset
    from hindsight.bench.metrics import percentile
    from hindsight.contracts.common.v1 import common_pb2
    from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
    from hindsight.runtime.records import RecordMeta
    from hindsight.runtime.testing import channel_to, serving
    from hindsight.runtime.token_counts import MINILM, ScriptEstimate, token_counter
    from hindsight.working.service import open_service
    from hindsight.working.settings import WorkingSettings

    namespace = load_dataset(args.data).namespaces[args.namespace]
    prefix = f"bench:{uuid.uuid4().hex[:8]}"
    settings = WorkingSettings(redis_url=args.redis_url, prefix=prefix)
    turns = [
        common_pb2.Turn(
            id=m.id,
            session_id=m.session or "default",
            speaker=m.speaker,
            text=m.text,
            meta=RecordMeta(time=m.time).to_pb(),
        )
        for m in namespace.messages
    ]
    try:
        async with serving(lambda: open_service(settings)) as server, channel_to(server) as channel:
            stub = working_pb2_grpc.WorkingMemoryServiceStub(channel)
            started = time.perf_counter()
            for start in range(0, len(turns), 50):
                await stub.AppendTurns(
                    working_pb2.AppendTurnsRequest(bank_id="bench", turns=turns[start : start + 50]),
                    timeout=30,
                )
            append_s = time.perf_counter() - started
            latencies = []
            for _ in range(args.repeat):
                for query in namespace.queries:
                    began = time.perf_counter()
                    await stub.SearchRecent(
                        working_pb2.SearchRecentRequest(bank_id="bench", query=query.text, limit=10),
                        timeout=30,
                    )
                    latencies.append((time.perf_counter() - began) * 1000)
    finally:
        client = aioredis.from_url(args.redis_url)
        keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()
    texts = [m.text for m in namespace.messages]
    exact = sum(token_counter(MINILM).count(text) for text in texts)
    estimate = sum(ScriptEstimate().count(text) for text in texts)
    print(
        f"{namespace.id}: tokens exact (MiniLM) {exact}, estimate {estimate} "
        f"({(estimate - exact) / max(exact, 1) * 100:+.1f}%)"
    )
    print(
        f"{namespace.id}: {len(turns)} messages appended in {append_s * 1000:.0f} ms; "
        f"SearchRecent over {len(latencies)} queries: p50 {percentile(latencies, 0.5):.2f} ms, "
        f"p95 {percentile(latencies, 0.95):.2f} ms"
    )
    return 0


def run(args: argparse.Namespace) -> int:
    """Run the suite; prints one line of figures."""
    return asyncio.run(_run(args))
