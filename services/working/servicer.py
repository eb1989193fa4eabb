"""The gRPC face of working memory: validates and converts protobuf, then calls the engine."""

from __future__ import annotations

from collections.abc import Iterable

import grpc

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
from hindsight.runtime.banks import requested_banks
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.records import TimeRange, Turn, scored_turns_to_pb
from hindsight.runtime.replies import reply_from
from hindsight.runtime.rewrites import check_phrasings
from hindsight.runtime.validation import (
    check_count,
    check_length,
    check_limit,
    check_removal_scope,
    check_tags,
)
from hindsight.working.engine import WorkingMemory
from hindsight.working.entries import Entry, EntryKind

DEFAULT_WINDOW = 20
MAX_WINDOW = 200
DEFAULT_SEARCH_LIMIT = 10
MAX_SEARCH_LIMIT = 100
MAX_TURNS_PER_APPEND = 1000
MAX_SESSION_ID_CHARS = 256
MAX_QUERY_CHARS = 10_000
MAX_TOKEN_BUDGET = 2_000_000

_KIND_TO_PB = {
    EntryKind.TURN: working_pb2.ENTRY_KIND_TURN,
    EntryKind.SUMMARY: working_pb2.ENTRY_KIND_SUMMARY,
}


def entry_to_pb(entry: Entry) -> working_pb2.WindowEntry:
    """Convert a window entry."""
    return working_pb2.WindowEntry(
        kind=_KIND_TO_PB[entry.kind],
        turn=entry.turn.to_pb(),
        summary=entry.summary,
        token_count=entry.token_count,
        timestamp_ms=entry.timestamp_ms,
    )


def _check_session_id(session_id: str, field: str, required: bool) -> str:
    if required and not session_id:
        raise InvalidArgument(field, "is required")
    return check_length(session_id, field, MAX_SESSION_ID_CHARS)


def turns_from_pb(messages: Iterable[common_pb2.Turn], field: str = "turns") -> list[Turn]:
    """Validate and convert the turns of a request, naming the offending element on error."""
    items = list(messages)
    check_count(items, field, MAX_TURNS_PER_APPEND, "turns")
    turns = []
    for index, message in enumerate(items):
        name = f"{field}[{index}]"
        _check_session_id(message.session_id, f"{name}.session_id", required=False)
        turns.append(Turn.from_pb(message, name))
    return turns


class WorkingServicer(working_pb2_grpc.WorkingMemoryServiceServicer):
    """WorkingMemoryService on a :class:`WorkingMemory`."""

    def __init__(self, memory: WorkingMemory) -> None:
        self._memory = memory

    async def AppendTurns(
        self, request: working_pb2.AppendTurnsRequest, context: grpc.aio.ServicerContext
    ) -> working_pb2.AppendTurnsResponse:
        turns = turns_from_pb(request.turns)
        result = await self._memory.append(request.bank_id, turns)
        return working_pb2.AppendTurnsResponse(
            appended_count=result.appended, compressed_group_count=result.compressed_groups
        )

    async def GetWindow(
        self, request: working_pb2.GetWindowRequest, context: grpc.aio.ServicerContext
    ) -> working_pb2.GetWindowResponse:
        session_id = _check_session_id(request.session_id, "session_id", required=True)
        max_turns = check_limit(request.max_turns, "max_turns", DEFAULT_WINDOW, MAX_WINDOW)
        turns = await self._memory.window(request.bank_id, session_id, max_turns)
        return working_pb2.GetWindowResponse(turns=[turn.to_pb() for turn in turns])

    async def SearchRecent(
        self, request: working_pb2.SearchRecentRequest, context: grpc.aio.ServicerContext
    ) -> working_pb2.SearchRecentResponse:
        weight = request.rewrite_weight if request.HasField("rewrite_weight") else None
        phrasings = check_phrasings(request.query, request.rewrites, weight, MAX_QUERY_CHARS)
        session_id = _check_session_id(request.session_id, "session_id", required=False)
        limit = check_limit(request.limit, "limit", DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT)
        window = TimeRange.from_pb(request.time_range if request.HasField("time_range") else None)
        tags = check_tags(request.tags)
        banks = requested_banks(request.bank_id, request.bank_ids) if request.bank_ids else ()
        hits = await self._memory.search(request.bank_id, phrasings, session_id, limit, window, tags, banks)
        return working_pb2.SearchRecentResponse(hits=scored_turns_to_pb(hits))

    async def ForgetTurns(
        self, request: working_pb2.ForgetTurnsRequest, context: grpc.aio.ServicerContext
    ) -> working_pb2.ForgetTurnsResponse:
        ids = check_removal_scope(request, "turn_ids", MAX_TURNS_PER_APPEND, MAX_SESSION_ID_CHARS)
        removed = await self._memory.forget(request.bank_id, ids, request.session_id, request.whole_bank)
        return working_pb2.ForgetTurnsResponse(removed_count=removed)

    async def GetContext(
        self, request: working_pb2.GetContextRequest, context: grpc.aio.ServicerContext
    ) -> working_pb2.GetContextResponse:
        session_id = _check_session_id(request.session_id, "session_id", required=True)
        budget = check_limit(
            request.token_budget, "token_budget", self._memory.settings.context_budget, MAX_TOKEN_BUDGET
        )
        result = await self._memory.context(request.bank_id, session_id, budget)
        return working_pb2.GetContextResponse(
            summaries=[entry_to_pb(entry) for entry in result.summaries],
            turns=[entry_to_pb(entry) for entry in result.turns],
            token_count=result.token_count,
            session_token_count=result.session_token_count,
            omitted_count=result.omitted_count,
            token_budget=result.budget,
        )

    async def Compress(
        self, request: working_pb2.CompressRequest, context: grpc.aio.ServicerContext
    ) -> working_pb2.CompressResponse:
        session_id = _check_session_id(request.session_id, "session_id", required=True)
        result = await self._memory.compress(request.bank_id, session_id, request.target_tokens or None)
        return working_pb2.CompressResponse(
            group_count=result.groups,
            summarised_turn_count=result.summarised_turns,
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
            summariser=result.summariser,
        )

    async def CloseSession(
        self, request: working_pb2.CloseSessionRequest, context: grpc.aio.ServicerContext
    ) -> working_pb2.CloseSessionResponse:
        session_id = _check_session_id(request.session_id, "session_id", required=True)
        stats = await self._memory.close_session(request.bank_id, session_id)
        if stats is None:
            return working_pb2.CloseSessionResponse(closed=False)
        return reply_from(working_pb2.CloseSessionResponse, stats, closed=True)
