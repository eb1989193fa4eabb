"""Prometheus metrics of every service, and the endpoint that serves them.

One process serves one service in a deployment, so the metrics live in the default registry and each
series names its gRPC service and method (``grpc_service`` and ``grpc_method``, as gRPC's own exporters do).
The endpoint (``HINDSIGHT_METRICS_PORT``) is off unless a port is set. Recording never raises into
the call it measures: a metric is an observation, not part of the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
from prometheus_client import (
    REGISTRY,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    start_http_server,
)

from hindsight.runtime.interceptors import UnaryBehavior, UnaryCallWrapper
from hindsight.runtime.settings import env, load

log = logging.getLogger(__name__)
R = TypeVar("R")
disable_created_metrics()  # a *_created series per child doubles the scrape and no panel reads it

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Seconds: from a cache hit (a millisecond) to the longest deadline a layer call gets."""
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
LAG_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0)
"""Seconds from an outbox entry's write to its delivery: milliseconds if healthy, minutes after an outage."""

SERVER_LATENCY = Histogram(
    "hindsight_grpc_server_handling_seconds",
    "Time a service took to answer a unary call, by method and status code.",
    ("grpc_service", "grpc_method", "grpc_code"),
    buckets=LATENCY_BUCKETS,
)
CLIENT_LATENCY = Histogram(
    "hindsight_grpc_client_handling_seconds",
    "Time a call to another layer took as its caller saw it, by method and status code.",
    ("grpc_service", "grpc_method", "grpc_code"),
    buckets=LATENCY_BUCKETS,
)
LAYER_ERRORS = Counter(
    "hindsight_layer_errors",
    "Calls to another layer that did not answer OK, as the caller saw them (a deadline, a layer down).",
    ("grpc_service", "grpc_method", "grpc_code"),
)
OUTBOX_BACKLOG = Gauge(
    "hindsight_outbox_backlog",
    "Outbox entries waiting for delivery, by target layer (read after each delivery round).",
    ("target",),
)
OUTBOX_LAG = Histogram(
    "hindsight_outbox_delivery_lag_seconds",
    "Time from an outbox entry's write to its delivery, by target layer.",
    ("target",),
    buckets=LAG_BUCKETS,
)
OUTBOX_DEAD_LETTERS = Gauge(
    "hindsight_outbox_dead_letters",
    "Outbox entries in the dead-letter list (refused for good, no longer delivered), by target layer.",
    ("target",),
)
OUTBOX_BURIED = Counter(
    "hindsight_outbox_dead_lettered",
    "Outbox entries moved to the dead-letter list by this process, by target layer.",
    ("target",),
)
LLM_PASSES_GIVEN_UP = Counter(
    "hindsight_semantic_llm_passes_given_up",
    "LLM fact passes the semantic layer gave up after their last attempt (each kept in its store).",
)
BATCH_SIZE = Histogram(
    "hindsight_inference_batch_size", "Texts per embedding model run.", buckets=BATCH_BUCKETS
)
QUEUE_TIME = Histogram(
    "hindsight_inference_queue_seconds",
    "Time the longest-waiting text of a model run spent queued before the run started.",
    buckets=LATENCY_BUCKETS,
)
RESTARTS = Gauge(
    "hindsight_service_restarts",
    "Times the supervisor of an embedded mesh restarted each service.",
    ("service",),
)
HTTP_LATENCY = Histogram(
    "hindsight_mcp_http_request_seconds",
    "Time the edge took to answer an HTTP request (MCP, console), by route, method and status.",
    ("route", "http_method", "status"),
    buckets=LATENCY_BUCKETS,
)


@dataclass(frozen=True)
class MetricsSettings:
    """Where the Prometheus endpoint listens."""

    port: int = env("HINDSIGHT_METRICS_PORT", 0, "Port of the Prometheus /metrics endpoint; 0: none.")
    host: str = env(
        "HINDSIGHT_METRICS_HOST",
        "",
        "Address the metrics endpoint binds; empty: the service's HINDSIGHT_HOST.",
    )


def split_method(full_method: str) -> tuple[str, str]:
    """``/pkg.Service/Method`` as (``pkg.Service``, ``Method``)."""
    service, _, method = full_method.lstrip("/").rpartition("/")
    return service or "unknown", method or full_method


def _code_name(code: Any) -> str:
    if isinstance(code, grpc.StatusCode):
        return code.name
    for known in grpc.StatusCode:  # the aio context may hand back the raw integer
        if known.value[0] == code:
            return known.name
    return "UNKNOWN"


def set_restarts(service: str, count: int) -> None:
    """How many times the supervisor has restarted ``service`` (its process exports the gauge)."""
    RESTARTS.labels(service=service).set(count)


def set_outbox_backlog(pending: dict[str, int], targets: Iterable[str]) -> None:
    """Entries waiting by target; a target with none waiting reads 0, not its last value."""
    for target in {*targets, *pending}:
        OUTBOX_BACKLOG.labels(target=target).set(pending.get(target, 0))


def set_outbox_dead_letters(counts: dict[str, int], targets: Iterable[str]) -> None:
    """Dead letters by target; a target with none reads 0."""
    for target in {*targets, *counts}:
        OUTBOX_DEAD_LETTERS.labels(target=target).set(counts.get(target, 0))


def count_dead_lettered(target: str, count: int) -> None:
    """``count`` entries for ``target`` just moved to the dead-letter list."""
    OUTBOX_BURIED.labels(target=target).inc(count)


def observe_delivery_lag(target: str, seconds: Iterable[float]) -> None:
    """Write-to-delivery times of the entries just delivered to ``target``."""
    histogram = OUTBOX_LAG.labels(target=target)
    for value in seconds:
        histogram.observe(max(0.0, value))


def observe_batch(size: int, oldest_wait: float) -> None:
    """One model run of ``size`` texts whose longest-queued text waited ``oldest_wait`` seconds."""
    BATCH_SIZE.observe(size)
    QUEUE_TIME.observe(max(0.0, oldest_wait))


class ServerMetrics(UnaryCallWrapper):
    """Times every unary call a service answers, by method and final status (health and reflection
    excluded: probes would drown the traffic). Installed outside the service interceptor, so an error it
    maps to a status is counted with that status."""

    def wrap(self, method: str, inner: UnaryBehavior) -> UnaryBehavior:
        service, name = split_method(method)

        async def timed(request: Any, context: grpc.aio.ServicerContext) -> Any:
            started = time.perf_counter()
            code = "OK"
            try:
                reply = await inner(request, context)
                code = _code_name(context.code() or grpc.StatusCode.OK)
                return reply
            except asyncio.CancelledError:  # the caller went away, or the server is stopping
                code = "CANCELLED"
                raise
            except BaseException:
                code = _code_name(context.code() or grpc.StatusCode.UNKNOWN)
                raise
            finally:
                SERVER_LATENCY.labels(service, name, code).observe(time.perf_counter() - started)

        return timed


async def timed_call(full_method: str, invoke: Callable[[], Awaitable[R]]) -> R:
    """``invoke()``, one call to another layer, timed by method and status (and counted if not OK).

    Called by the layer client around each call, instead of a channel interceptor: gRPC runs a channel's
    interceptors in a task of their own per call, which costs more than what they record.
    """
    service, name = split_method(full_method)
    started = time.perf_counter()
    code = "UNKNOWN"
    try:
        reply = await invoke()
        code = "OK"
        return reply
    except BaseException as exc:
        code = _code_name(exc.code()) if isinstance(exc, grpc.aio.AioRpcError) else "CANCELLED"
        raise
    finally:
        CLIENT_LATENCY.labels(service, name, code).observe(time.perf_counter() - started)
        if code != "OK":
            LAYER_ERRORS.labels(service, name, code).inc()


def _route(path: str) -> str:
    """The first path segment only: a bounded set of label values whatever the callers send."""
    first = path.strip("/").split("/", 1)[0]
    return f"/{first}" if first in {"mcp", "console", ".well-known", "health"} else "/other"


class HttpMetrics:
    """ASGI middleware timing every HTTP request of the edge by route, method and status."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = "500"

        async def sending(message: dict[str, Any]) -> None:
            nonlocal status
            if message.get("type") == "http.response.start":
                status = str(message.get("status", 500))
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            HTTP_LATENCY.labels(_route(scope.get("path", "")), scope.get("method", ""), status).observe(
                time.perf_counter() - started
            )


@dataclass
class _Endpoint:
    server: Any
    thread: threading.Thread
    users: int = 1


_endpoints: dict[tuple[str, int], _Endpoint] = {}
_endpoints_lock = threading.Lock()


def _open_endpoint(host: str, port: int) -> tuple[str, int] | None:
    """Serve the registry at ``host:port`` (shared by the services of one process that ask for the same).

    A port that cannot be bound (another process took it between the mesh choosing it and this service
    starting) leaves the service running without its endpoint: a memory service that refuses to start
    for want of a scrape port would lose the turns it exists to keep. None says nothing was opened.
    """
    with _endpoints_lock:
        key = (host, port)
        if key in _endpoints:
            _endpoints[key].users += 1
            return key
        try:
            server, thread = start_http_server(port, addr=host, registry=REGISTRY)
        except OSError as exc:
            log.warning(
                "metrics endpoint not served",
                extra={"address": f"{host}:{port}", "error": str(exc), "variable": "HINDSIGHT_METRICS_PORT"},
            )
            return None
        _endpoints[key] = _Endpoint(server, thread)
    log.info("metrics listening", extra={"address": f"{host}:{port}", "path": "/metrics"})
    return key


def _close_endpoint(key: tuple[str, int]) -> None:
    with _endpoints_lock:
        endpoint = _endpoints[key]
        endpoint.users -= 1
        if endpoint.users > 0:
            return
        del _endpoints[key]
    endpoint.server.shutdown()
    endpoint.server.server_close()
    endpoint.thread.join(timeout=5)


@contextlib.asynccontextmanager
async def serving_metrics(default_host: str, settings: MetricsSettings | None = None) -> AsyncIterator[None]:
    """The metrics endpoint for the duration of the block, when a port is configured (else nothing)."""
    settings = load(MetricsSettings) if settings is None else settings
    if settings.port <= 0:
        yield
        return
    key = _open_endpoint(settings.host or default_host, settings.port)
    try:
        yield
    finally:
        if key is not None:
            _close_endpoint(key)
