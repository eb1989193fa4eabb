"""The gRPC face of episodic memory: validates and converts protobuf, then calls the engine."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import grpc
from google.protobuf.message import Message

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.episodic.access import LAYERS
from hindsight.episodic.dead_letters import Handled
from hindsight.episodic.engine import EpisodicMemory
from hindsight.episodic.export_servicer import ExportServicer
from hindsight.episodic.models import (
    _OUTCOME_FROM_PB,
    Episode,
    EpisodeFilter,
    PurgeScope,
    TurnFilter,
)
from hindsight.episodic.quarantine import AuditEntry, Screening, check_status, decision_from_pb
from hindsight.episodic.share_servicer import ShareServicer, audit_purged_copies, purged_copies_pb
from hindsight.episodic.token_servicer import TokenServicer
from hindsight.runtime.banks import requested_banks
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.interceptors import acting_name, caller_var
from hindsight.runtime.records import (
    RecordMeta,
    TimeRange,
    Turn,
    from_timestamp,
    scored_turns_to_pb,
    source_from_pb,
    to_timestamp,
    trust_from_pb,
)
from hindsight.runtime.rewrites import check_phrasings
from hindsight.runtime.validation import check_count, check_length, check_limit, check_text

DEFAULT_SEARCH_LIMIT = 10
MAX_SEARCH_LIMIT = 200
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
MAX_TURNS_PER_REQUEST = 1000
MAX_IDS_PER_FORGET = 1000
MAX_PURGED_IDS_REPLY = 50_000
"""Most purged ids a reply lists (under 13 MiB at the longest ids); the outbox deletes every one."""
MAX_ID_CHARS = 256
MAX_QUERY_CHARS = 10_000
MAX_FILTER_VALUES = 100
MAX_ACCESSED = 1000
DEFAULT_QUEUE_PAGE = 50
DEFAULT_AUDIT_PAGE = 100
MAX_AUDIT_ENTRIES = 1000
MAX_ACTOR_CHARS = 256
MAX_AUDITED_IDS = 100
"""Ids an audit entry of a forget, purge, update or restore lists (the count says how many there were)."""


def _check_id(value: str, field: str) -> str:
    check_length(value, field, MAX_ID_CHARS)
    if "\x00" in value:
        raise InvalidArgument(field, "must not contain NUL characters")
    return value


def _check_storable(message: Message, field: str) -> None:
    """PostgreSQL text cannot hold NUL characters: reject them here, naming the field, not as INTERNAL."""
    for descriptor, value in message.ListFields():
        name = f"{field}.{descriptor.name}"
        if descriptor.type == descriptor.TYPE_STRING:
            values = value if descriptor.is_repeated else [value]
            if any("\x00" in item for item in values):
                raise InvalidArgument(name, "must not contain NUL characters")
        elif descriptor.type == descriptor.TYPE_MESSAGE and not descriptor.is_repeated:
            _check_storable(value, name)


def _required_id(value: str, field: str) -> str:
    if not value:
        raise InvalidArgument(field, "is required")
    return _check_id(value, field)


def _check_ids(values: list[str], field: str, maximum: int, required: bool = True) -> list[str]:
    if required and not values:
        raise InvalidArgument(field, "must not be empty")
    if len(values) > maximum:
        raise InvalidArgument(field, f"must hold at most {maximum} ids")
    for index, value in enumerate(values):
        if not value:
            raise InvalidArgument(f"{field}[{index}]", "must not be empty")
        _check_id(value, f"{field}[{index}]")
    return values


def _check_values(values: list[str], field: str) -> tuple[str, ...]:
    if len(values) > MAX_FILTER_VALUES:
        raise InvalidArgument(field, f"must hold at most {MAX_FILTER_VALUES} values")
    for index, value in enumerate(values):
        _check_id(value, f"{field}[{index}]")
    return tuple(dict.fromkeys(value.strip() for value in values if value.strip()))


def _time_range(message: common_pb2.TimeRange, present: bool, field: str) -> TimeRange:
    return TimeRange.from_pb(message, field) if present else TimeRange()


def turn_filter_from_pb(message: episodic_pb2.TurnFilter, field: str = "filter") -> TurnFilter:
    """Convert and validate a turn filter."""
    return TurnFilter(
        session_id=_check_id(message.session_id, f"{field}.session_id"),
        tags=_check_values(list(message.tags), f"{field}.tags"),
        sources=tuple(
            dict.fromkeys(
                source_from_pb(value, f"{field}.sources[{index}]")
                for index, value in enumerate(message.sources)
            )
        ),
        min_trust=trust_from_pb(message.min_trust, f"{field}.min_trust"),
        time_range=_time_range(message.time_range, message.HasField("time_range"), f"{field}.time_range"),
        include_archived=message.include_archived,
        agent=_check_id(message.agent, f"{field}.agent"),
    )


def episode_filter_from_pb(request: episodic_pb2.SearchEpisodesRequest) -> EpisodeFilter:
    """The filters of an episode search, validated."""
    if request.result not in _OUTCOME_FROM_PB:
        raise InvalidArgument("result", "is not a known outcome")
    return EpisodeFilter(
        tags=_check_values(list(request.tags), "tags"),
        tools=_check_values(list(request.tools), "tools"),
        task_type=_check_id(request.task_type, "task_type").strip(),
        result=_OUTCOME_FROM_PB[request.result],
        sources=tuple(
            dict.fromkeys(
                source_from_pb(value, f"sources[{index}]") for index, value in enumerate(request.sources)
            )
        ),
        min_trust=trust_from_pb(request.min_trust, "min_trust"),
        time_range=_time_range(request.time_range, request.HasField("time_range"), "time_range"),
    )


class EpisodicServicer(
    ExportServicer, TokenServicer, ShareServicer, episodic_pb2_grpc.EpisodicServiceServicer
):
    """EpisodicService on an :class:`EpisodicMemory`."""

    def __init__(self, memory: EpisodicMemory) -> None:
        self._memory = memory

    async def _audit(
        self, action: str, bank_id: str, reason: str, ids: Sequence[str] = (), **details: Any
    ) -> None:
        """Write down a destructive decision before answering it: who (the authenticated caller, or whom the
        mesh acts for), bank, what, on which ids (the first :data:`MAX_AUDITED_IDS`, and their count)."""
        listed = list(ids)
        if listed:
            details |= {"ids": listed[:MAX_AUDITED_IDS], "id_count": len(listed)}
        entry = AuditEntry(
            action=action,
            actor=acting_name(),
            bank_id=bank_id,
            target=listed[0] if len(listed) == 1 else "",
            reason=reason,
            details=details,
        )
        await self._memory.append_audit([entry])

    async def RecordTurns(
        self, request: episodic_pb2.RecordTurnsRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.RecordTurnsResponse:
        check_count(request.turns, "turns", MAX_TURNS_PER_REQUEST, "turns")
        turns = []
        for index, message in enumerate(request.turns):
            _check_id(message.session_id, f"turns[{index}].session_id")
            _check_storable(message, f"turns[{index}]")
            turns.append(Turn.from_pb(message, f"turns[{index}]"))
        held = {
            _required_id(turn_id, "quarantine"): Screening.from_pb(screening, f"quarantine[{turn_id!r}]")
            for turn_id, screening in sorted(request.quarantine.items())
        }
        _check_actor(request.actor, "actor")  # kept for old senders; who acts is the authenticated caller
        result = await self._memory.record_turns(
            request.bank_id, turns, request.index_now, held, acting_name()
        )
        return episodic_pb2.RecordTurnsResponse(
            recorded_count=result.recorded, duplicate_count=result.duplicates, indexed=result.indexed
        )

    async def SearchTurns(
        self, request: episodic_pb2.SearchTurnsRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.SearchTurnsResponse:
        weight = request.rewrite_weight if request.HasField("rewrite_weight") else None
        phrasings = check_phrasings(request.query, request.rewrites, weight, MAX_QUERY_CHARS)
        where = turn_filter_from_pb(request.filter) if request.HasField("filter") else TurnFilter()
        if request.HasField("time_range"):
            if where.time_range.start or where.time_range.end:
                raise InvalidArgument("time_range", "give the time range here or in filter, not both")
            where = dataclasses.replace(where, time_range=TimeRange.from_pb(request.time_range))
        limit = check_limit(request.limit, "limit", DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT)
        if request.quarantined_only:
            if request.HasField("filter") or request.HasField("time_range"):
                raise InvalidArgument("quarantined_only", "searches the review queue without filters")
            if request.bank_ids:
                raise InvalidArgument("bank_ids", "the review queue is searched one bank at a time")
            hits = await self._memory.search_quarantined(request.bank_id, phrasings, limit)
        else:
            banks = requested_banks(request.bank_id, request.bank_ids) if request.bank_ids else ()
            hits = await self._memory.search_turns(request.bank_id, phrasings, where, limit, banks)
        return episodic_pb2.SearchTurnsResponse(hits=scored_turns_to_pb(hits))

    async def ListTurns(
        self, request: episodic_pb2.ListTurnsRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.ListTurnsResponse:
        page_size = check_limit(request.page_size, "page_size", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        where = turn_filter_from_pb(request.filter) if request.HasField("filter") else TurnFilter()
        page = await self._memory.list_turns(
            request.bank_id, where, page_size, request.page_token, request.newest_first
        )
        return episodic_pb2.ListTurnsResponse(
            turns=[turn.to_pb() for turn in page.items], next_page_token=page.next_page_token
        )

    async def WriteEpisode(
        self, request: episodic_pb2.WriteEpisodeRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.WriteEpisodeResponse:
        if not request.HasField("episode"):
            raise InvalidArgument("episode", "is required")
        _check_storable(request.episode, "episode")
        episode = Episode.from_pb(request.episode, "episode")
        stored = await self._memory.write_episode(request.bank_id, episode)
        return episodic_pb2.WriteEpisodeResponse(episode=stored.to_pb())

    async def ListEpisodes(
        self, request: episodic_pb2.ListEpisodesRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.ListEpisodesResponse:
        session_id = _check_id(request.session_id, "session_id")
        page_size = check_limit(request.page_size, "page_size", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        page = await self._memory.list_episodes(request.bank_id, session_id, page_size, request.page_token)
        return episodic_pb2.ListEpisodesResponse(
            episodes=[episode.to_pb() for episode in page.items], next_page_token=page.next_page_token
        )

    async def ForgetTurns(
        self, request: episodic_pb2.ForgetTurnsRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.ForgetTurnsResponse:
        has_filter = request.HasField("filter")
        ids = _check_ids(list(request.turn_ids), "turn_ids", MAX_IDS_PER_FORGET, required=not has_filter)
        where = turn_filter_from_pb(request.filter) if has_filter else None
        if where is not None and where.include_archived:
            raise InvalidArgument("filter.include_archived", "archived turns are forgotten already")
        if request.hard:
            purged = await self._memory.hard_forget(request.bank_id, ids, where)
            await self._audit(
                "forget", request.bank_id, f"{purged.turns} turns deleted for good", purged.ids, hard=True
            )
            await audit_purged_copies(self._audit, request.bank_id, purged)
            return episodic_pb2.ForgetTurnsResponse(
                forgotten_count=purged.turns,
                purged_ids=purged.ids[:MAX_PURGED_IDS_REPLY],
                purged_copies=purged_copies_pb(purged),
            )
        count = await self._memory.forget_turns(request.bank_id, ids, request.hard, where)
        await self._audit(
            "forget", request.bank_id, f"{count} turns archived", ids, hard=False, by_filter=where is not None
        )
        return episodic_pb2.ForgetTurnsResponse(forgotten_count=count)

    async def UpdateTurn(
        self, request: episodic_pb2.UpdateTurnRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.UpdateTurnResponse:
        _required_id(request.turn_id, "turn_id")
        _check_storable(request, "request")
        if not request.text.strip() and not request.HasField("meta"):
            raise InvalidArgument("text", "give new text or new meta")
        if request.text:
            check_text(request.text, "text")
        meta = RecordMeta.from_pb(request.meta, "meta") if request.HasField("meta") else None
        updated = await self._memory.update_turn(
            request.bank_id,
            request.turn_id,
            request.text,
            meta,
            request.index_now,
            agent=_check_id(request.agent, "agent"),
        )
        await self._audit(
            "update",
            request.bank_id,
            f"turn {updated.superseded_id} superseded by {updated.turn.id}",
            (updated.superseded_id,),
            new_id=updated.turn.id,
            text_changed=bool(request.text),
            meta_changed=meta is not None,
        )
        return episodic_pb2.UpdateTurnResponse(
            turn=updated.turn.to_pb(), superseded_id=updated.superseded_id, indexed=updated.indexed
        )

    async def RestoreTurns(
        self, request: episodic_pb2.RestoreTurnsRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.RestoreTurnsResponse:
        ids = _check_ids(list(request.turn_ids), "turn_ids", MAX_IDS_PER_FORGET)
        restored = await self._memory.restore_turns(request.bank_id, ids)
        await self._audit("restore", request.bank_id, f"{restored} turns restored", ids)
        return episodic_pb2.RestoreTurnsResponse(restored_count=restored)

    async def GetTurns(
        self, request: episodic_pb2.GetTurnsRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.GetTurnsResponse:
        ids = _check_ids(list(request.turn_ids), "turn_ids", MAX_IDS_PER_FORGET)
        turns = await self._memory.get_turns(request.bank_id, ids)
        return episodic_pb2.GetTurnsResponse(turns=[turn.to_pb() for turn in turns])

    async def Purge(
        self, request: episodic_pb2.PurgeRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.PurgeResponse:
        chosen = sum((bool(request.ids), bool(request.session_id), request.whole_bank))
        if chosen != 1:
            raise InvalidArgument("ids", "give exactly one of ids, session_id and whole_bank")
        ids = _check_ids(list(request.ids), "ids", MAX_IDS_PER_FORGET, required=False)
        scope = PurgeScope(
            ids=tuple(dict.fromkeys(ids)),
            session_id=_check_id(request.session_id, "session_id"),
            whole_bank=request.whole_bank,
        )
        result = await self._memory.purge(request.bank_id, scope)
        what = (
            "the whole bank"
            if scope.whole_bank
            else f"session {scope.session_id}"
            if scope.session_id
            else "ids"
        )
        await self._audit(
            "purge",
            request.bank_id,
            f"purged {what}: {result.turns} turns, {result.episodes} episodes",
            scope.ids,
            session_id=scope.session_id,
            whole_bank=scope.whole_bank,
            turns=result.turns,
            episodes=result.episodes,
        )
        await audit_purged_copies(self._audit, request.bank_id, result)
        return episodic_pb2.PurgeResponse(
            turn_count=result.turns,
            episode_count=result.episodes,
            outbox_count=result.outbox,
            purged_ids=result.ids[:MAX_PURGED_IDS_REPLY],
            purged_copies=purged_copies_pb(result),
        )

    async def SearchEpisodes(
        self, request: episodic_pb2.SearchEpisodesRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.SearchEpisodesResponse:
        if len(request.query) > MAX_QUERY_CHARS:
            raise InvalidArgument("query", f"must be at most {MAX_QUERY_CHARS} characters")
        where = episode_filter_from_pb(request)
        limit = check_limit(request.limit, "limit", DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT)
        hits = await self._memory.search_episodes(request.bank_id, request.query, where, limit)
        return episodic_pb2.SearchEpisodesResponse(
            hits=[episodic_pb2.ScoredEpisode(episode=hit.episode.to_pb(), score=hit.score) for hit in hits]
        )

    async def SegmentSession(
        self, request: episodic_pb2.SegmentSessionRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.SegmentSessionResponse:
        _required_id(request.session_id, "session_id")
        result = await self._memory.segment_session(request.bank_id, request.session_id, request.final)
        return episodic_pb2.SegmentSessionResponse(
            episodes=[episode.to_pb() for episode in result.episodes], method=result.method
        )

    async def RecordAccess(
        self, request: episodic_pb2.RecordAccessRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.RecordAccessResponse:
        if len(request.records) > MAX_ACCESSED:
            raise InvalidArgument("records", f"must hold at most {MAX_ACCESSED} records")
        records = []
        for index, record in enumerate(request.records):
            if not record.id:
                raise InvalidArgument(f"records[{index}].id", "is required")
            _check_id(record.id, f"records[{index}].id")
            if record.layer not in LAYERS:
                raise InvalidArgument(
                    f"records[{index}].layer", f"must be one of {', '.join(sorted(LAYERS))}"
                )
            records.append((record.id, record.layer))
        return episodic_pb2.RecordAccessResponse(
            accepted_count=self._memory.record_access(request.bank_id, records)
        )

    async def GetAccessStats(
        self, request: episodic_pb2.GetAccessStatsRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.GetAccessStatsResponse:
        ids = _check_ids(list(request.ids), "ids", MAX_ACCESSED)
        stats = await self._memory.access_stats(request.bank_id, ids)
        return episodic_pb2.GetAccessStatsResponse(
            stats=[
                episodic_pb2.AccessStats(
                    id=item.id,
                    layer=item.layer,
                    hit_count=item.hit_count,
                    last_hit=to_timestamp(item.last_hit),
                    freshness=item.freshness,
                    stale=item.stale,
                    hot=item.hot,
                )
                for item in stats
            ]
        )

    async def OutboxStatus(
        self, request: episodic_pb2.OutboxStatusRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.OutboxStatusResponse:
        counts = await self._memory.outbox_status(request.bank_id)
        return episodic_pb2.OutboxStatusResponse(
            pending=counts.pending, delivered=counts.delivered, dead_letters=counts.dead_letters
        )

    async def HealWorkingWindows(
        self, request: episodic_pb2.HealWorkingWindowsRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.HealWorkingWindowsResponse:
        ids = _check_ids(list(request.turn_ids), "turn_ids", MAX_TURNS_PER_REQUEST)
        queued = await self._memory.heal_working_windows(request.bank_id, ids)
        return episodic_pb2.HealWorkingWindowsResponse(queued_count=queued)

    async def ListDeadLetters(
        self, request: episodic_pb2.ListDeadLettersRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.ListDeadLettersResponse:
        caller_var.get().require_admin("ListDeadLetters")
        limit = check_limit(request.limit, "limit", DEFAULT_AUDIT_PAGE, MAX_PAGE_SIZE)
        page = await self._memory.list_dead_letters(request.bank_id, limit, request.page_token)
        return episodic_pb2.ListDeadLettersResponse(
            dead_letters=[letter.to_pb() for letter in page.items],
            next_page_token=page.next_page_token,
            counts=page.counts,
        )

    async def RetryDeadLetters(
        self, request: episodic_pb2.RetryDeadLettersRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.RetryDeadLettersResponse:
        handled = await _handle_dead_letters(request, "RetryDeadLetters", self._memory.retry_dead_letters)
        return episodic_pb2.RetryDeadLettersResponse(retried_count=handled.count, missing_ids=handled.missing)

    async def DropDeadLetters(
        self, request: episodic_pb2.DropDeadLettersRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.DropDeadLettersResponse:
        handled = await _handle_dead_letters(request, "DropDeadLetters", self._memory.drop_dead_letters)
        return episodic_pb2.DropDeadLettersResponse(dropped_count=handled.count, missing_ids=handled.missing)

    async def ListQuarantined(
        self, request: episodic_pb2.ListQuarantinedRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.ListQuarantinedResponse:
        limit = check_limit(request.limit, "limit", DEFAULT_QUEUE_PAGE, MAX_PAGE_SIZE)
        page, pending = await self._memory.list_quarantined(
            request.bank_id, check_status(request.status), limit, request.page_token
        )
        return episodic_pb2.ListQuarantinedResponse(
            items=[item.to_pb() for item in page.items],
            next_page_token=page.next_page_token,
            pending_count=pending,
        )

    async def ReviewQuarantined(
        self, request: episodic_pb2.ReviewQuarantinedRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.ReviewQuarantinedResponse:
        ids = _check_ids(list(request.turn_ids), "turn_ids", MAX_IDS_PER_FORGET)
        decision = decision_from_pb(request.decision)
        _check_actor(request.reviewer, "reviewer")  # never trusted: the reviewer is the authenticated caller
        reviewer = acting_name()
        if len(request.note) > MAX_QUERY_CHARS or "\x00" in request.note:
            raise InvalidArgument("note", f"must be at most {MAX_QUERY_CHARS} characters, without NUL")
        result = await self._memory.review_quarantined(request.bank_id, ids, decision, reviewer, request.note)
        return episodic_pb2.ReviewQuarantinedResponse(
            approved_count=result.approved,
            rejected_count=result.rejected,
            not_pending_ids=list(result.not_pending),
        )

    async def AppendAudit(
        self, request: episodic_pb2.AppendAuditRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.AppendAuditResponse:
        check_count(request.entries, "entries", MAX_AUDIT_ENTRIES, "entries")
        entries = [AuditEntry.from_pb(entry, f"entries[{i}]") for i, entry in enumerate(request.entries)]
        entries = [_attributed(entry) for entry in entries]
        return episodic_pb2.AppendAuditResponse(appended_count=await self._memory.append_audit(entries))

    async def ListAudit(
        self, request: episodic_pb2.ListAuditRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.ListAuditResponse:
        limit = check_limit(request.limit, "limit", DEFAULT_AUDIT_PAGE, MAX_PAGE_SIZE)
        action = _check_id(request.action, "action").strip()
        since = from_timestamp(request.since) if request.HasField("since") else None
        page = await self._memory.list_audit(request.bank_id, action, since, limit, request.page_token)
        return episodic_pb2.ListAuditResponse(
            entries=[entry.to_pb() for entry in page.items], next_page_token=page.next_page_token
        )


def _attributed(entry: AuditEntry) -> AuditEntry:
    """An entry's actor as the caller may state it: the mesh (the edge, writing down decisions about its
    callers) and the operator (restoring an exported log) name whom each entry is about (no other credential
    reaches a layer's port); an entry naming nobody is the appending caller's."""
    caller = caller_var.get()
    if entry.actor and (caller.mesh or caller.admin):
        return entry
    return dataclasses.replace(entry, actor=acting_name())


def _check_letter_ids(values: list[int]) -> list[int]:
    if len(values) > MAX_IDS_PER_FORGET:
        raise InvalidArgument("ids", f"must hold at most {MAX_IDS_PER_FORGET} ids")
    if any(value <= 0 for value in values):
        raise InvalidArgument("ids", "must be positive dead-letter ids")
    return values


async def _handle_dead_letters(
    request: episodic_pb2.RetryDeadLettersRequest | episodic_pb2.DropDeadLettersRequest,
    method: str,
    act: Callable[[str, Sequence[int], str], Awaitable[Handled]],
) -> Handled:
    """A retry or a drop of dead letters: the same admin check, id check and actor (the operator) for both."""
    caller = caller_var.get()
    caller.require_admin(method)
    return await act(request.bank_id, _check_letter_ids(list(request.ids)), caller.name)


def _check_actor(value: str, field: str) -> str:
    if len(value) > MAX_ACTOR_CHARS or "\x00" in value:
        raise InvalidArgument(field, f"must be at most {MAX_ACTOR_CHARS} characters, without NUL")
    return value
