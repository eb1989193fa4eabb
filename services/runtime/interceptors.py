"""The server interceptor every service uses: request id, role and bank checks, auth, error mapping, access
log, and the refusals handed to the service (the edge writes them to the audit log).

It fails closed: every method needs a credential unless it is one of the public ones (health, reflection);
the credential must fit the method's role (:mod:`.roles`: a layer's port serves only the mesh and the
operator), and a method no role table declares is refused; the request's bank needs the operation the method
does (:mod:`.operations`); a request that names no bank needs a credential that grants every bank (it spans
banks or serves the mesh) unless its handler checks the banks it names; a handler of a kind this interceptor
does not guard is refused, never passed through.

Who a call acts for (:data:`actor_var`, the reviewer or actor a layer records) is the authenticated caller's
name, except that a call made with the mesh credential may name the user it acts for in
:data:`ACTOR_HEADER`: the edge sends it, and no other credential can (the header is ignored from them).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc

from hindsight.runtime.auth import OPEN_CALLER, Caller, Grants, bearer
from hindsight.runtime.banks import requested_banks, require_banks
from hindsight.runtime.errors import HindsightError, InvalidArgument, PermissionDenied
from hindsight.runtime.logs import bank_var, deadline_var, method_var, request_id_var
from hindsight.runtime.operations import HANDLER_CHECKS_BANKS, method_operation
from hindsight.runtime.roles import PUBLIC_PREFIXES, ROLES, Role, RoleTable, authorize, role_of
from hindsight.runtime.validation import check_bank_id

log = logging.getLogger("hindsight.access")

REQUEST_ID_HEADER = "x-request-id"
ADMIN_TOKEN_HEADER = "x-hindsight-admin-token"
"""The operator's token sent beside a client's bearer token (the edge's admin methods accept either)."""
ACTOR_HEADER = "x-hindsight-actor"
"""Whom a mesh call acts for (the edge's authenticated caller); trusted from the mesh credential only."""
MAX_ACTOR_CHARS = 256

caller_var: contextvars.ContextVar[Caller] = contextvars.ContextVar("caller", default=OPEN_CALLER)
"""The authenticated caller of the call being served (handlers read it for admin-only operations)."""

actor_var: contextvars.ContextVar[str] = contextvars.ContextVar("actor", default="")
"""Who the call being served acts for: the caller's name, or the user a mesh call names (see the module
docstring). Layer clients send it on (:data:`ACTOR_HEADER`), so a chain of mesh calls keeps it."""


def acting_name() -> str:
    """Who the current call acts for (reviewer, actor of an audit entry); the caller's name when unset."""
    return actor_var.get() or caller_var.get().name


@contextlib.contextmanager
def acting_as(name: str) -> Iterator[None]:
    """Within the block, layer calls made from here act for ``name`` (a front that authenticated it)."""
    token = actor_var.set(name)
    try:
        yield
    finally:
        actor_var.reset(token)


@dataclass(frozen=True)
class Refusal:
    """A call refused for its credential (none, unknown, a bank or a role it lacks), as the service hears
    of it: whatever the log level, every one."""

    method: str
    bank_id: str
    who: str
    """The refused caller's name; empty when its credential named no caller."""
    code: grpc.StatusCode
    reason: str


RefusalSink = Callable[[Refusal], None]
"""Told of each refused call, on the serving loop; must not block or raise."""
REFUSED_CODES = frozenset({grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED})

EMPTY_BANK_SPANS_BANKS = frozenset(
    {
        "hindsight.episodic.v1.ListAuditRequest",
        "hindsight.memory.v1.ListAuditRequest",
        "hindsight.episodic.v1.OutboxStatusRequest",
        "hindsight.episodic.v1.ListDeadLettersRequest",
        "hindsight.episodic.v1.RetryDeadLettersRequest",
        "hindsight.episodic.v1.DropDeadLettersRequest",
    }
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

    def __init__(
        self, grants: Grants, roles: RoleTable = ROLES, on_refusal: RefusalSink | None = None
    ) -> None:
        self.grants = grants
        self.roles = roles
        """Each method's role (:mod:`.roles`); a method not in it is refused."""
        self.on_refusal = on_refusal
        self._handlers = HandlerCache()

    def _admit(self, method: str, role: Role | None, context: grpc.aio.ServicerContext) -> Caller:
        """The caller, after checking that its credential fits the method's role; sets :data:`actor_var`.

        An admin method also takes the operator's token in :data:`ADMIN_TOKEN_HEADER` beside a client's
        bearer token (the caller is then the operator)."""
        if role is None:
            authorize(OPEN_CALLER, role, method)  # refused before the credential is even looked at
        caller = self.grants.authenticate(bearer(_metadata(context, "authorization")))
        actor_var.set(caller.name)
        if role is Role.ADMIN and not caller.admin:
            header = _metadata(context, ADMIN_TOKEN_HEADER)
            with contextlib.suppress(HindsightError):
                operator = self.grants.authenticate(header) if header else None
                if operator is not None and operator.admin:
                    caller = operator
                    actor_var.set(caller.name)
        authorize(caller, role, method)
        if caller.mesh:
            actor_var.set(_named_actor(context) or caller.name)
        return caller

    def _refused(self, method: str, bank_id: str, exc: HindsightError) -> None:
        if self.on_refusal is None or exc.code not in REFUSED_CODES:
            return
        try:
            self.on_refusal(Refusal(method, bank_id, actor_var.get(), exc.code, str(exc)))
        except Exception:  # the refusal stands whatever the sink does
            log.exception("refusal not recorded", extra={"method": method})

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        role = role_of(method, self.roles)
        if handler is None or role is Role.PUBLIC:
            return handler
        cached = self._handlers.get(method, handler)
        if cached is not None:
            return cached
        return self._handlers.put(method, handler, self._guard(handler, method, role))

    def _guard(self, handler: grpc.RpcMethodHandler, method: str, role: Role | None) -> grpc.RpcMethodHandler:
        if handler.stream_stream is not None:
            return self._guard_stream(handler, method, role)
        if handler.unary_unary is None:
            return _refused(handler, method)
        inner = handler.unary_unary
        decode = handler.request_deserializer
        operation = method_operation(method)

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
                (actor_var, ""),
            )
            async with _answering(context, "call", request_id, scope, self._refused):
                if not sent_id:  # a caller that sent its id knows it, and an echo is one more send per call
                    await context.send_initial_metadata(((REQUEST_ID_HEADER, request_id),))
                caller = self._admit(method, role, context)
                if isinstance(request, _Undecodable):
                    raise InvalidArgument("request", f"not a valid message of this method: {request.reason}")
                if not bank and getattr(request, "bank_ids", None):  # one call over several banks
                    require_banks(caller, requested_banks(bank, request.bank_ids), operation)
                elif hasattr(request, "bank_id") and (bank or _named(request) not in EMPTY_BANK_SPANS_BANKS):
                    check_bank_id(bank)
                    caller.require(bank, operation)
                elif _named(request) not in HANDLER_CHECKS_BANKS:
                    caller.require_all_banks(f"{method} (names no bank)", operation)
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

    def _guard_stream(
        self, handler: grpc.RpcMethodHandler, method: str, role: Role | None
    ) -> grpc.RpcMethodHandler:
        inner = handler.stream_stream
        operation = method_operation(method)

        async def guarded(
            requests: AsyncIterator[Any], context: grpc.aio.ServicerContext
        ) -> AsyncIterator[Any]:
            request_id = _metadata(context, REQUEST_ID_HEADER) or uuid.uuid4().hex

            caller: Caller | None = None

            def check(bank: str) -> None:
                check_bank_id(bank)
                if caller is None:  # never: the stream is authenticated before its first message is read
                    raise PermissionDenied("stream not authenticated")
                caller.require(bank, operation)

            scope = (
                (request_id_var, request_id),
                (method_var, method),
                (stream_bank_check, check),
                (actor_var, ""),
            )
            async with _answering(context, "stream", request_id, scope, self._refused):
                try:
                    caller = self._admit(method, role, context)
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


def _named_actor(context: grpc.aio.ServicerContext) -> str:
    """The user a mesh call says it acts for (:data:`ACTOR_HEADER`); empty when none or not a name."""
    value = (_metadata(context, ACTOR_HEADER) or "").strip()
    if len(value) > MAX_ACTOR_CHARS or not value.isprintable():
        return ""
    return value


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
    refused: Callable[[str, str, HindsightError], None],
) -> AsyncIterator[None]:
    """Around one call or stream: its log context, the status for what it raises, one access-log line.

    :class:`HindsightError` becomes its status (a refusal is also handed to ``refused``, whatever the log
    level), a failed call to another layer passes its status on, anything else is INTERNAL (logged with
    its stack trace, the caller told only the request id).
    """
    tokens = [(var, var.set(value)) for var, value in scope]
    started = time.perf_counter()
    code = grpc.StatusCode.OK
    try:
        yield
    except HindsightError as exc:
        code = exc.code
        refused(method_var.get(), bank_var.get(), exc)
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
