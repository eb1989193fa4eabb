"""Reading episodes from the episodic layer over gRPC: the only way this layer sees them."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Protocol

from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.reflect.domain import Episode, Result
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.records import RecordMeta, Source, from_timestamp

log = logging.getLogger(__name__)

PAGE_SIZE = 100
"""Episodes asked for per ListEpisodes call."""
TURNS_PER_CALL = 1000
"""Turn ids per GetTurns call (the episodic layer's limit)."""

_RESULT_FROM_PB = {
    episodic_pb2.OUTCOME_UNSPECIFIED: Result.UNKNOWN,
    episodic_pb2.OUTCOME_SUCCESS: Result.SUCCESS,
    episodic_pb2.OUTCOME_FAILURE: Result.FAILURE,
}


@dataclass(frozen=True)
class EpisodeBatch:
    """The episodes read, and whether more existed than the reading limit allowed."""

    episodes: list[Episode]
    truncated: bool


class EpisodeSource(Protocol):
    """Where reflection reads a bank's episodes."""

    async def read(self, bank_id: str, session_id: str, limit: int) -> EpisodeBatch:
        """The bank's newest ``limit`` episodes (optionally of one session)."""
        ...


def episode_from_pb(message: episodic_pb2.Episode) -> Episode:
    """Convert an episode the episodic layer already validated."""
    return Episode(
        id=message.id,
        situation=message.situation,
        action=message.action,
        outcome=message.outcome,
        lesson=message.lesson,
        task_type=message.task_type.strip(),
        result=_RESULT_FROM_PB.get(message.result, Result.UNKNOWN),
        session_id=message.session_id,
        tools=tuple(message.tools),
        meta=RecordMeta.from_pb(message.meta, "episode.meta"),
        recorded_at=from_timestamp(message.recorded_at) if message.HasField("recorded_at") else None,
    )


class EpisodicClient:
    """The real source: ``EpisodicService.ListEpisodes``, every page up to the limit."""

    def __init__(
        self,
        client: LayerClient[episodic_pb2_grpc.EpisodicServiceStub],
        page_size: int = PAGE_SIZE,
        turn_sources: bool = True,
    ):
        self._client = client
        self._page_size = page_size
        self._turn_sources = turn_sources

    async def _with_sources(self, bank_id: str, episodes: list[Episode]) -> list[Episode]:
        """Episodes with the sources of their turns (``GetTurns``, a page of ids at a time), so that a
        lesson is never drawn from tool or outside content alone (:func:`.derive.vouched`)."""
        ids = list(dict.fromkeys(t for e in episodes for t in e.meta.source_turn_ids))
        if not self._turn_sources or not ids:
            return episodes
        sources: dict[str, Source] = {}
        for start in range(0, len(ids), TURNS_PER_CALL):
            reply = await self._client.call(
                "GetTurns",
                episodic_pb2.GetTurnsRequest(bank_id=bank_id, turn_ids=ids[start : start + TURNS_PER_CALL]),
            )
            sources.update((turn.id, RecordMeta.from_pb(turn.meta).source) for turn in reply.turns)
        return [
            replace(e, turn_sources=tuple(sources[t] for t in e.meta.source_turn_ids if t in sources))
            for e in episodes
        ]

    async def read(self, bank_id: str, session_id: str, limit: int) -> EpisodeBatch:
        """Pages are newest first, so a bank larger than ``limit`` is reflected on by its newest episodes."""
        episodes: list[Episode] = []
        token = ""
        while True:
            reply = await self._client.call(
                "ListEpisodes",
                episodic_pb2.ListEpisodesRequest(
                    bank_id=bank_id,
                    session_id=session_id,
                    page_size=min(self._page_size, limit - len(episodes)),
                    page_token=token,
                ),
            )
            episodes.extend(episode_from_pb(message) for message in reply.episodes)
            token = reply.next_page_token
            if not token or not reply.episodes:
                return EpisodeBatch(await self._with_sources(bank_id, episodes[:limit]), truncated=False)
            if len(episodes) >= limit:
                log.warning("reflection read only the newest episodes", extra={"limit": limit})
                return EpisodeBatch(await self._with_sources(bank_id, episodes[:limit]), truncated=True)
