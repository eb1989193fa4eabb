"""Inference throughput: raw ONNX Runtime vs the service at batch 32 vs 16 concurrent single-text callers.

All three run in one invocation on the same texts, interleaved over ``--repeats`` rounds (a noisy 2-core
machine moves every figure by several percent between rounds), and the medians are reported:

* **raw**: the model's ONNX Runtime session called in this process, batches of ``--batch`` texts;
* **service batch**: ``hindsight serve inference`` in its own process, ``Embed`` calls of ``--batch``
  texts one after the other over gRPC on loopback;
* **service concurrent**: the same service, ``--concurrency`` callers each sending one text per call
  (the micro-batcher coalesces them).

The service overhead is ``1 - service_batch / raw``; the coalescing ratio is ``concurrent / batch``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

WORDS = (
    "the a memory agent user session deploy database index vector query fact lesson episode recall "
    "retain bank tool answer question yesterday morning meeting project budget release bug fix test "
    "server client latency throughput model embedding cat sofa train ticket Paris Berlin coffee tea "
    "birthday sister brother doctor appointment weekend hiking garden rain sunny report draft email"
).split()
SERVICE_START_TIMEOUT = 120.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``hindsight bench inference``."""
    parser.add_argument("--model", default="", help="embedding model name (default: the service default)")
    parser.add_argument("--texts", type=int, default=1024, help="texts per mode and round")
    parser.add_argument("--batch", type=int, default=32, help="texts per call in the raw and batch modes")
    parser.add_argument("--concurrency", type=int, default=16, help="single-text callers in concurrent mode")
    parser.add_argument("--repeats", type=int, default=3, help="rounds; the medians are reported")
    parser.add_argument("--threads", type=int, default=0, help="ONNX threads (default: the setting)")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="also write the figures here")


@dataclass
class Round:
    """One round's throughputs (texts/s) and call latencies (ms)."""

    raw_per_s: float
    service_batch_per_s: float
    service_concurrent_per_s: float
    batch_ms: list[float] = field(default_factory=list)
    concurrent_ms: list[float] = field(default_factory=list)


def make_texts(count: int, seed: int = 13) -> list[str]:
    """Sentences of 4 to 40 words: the spread of lengths that real turns have."""
    import random

    rng = random.Random(seed)
    return [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 40))).capitalize() + "."
        for _ in range(count)
    ]


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


@contextlib.asynccontextmanager
async def running_service(env: dict[str, str]) -> AsyncIterator[tuple[str, int]]:
    """``hindsight serve inference`` on a free loopback port; yields (address, pid) once SERVING."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with tempfile.TemporaryDirectory(prefix="hindsight-bench-") as tmp:
        port_file = Path(tmp) / "port"
        child_env = {
            **os.environ,
            **env,
            "HINDSIGHT_HOST": "127.0.0.1",
            "HINDSIGHT_PORT": "0",
            "HINDSIGHT_PORT_FILE": str(port_file),
            "HINDSIGHT_TOKENS": "",
            "HINDSIGHT_LOG_LEVEL": "WARNING",
            "HINDSIGHT_EMBED_CACHE": "0",  # every round sends the same texts: measure the model, not a cache
        }
        command = [sys.executable, "-m", "hindsight.cli.main", "serve", "inference"]
        process = subprocess.Popen(command, env=child_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            give_up = time.monotonic() + SERVICE_START_TIMEOUT
            while not (port_file.is_file() and port_file.read_text().strip()):
                if process.poll() is not None or time.monotonic() > give_up:
                    error = process.stderr.read().decode(errors="replace")[-2000:] if process.stderr else ""
                    raise RuntimeError(f"the inference service did not start: {error}")
                await asyncio.sleep(0.05)
            address = f"127.0.0.1:{port_file.read_text().strip()}"
            async with grpc.aio.insecure_channel(address) as channel:
                health = health_pb2_grpc.HealthStub(channel)
                request = health_pb2.HealthCheckRequest(service="hindsight.inference.v1.InferenceService")
                async for reply in health.Watch(request, timeout=SERVICE_START_TIMEOUT):
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        break
            yield address, process.pid
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _raw(embed: Any, texts: list[str], batch: int) -> float:
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        embed(texts[start : start + batch])
    return len(texts) / (time.perf_counter() - started)


async def _service_batch(
    stub: Any, model: str, texts: list[str], batch: int, latencies: list[float]
) -> float:
    from hindsight.contracts.inference.v1 import inference_pb2

    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        request = inference_pb2.EmbedRequest(bank_id="bench", texts=texts[start : start + batch], model=model)
        sent = time.perf_counter()
        reply = await stub.Embed(request, timeout=60)
        latencies.append((time.perf_counter() - sent) * 1000)
        assert len(reply.embeddings) == len(request.texts)
    return len(texts) / (time.perf_counter() - started)


async def _service_concurrent(
    stub: Any, model: str, texts: list[str], callers: int, latencies: list[float]
) -> float:
    from hindsight.contracts.inference.v1 import inference_pb2

    pending = iter(texts)

    async def caller() -> None:
        for text in pending:
            sent = time.perf_counter()
            reply = await stub.Embed(
                inference_pb2.EmbedRequest(bank_id="bench", texts=[text], model=model), timeout=60
            )
            latencies.append((time.perf_counter() - sent) * 1000)
            assert len(reply.embeddings) == 1

    started = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(callers)))
    return len(texts) / (time.perf_counter() - started)


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Run every round and return the figures (the JSON keys of the issue, plus context)."""
    import grpc
    import psutil

    from hindsight.contracts.inference.v1 import inference_pb2_grpc
    from hindsight.inference.loading import load_models
    from hindsight.inference.settings import InferenceSettings
    from hindsight.runtime.settings import load

    overrides = {"threads": args.threads} if args.threads else {}
    settings = load(InferenceSettings, **overrides)
    registry = load_models(settings)
    embedder = registry.get(args.model)
    texts = make_texts(args.texts)
    embedder.embed(texts[: args.batch])  # warm the raw session as the service warms its own
    env = {"HINDSIGHT_ONNX_THREADS": str(settings.threads)}
    rounds: list[Round] = []
    async with running_service(env) as (address, pid), grpc.aio.insecure_channel(address) as channel:
        stub = inference_pb2_grpc.InferenceServiceStub(channel)
        await _service_batch(stub, embedder.name, texts[: args.batch * 2], args.batch, [])  # warm the channel
        for index in range(args.repeats):
            result = Round(0.0, 0.0, 0.0)
            result.raw_per_s = _raw(lambda batch: embedder.embed(batch), texts, args.batch)
            result.service_batch_per_s = await _service_batch(
                stub, embedder.name, texts, args.batch, result.batch_ms
            )
            result.service_concurrent_per_s = await _service_concurrent(
                stub, embedder.name, texts, args.concurrency, result.concurrent_ms
            )
            rounds.append(result)
            print(
                f"round {index + 1}/{args.repeats}: raw {result.raw_per_s:.0f}/s, "
                f"batch {result.service_batch_per_s:.0f}/s, "
                f"concurrent {result.service_concurrent_per_s:.0f}/s",
                file=sys.stderr,
            )
        service_rss = psutil.Process(pid).memory_info().rss / 2**20
    raw = statistics.median(r.raw_per_s for r in rounds)
    batched = statistics.median(r.service_batch_per_s for r in rounds)
    concurrent = statistics.median(r.service_concurrent_per_s for r in rounds)
    concurrent_ms = [ms for r in rounds for ms in r.concurrent_ms]
    batch_ms = [ms for r in rounds for ms in r.batch_ms]
    return {
        "raw_per_s": round(raw, 1),
        "service_batch_per_s": round(batched, 1),
        "service_concurrent_per_s": round(concurrent, 1),
        "p50_ms": round(percentile(concurrent_ms, 0.50), 2),
        "p95_ms": round(percentile(concurrent_ms, 0.95), 2),
        "rss_mb": round(service_rss, 1),
        "batch_p50_ms": round(percentile(batch_ms, 0.50), 2),
        "batch_p95_ms": round(percentile(batch_ms, 0.95), 2),
        "raw_process_rss_mb": round(psutil.Process().memory_info().rss / 2**20, 1),
        "service_overhead": round(1 - batched / raw, 4),
        "concurrent_vs_batch": round(concurrent / batched, 4),
        "model": embedder.name,
        "texts": args.texts,
        "batch": args.batch,
        "concurrency": args.concurrency,
        "threads": settings.threads,
        "cpus": os.cpu_count(),
        "rounds": [{k: round(v, 1) for k, v in asdict(r).items() if isinstance(v, float)} for r in rounds],
    }


def run(args: argparse.Namespace) -> int:
    """Measure, print a table, and write ``--json`` when asked."""
    if min(args.texts, args.batch, args.concurrency, args.repeats) < 1:
        print("--texts, --batch, --concurrency and --repeats must be at least 1", file=sys.stderr)
        return 2
    figures = asyncio.run(measure(args))
    print(f"model {figures['model']}, {figures['texts']} texts x {args.repeats} rounds, medians:")
    print(f"  raw ONNX Runtime, batch {args.batch:<3}     {figures['raw_per_s']:>8.1f} texts/s")
    print(
        f"  service, batch {args.batch:<3}              {figures['service_batch_per_s']:>8.1f} texts/s  "
        f"p50 {figures['batch_p50_ms']:.1f} ms  p95 {figures['batch_p95_ms']:.1f} ms  "
        f"(overhead {figures['service_overhead']:.1%})"
    )
    print(
        f"  service, {args.concurrency} single-text callers  "
        f"{figures['service_concurrent_per_s']:>8.1f} texts/s  "
        f"p50 {figures['p50_ms']:.1f} ms  p95 {figures['p95_ms']:.1f} ms  "
        f"({figures['concurrent_vs_batch']:.1%} of batched)"
    )
    print(
        f"  RSS: service {figures['rss_mb']:.0f} MB, "
        f"raw (this process) {figures['raw_process_rss_mb']:.0f} MB"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0
