"""What every tool module shares: who the caller is and which bank a call may use (:class:`ToolContext`),
the mapping of errors to tool errors, the annotations, and the argument types several tools take.

Tool arguments are typed, so the SDK publishes strict JSON schemas with limits and descriptions; near-miss
types (``"3"`` for 3, ``"a, b"`` for a list) are coerced and logged (:mod:`hindsight.mcp_edge.coerce`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Any, Literal

import grpc
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field, ValidationError

from hindsight.mcp_edge.audit import ANONYMOUS, AuditQueue, entry
from hindsight.mcp_edge.coerce import AS_FLOAT, SPLIT_COMMAS
from hindsight.mcp_edge.mcp_auth import current_caller
from hindsight.runtime.auth import OPEN_CALLER, Caller
from hindsight.runtime.banks import requested_banks, require_banks
from hindsight.runtime.errors import HindsightError, PermissionDenied, Unauthenticated
from hindsight.runtime.interceptors import actor_var
from hindsight.runtime.operations import mcp_operation
from hindsight.runtime.permissions import Operation
from hindsight.runtime.records import TimeRange, as_utc
from hindsight.runtime.validation import check_bank_id

RoleName = Literal["user", "assistant", "tool", "system"]
SourceName = Literal["user", "agent", "tool", "external"]
LayerChoice = Literal["working", "episodic", "semantic", "reflect"]
OrderName = Literal["score", "importance", "time_asc", "time_desc", "mix"]
BankArg = Annotated[
    str | None, Field(description="Memory bank; omitted means the server's default bank.", max_length=128)
]
WriterArg = Annotated[
    str | None,
    Field(
        max_length=256,
        description="The agent to record as the writer; default the caller. Only the mesh credential or an "
        "operator may name another agent.",
    ),
]
TagsArg = Annotated[
    list[str] | None,
    Field(max_length=32, description="Labels (a list, or one comma-separated string)."),
    SPLIT_COMMAS,
]
ImportanceArg = Annotated[
    float | None, Field(strict=True, ge=0, le=1, description="0 to 1; default by rule."), AS_FLOAT
]


class ToolContext:
    """Resolves the bank of a tool call and checks that the call's caller may use it.

    The caller is the one the transport fixes (stdio: the local user), else the owner of the HTTP request's
    bearer token (the SDK's auth context). A call with neither is refused unless authentication is off.
    """

    def __init__(
        self,
        default_bank: str,
        *,
        local_caller: Caller | None = None,
        open: bool = False,
        audit: AuditQueue | None = None,
    ) -> None:
        self.default_bank = default_bank
        self.local_caller = local_caller
        self.open = open
        self.audit = audit
        """Where refused calls are written down (the audit log), when given."""

    def deny(self, bank_id: str, what: str, exc: HindsightError) -> None:
        """Audit a refused tool call (a bank or a role the caller lacks)."""
        if self.audit is None:
            return
        caller = self.local_caller or current_caller()
        reason = f"{what} refused: {exc.code.name}"
        who = caller.name if caller is not None else ANONYMOUS
        self.audit.record(entry("deny", bank_id, who, what, reason, code=exc.code.name, detail=str(exc)))

    def caller(self) -> Caller:
        """Who makes the current call; UNAUTHENTICATED when authentication is on and none is known."""
        caller = self.local_caller or current_caller()
        if caller is not None:
            return caller
        if self.open:
            return OPEN_CALLER
        raise Unauthenticated("the call carries no credential")

    def bank(
        self, requested: str | None, ctx: Context[Any, Any] | None = None, operation: Operation | None = None
    ) -> str:
        """The bank to use, after checking that the caller may do the call's operation there (the one
        :mod:`hindsight.runtime.operations` lists for the tool, resource or prompt ``ctx`` is serving, unless
        ``operation`` is given; ``admin`` when neither says)."""
        bank_id = check_bank_id(requested or self.default_bank, "bank")
        caller = self.caller()
        kind, name = mcp_call(ctx)
        try:
            caller.require(bank_id, operation or mcp_operation(kind, name))
        except PermissionDenied as exc:
            self.deny(bank_id, name or "mcp", exc)
            raise
        actor_var.set(caller.name)  # the layer calls of this tool act for its caller
        return bank_id

    def banks(self, bank: str | None, banks: list[str] | None) -> tuple[str, ...]:
        """The banks of a call over several (``banks``), after checking that the caller may read every one;
        a call naming one bank (``bank`` or the default) returns ``()`` and is checked by :meth:`bank`.
        The call is refused whole when one bank is not granted (the refusal names it, and is audited)."""
        if not banks:
            return ()
        chosen = requested_banks(bank or "", banks, field="banks", single_field="bank")
        caller = self.caller()
        for bank_id in chosen:
            try:
                require_banks(caller, [bank_id])
            except PermissionDenied as exc:
                self.deny(bank_id, "recall", exc)
                raise
        actor_var.set(caller.name)
        return chosen


def mcp_call(ctx: Context[Any, Any] | None) -> tuple[str, str]:
    """The kind of MCP request ``ctx`` serves (``tools/call``, ``resources/read``, ``prompts/get``) and the
    tool's or prompt's name or the resource's URI; empty outside a request."""
    if ctx is None:
        return "", ""
    try:
        request = ctx.request_context
    except ValueError:  # not inside a request
        return "", ""
    params = request.params or {}
    name = params.get("uri" if request.method == "resources/read" else "name", "")
    return request.method, str(name)


def _hints(
    title: str, *, read_only: bool = False, destructive: bool = False, idempotent: bool = False
) -> ToolAnnotations:
    """A tool's annotations; every tool stays inside the memory service, so none is open-world."""
    return ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


def _tool_error(exc: HindsightError | grpc.aio.AioRpcError) -> ToolError:
    """A tool error that starts with the gRPC status name, as the gRPC front would answer; a layer's
    error is passed on the same way."""
    if isinstance(exc, grpc.aio.AioRpcError):
        return ToolError(f"{exc.code().name}: {exc.details() or 'a memory layer failed'}")
    return ToolError(f"{exc.code.name}: {exc}")


@contextlib.contextmanager
def _tool_errors() -> Iterator[None]:
    """Inside a tool: a validation or layer error becomes the tool error :func:`_tool_error` makes."""
    try:
        yield
    except (HindsightError, grpc.aio.AioRpcError) as exc:
        raise _tool_error(exc) from exc
    except ValidationError as exc:  # a model built inside the tool (a turn from `text`) refused a value
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
            for error in exc.errors()[:5]
        )
        raise ToolError(f"INVALID_ARGUMENT: {problems}") from exc


def _window(since: datetime | None, until: datetime | None) -> TimeRange:
    if since and until and since >= until:
        raise ToolError("`since` must be before `until`")
    return TimeRange(as_utc(since), as_utc(until))
