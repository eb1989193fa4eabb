"""Client channels to other layers. Every call carries a deadline, the request id and the internal token.

The deadline is the smaller of the call's own timeout and what is left of the incoming call's
deadline, so a chain of calls never outlives the request that started it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypeVar

import grpc

from hindsight.runtime.errors import Unavailable
from hindsight.runtime.interceptors import REQUEST_ID_HEADER
from hindsight.runtime.logs import deadline_var, request_id_var
from hindsight.runtime.tls import TlsSettings, channel_credentials, environment_tls

StubT = TypeVar("StubT")


class Companion(Protocol):
    """Something that lives as long as one client's channel (an open stream) and closes with it."""

    def close(self) -> Awaitable[None]: ...


CompanionT = TypeVar("CompanionT", bound=Companion)

_CHANNEL_OPTIONS = (
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.enable_retries", 1),
    # Spread calls over every address the target resolves to (a headless Service in Kubernetes lists each
    # replica), instead of pinning one connection to one replica; a single address behaves as before.
    ("grpc.lb_policy_name", "round_robin"),
)


def remaining_budget(timeout: float) -> float:
    """``timeout`` capped by the incoming call's remaining deadline (never below a millisecond)."""
    deadline = deadline_var.get()
    if deadline is None:
        return timeout
    return max(0.001, min(timeout, deadline - time.monotonic()))


def open_channel(
    target: str, options: tuple[tuple[str, Any], ...] = (), tls: TlsSettings | None = None
) -> grpc.aio.Channel:
    """A channel to another layer: TLS with this service's certificate when configured, else plaintext."""
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
        self._channel = open_channel(target, _CHANNEL_OPTIONS + options, tls)
        self.stub: StubT = stub_class(self._channel)  # type: ignore[call-arg]
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
        items = []
        if request_id := request_id_var.get():
            items.append((REQUEST_ID_HEADER, request_id))
        return tuple(items) + self.stream_metadata()

    async def call(self, method: str, request: Any, timeout: float | None = None) -> Any:
        """Invoke ``stub.<method>(request)`` with a deadline; UNAVAILABLE becomes :class:`Unavailable`."""
        rpc = getattr(self.stub, method)
        budget = remaining_budget(timeout if timeout is not None else self.default_timeout)
        try:
            return await rpc(request, timeout=budget, metadata=self._metadata())
        except grpc.aio.AioRpcError as exc:
            if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise Unavailable(f"{self.target}: {exc.code().name}: {exc.details()}") from exc
            raise

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
