"""What the console changes: forget, invalidate, restore, purge and review decisions, each logged in one
line (who, bank, what, why) and done by the same engine or layer call the APIs use. The audit log holds each
too: episodic memory writes forget, restore, purge and quarantine reviews down itself; an invalidation is
written by the call the APIs share (:mod:`hindsight.mcp_edge.validity`); a fact review's resolution (a
semantic decision) is appended here."""

from __future__ import annotations

import logging
from typing import Any

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.mcp_edge.audit import entry
from hindsight.mcp_edge.console.reads import as_dict
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.mcp_edge.validity import invalidate as invalidate_memories
from hindsight.runtime.auth import Caller
from hindsight.runtime.errors import InvalidArgument

log = logging.getLogger(__name__)

RESOLUTIONS = {"approve": semantic_pb2.RESOLUTION_ACCEPT, "reject": semantic_pb2.RESOLUTION_REJECT}
DECISIONS = {"approve": common_pb2.REVIEW_DECISION_APPROVE, "reject": common_pb2.REVIEW_DECISION_REJECT}
MAX_REASON = 500


def _audit(caller: Caller, bank_id: str, action: str, reason: str, **details: Any) -> None:
    log.warning(
        "console action",
        extra={"who": caller.name, "bank": bank_id, "action": action, "why": reason[:MAX_REASON]} | details,
    )


def _ids(body: dict[str, Any]) -> list[str]:
    ids = body.get("ids")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and i for i in ids):
        raise InvalidArgument("ids", "must be a non-empty list of turn ids")
    return list(dict.fromkeys(ids))


def _reason(body: dict[str, Any]) -> str:
    reason = body.get("reason", "")
    if not isinstance(reason, str):
        raise InvalidArgument("reason", "must be text")
    return reason.strip() or "console"


async def forget(engine: MemoryEngine, caller: Caller, bank_id: str, body: dict[str, Any]) -> dict[str, Any]:
    ids, reason = _ids(body), _reason(body)
    result = await engine.forget(bank_id, ids)
    _audit(caller, bank_id, "forget", reason, ids=ids, forgotten=result.forgotten_count)
    return {"forgotten": result.forgotten_count, "unindexed": result.unindexed_count}


async def invalidate(
    engine: MemoryEngine, caller: Caller, bank_id: str, body: dict[str, Any]
) -> dict[str, Any]:
    """End the validity of memories without deleting them (the same call as the APIs' Invalidate, which
    writes the audit entry)."""
    ids, reason = _ids(body), _reason(body)
    result = await invalidate_memories(engine, bank_id, ids, reason)
    _audit(caller, bank_id, "invalidate", reason, ids=ids, invalidated=len(result.invalidated_ids))
    return {
        "invalidated": list(result.invalidated_ids),
        "unchanged": list(result.unchanged_ids),
        "unknown": list(result.unknown_ids),
        "derived": list(result.derived_ids),
    }


async def restore(engine: MemoryEngine, caller: Caller, bank_id: str, body: dict[str, Any]) -> dict[str, Any]:
    ids, reason = _ids(body), _reason(body)
    reply = await engine.clients.episodic.call(
        "RestoreTurns",
        episodic_pb2.RestoreTurnsRequest(bank_id=bank_id, turn_ids=ids),
        engine.settings.write_timeout,
    )
    _audit(caller, bank_id, "restore", reason, ids=ids, restored=reply.restored_count)
    return {"restored": reply.restored_count}


async def purge(engine: MemoryEngine, caller: Caller, bank_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """The whole bank, deleted for good: the body must repeat the bank id as its confirmation."""
    if body.get("confirm") != bank_id:
        raise InvalidArgument("confirm", "must repeat the bank id to purge it")
    reason = _reason(body)
    result = await engine.purge(bank_id, whole_bank=True)
    _audit(caller, bank_id, "purge", reason, turns=result.turn_count, episodes=result.episode_count)
    return {"turns": result.turn_count, "episodes": result.episode_count, "lessons": result.lesson_count}


async def resolve(engine: MemoryEngine, caller: Caller, bank_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """Approve (the candidate supersedes the current fact) or reject (it stays history) a review item."""
    review_id, decision = body.get("review_id"), body.get("decision")
    if not isinstance(review_id, str) or not review_id:
        raise InvalidArgument("review_id", "is required")
    if decision not in RESOLUTIONS:
        raise InvalidArgument("decision", "must be approve or reject")
    reason = _reason(body)
    reply = await engine.clients.semantic.call(
        "ResolveReview",
        semantic_pb2.ResolveReviewRequest(
            bank_id=bank_id, review_id=review_id, resolution=RESOLUTIONS[decision]
        ),
        engine.settings.write_timeout,
    )
    _audit(caller, bank_id, f"review {decision}", reason, review=review_id, current=reply.current.id)
    decided = entry(f"review_{decision}", bank_id, caller.name, review_id, reason, current=reply.current.id)
    await engine.clients.episodic.call(
        "AppendAudit", episodic_pb2.AppendAuditRequest(entries=[decided]), engine.settings.write_timeout
    )
    return {"current": as_dict(reply.current)}


async def review_quarantine(
    engine: MemoryEngine, caller: Caller, bank_id: str, body: dict[str, Any]
) -> dict[str, Any]:
    """Approve (release into memory) or reject turns that screening held back: the operator's, through
    the same call as the API's ReviewQuarantine (episodic memory audits each decision)."""
    caller.require_admin("reviewing held-back turns")
    ids, reason = _ids(body), _reason(body)
    decision = body.get("decision")
    if decision not in DECISIONS:
        raise InvalidArgument("decision", "must be approve or reject")
    reply = await engine.review_quarantine(bank_id, ids, DECISIONS[decision], caller.name, reason)
    _audit(caller, bank_id, f"quarantine {decision}", reason, ids=ids)
    return {
        "approved": reply.approved_count,
        "rejected": reply.rejected_count,
        "not_pending": list(reply.not_pending_ids),
    }
