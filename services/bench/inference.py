"""Inference throughput: raw ONNX Runtime vs the service at batch 32 vs 16 concurrent single-text callers.

All modes run in one invocation on the same texts, interleaved over ``--repeats`` rounds whose order
rotates (a noisy 2-core machine moves every figure by several percent between rounds):

* **raw**: the model's ``embed`` (ONNX Runtime session + L2 normalisation, nothing else) called in this
  process on batches of ``--batch`` texts, with the same thread settings as the service and the same
  execution plan: each batch sorted by length and, with ``HINDSIGHT_ONNX_RUNS`` > 1, split into the same
  chunks run at once on as many threads;
* **raw, one run**: only with several runs: one graph run per batch using runs x threads intra-op threads
  (the other way to spend the same cores); the overhead is taken against the faster of the two raws;
* **service batch**: ``hindsight serve inference`` in its own process, ``Embed`` calls of ``--batch``
  texts one after the other over gRPC on loopback, each reply decoded into a float32 matrix;
* **service concurrent**: the same service, ``--concurrency`` callers each sending one text per unary
  ``Embed`` call (the micro-batcher coalesces them);
* **service streamed**: ``--concurrency`` callers each sending one text per request as the layers do,
  through the shared ``EmbedStream`` of one client (one stream message per request, answered by id).

Per round, the overhead is ``1 - service_batch / raw`` and the coalescing ratios ``concurrent / batch``
and ``streamed / batch``;
the medians of those per-round ratios are reported with their quartiles, beside the median throughputs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from hindsight.contracts.inference.v1.inference_pb2 import VectorEncoding

WORDS = (
    "the a memory agent user session deploy database index vector query fact lesson episode recall "
    "retain bank tool answer question yesterday morning meeting project budget release bug fix test "
    "server client latency throughput model embedding cat sofa train ticket Paris Berlin coffee tea "
    "birthday sister brother doctor appointment weekend hiking garden rain sunny report draft email"
).split()
SERVICE_START_TIMEOUT = 120.0
ENCODINGS = {"repeated": 0, "float32": 1, "float16": 2}
"""``--encoding`` -> ``VectorEncoding`` value (the contract enum; here so that ``--help`` imports nothing)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``hindsight bench inference``."""
    parser.add_argument("--model", default="", help="embedding model name (default: the service default)")
    parser.add_argument("--texts", type=int, default=1024, help="texts per mode and round")
    parser.add_argument("--batch", type=int, default=32, help="texts per call in the raw and batch modes")
    parser.add_argument("--concurrency", type=int, default=16, help="single-text callers in concurrent mode")
    parser.add_argument("--repeats", type=int, default=3, help="rounds; the medians are reported")
    parser.add_argument("--threads", type=int, default=0, help="ONNX threads per run (default: the setting)")
    parser.add_argument("--runs", type=int, default=0, help="parallel graph runs (default: the setting)")
    parser.add_argument(
        "--encoding",
        choices=sorted(ENCODINGS),
        default="float32",
        help="how Embed replies carry vectors: packed float32/float16 bytes, or repeated floats",
    )
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="also write the figures here")


@dataclass
class Round:
    """One round's throughputs (texts/s) and call latencies (ms)."""

    raw_per_s: float = 0.0
    raw_one_run_per_s: float = 0.0
    service_batch_per_s: float = 0.0
    service_concurrent_per_s: float = 0.0
    service_stream_per_s: float = 0.0
    raw_cpu_ms: float = 0.0
    """CPU time per text (all threads): a cost that other load on the machine moves far less than time."""
    batch_service_cpu_ms: float = 0.0
    batch_client_cpu_ms: float = 0.0
    concurrent_service_cpu_ms: float = 0.0
    concurrent_client_cpu_ms: float = 0.0
    stream_service_cpu_ms: float = 0.0
    stream_client_cpu_ms: float = 0.0
    batch_ms: list[float] = field(default_factory=list)
    concurrent_ms: list[float] = field(default_factory=list)
    stream_ms: list[float] = field(default_factory=list)

    @property
    def overhead(self) -> float:
        """What the service loses at batch size against the faster raw mode of this round."""
        return 1 - self.service_batch_per_s / max(self.raw_per_s, self.raw_one_run_per_s)

    @property
    def coalescing(self) -> float:
        """Single-text unary callers' throughput as a share of batched calls' in this round."""
        return self.service_concurrent_per_s / self.service_batch_per_s

    @property
    def stream_coalescing(self) -> float:
        """Single-text callers on the shared stream, as a share of batched calls' throughput."""
        return self.service_stream_per_s / self.service_batch_per_s


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
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]


@contextlib.asynccontextmanager
async def running_service(env: dict[str, str], token: str) -> AsyncIterator[tuple[str, int]]:
    """``hindsight serve inference`` on a free loopback port, accepting ``token`` only; yields (address, pid)
    once SERVING."""
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
            "HINDSIGHT_TOKENS_FILE": "",
            "HINDSIGHT_AUTH": "required",
            "HINDSIGHT_INTERNAL_TOKEN": token,
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


def _request_id() -> tuple[tuple[str, str], ...]:
    """What the layers send on every call they make inside a request (``LayerClient``): its request id."""
    return (("x-request-id", uuid.uuid4().hex),)


def _raw(embed: Any, texts: list[str], batch: int, pool: ThreadPoolExecutor, runs: int) -> float:
    """In-process throughput of ``embed`` under the batcher's plan: sorted, split between ``runs`` threads."""
    from hindsight.inference.batching import MIN_CHUNK, chunk_size

    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        ordered = sorted(texts[start : start + batch], key=len)
        size = chunk_size(len(ordered), runs, MIN_CHUNK)
        chunks = [ordered[i : i + size] for i in range(0, len(ordered), size)]
        if len(chunks) == 1:
            embed(chunks[0])
        else:
            list(pool.map(embed, chunks))
    return len(texts) / (time.perf_counter() - started)


async def _service_batch(
    stub: Any, model: str, texts: list[str], batch: int, encoding: VectorEncoding, latencies: list[float]
) -> float:
    from hindsight.contracts.inference.v1 import inference_pb2
    from hindsight.runtime.vectors import reply_vectors

    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        request = inference_pb2.EmbedRequest(
            bank_id="bench", texts=texts[start : start + batch], model=model, encoding=encoding
        )
        sent = time.perf_counter()
        reply = await stub.Embed(request, timeout=60, metadata=_request_id())
        reply_vectors(reply, len(request.texts))  # a real client reads the vectors: decoding counts
        latencies.append((time.perf_counter() - sent) * 1000)
    return len(texts) / (time.perf_counter() - started)


async def _single_text_callers(
    embed_one: Callable[[str], Awaitable[Any]], texts: list[str], callers: int, latencies: list[float]
) -> float:
    """``callers`` concurrent callers that each embed one text at a time (``embed_one``) until none are left;
    the texts per second of all of them together."""
    from hindsight.runtime.vectors import reply_vectors

    pending = iter(texts)

    async def caller() -> None:
        for text in pending:
            sent = time.perf_counter()
            reply_vectors(await embed_one(text), 1)  # a real caller reads its vector: decoding counts
            latencies.append((time.perf_counter() - sent) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(callers)))
    return len(texts) / (time.perf_counter() - started)


async def _service_concurrent(
    stub: Any, model: str, texts: list[str], callers: int, encoding: VectorEncoding, latencies: list[float]
) -> float:
    """``callers`` single-text callers, each text one unary Embed call."""
    from hindsight.contracts.inference.v1 import inference_pb2

    async def unary(text: str) -> Any:
        request = inference_pb2.EmbedRequest(bank_id="bench", texts=[text], model=model, encoding=encoding)
        return await stub.Embed(request, timeout=60, metadata=_request_id())

    return await _single_text_callers(unary, texts, callers, latencies)


async def _service_streamed(
    client: Any, model: str, texts: list[str], callers: int, encoding: VectorEncoding, latencies: list[float]
) -> float:
    """``callers`` single-text callers sharing one client's EmbedStream, as the layers embed a query."""
    from hindsight.contracts.inference.v1 import inference_pb2
    from hindsight.runtime.embed_stream import shared_embed_stream
    from hindsight.runtime.logs import request_id_var

    stream = shared_embed_stream(client)

    async def streamed(text: str) -> Any:
        request_id_var.set(uuid.uuid4().hex)  # what a layer's call inside a request carries
        request = inference_pb2.EmbedRequest(bank_id="bench", texts=[text], model=model, encoding=encoding)
        return await stream.embed(request, timeout=60)

    return await _single_text_callers(streamed, texts, callers, latencies)


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Run every round and return the figures (the JSON keys of the issue, plus context)."""
    import grpc
    import psutil

    from hindsight.contracts.inference.v1 import inference_pb2_grpc
    from hindsight.inference.loading import load_models
    from hindsight.inference.settings import InferenceSettings
    from hindsight.runtime.channels import LayerClient, bearer_interceptors
    from hindsight.runtime.settings import load

    overrides = {"threads": args.threads} if args.threads else {}
    if args.runs:
        overrides["parallel_runs"] = args.runs
    settings = load(InferenceSettings, **overrides)
    embedder = load_models(settings).get(args.model)
    runs = settings.parallel_runs
    one_run = None
    if runs > 1:  # the same cores spent inside one graph run instead
        one_run_settings = load(
            InferenceSettings, **{**overrides, "threads": runs * settings.threads, "parallel_runs": 1}
        )
        one_run = load_models(one_run_settings).get(embedder.name)
    texts = make_texts(args.texts)
    encoding = cast("VectorEncoding", ENCODINGS[args.encoding])  # test_inference_bench checks the values
    pool = ThreadPoolExecutor(max_workers=runs, thread_name_prefix="raw")
    for model in (embedder, one_run):  # warm the raw sessions as the service warms its own
        if model is not None:
            _raw(model.embed, texts[: args.batch], args.batch, pool, runs)
    env = {"HINDSIGHT_ONNX_THREADS": str(settings.threads), "HINDSIGHT_ONNX_RUNS": str(runs)}
    rounds: list[Round] = []
    token = secrets.token_urlsafe(24)
    async with (
        running_service(env, token) as (address, pid),
        grpc.aio.insecure_channel(address, interceptors=bearer_interceptors(token)) as channel,
    ):
        stub = inference_pb2_grpc.InferenceServiceStub(channel)
        client = LayerClient(
            address, inference_pb2_grpc.InferenceServiceStub, token=token, default_timeout=60
        )
        service = psutil.Process(pid)
        warm = texts[: args.batch * 2]
        await _service_batch(stub, embedder.name, warm, args.batch, encoding, [])  # warm the channels
        await _service_concurrent(stub, embedder.name, warm, args.concurrency, encoding, [])
        await _service_streamed(client, embedder.name, warm, args.concurrency, encoding, [])
        for index in range(args.repeats):
            result = Round()

            def cpu() -> tuple[float, float]:
                """CPU seconds so far of (this process, the service)."""
                times = service.cpu_times()
                return time.process_time(), times.user + times.system

            def per_text(before: tuple[float, float]) -> tuple[float, float]:
                now = cpu()
                return (
                    (now[0] - before[0]) * 1000 / len(texts),
                    (now[1] - before[1]) * 1000 / len(texts),
                )

            async def raw(result: Round = result) -> None:
                before = cpu()
                result.raw_per_s = _raw(embedder.embed, texts, args.batch, pool, runs)
                result.raw_cpu_ms = per_text(before)[0]

            async def raw_one_run(result: Round = result) -> None:
                if one_run is not None:
                    result.raw_one_run_per_s = _raw(one_run.embed, texts, args.batch, pool, 1)

            async def batch(result: Round = result) -> None:
                before = cpu()
                result.service_batch_per_s = await _service_batch(
                    stub, embedder.name, texts, args.batch, encoding, result.batch_ms
                )
                result.batch_client_cpu_ms, result.batch_service_cpu_ms = per_text(before)

            async def concurrent(result: Round = result) -> None:
                before = cpu()
                result.service_concurrent_per_s = await _service_concurrent(
                    stub, embedder.name, texts, args.concurrency, encoding, result.concurrent_ms
                )
                result.concurrent_client_cpu_ms, result.concurrent_service_cpu_ms = per_text(before)

            async def streamed(result: Round = result) -> None:
                before = cpu()
                result.service_stream_per_s = await _service_streamed(
                    client, embedder.name, texts, args.concurrency, encoding, result.stream_ms
                )
                result.stream_client_cpu_ms, result.stream_service_cpu_ms = per_text(before)

            modes = [raw, raw_one_run, batch, concurrent, streamed]
            for mode in modes[index % len(modes) :] + modes[: index % len(modes)]:
                await mode()
            rounds.append(result)
            print(
                f"round {index + 1}/{args.repeats}: raw {result.raw_per_s:.0f}/s, "
                + (f"raw one run {result.raw_one_run_per_s:.0f}/s, " if one_run is not None else "")
                + f"batch {result.service_batch_per_s:.0f}/s, "
                f"concurrent {result.service_concurrent_per_s:.0f}/s, "
                f"streamed {result.service_stream_per_s:.0f}/s (overhead {result.overhead:.1%}, "
                f"concurrent/batch {result.coalescing:.1%}, streamed/batch {result.stream_coalescing:.1%})",
                file=sys.stderr,
            )
        service_rss = service.memory_info().rss / 2**20
        await client.close()
    pool.shutdown()
    concurrent_ms = [ms for r in rounds for ms in r.concurrent_ms]
    batch_ms = [ms for r in rounds for ms in r.batch_ms]
    stream_ms = [ms for r in rounds for ms in r.stream_ms]
    overheads = [r.overhead for r in rounds]
    coalescing = [r.coalescing for r in rounds]
    stream_coalescing = [r.stream_coalescing for r in rounds]
    return {
        "raw_per_s": round(statistics.median(r.raw_per_s for r in rounds), 1),
        "service_batch_per_s": round(statistics.median(r.service_batch_per_s for r in rounds), 1),
        "service_concurrent_per_s": round(statistics.median(r.service_concurrent_per_s for r in rounds), 1),
        "p50_ms": round(percentile(concurrent_ms, 0.50), 2),
        "p95_ms": round(percentile(concurrent_ms, 0.95), 2),
        "rss_mb": round(service_rss, 1),
        "service_stream_per_s": round(statistics.median(r.service_stream_per_s for r in rounds), 1),
        "raw_one_run_per_s": round(statistics.median(r.raw_one_run_per_s for r in rounds), 1),
        **{
            f"{name}_cpu_ms_per_text": round(
                statistics.median(getattr(r, f"{name}_cpu_ms") for r in rounds), 3
            )
            for name in (
                "raw",
                "batch_service",
                "batch_client",
                "concurrent_service",
                "concurrent_client",
                "stream_service",
                "stream_client",
            )
        },
        "batch_p50_ms": round(percentile(batch_ms, 0.50), 2),
        "batch_p95_ms": round(percentile(batch_ms, 0.95), 2),
        "stream_p50_ms": round(percentile(stream_ms, 0.50), 2),
        "stream_p95_ms": round(percentile(stream_ms, 0.95), 2),
        "raw_process_rss_mb": round(psutil.Process().memory_info().rss / 2**20, 1),
        "service_overhead": round(statistics.median(overheads), 4),
        "service_overhead_p25": round(percentile(overheads, 0.25), 4),
        "service_overhead_p75": round(percentile(overheads, 0.75), 4),
        "concurrent_vs_batch": round(statistics.median(coalescing), 4),
        "concurrent_vs_batch_p25": round(percentile(coalescing, 0.25), 4),
        "concurrent_vs_batch_p75": round(percentile(coalescing, 0.75), 4),
        "stream_vs_batch": round(statistics.median(stream_coalescing), 4),
        "stream_vs_batch_p25": round(percentile(stream_coalescing, 0.25), 4),
        "stream_vs_batch_p75": round(percentile(stream_coalescing, 0.75), 4),
        "model": embedder.name,
        "texts": args.texts,
        "batch": args.batch,
        "concurrency": args.concurrency,
        "encoding": args.encoding,
        "threads": settings.threads,
        "runs": runs,
        "batch_wait_ms": settings.max_batch_wait_ms,
        "cpus": os.cpu_count(),
        "load_average": round(os.getloadavg()[0], 2),
        "rounds": [
            {
                **{k: round(v, 1) for k, v in asdict(r).items() if isinstance(v, float)},
                "overhead": round(r.overhead, 4),
                "concurrent_vs_batch": round(r.coalescing, 4),
                "stream_vs_batch": round(r.stream_coalescing, 4),
            }
            for r in rounds
        ],
    }


def run(args: argparse.Namespace) -> int:
    """Measure, print a table, and write ``--json`` when asked."""
    if min(args.texts, args.batch, args.concurrency, args.repeats) < 1 or min(args.threads, args.runs) < 0:
        print("--texts, --batch, --concurrency and --repeats must be at least 1", file=sys.stderr)
        return 2
    figures = asyncio.run(measure(args))
    print(
        f"model {figures['model']}, {figures['texts']} texts x {args.repeats} rounds, "
        f"{figures['runs']} run(s) x {figures['threads']} thread(s), {figures['encoding']} replies; medians:"
    )
    print(f"  raw ONNX Runtime, batch {args.batch:<3}     {figures['raw_per_s']:>8.1f} texts/s")
    if figures["runs"] > 1:
        print(f"  raw, one run of all threads     {figures['raw_one_run_per_s']:>8.1f} texts/s")
    print(
        f"  service, batch {args.batch:<3}              {figures['service_batch_per_s']:>8.1f} texts/s  "
        f"p50 {figures['batch_p50_ms']:.1f} ms  p95 {figures['batch_p95_ms']:.1f} ms"
    )
    print(
        f"  service, {args.concurrency} single-text callers, unary     "
        f"{figures['service_concurrent_per_s']:>8.1f} texts/s  "
        f"p50 {figures['p50_ms']:.1f} ms  p95 {figures['p95_ms']:.1f} ms"
    )
    print(
        f"  service, {args.concurrency} single-text callers, stream    "
        f"{figures['service_stream_per_s']:>8.1f} texts/s  "
        f"p50 {figures['stream_p50_ms']:.1f} ms  p95 {figures['stream_p95_ms']:.1f} ms"
    )
    print(
        f"  service overhead at batch {args.batch}: {figures['service_overhead']:.1%} "
        f"(quartiles {figures['service_overhead_p25']:.1%} .. {figures['service_overhead_p75']:.1%})"
    )
    print(
        f"  {args.concurrency} unary callers / batched: {figures['concurrent_vs_batch']:.1%} "
        f"(quartiles {figures['concurrent_vs_batch_p25']:.1%} .. {figures['concurrent_vs_batch_p75']:.1%})"
    )
    print(
        f"  {args.concurrency} stream callers / batched: {figures['stream_vs_batch']:.1%} "
        f"(quartiles {figures['stream_vs_batch_p25']:.1%} .. {figures['stream_vs_batch_p75']:.1%})"
    )
    print(
        f"  CPU ms per text (service + client): raw {figures['raw_cpu_ms_per_text']:.2f}, "
        f"batch {figures['batch_service_cpu_ms_per_text']:.2f} + "
        f"{figures['batch_client_cpu_ms_per_text']:.2f}, "
        f"{args.concurrency} callers {figures['concurrent_service_cpu_ms_per_text']:.2f} + "
        f"{figures['concurrent_client_cpu_ms_per_text']:.2f} (unary), "
        f"{figures['stream_service_cpu_ms_per_text']:.2f} + "
        f"{figures['stream_client_cpu_ms_per_text']:.2f} (stream)"
    )
    print(
        f"  RSS: service {figures['rss_mb']:.0f} MB, "
        f"raw (this process) {figures['raw_process_rss_mb']:.0f} MB; load average {figures['load_average']}"
    )
    if args.json:
        from hindsight.bench.provenance import write_json

        write_json(args.json, figures)
    return 0
