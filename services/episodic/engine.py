"""Episodic-memory logic: recording, searching, paging and forgetting, on an :class:`EpisodicStore`."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Generic, TypeVar

from hindsight.episodic.models import Episode
from hindsight.episodic.paging import PageKey, decode_page_token, encode_page_token
from hindsight.episodic.store import EpisodicStore, RecordResult, ScoredTurn
from hindsight.runtime.records import TimeRange, Turn, utcnow
from hindsight.runtime.text import search_terms
from hindsight.runtime.tsearch import query_terms

T = TypeVar("T")

TURNS_LIST = "turns"
EPISODES_LIST = "episodes"


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list and the token for the next ("" on the last page)."""

    items: list[T]
    next_page_token: str


def _key_of_turn(turn: Turn) -> PageKey:
    if turn.meta.time is None:
        raise ValueError(f"stored turn {turn.id!r} has no time")
    return PageKey(turn.meta.time, turn.id)


def _key_of_episode(episode: Episode) -> PageKey:
    if episode.meta.time is None:
        raise ValueError(f"stored episode {episode.id!r} has no time")
    return PageKey(episode.meta.time, episode.id)


@dataclass
class EpisodicMemory:
    """The system of record of a bank's turns and episodes."""

    store: EpisodicStore
    clock: Callable[[], datetime] = field(default=utcnow)

    async def record_turns(self, bank_id: str, turns: Sequence[Turn]) -> RecordResult:
        """Store turns idempotently: an id already stored in the bank counts as a duplicate, unchanged.

        A turn without a time happened when it was recorded; those of one request get successive
        microseconds so that listing in time order keeps the order they were sent in.
        """
        now = self.clock()
        timed = [
            turn
            if turn.meta.time
            else replace(turn, meta=replace(turn.meta, time=now + timedelta(microseconds=i)))
            for i, turn in enumerate(turns)
        ]
        return await self.store.record_turns(bank_id, timed)

    async def search_turns(
        self, bank_id: str, query: str, time_range: TimeRange, limit: int
    ) -> list[ScoredTurn]:
        """Live turns sharing keywords (English stems, Chinese characters and bigrams), ranked by BM25."""
        usable = set(query_terms(query, search_terms))
        lexemes = [term for term in search_terms(query) if term in usable]  # repeats weigh more
        if not lexemes:
            return []
        return await self.store.search_turns(bank_id, lexemes, time_range, limit)

    async def list_turns(self, bank_id: str, page_size: int, page_token: str) -> Page[Turn]:
        """A page of live turns in time order."""
        after = decode_page_token(TURNS_LIST, page_token)
        rows = await self.store.list_turns(bank_id, after, page_size + 1)
        items = rows[:page_size]
        token = encode_page_token(TURNS_LIST, _key_of_turn(items[-1])) if len(rows) > page_size else ""
        return Page(items, token)

    async def write_episode(self, bank_id: str, episode: Episode) -> Episode:
        """Store an episode, generating its id when empty; writing a stored id again returns it unchanged."""
        if not episode.id:
            episode = replace(episode, id=uuid.uuid4().hex)
        return await self.store.write_episode(bank_id, episode)

    async def list_episodes(
        self, bank_id: str, session_id: str, page_size: int, page_token: str
    ) -> Page[Episode]:
        """A page of episodes, newest first, optionally of one session."""
        before = decode_page_token(EPISODES_LIST, page_token)
        rows = await self.store.list_episodes(bank_id, session_id, before, page_size + 1)
        items = rows[:page_size]
        token = encode_page_token(EPISODES_LIST, _key_of_episode(items[-1])) if len(rows) > page_size else ""
        return Page(items, token)

    async def forget_turns(self, bank_id: str, turn_ids: Sequence[str], hard: bool) -> int:
        """Archive turns (recoverable), or delete them for good when ``hard``; returns how many."""
        return await self.store.forget_turns(bank_id, list(dict.fromkeys(turn_ids)), hard)
