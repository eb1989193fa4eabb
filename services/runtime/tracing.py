"""OpenTelemetry traces across the fan-out: W3C ``traceparent`` in gRPC metadata, one span per call.

A server interceptor continues the caller's trace (or starts one) for every unary call a service
answers; a client interceptor opens a span for every call to another layer and sends its
``traceparent``. Nothing is recorded unless an exporter is configured (``HINDSIGHT_OTLP_ENDPOINT``):
the API's non-recording spans still pass a caller's ``traceparent`` on, so a trace started upstream
keeps its id through a mesh that exports nothing.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import grpc
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from hindsight.runtime.interceptors import UnaryBehavior, UnaryCallWrapper
from hindsight.runtime.settings import SettingsError, env, load

log = logging.getLogger(__name__)

PROPAGATOR = TraceContextTextMapPropagator()
"""W3C trace context (``traceparent``, ``tracestate``), whatever global propagator a library set."""
TRACER_NAME = "hindsight"
_TRACE_HEADERS = (b"traceparent", b"tracestate")

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class TracingSettings:
    """Where spans go, and how many new traces are recorded."""

    otlp_endpoint: str = env(
        "HINDSIGHT_OTLP_ENDPOINT",
        "",
        "OTLP/HTTP endpoint spans are exported to (e.g. http://collector:4318/v1/traces); empty: none are "
        "recorded (a caller's traceparent is still passed on).",
    )
    sample_ratio: float = env(
        "HINDSIGHT_TRACE_SAMPLE_RATIO",
        1.0,
        "Share of new traces recorded when exporting (0 to 1); a caller's sampling decision is followed.",
    )

    def __post_init__(self) -> None:
        if not 0.0 <= self.sample_ratio <= 1.0:
            raise SettingsError(f"HINDSIGHT_TRACE_SAMPLE_RATIO={self.sample_ratio} must be between 0 and 1")


_provider: TracerProvider | None = None
_provider_lock = threading.Lock()


def install(provider: TracerProvider | None) -> TracerProvider | None:
    """Record spans with ``provider`` from now on (None: record none); returns the one it replaces.

    The process keeps its own provider instead of OpenTelemetry's global one, which can be set only once.
    """
    global _provider
    with _provider_lock:
        previous, _provider = _provider, provider
    return previous


def installed() -> TracerProvider | None:
    """The provider spans are recorded with (None: none are)."""
    return _provider


def tracer() -> trace.Tracer:
    """The tracer of the installed provider, else the API's non-recording one."""
    provider = _provider
    if provider is None:
        return trace.get_tracer(TRACER_NAME)
    return provider.get_tracer(TRACER_NAME)


def configure(service: str, settings: TracingSettings | None = None) -> TracerProvider | None:
    """Export spans of ``service`` over OTLP/HTTP when an endpoint is configured and no provider is
    installed yet (the first service of a process names it); returns the provider in use."""
    settings = load(TracingSettings) if settings is None else settings
    with _provider_lock:
        global _provider
        if _provider is not None or not settings.otlp_endpoint:
            return _provider
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider = TracerProvider(
            resource=Resource.create({"service.name": service}),
            sampler=ParentBased(TraceIdRatioBased(settings.sample_ratio)),
        )
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=settings.otlp_endpoint)))
        _provider = provider
    log.info("exporting traces", extra={"endpoint": settings.otlp_endpoint, "service_name": service})
    return provider


def service_label(full_name: str) -> str:
    """``hindsight.working.v1.WorkingMemoryService`` as ``hindsight-working``."""
    parts = full_name.split(".")
    return f"hindsight-{parts[1]}" if len(parts) > 2 else full_name


def _rpc_attributes(full_method: str) -> dict[str, str]:
    service, _, method = full_method.lstrip("/").rpartition("/")
    return {"rpc.system": "grpc", "rpc.service": service, "rpc.method": method}


def _finish(span: trace.Span, code: grpc.StatusCode) -> None:
    span.set_attribute("rpc.grpc.status_code", code.value[0])
    if code is not grpc.StatusCode.OK:
        span.set_status(Status(StatusCode.ERROR, code.name))


def _status_of(context: grpc.aio.ServicerContext, failed: bool) -> grpc.StatusCode:
    code = context.code()
    if isinstance(code, grpc.StatusCode):
        return code
    for known in grpc.StatusCode:
        if known.value[0] == code:
            return known
    return grpc.StatusCode.UNKNOWN if failed else grpc.StatusCode.OK


def _carries_trace(metadata: Any) -> bool:
    return any((item.key if hasattr(item, "key") else item[0]) == "traceparent" for item in metadata or ())


async def _in_callers_trace(work: Callable[[], Awaitable[R]], metadata: Any) -> R:
    """``work()`` with no span of its own (no provider records one), inside the caller's trace if it sent
    one: what the API's non-recording span would do, without building it."""
    if not _carries_trace(metadata):
        return await work()
    token = otel_context.attach(incoming_context(metadata))
    try:
        return await work()
    finally:
        otel_context.detach(token)


def incoming_context(metadata: Any) -> Context:
    """The trace context a caller sent in its gRPC metadata (empty when it sent none)."""
    carrier: dict[str, str] = {}
    for item in metadata or ():
        key, value = (item.key, item.value) if hasattr(item, "key") else item
        if key in ("traceparent", "tracestate"):
            carrier[key] = value if isinstance(value, str) else value.decode()
    return PROPAGATOR.extract(carrier)


class ServerTracing(UnaryCallWrapper):
    """A SERVER span for every unary call, continuing the caller's ``traceparent``; the handler runs
    inside it, so the calls it makes to other layers are its children."""

    def wrap(self, method: str, inner: UnaryBehavior) -> UnaryBehavior:
        attributes = _rpc_attributes(method)

        async def traced(request: Any, context: grpc.aio.ServicerContext) -> Any:
            if _provider is None:  # nothing is recorded: pass the caller's trace on, skip the span
                return await _in_callers_trace(lambda: inner(request, context), context.invocation_metadata())
            parent = incoming_context(context.invocation_metadata())
            with tracer().start_as_current_span(
                method.lstrip("/"),
                context=parent,
                kind=SpanKind.SERVER,
                attributes=attributes,
                record_exception=False,
                set_status_on_exception=False,
            ) as span:
                failed = True
                try:
                    reply = await inner(request, context)
                    failed = False
                    return reply
                finally:
                    _finish(span, _status_of(context, failed))

        return traced


async def traced_call(
    full_method: str,
    metadata: tuple[tuple[str, str], ...],
    invoke: Callable[[tuple[tuple[str, str], ...]], Awaitable[R]],
) -> R:
    """``invoke(metadata)``, one call to another layer, in a CLIENT span whose ``traceparent`` is added to
    ``metadata``; with nothing recorded, only the current trace (if any) is sent on, and no span is built.

    Called by the layer client around each call, instead of a channel interceptor (which gRPC runs in a task
    of its own per call)."""
    carrier: dict[str, str] = {}
    if _provider is None:
        PROPAGATOR.inject(carrier)
        return await invoke((*metadata, *carrier.items()) if carrier else metadata)
    with tracer().start_as_current_span(
        full_method.lstrip("/"),
        kind=SpanKind.CLIENT,
        attributes=_rpc_attributes(full_method),
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        PROPAGATOR.inject(carrier)
        try:
            reply = await invoke((*metadata, *carrier.items()))
            _finish(span, grpc.StatusCode.OK)
            return reply
        except grpc.aio.AioRpcError as exc:
            _finish(span, exc.code())
            raise
        except BaseException:
            _finish(span, grpc.StatusCode.CANCELLED)
            raise


class HttpTracing:
    """ASGI middleware: a SERVER span for every HTTP request, continuing a ``traceparent`` header."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        if _provider is None:  # nothing is recorded: the caller's trace (if any) goes on, no span is built
            metadata = [
                (key.decode("latin-1"), value)
                for key, value in scope.get("headers", ())
                if key in _TRACE_HEADERS
            ]
            await _in_callers_trace(lambda: self.app(scope, receive, send), metadata)
            return
        headers = {
            key.decode("latin-1"): value.decode("latin-1")
            for key, value in scope.get("headers", ())
            if key in (b"traceparent", b"tracestate")
        }
        method, path = scope.get("method", ""), scope.get("path", "")
        status = 500

        async def sending(message: dict[str, Any]) -> None:
            nonlocal status
            if message.get("type") == "http.response.start":
                status = int(message.get("status", 500))
            await send(message)

        with tracer().start_as_current_span(
            f"{method} {path}",
            context=PROPAGATOR.extract(headers),
            kind=SpanKind.SERVER,
            attributes={"http.request.method": method, "url.path": path},
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                await self.app(scope, receive, sending)
            finally:
                span.set_attribute("http.response.status_code", status)
                if status >= 500:
                    span.set_status(Status(StatusCode.ERROR, str(status)))


def traced(name: str) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """Run an async function inside a span called ``name`` (the calls it makes are its children)."""

    def wrap(function: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        @functools.wraps(function)
        async def inner(*args: P.args, **kwargs: P.kwargs) -> R:
            with tracer().start_as_current_span(name):
                return await function(*args, **kwargs)

        return inner

    return wrap
