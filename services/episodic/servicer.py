"""The gRPC face of episodic memory: validates and converts protobuf, then calls the engine."""

from __future__ import annotations

import grpc
from google.protobuf.message import Message

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.episodic.engine import EpisodicMemory
from hindsight.episodic.models import Episode
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.records import TimeRange, Turn
from hindsight.runtime.validation import check_limit, check_text

DEFAULT_SEARCH_LIMIT = 10
MAX_SEARCH_LIMIT = 200
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
MAX_TURNS_PER_REQUEST = 1000
MAX_IDS_PER_FORGET = 1000
MAX_ID_CHARS = 256
MAX_QUERY_CHARS = 10_000


def _check_id(value: str, field: str) -> str:
    if len(value) > MAX_ID_CHARS:
        raise InvalidArgument(field, f"must be at most {MAX_ID_CHARS} characters")
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


class EpisodicServicer(episodic_pb2_grpc.EpisodicServiceServicer):
    """EpisodicService on an :class:`EpisodicMemory`."""

    def __init__(self, memory: EpisodicMemory) -> None:
        self._memory = memory

    async def RecordTurns(
        self, request: episodic_pb2.RecordTurnsRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.RecordTurnsResponse:
        if not request.turns:
            raise InvalidArgument("turns", "must not be empty")
        if len(request.turns) > MAX_TURNS_PER_REQUEST:
            raise InvalidArgument("turns", f"must hold at most {MAX_TURNS_PER_REQUEST} turns")
        turns = []
        for index, message in enumerate(request.turns):
            _check_id(message.session_id, f"turns[{index}].session_id")
            _check_storable(message, f"turns[{index}]")
            turns.append(Turn.from_pb(message, f"turns[{index}]"))
        result = await self._memory.record_turns(request.bank_id, turns)
        return episodic_pb2.RecordTurnsResponse(
            recorded_count=result.recorded, duplicate_count=result.duplicates
        )

    async def SearchTurns(
        self, request: episodic_pb2.SearchTurnsRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.SearchTurnsResponse:
        query = check_text(request.query, "query", MAX_QUERY_CHARS)
        time_range = TimeRange.from_pb(request.time_range) if request.HasField("time_range") else TimeRange()
        limit = check_limit(request.limit, "limit", DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT)
        hits = await self._memory.search_turns(request.bank_id, query, time_range, limit)
        return episodic_pb2.SearchTurnsResponse(
            hits=[common_pb2.ScoredTurn(turn=hit.turn.to_pb(), score=hit.score) for hit in hits]
        )

    async def ListTurns(
        self, request: episodic_pb2.ListTurnsRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.ListTurnsResponse:
        page_size = check_limit(request.page_size, "page_size", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        page = await self._memory.list_turns(request.bank_id, page_size, request.page_token)
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
        if not request.turn_ids:
            raise InvalidArgument("turn_ids", "must not be empty")
        if len(request.turn_ids) > MAX_IDS_PER_FORGET:
            raise InvalidArgument("turn_ids", f"must hold at most {MAX_IDS_PER_FORGET} ids")
        for index, turn_id in enumerate(request.turn_ids):
            if not turn_id:
                raise InvalidArgument(f"turn_ids[{index}]", "must not be empty")
            _check_id(turn_id, f"turn_ids[{index}]")
        count = await self._memory.forget_turns(request.bank_id, list(request.turn_ids), request.hard)
        return episodic_pb2.ForgetTurnsResponse(forgotten_count=count)
