"""Client channels to other layers. Every call carries a deadline, the request id and the internal token.

The deadline is the smaller of the call's own timeout and what is left of the incoming call's
deadline, so a chain of calls never outlives the request that started it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypeVar

import grpc
from google.protobuf.message import Message

from hindsight.runtime.errors import DeadlineExceeded, ResourceExhausted, Unavailable
from hindsight.runtime.interceptors import ACTOR_HEADER, REQUEST_ID_HEADER, actor_var
from hindsight.runtime.logs import deadline_var, request_id_var
from hindsight.runtime.metrics import timed_call
from hindsight.runtime.settings import SettingsError, env, load
from hindsight.runtime.tls import TlsSettings, channel_credentials, environment_tls
from hindsight.runtime.tracing import traced_call

StubT = TypeVar("StubT")


class Companion(Protocol):
    """Something that lives as long as one client's channel (an open stream) and closes with it."""

    def close(self) -> Awaitable[None]: ...


CompanionT = TypeVar("CompanionT", bound=Companion)


@dataclasses.dataclass(frozen=True)
class MessageLimits:
    """The largest gRPC message each direction carries, the same on both ends of every channel: a server
    receives requests up to what a client may send, a client receives replies up to what a server sends."""

    max_request_bytes: int = env(
        "HINDSIGHT_MAX_REQUEST_BYTES",
        16 * 1024 * 1024,
        "Largest request message, in bytes, a service accepts and a client sends; a larger retain is "
        "refused with RESOURCE_EXHAUSTED before anything is written.",
    )
    max_response_bytes: int = env(
        "HINDSIGHT_MAX_RESPONSE_BYTES",
        64 * 1024 * 1024,
        "Largest reply message, in bytes, a service sends and a client accepts.",
    )

    def __post_init__(self) -> None:
        if self.max_request_bytes < 1024 or self.max_response_bytes < 1024:
            raise SettingsError(
                "HINDSIGHT_MAX_REQUEST_BYTES and HINDSIGHT_MAX_RESPONSE_BYTES must be at least 1024"
            )

    def server_options(self) -> list[tuple[str, int]]:
        """Channel arguments of a server: it receives requests and sends replies."""
        return [
            ("grpc.max_receive_message_length", self.max_request_bytes),
            ("grpc.max_send_message_length", self.max_response_bytes),
        ]

    def client_options(self) -> tuple[tuple[str, int], ...]:
        """Channel arguments of a client: it sends requests and receives replies."""
        return (
            ("grpc.max_send_message_length", self.max_request_bytes),
            ("grpc.max_receive_message_length", self.max_response_bytes),
        )

    def check_request(self, message: Message, field: str) -> None:
        """Refuse ``message`` (RESOURCE_EXHAUSTED naming ``field``, the size and the limit) when it is larger
        than a request may be: checked before a write starts, so nothing of it is written."""
        size = message.ByteSize()
        if size > self.max_request_bytes:
            raise ResourceExhausted(
                field,
                f"the request is {size} bytes, over the limit of {self.max_request_bytes} bytes "
                "(HINDSIGHT_MAX_REQUEST_BYTES); send it in smaller parts",
            )


@functools.cache
def message_limits() -> MessageLimits:
    """The limits of this process, read once from the environment."""
    return load(MessageLimits)


READ_PREFIXES = ("Get", "List", "Search", "Match", "History", "Describe", "ModelInfo", "OutboxStatus")
"""Names of the methods that only read (or compute, like embeddings and reranking): safe to send again."""
IDEMPOTENT_COMPUTE = frozenset({"Embed", "Rerank"})
RETRY_POLICY = {
    "maxAttempts": 3,
    "initialBackoff": "0.05s",
    "maxBackoff": "0.5s",
    "backoffMultiplier": 2,
    "retryableStatusCodes": ["UNAVAILABLE"],
}
"""How a read that found its layer unavailable (a replica restarting, a connection reset) is sent again:
at most three attempts, 50 ms then 100 ms apart (with gRPC's jitter), always within the call's deadline.
A write is never retried here: the outbox and the caller's idempotency keys handle those."""


def _service_descriptor(stub_class: type) -> Any:
    """The service descriptor of ``stub_class`` (a generated ``*Stub``), or None when it cannot be found."""
    module = sys.modules.get(stub_class.__module__.removesuffix("_grpc"))
    descriptor = getattr(module, "DESCRIPTOR", None)
    if descriptor is None:
        return None
    return descriptor.services_by_name.get(stub_class.__name__.removesuffix("Stub"))


def _service_name(stub_class: type) -> str:
    """The full name of ``stub_class``'s service (``pkg.Service``), as the metrics and traces name it."""
    service = _service_descriptor(stub_class)
    return str(service.full_name) if service is not None else stub_class.__name__.removesuffix("Stub")


def retry_service_config(stub_class: type) -> str:
    """gRPC service config (JSON) with :data:`RETRY_POLICY` for the read methods of ``stub_class``'s service;
    empty when the stub's service cannot be found (a channel then retries nothing)."""
    service = _service_descriptor(stub_class)
    if service is None:
        return ""
    reads = [
        {"service": service.full_name, "method": method.name}
        for method in service.methods
        if not (method.client_streaming or method.server_streaming) and is_read(method.name)
    ]
    if not reads:
        return ""
    return json.dumps({"methodConfig": [{"name": reads, "retryPolicy": RETRY_POLICY}]})


_CHANNEL_OPTIONS = (
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.enable_retries", 1),
    # Spread calls over every address the target resolves to (a headless Service in Kubernetes lists each
    # replica), instead of pinning one connection to one replica; a single address behaves as before.
    ("grpc.lb_policy_name", "round_robin"),
    # A layer that was not listening yet (the mesh starts every service at once) or restarted is tried again
    # within a second, not after gRPC's default back-off, which grows to minutes.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1_000),
)

CONNECT_GRACE = 2.0
"""Seconds a write waits for its layer's connection when the channel is not connected (the layer starting
or restarting) before it is sent; a read fails fast instead, as a recall answers from the other layers."""


def is_read(method: str) -> bool:
    """Whether ``method`` only reads or computes (safe to send again, and not worth waiting for)."""
    return method.startswith(READ_PREFIXES) or method in IDEMPOTENT_COMPUTE


def remaining_budget(timeout: float) -> float:
    """``timeout`` capped by the incoming call's remaining deadline (never below a millisecond)."""
    deadline = deadline_var.get()
    if deadline is None:
        return timeout
    return max(0.001, min(timeout, deadline - time.monotonic()))


def open_channel(
    target: str, options: tuple[tuple[str, Any], ...] = (), tls: TlsSettings | None = None
) -> grpc.aio.Channel:
    """A channel to another layer: TLS with this service's certificate when configured, else plaintext.

    No interceptors: :meth:`LayerClient.call` traces and times each call itself (gRPC runs a channel's
    interceptors in a task of their own per call)."""
    tls = environment_tls() if tls is None else tls
    credentials = channel_credentials(tls)
    if credentials is None:
        return grpc.aio.insecure_channel(target, options=options)
    if tls.server_name:
        options = (*options, ("grpc.ssl_target_name_override", tls.server_name))
    return grpc.aio.secure_channel(target, credentials, options=options)


class LayerClient(Generic[StubT]):
    """A channel to one layer and its stub; ``call`` is the only way in, so no call lacks a deadline."""

    def __init__(
        self,
        target: str,
        stub_class: type[StubT],
        *,
        token: str = "",
        default_timeout: float = 10.0,
        options: tuple[tuple[str, Any], ...] = (),
        tls: TlsSettings | None = None,
    ) -> None:
        """``options`` are added to the channel's defaults (e.g. a shorter reconnect back-off); ``tls``
        defaults to the environment's (plaintext unless certificates are configured)."""
        if not target:
            raise ValueError(f"no address configured for {stub_class.__name__}")
        self.target = target
        self.default_timeout = default_timeout
        self._token = token
        config = retry_service_config(stub_class)
        retries = (("grpc.service_config", config),) if config else ()
        self._channel = open_channel(
            target, message_limits().client_options() + _CHANNEL_OPTIONS + retries + options, tls
        )
        self.stub: StubT = stub_class(self._channel)  # type: ignore[call-arg]
        self._service = _service_name(stub_class)
        self._companions: dict[str, Companion] = {}

    def companion(self, name: str, make: Callable[[LayerClient[StubT]], CompanionT]) -> CompanionT:
        """The one ``name`` companion of this client, made on first use; closed by :meth:`close`."""
        if name not in self._companions:
            self._companions[name] = make(self)
        return self._companions[name]  # type: ignore[return-value]

    def stream_metadata(self) -> tuple[tuple[str, str], ...]:
        """What a long-lived stream opens with: the token only (its messages carry request ids)."""
        return (("authorization", f"Bearer {self._token}"),) if self._token else ()

    def _metadata(self) -> tuple[tuple[str, str], ...]:
        # Always an id: a server that has to make one up sends it back in the headers first, and a call
        # whose headers arrived can no longer be retried.
        request_id = request_id_var.get() or uuid.uuid4().hex
        actor = actor_var.get()  # whom the call being served acts for: a layer trusts it from the mesh only
        # metadata is ASCII: a name with other characters travels escaped (``\\u00e9``)
        acting = ((ACTOR_HEADER, actor.encode("ascii", "backslashreplace").decode()),) if actor else ()
        return ((REQUEST_ID_HEADER, request_id), *acting, *self.stream_metadata())

    async def call(self, method: str, request: Any, timeout: float | None = None) -> Any:
        """Invoke ``stub.<method>(request)`` with a deadline; UNAVAILABLE becomes :class:`Unavailable` and
        DEADLINE_EXCEEDED :class:`DeadlineExceeded` (a kind of it, which keeps its own status)."""
        rpc = getattr(self.stub, method)
        budget = remaining_budget(timeout if timeout is not None else self.default_timeout)
        if not is_read(method):
            budget = await self._await_connection(budget)
        full_method = f"/{self._service}/{method}"
        try:
            return await traced_call(
                full_method,
                self._metadata(),
                lambda metadata: timed_call(
                    full_method, lambda: rpc(request, timeout=budget, metadata=metadata)
                ),
            )
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                raise DeadlineExceeded(f"{self.target}: DEADLINE_EXCEEDED: {exc.details()}") from exc
            if exc.code() == grpc.StatusCode.UNAVAILABLE:
                raise Unavailable(f"{self.target}: UNAVAILABLE: {exc.details()}") from exc
            raise

    async def _await_connection(self, budget: float) -> float:
        """Wait up to :data:`CONNECT_GRACE` (within ``budget``) for a channel that is not connected; what is
        left of ``budget``. A channel that failed to connect fails its calls at once until it reconnects, so
        a write sent just after its layer came up would be refused though nothing is wrong."""
        if self._channel.get_state(try_to_connect=True) == grpc.ChannelConnectivity.READY:
            return budget
        started = time.monotonic()
        # still not connected after the grace: the call itself reports UNAVAILABLE, as it would have at once
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._channel.channel_ready(), timeout=min(CONNECT_GRACE, budget / 2))
        return max(0.001, budget - (time.monotonic() - started))

    async def close(self) -> None:
        """Close the companions, then the channel."""
        for companion in self._companions.values():
            await companion.close()
        self._companions.clear()
        await self._channel.close()


class _Bearer(grpc.aio.UnaryUnaryClientInterceptor, grpc.aio.StreamStreamClientInterceptor):  # type: ignore[misc]
    """Adds ``authorization: Bearer <token>`` to every call of a channel made by a client tool."""

    def __init__(self, token: str) -> None:
        self._header = ("authorization", f"Bearer {token}")

    def _with_token(self, details: Any) -> Any:
        return details._replace(metadata=(*(details.metadata or ()), self._header))

    async def intercept_unary_unary(self, continuation, client_call_details, request):  # type: ignore[no-untyped-def]
        return await continuation(self._with_token(client_call_details), request)

    async def intercept_stream_stream(self, continuation, client_call_details, request_iterator):  # type: ignore[no-untyped-def]
        return await continuation(self._with_token(client_call_details), request_iterator)


def bearer_interceptors(token: str) -> list[grpc.aio.ClientInterceptor]:
    """Client interceptors that present ``token`` on every call (none when it is empty)."""
    return [_Bearer(token)] if token else []
