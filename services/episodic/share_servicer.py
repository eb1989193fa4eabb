"""The sharing RPC of the episodic layer, and what purges report of the copies they reached (see
:mod:`hindsight.episodic.shares`): mixed into the episodic servicer."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

import grpc

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.episodic.models import Episode, PurgeResult
from hindsight.episodic.shares import Copy, copy_id
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.records import MAX_AGENT_CHARS, Turn
from hindsight.runtime.validation import check_bank_id

MAX_SHARED = 1000
"""Records one share copies at most (ids and copies together)."""
MAX_LINEAGE_IDS = 1000
MAX_ID_CHARS = 256
MAX_PURGED_IDS_REPLY = 50_000
COPY_KINDS = frozenset({"fact", "lesson"})
"""What the edge sends as ready copies: records the other layers hold."""


class Audit(Protocol):
    def __call__(
        self, action: str, bank_id: str, reason: str, ids: Sequence[str] = (), **details: Any
    ) -> Awaitable[None]: ...


def _checked_id(value: str, field: str) -> str:
    if not value or len(value) > MAX_ID_CHARS:
        raise InvalidArgument(field, f"must be 1 to {MAX_ID_CHARS} characters")
    return value


def copy_from_pb(message: episodic_pb2.SharedCopy, source_bank_id: str, bank_id: str, field: str) -> Copy:
    """A ready copy as the request sends it, with its id in ``bank_id`` set here (the same every time)."""
    source_id = _checked_id(message.source_id, f"{field}.source_id")
    if message.source_kind not in COPY_KINDS:
        raise InvalidArgument(f"{field}.source_kind", f"must be one of {', '.join(sorted(COPY_KINDS))}")
    if len(message.lineage_ids) > MAX_LINEAGE_IDS:
        raise InvalidArgument(f"{field}.lineage_ids", f"must hold at most {MAX_LINEAGE_IDS} ids")
    lineage = tuple(
        dict.fromkeys(
            _checked_id(value, f"{field}.lineage_ids[{i}]")
            for i, value in enumerate((source_id, *message.lineage_ids))
        )
    )
    if len(message.source_agent) > MAX_AGENT_CHARS:
        raise InvalidArgument(f"{field}.source_agent", f"must be at most {MAX_AGENT_CHARS} characters")
    new_id = copy_id(source_bank_id, source_id, bank_id)
    if message.HasField("turn") == message.HasField("episode"):
        raise InvalidArgument(field, "give exactly one of turn and episode")
    turn: Turn | None = None
    episode: Episode | None = None
    if message.HasField("turn"):
        sent = common_pb2.Turn()
        sent.CopyFrom(message.turn)
        sent.id = new_id  # the id is this layer's to give
        turn = Turn.from_pb(sent, f"{field}.turn")
        turn = replace(turn, meta=replace(turn.meta, source_turn_ids=()))
    else:
        episode = Episode.from_pb(message.episode, f"{field}.episode")
        episode = replace(episode, id=new_id, meta=replace(episode.meta, source_turn_ids=()))
    return Copy(source_id, message.source_kind, lineage, message.source_agent, turn, episode)


def purged_copies_pb(result: PurgeResult) -> list[episodic_pb2.PurgedCopies]:
    """What a purge took from the banks holding copies of its records, as a reply lists it."""
    return [
        episodic_pb2.PurgedCopies(bank_id=copies.bank_id, purged_ids=copies.ids[:MAX_PURGED_IDS_REPLY])
        for copies in result.copies
    ]


async def audit_purged_copies(audit: Audit, source_bank_id: str, result: PurgeResult) -> None:
    """One audit entry per bank that lost copies to a purge of their sources (the purge is audited in
    its own bank by its caller)."""
    for copies in result.copies:
        await audit(
            "purge",
            copies.bank_id,
            f"purged {len(copies.ids)} shared copies with their sources in bank {source_bank_id}",
            copies.ids,
            source_bank_id=source_bank_id,
        )


class ShareServicer:
    """``ShareRecords``, on the episodic servicer's memory (``_memory``) and audit log (``_audit``)."""

    _memory: Any

    if TYPE_CHECKING:  # the episodic servicer's audit writer (an :class:`Audit`), which this mixin calls

        async def _audit(
            self, action: str, bank_id: str, reason: str, ids: Sequence[str] = (), **details: Any
        ) -> None: ...

    async def ShareRecords(
        self, request: episodic_pb2.ShareRecordsRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.ShareRecordsResponse:
        source = check_bank_id(request.source_bank_id, "source_bank_id")
        if len(request.ids) + len(request.copies) > MAX_SHARED:
            raise InvalidArgument("ids", f"ids and copies together must be at most {MAX_SHARED}")
        if not request.ids and not request.copies:
            raise InvalidArgument("ids", "name at least one record to share")
        ids = [_checked_id(value, f"ids[{i}]") for i, value in enumerate(request.ids)]
        copies = [
            copy_from_pb(message, source, request.bank_id, f"copies[{i}]")
            for i, message in enumerate(request.copies)
        ]
        if len(request.agent) > MAX_AGENT_CHARS:
            raise InvalidArgument("agent", f"must be at most {MAX_AGENT_CHARS} characters")
        agent = request.agent.strip()
        copies = [
            replace(
                c,
                turn=replace(c.turn, meta=replace(c.turn.meta, agent=agent)) if c.turn else None,
                episode=replace(c.episode, meta=replace(c.episode.meta, agent=agent)) if c.episode else None,
            )
            for c in copies
        ]
        written, indexed = await self._memory.share(
            request.bank_id, source, ids, copies, agent, request.index_now
        )
        if written.unknown:
            return episodic_pb2.ShareRecordsResponse(unknown_ids=list(written.unknown))
        await self._audit(
            "share",
            request.bank_id,
            f"shared {len(written.shared)} records of bank {source} ({written.stored} new copies)",
            [record.id for record in written.shared],
            source_bank_id=source,
            source_ids=[record.source_id for record in written.shared][:100],
        )
        return episodic_pb2.ShareRecordsResponse(
            shared=[
                episodic_pb2.SharedRecord(
                    source_id=r.source_id, id=r.id, kind=r.kind, source_kind=r.source_kind
                )
                for r in written.shared
            ],
            stored_count=written.stored,
            indexed=indexed,
        )
