"""Reflection: read a bank's episodes, derive lessons, merge them into the store."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from hindsight.reflect.derive import derive_lessons
from hindsight.reflect.domain import LessonPage, Reflection, ScoredLesson
from hindsight.reflect.episodes import EpisodeSource
from hindsight.reflect.store import LessonStore

log = logging.getLogger(__name__)


@dataclass
class ReflectEngine:
    """Reflect, list and search inside one bank."""

    store: LessonStore
    episodes: EpisodeSource
    max_episodes: int

    async def reflect(self, bank_id: str, session_id: str) -> Reflection:
        """Derive lessons from the bank's (or one session's) episodes; a known lesson is merged, not added."""
        batch = await self.episodes.read(bank_id, session_id, self.max_episodes)
        stored = await self.store.upsert(bank_id, derive_lessons(bank_id, batch.episodes))
        stored.sort(key=lambda lesson: (-lesson.confidence, lesson.id))
        log.info(
            "reflected",
            extra={
                "episodes_read": len(batch.episodes),
                "lessons": len(stored),
                "truncated": batch.truncated,
            },
        )
        return Reflection(stored, len(batch.episodes))

    async def list_lessons(self, bank_id: str, page_size: int, page_token: str) -> LessonPage:
        """Most confident first."""
        return await self.store.page(bank_id, page_size, page_token)

    async def search(self, bank_id: str, query: str, limit: int) -> list[ScoredLesson]:
        """Keyword relevance weighted by confidence; returned lessons count a hit."""
        return await self.store.search(bank_id, query, limit)
