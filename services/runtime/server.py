"""The one way every service starts, serves and stops.

A service provides :class:`ServiceSpec` from an async context manager that opens its stores. The
bootstrap adds the standard health service (liveness on the empty name, readiness on the service's
full name, refreshed from the store check), server reflection and the shared interceptor, then
serves until SIGTERM/SIGINT, when it reports NOT_SERVING and stops gracefully.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from hindsight.runtime.auth import Grants, TokenSource, server_grants
from hindsight.runtime.channels import message_limits
from hindsight.runtime.interceptors import RefusalSink, ServiceInterceptor
from hindsight.runtime.metrics import ServerMetrics, serving_metrics
from hindsight.runtime.roles import ROLES, RoleTable
from hindsight.runtime.settings import ServerSettings
from hindsight.runtime.tls import TlsSettings, environment_tls, server_credentials
from hindsight.runtime.tracing import ServerTracing, configure, service_label

log = logging.getLogger("hindsight.server")

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


async def always_ready() -> bool:
    """Readiness for services without stores."""
    return True


@dataclass
class ServiceSpec:
    """What a service hands the bootstrap once its stores are open."""

    name: str
    """Fully qualified gRPC service name, e.g. ``hindsight.working.v1.WorkingMemoryService``."""
    register: Callable[[grpc.aio.Server], None]
    """Adds the servicer to the server."""
    ready: Callable[[], Awaitable[bool]] = always_ready
    """Readiness: are the stores reachable? Must be cheap and never raise."""
    roles: RoleTable = field(default_factory=lambda: ROLES)
    """Who may call each method (:mod:`hindsight.runtime.roles`); a method not in it is refused."""
    on_refusal: RefusalSink | None = None
    """Told of every call refused for its credential (the edge audits them), whatever the log level."""
    token_source: TokenSource | None = None
    """Credentials beyond the settings' (the edge's managed tokens), looked up after the static ones."""


ServiceFactory = Callable[[], AbstractAsyncContextManager[ServiceSpec]]


@dataclass
class RunningServer:
    """A started server: its port and how to stop it."""

    server: grpc.aio.Server
    port: int
    health: health.HealthServicer
    spec: ServiceSpec
    _readiness_task: asyncio.Task[None]
    health_server: grpc.aio.Server | None = None
    """The plaintext health-only listener for probes, when TLS is on and ``HINDSIGHT_HEALTH_PORT`` is set."""

    async def stop(self, grace: float) -> None:
        """Report NOT_SERVING, let in-flight calls finish for ``grace`` seconds, then stop."""
        await stop_task(self._readiness_task)
        await self.health.enter_graceful_shutdown()
        await self.server.stop(grace)
        if self.health_server is not None:
            await self.health_server.stop(0)


def being_cancelled() -> bool:
    """Whether the running task has a cancel pending, so that an error it just caught may be that cancel.

    Loops that log and go on after ``except Exception`` ask this, or a shutdown waits for them forever.
    """
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def stop_task(task: asyncio.Task[None], patience: float = 1.0) -> None:
    """Cancel ``task`` and wait until it ends, cancelling again while it swallows the cancel.

    Code under the task (a store client's ping) may catch a cancel and go on; one ``cancel()`` then
    leaves ``await task`` waiting forever, which once hung a test's teardown.
    """
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=patience)
    if not task.cancelled() and (error := task.exception()) is not None:
        log.warning("task ended with an error", extra={"task": task.get_name()}, exc_info=error)


async def _watch_readiness(spec: ServiceSpec, servicer: health.HealthServicer, interval: float) -> None:
    status = None
    while True:
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for swallows a cancel that lands as the check
            # finishes, and stop() then waits forever for this loop to end
            async with asyncio.timeout(max(interval, 1.0)):
                ok = await spec.ready()
        except Exception:
            # a store client may turn the cancel of stop() into its own error (a closed connection): a
            # task being cancelled stops here instead of checking again forever
            if being_cancelled():
                raise asyncio.CancelledError from None
            log.warning("readiness check failed", exc_info=True)
            ok = False
        new_status = SERVING if ok else NOT_SERVING
        if new_status != status:
            await servicer.set(spec.name, new_status)
            log.info("readiness", extra={"service_name": spec.name, "serving": ok})
            status = new_status
        await asyncio.sleep(interval)


async def start_server(
    spec: ServiceSpec,
    settings: ServerSettings,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    grants: Grants | None = None,
    tls: TlsSettings | None = None,
) -> RunningServer:
    """Start serving ``spec`` on ``settings.host:settings.port`` (0 picks a free port).

    ``interceptors`` run inside the service interceptor (tests use them to watch calls); ``grants``
    default to those of ``settings`` (a service with no credential configured refuses to start), ``tls``
    to the environment's (plaintext unless certificates are configured).
    """
    if grants is None:
        grants = server_grants(settings)
    tls = environment_tls() if tls is None else tls
    credentials = server_credentials(tls)
    options = message_limits().server_options()  # the same limits the clients' channels have
    if settings.max_connection_age > 0:  # GOAWAY after this age: clients re-resolve and reach new replicas
        options += [
            ("grpc.max_connection_age_ms", int(settings.max_connection_age * 1000)),
            ("grpc.max_connection_age_grace_ms", int(settings.grace_seconds * 1000)),
        ]
    # traces and metrics outermost: they see the status the service interceptor answers with
    if spec.token_source is not None and not grants.open:
        await spec.token_source.start()
        grants.with_source(spec.token_source)
    guard = ServiceInterceptor(grants, spec.roles, spec.on_refusal)
    chain = [ServerTracing(), ServerMetrics(), guard, *interceptors]
    server = grpc.aio.server(interceptors=chain, options=options)
    spec.register(server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names = (spec.name, health.SERVICE_NAME, reflection.SERVICE_NAME)
    reflection.enable_server_reflection(names, server)
    address = f"{settings.host}:{settings.port}"
    port = (
        server.add_insecure_port(address)
        if credentials is None
        else server.add_secure_port(address, credentials)
    )
    if port == 0:
        raise OSError(f"could not bind {settings.host}:{settings.port}")
    health_server = None
    if credentials is not None and tls.health_port:
        health_server = grpc.aio.server()
        health_pb2_grpc.add_HealthServicer_to_server(health_servicer, health_server)
        if health_server.add_insecure_port(f"{settings.host}:{tls.health_port}") == 0:
            raise OSError(f"could not bind the health port {settings.host}:{tls.health_port}")
        await health_server.start()
    await server.start()
    await health_servicer.set("", SERVING)  # liveness: the process answers
    await health_servicer.set(spec.name, NOT_SERVING)  # readiness: set by the watcher
    task = asyncio.create_task(_watch_readiness(spec, health_servicer, settings.readiness_interval))
    if settings.port_file:
        Path(settings.port_file).write_text(str(port))
    log.info(
        "listening",
        extra={
            "service_name": spec.name,
            "address": f"{settings.host}:{port}",
            "tls": credentials is not None,
        },
    )
    return RunningServer(server, port, health_servicer, spec, task, health_server)


@contextlib.asynccontextmanager
async def running(
    factory: ServiceFactory,
    settings: ServerSettings,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    tls: TlsSettings | None = None,
) -> AsyncIterator[RunningServer]:
    """Open the service's stores, serve, and on exit stop gracefully then close the stores.

    The credentials are checked first: a service that would refuse to start does so before opening stores.
    """
    grants = server_grants(settings)
    if grants.open:
        log.warning("authentication is off: every caller may use every bank", extra={"host": settings.host})
    async with factory() as spec, serving_metrics(settings.host):
        configure(service_label(spec.name))  # exports spans when HINDSIGHT_OTLP_ENDPOINT is set
        started = await start_server(spec, settings, interceptors, grants, tls)
        try:
            yield started
        finally:
            await started.stop(settings.grace_seconds)


async def serve_forever(factory: ServiceFactory, settings: ServerSettings) -> None:
    """Serve until SIGTERM or SIGINT."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with running(factory, settings):
        await stop.wait()
        log.info("shutting down")
