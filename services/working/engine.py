"""Working-memory logic: appending to session windows, reading them, and ranking recent turns."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from hindsight.runtime.records import Turn
from hindsight.runtime.text import overlap_score, term_counts
from hindsight.working.settings import WorkingSettings
from hindsight.working.store import StoredTurn, WindowStore

RECENCY_BOOST = 0.1
"""How much a brand-new turn's score grows: it orders near-ties, never beats a better match."""


@dataclass(frozen=True)
class RecentHit:
    """A recent turn that shares terms with the query, and its score."""

    turn: Turn
    score: float


def recency_weight(age_seconds: float, half_life_seconds: float) -> float:
    """1 for a turn appended now, halving every ``half_life_seconds``."""
    return 0.5 ** (max(age_seconds, 0.0) / half_life_seconds)


def searchable_text(turn: Turn) -> str:
    """What a query is matched against: the speaker's name and the text."""
    return f"{turn.speaker} {turn.text}" if turn.speaker else turn.text


def rank_recent(
    query: str, candidates: Sequence[StoredTurn], now: float, half_life_seconds: float, limit: int
) -> list[RecentHit]:
    """Candidates scored by term overlap with ``query`` times a small recency boost, best first.

    Turns sharing no term with the query are left out: recency alone never makes a hit.
    """
    query_terms = term_counts(query)
    if not query_terms:
        return []
    scored: list[tuple[float, float, RecentHit]] = []
    for candidate in candidates:
        overlap = overlap_score(query_terms, term_counts(searchable_text(candidate.turn)))
        if overlap <= 0.0:
            continue
        boost = 1.0 + RECENCY_BOOST * recency_weight(now - candidate.appended_at, half_life_seconds)
        hit = RecentHit(candidate.turn, overlap * boost)
        scored.append((hit.score, candidate.appended_at, hit))
    scored.sort(key=lambda item: (-item[0], -item[1], item[2].turn.id))
    return [hit for _, _, hit in scored[:limit]]


@dataclass
class WorkingMemory:
    """Session windows of a bank, on a :class:`WindowStore`."""

    store: WindowStore
    settings: WorkingSettings
    clock: Callable[[], float] = field(default=time.time)

    async def append(self, bank_id: str, turns: Sequence[Turn]) -> int:
        """Append turns to their windows, skipping those already there; returns how many were new."""
        if not turns:
            return 0
        return await self.store.append(bank_id, turns, self.clock())

    async def window(self, bank_id: str, session_id: str, max_turns: int) -> list[Turn]:
        """The last ``max_turns`` turns of the session, oldest first (empty when unknown or expired)."""
        return [entry.turn for entry in await self.store.window(bank_id, session_id, max_turns)]

    async def forget(self, bank_id: str, turn_ids: Sequence[str]) -> int:
        """Remove turns from every live window of the bank; returns how many were removed."""
        return await self.store.forget(bank_id, list(dict.fromkeys(turn_ids))) if turn_ids else 0

    async def search(self, bank_id: str, query: str, session_id: str, limit: int) -> list[RecentHit]:
        """Recent turns of one session (or of the bank's live sessions) ranked against ``query``."""
        now = self.clock()
        if session_id:
            sessions = [session_id]
        else:
            sessions = await self.store.live_sessions(bank_id, now, self.settings.search_sessions)
        candidates = await self.store.recent(bank_id, sessions, self.settings.max_window)
        return rank_recent(query, candidates, now, self.settings.recency_half_life_seconds, limit)
