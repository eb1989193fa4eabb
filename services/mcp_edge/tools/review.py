"""The operator's tools: the review queue of held-back turns, decisions on them, and the audit log. Each
needs an admin credential (:func:`_admin`), and a refusal is audited."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.mcp_edge.coerce import AS_INT, SPLIT_COMMAS
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.mcp_edge.servicer import MAX_LIST
from hindsight.mcp_edge.tools.access import BankArg, ToolContext, _hints, _tool_errors
from hindsight.mcp_edge.tools.outputs import (
    AuditEntryOutput,
    AuditLogOutput,
    QuarantineListOutput,
    ReviewOutput,
    _quarantined_output,
)
from hindsight.runtime.errors import PermissionDenied
from hindsight.runtime.records import as_utc, from_timestamp, to_timestamp


def register(server: MCPServer, engine: MemoryEngine, access: ToolContext) -> None:
    """Add ``list_quarantine``, ``review_quarantine`` and ``audit_log`` to ``server``."""

    @server.tool(annotations=_hints("List the review queue (admin)", read_only=True, idempotent=True))
    async def list_quarantine(
        ctx: Context[Any, Any],
        status: Annotated[
            Literal["pending", "approved", "rejected", "all"], Field(description="Which part of the queue.")
        ] = "pending",
        limit: Annotated[
            int, Field(strict=True, ge=1, le=MAX_LIST, description="How many turns."), AS_INT
        ] = 50,
        page_token: Annotated[str, Field(max_length=1000, description="From the previous page.")] = "",
        bank: BankArg = None,
    ) -> QuarantineListOutput:
        """Turns that write-time screening held back (kept out of recall and reflection), with the reason;
        oldest first. Needs an admin credential."""
        with _tool_errors():
            bank_id, _ = _admin(access, bank, "list_quarantine")
            reply = await engine.list_quarantine(bank_id, status=status, limit=limit, page_token=page_token)
        return QuarantineListOutput(
            items=[_quarantined_output(item) for item in reply.items],
            pending_count=reply.pending_count,
            next_page_token=reply.next_page_token,
        )

    @server.tool(annotations=_hints("Review held-back turns (admin)", destructive=True, idempotent=True))
    async def review_quarantine(
        ctx: Context[Any, Any],
        turn_ids: Annotated[
            list[str],
            Field(min_length=1, max_length=1000, description="Held-back turns to decide on."),
            SPLIT_COMMAS,
        ],
        decision: Annotated[
            Literal["approve", "reject"],
            Field(description="approve: release into memory (recalled, indexed); reject: keep out for good."),
        ],
        note: Annotated[str, Field(max_length=10_000, description="Why, for the audit log.")] = "",
        bank: BankArg = None,
    ) -> ReviewOutput:
        """Approve or reject turns in the review queue; each decision is audited. Needs an admin
        credential."""
        with _tool_errors():
            bank_id, reviewer = _admin(access, bank, "review_quarantine")
            reply = await engine.review_quarantine(
                bank_id,
                turn_ids,
                common_pb2.REVIEW_DECISION_APPROVE
                if decision == "approve"
                else common_pb2.REVIEW_DECISION_REJECT,
                reviewer,
                note,
            )
        return ReviewOutput(
            approved_count=reply.approved_count,
            rejected_count=reply.rejected_count,
            not_pending_ids=list(reply.not_pending_ids),
        )

    @server.tool(annotations=_hints("Read the audit log (admin)", read_only=True, idempotent=True))
    async def audit_log(
        ctx: Context[Any, Any],
        action: Annotated[
            str,
            Field(
                max_length=100,
                description="Only this action (quarantine, redact, refuse, rate_limit, approve, "
                "reject, deny, ...); default all.",
            ),
        ] = "",
        since: Annotated[datetime | None, Field(description="Only entries from this time on.")] = None,
        limit: Annotated[
            int, Field(strict=True, ge=1, le=MAX_LIST, description="How many entries."), AS_INT
        ] = 100,
        page_token: Annotated[str, Field(max_length=1000, description="From the previous page.")] = "",
        bank: BankArg = None,
    ) -> AuditLogOutput:
        """Security decisions about the bank (who, what, why), newest first. Needs an admin credential."""
        with _tool_errors():
            bank_id, _ = _admin(access, bank, "audit_log")
            request = episodic_pb2.ListAuditRequest(
                bank_id=bank_id, action=action.strip(), limit=limit, page_token=page_token
            )
            if since is not None:
                request.since.CopyFrom(to_timestamp(as_utc(since)))
            reply = await engine.list_audit(request)
        return AuditLogOutput(
            entries=[
                AuditEntryOutput(
                    id=e.id,
                    time=from_timestamp(e.time) if e.HasField("time") else None,
                    actor=e.actor,
                    bank_id=e.bank_id,
                    action=e.action,
                    target=e.target,
                    reason=e.reason,
                    details=json.loads(e.details_json) if e.details_json else {},
                )
                for e in reply.entries
            ],
            next_page_token=reply.next_page_token,
        )


def _admin(access: ToolContext, bank: str | None, what: str) -> tuple[str, str]:
    """The bank and the caller's label, for an operator only (PERMISSION_DENIED otherwise)."""
    bank_id = access.bank(bank)
    caller = access.caller()
    try:
        caller.require_admin(what)
    except PermissionDenied as exc:
        access.deny(bank_id, what, exc)
        raise
    return bank_id, caller.name
