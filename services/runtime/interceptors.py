"""The server interceptor every service uses: request id, bank check, auth, error mapping, access log.

It fails closed: every method needs a credential unless it is one of the public ones (health, reflection);
a request that names no bank needs a credential that grants every bank (it spans banks or serves the mesh);
a handler of a kind this interceptor does not guard is refused, never passed through.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc

from hindsight.runtime.auth import OPEN_CALLER, Caller, Grants, bearer
from hindsight.runtime.errors import HindsightError, InvalidArgument, PermissionDenied
from hindsight.runtime.logs import bank_var, deadline_var, method_var, request_id_var
from hindsight.runtime.validation import check_bank_id

log = logging.getLogger("hindsight.access")

REQUEST_ID_HEADER = "x-request-id"
PUBLIC_PREFIXES = ("/grpc.health.", "/grpc.reflection.")
"""Methods any caller may use: health (probes and orchestrators) and reflection (which lists method names)."""

caller_var: contextvars.ContextVar[Caller] = contextvars.ContextVar("caller", default=OPEN_CALLER)
"""The authenticated caller of the call being served (handlers read it for admin-only operations)."""

EMPTY_BANK_SPANS_BANKS = frozenset(
    {"hindsight.episodic.v1.ListAuditRequest", "hindsight.memory.v1.ListAuditRequest"}
)
"""Requests whose empty ``bank_id`` means every bank: served only to a credential for every bank."""


def _named(request: Any) -> str:
    descriptor = getattr(request, "DESCRIPTOR", None)
    return str(getattr(descriptor, "full_name", ""))


BankCheck = Callable[[str], None]
stream_bank_check: contextvars.ContextVar[BankCheck | None] = contextvars.ContextVar(
    "stream_bank_check", default=None
)
"""Inside a guarded stream: checks one message's bank against the stream's token (raises
:class:`HindsightError`). Messages of a stream name their banks one by one, so the handler checks each
and answers a refused one in-band; a stream handler that finds no check here must refuse to serve."""


class HandlerCache:
    """Wrapped handlers by method, reused while the handler they wrap is the same object.

    gRPC asks a server's interceptors for the handler of every call; a service's handlers never change,
    so wrapping each one once saves building the wrapper (closures, a method handler) per call. An inner
    interceptor that makes a new handler per call simply misses the cache.
    """

    def __init__(self) -> None:
        self._by_method: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    def get(self, method: str, inner: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler | None:
        """The wrapper made for ``inner`` (the handler of ``method``), or None."""
        entry = self._by_method.get(method)
        return entry[1] if entry is not None and entry[0] is inner else None

    def put(
        self, method: str, inner: grpc.RpcMethodHandler, wrapped: grpc.RpcMethodHandler
    ) -> grpc.RpcMethodHandler:
        """Keep ``wrapped`` as the wrapper of ``inner``; returns it."""
        self._by_method[method] = (inner, wrapped)
        return wrapped


UnaryBehavior = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]


class UnaryCallWrapper(grpc.aio.ServerInterceptor):
    """Wraps each non-public unary call's behaviour once per method (health and reflection pass as they
    are: probes would drown the traffic); a subclass says how in :meth:`wrap`."""

    def __init__(self) -> None:
        self._handlers = HandlerCache()

    def wrap(self, method: str, inner: UnaryBehavior) -> UnaryBehavior:
        """The behaviour that runs around ``inner``, the handler of ``method``."""
        raise TypeError(f"{type(self).__name__} does not say how it wraps a call")

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or handler.unary_unary is None or method.startswith(PUBLIC_PREFIXES):
            return handler
        cached = self._handlers.get(method, handler)
        if cached is not None:
            return cached
        wrapped = grpc.unary_unary_rpc_method_handler(
            self.wrap(method, handler.unary_unary),
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
        return self._handlers.put(method, handler, wrapped)


def _metadata(context: grpc.aio.ServicerContext, key: str) -> str | None:
    for item in context.invocation_metadata() or ():
        if item.key == key:
            return item.value if isinstance(item.value, str) else item.value.decode()
    return None


class ServiceInterceptor(grpc.aio.ServerInterceptor):
    """Wraps every unary call and bidirectional stream of a service.

    Sets the log context, checks that the bearer token grants the request's ``bank_id``, turns
    :class:`HindsightError` into its status and anything else into INTERNAL (logged with a stack
    trace), and writes one access-log line with the latency. A stream's token is checked when it opens;
    its messages' banks are checked by the handler through :data:`stream_bank_check`.
    """

    def __init__(self, grants: Grants) -> None:
        self.grants = grants
        self._handlers = HandlerCache()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or method.startswith(PUBLIC_PREFIXES):
            return handler
        cached = self._handlers.get(method, handler)
        if cached is not None:
            return cached
        return self._handlers.put(method, handler, self._guard(handler, method))

    def _guard(self, handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
        if handler.stream_stream is not None:
            return self._guard_stream(handler, method)
        if handler.unary_unary is None:
            return _refused(handler, method)
        inner = handler.unary_unary
        decode = handler.request_deserializer

        async def guarded(request: Any, context: grpc.aio.ServicerContext) -> Any:
            sent_id = _metadata(context, REQUEST_ID_HEADER)
            request_id = sent_id or uuid.uuid4().hex
            bank = getattr(request, "bank_id", "")
            remaining = context.time_remaining()
            deadline = time.monotonic() + remaining if remaining is not None else None
            scope = (
                (request_id_var, request_id),
                (bank_var, bank),
                (method_var, method),
                (deadline_var, deadline),
            )
            async with _answering(context, "call", request_id, scope):
                if not sent_id:  # a caller that sent its id knows it, and an echo is one more send per call
                    await context.send_initial_metadata(((REQUEST_ID_HEADER, request_id),))
                caller = self.grants.authenticate(bearer(_metadata(context, "authorization")))
                if isinstance(request, _Undecodable):
                    raise InvalidArgument("request", f"not a valid message of this method: {request.reason}")
                if hasattr(request, "bank_id") and (bank or _named(request) not in EMPTY_BANK_SPANS_BANKS):
                    check_bank_id(bank)
                    caller.require(bank)
                else:
                    caller.require_all_banks(f"{method} (names no bank)")
                reset = caller_var.set(caller)
                try:
                    return await inner(request, context)
                finally:
                    caller_var.reset(reset)

        return grpc.unary_unary_rpc_method_handler(
            guarded,
            request_deserializer=_tolerant(decode) if decode is not None else None,
            response_serializer=handler.response_serializer,
        )

    def _guard_stream(self, handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
        inner = handler.stream_stream

        async def guarded(
            requests: AsyncIterator[Any], context: grpc.aio.ServicerContext
        ) -> AsyncIterator[Any]:
            request_id = _metadata(context, REQUEST_ID_HEADER) or uuid.uuid4().hex
            token = bearer(_metadata(context, "authorization"))

            caller: Caller | None = None

            def check(bank: str) -> None:
                check_bank_id(bank)
                if caller is None:  # never: the stream is authenticated before its first message is read
                    raise PermissionDenied("stream not authenticated")
                caller.require(bank)

            scope = ((request_id_var, request_id), (method_var, method), (stream_bank_check, check))
            async with _answering(context, "stream", request_id, scope):
                try:
                    caller = self.grants.authenticate(token)
                except HindsightError:
                    await _first_message_or_timeout(requests)
                    raise
                caller_var.set(caller)  # the stream's own context: gone when the generator ends
                async for reply in inner(requests, context):
                    yield reply

        return grpc.stream_stream_rpc_method_handler(
            guarded,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


@dataclass(frozen=True)
class _Undecodable:
    """A request whose bytes are not a message of its method's type (answered INVALID_ARGUMENT, where gRPC
    itself would answer INTERNAL)."""

    reason: str


def _tolerant(decode: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    """``decode``, answering :class:`_Undecodable` instead of raising on bytes that do not parse."""

    def tolerant(data: bytes) -> Any:
        try:
            return decode(data)
        except Exception as exc:
            return _Undecodable(str(exc) or type(exc).__name__)

    return tolerant


_REFUSAL_READ_SECONDS = 1.0
"""How long a refused stream waits for the caller's first message before it answers."""


async def _first_message_or_timeout(requests: AsyncIterator[Any]) -> None:
    """Read (and drop) a refused stream's first message, for at most a second.

    A stream refused before the caller's first write reaches the server races with that write: the client's
    gRPC core then reports its own failed write (INTERNAL, about one call in a hundred on a fresh channel)
    instead of the refusal. One message, bounded in time, is all a caller without a credential gets read.
    """
    with contextlib.suppress(Exception):
        async with asyncio.timeout(_REFUSAL_READ_SECONDS):
            await anext(aiter(requests))


def _refused(handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
    """A handler of a kind the interceptor does not guard (unary-stream, stream-unary): always refused."""
    detail = f"{method}: calls of this kind are not served"

    async def refuse(context: grpc.aio.ServicerContext) -> None:
        log.warning("refused an unguarded handler kind", extra={"method": method})
        await context.abort(grpc.StatusCode.PERMISSION_DENIED, detail)

    async def refuse_stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        await refuse(context)
        yield None  # never reached: abort raises; the yield makes this the streaming kind

    async def refuse_unary(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> Any:
        await refuse(context)

    kinds = {"request_deserializer": handler.request_deserializer}
    kinds["response_serializer"] = handler.response_serializer
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(refuse_stream, **kinds)
    return grpc.stream_unary_rpc_method_handler(refuse_unary, **kinds)


@contextlib.asynccontextmanager
async def _answering(
    context: grpc.aio.ServicerContext,
    kind: str,
    request_id: str,
    scope: tuple[tuple[contextvars.ContextVar[Any], Any], ...],
) -> AsyncIterator[None]:
    """Around one call or stream: its log context, the status for what it raises, one access-log line.

    :class:`HindsightError` becomes its status, a failed call to another layer passes its status on,
    anything else is INTERNAL (logged with its stack trace, the caller told only the request id).
    """
    tokens = [(var, var.set(value)) for var, value in scope]
    started = time.perf_counter()
    code = grpc.StatusCode.OK
    try:
        yield
    except HindsightError as exc:
        code = exc.code
        await context.abort(exc.code, str(exc))
    except grpc.aio.AioRpcError as exc:  # a layer we called failed: pass its status on
        code = exc.code()
        await context.abort(exc.code(), exc.details() or code.name)
    except grpc.aio.AbortError:
        code = getattr(context, "code", lambda: None)() or grpc.StatusCode.UNKNOWN
        raise
    except Exception:
        code = grpc.StatusCode.INTERNAL
        log.exception("unhandled error")
        await context.abort(grpc.StatusCode.INTERNAL, f"internal error (request id {request_id})")
    finally:
        log.info(
            kind, extra={"code": code.name, "latency_ms": round((time.perf_counter() - started) * 1000, 2)}
        )
        for var, token in reversed(tokens):
            var.reset(token)
