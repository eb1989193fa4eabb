"""Reflection and the lesson life cycle: read episodes, write lessons, let unused ones fade, merge twins.

Reflection uses the LLM when one is configured and the bank's hourly LLM budget allows, and the
deterministic rules otherwise (or when the LLM gives no usable answer). Maintenance is a pure function
of the stored state and the clock: freshness is ``decay_factor ** whole periods unused``, so running it
twice at the same time changes nothing the second time, and a run stopped half-way resumes by running
again. Nothing is ever deleted: archived lessons keep their row and the link to what replaced them.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Protocol

import numpy as np

from hindsight.contracts.inference.v1 import inference_pb2_grpc
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.reflect.derive import derive_lessons, vouched
from hindsight.reflect.domain import (
    Episode,
    Lesson,
    LessonPage,
    Maintenance,
    Method,
    Reflection,
    ScoredLesson,
)
from hindsight.reflect.episodes import EpisodeSource
from hindsight.reflect.llm_reflect import LLMReflector, has_results
from hindsight.reflect.matching import LessonMatcher, terms_only_relevance
from hindsight.reflect.settings import ReflectSettings
from hindsight.reflect.store import LessonStore, Merge
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.errors import FailedPrecondition, Unavailable
from hindsight.runtime.logs import deadline_var
from hindsight.runtime.offload import off_loop
from hindsight.runtime.records import to_timestamp
from hindsight.runtime.rewrites import Phrasings
from hindsight.runtime.vectors import embed_texts

log = logging.getLogger(__name__)

BATCH = 500
"""Lessons per maintenance batch (each batch is its own transaction)."""
AUDIT_LIMIT = 100
"""Conflicts one maintenance run lists per bank."""
MERGED_CONFIDENCE_CAP = 0.95
DERIVE_OFF_LOOP_EPISODES = 50
"""Episodes from which the rules derive lessons (~40 us an episode) on a worker thread."""
MERGE_OFF_LOOP_LESSONS = 32
"""Lessons from which the search for near-duplicates (all pairs: ~6 ms for 100) runs on a worker thread."""


DEADLINE_MARGIN_SECONDS = 1.0
"""Time kept back from the caller's deadline for the rules and the store when the LLM is too slow."""


def _time_left() -> float | None:
    """Seconds the LLM may take within the incoming call's deadline; None without a deadline."""
    deadline = deadline_var.get()
    return None if deadline is None else deadline - time.monotonic() - DEADLINE_MARGIN_SECONDS


def utc_now() -> datetime:
    """The real clock; tests inject their own."""
    return datetime.now(UTC)


class Embedder(Protocol):
    """Embeds texts for near-duplicate detection (L2-normalised vectors)."""

    async def embed(self, bank_id: str, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text."""
        ...


class InferenceEmbedder:
    """The real embedder: the inference layer's ``Embed`` over gRPC."""

    def __init__(self, client: LayerClient[inference_pb2_grpc.InferenceServiceStub]) -> None:
        self._client = client

    async def embed(self, bank_id: str, texts: Sequence[str]) -> list[list[float]]:
        """In batches, so no request exceeds the service's limit."""
        vectors: list[list[float]] = (await embed_texts(self._client, bank_id, texts)).vectors.tolist()
        return vectors


class ColdTier(Protocol):
    """The semantic layer as maintenance sees it: its cold tier and its queue of conflicts to review."""

    async def mark_cold(self, bank_id: str, unused_before: datetime, importance_below: float) -> int:
        """Move records untouched since ``unused_before`` and less important than that to the cold tier."""
        ...

    async def open_conflicts(self, bank_id: str) -> list[str]:
        """One line per contradictory current fact waiting for review."""
        ...


class SemanticColdTier:
    """The real cold tier: the semantic layer's ``MarkCold`` over gRPC."""

    def __init__(self, client: LayerClient[semantic_pb2_grpc.SemanticServiceStub]) -> None:
        self._client = client

    async def mark_cold(self, bank_id: str, unused_before: datetime, importance_below: float) -> int:
        """Returns how many records moved."""
        reply = await self._client.call(
            "MarkCold",
            semantic_pb2.MarkColdRequest(
                bank_id=bank_id, unused_before=to_timestamp(unused_before), importance_below=importance_below
            ),
        )
        return int(reply.moved_count)

    async def open_conflicts(self, bank_id: str) -> list[str]:
        """The review queue (oldest first, at most :data:`AUDIT_LIMIT`) as audit lines."""
        reply = await self._client.call(
            "ListReviews", semantic_pb2.ListReviewsRequest(bank_id=bank_id, limit=AUDIT_LIMIT)
        )
        return [
            f"{item.id}: {item.current.subject} {item.current.attribute}: "
            f"{item.current.value or item.current.text!r} vs {item.candidate.value or item.candidate.text!r} "
            f"({item.reason})"
            for item in reply.items
        ]


def freshness(lesson: Lesson, now: datetime, settings: ReflectSettings) -> float:
    """``decay_factor ** whole decay periods since the lesson was last recalled (or written)``."""
    used = lesson.last_hit_at or lesson.created_at or now
    periods = max(0, math.floor((now - used) / timedelta(days=settings.decay_after_days)))
    return round(settings.decay_factor**periods, 6)


def should_archive(lesson: Lesson, weight: float, now: datetime, settings: ReflectSettings) -> bool:
    """Unused longer than ``archive_after_days`` and ``confidence * weight`` below the threshold."""
    used = lesson.last_hit_at or lesson.created_at or now
    unused_long = now - used >= timedelta(days=settings.archive_after_days)
    return unused_long and lesson.confidence * weight < settings.archive_below_weight


def merged_confidence(confidences: Sequence[float]) -> float:
    """Independent corroboration: ``1 - prod(1 - c)``, capped."""
    doubt = math.prod(1.0 - c for c in confidences)
    return round(min(MERGED_CONFIDENCE_CAP, 1.0 - doubt), 4)


def near_duplicates(
    lessons: Sequence[Lesson], vectors: Sequence[Sequence[float]], threshold: float
) -> list[Merge]:
    """Groups of lessons at cosine >= ``threshold`` to a kept one (the most confident, then most used, then
    oldest); each lesson joins at most one group."""
    if len(lessons) < 2:
        return []
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)
    similar = matrix @ matrix.T
    order = sorted(
        range(len(lessons)),
        key=lambda i: (
            -lessons[i].confidence,
            -lessons[i].hit_count,
            lessons[i].created_at or datetime.min.replace(tzinfo=UTC),
            lessons[i].id,
        ),
    )
    taken: set[int] = set()
    merges = []
    for keep in order:
        if keep in taken:
            continue
        twins = [i for i in order if i != keep and i not in taken and similar[keep, i] >= threshold]
        if not twins:
            continue
        taken.update([keep, *twins])
        merges.append(
            Merge(
                keep_id=lessons[keep].id,
                confidence=merged_confidence(
                    [lessons[keep].confidence, *(lessons[i].confidence for i in twins)]
                ),
                merged_ids=sorted(lessons[i].id for i in twins),
            )
        )
    return merges


@dataclass
class ReflectEngine:
    """Reflect, list, search and maintain inside one bank."""

    store: LessonStore
    episodes: EpisodeSource
    settings: ReflectSettings
    reflector: LLMReflector | None = None
    embedder: Embedder | None = None
    clock: Callable[[], datetime] = utc_now
    cold_tier: ColdTier | None = None
    matcher: LessonMatcher | None = None
    """Matches lessons to a query by meaning; built from ``embedder`` when not given."""

    def __post_init__(self) -> None:
        if self.matcher is None and self.embedder is not None:
            self.matcher = LessonMatcher(self.embedder)

    async def reflect(self, bank_id: str, session_id: str, trigger: str = "explicit") -> Reflection:
        """Derive lessons from the bank's (or one session's) episodes; a known lesson is merged, not added."""
        generation = await self.store.purge_generation(bank_id)  # before reading: a purge after it wins
        batch = await self.episodes.read(bank_id, session_id, self.settings.max_episodes)
        return await self._reflect_on(
            bank_id, session_id, batch.episodes, trigger, batch.truncated, generation
        )

    async def _reflect_on(
        self,
        bank_id: str,
        session_id: str,
        episodes: Sequence[Episode],
        trigger: str,
        truncated: bool = False,
        generation: int | None = None,
    ) -> Reflection:
        now = self.clock()
        lessons: list[Lesson] | None = None
        method = Method.RULES
        budget = _time_left()
        if self.reflector is not None and has_results(episodes) and (budget is None or budget > 0):
            if await self.store.spend_llm(bank_id, now, self.settings.llm_budget_per_hour):
                try:
                    lessons = await asyncio.wait_for(self.reflector.reflect(bank_id, episodes), budget)
                except TimeoutError:
                    log.warning("llm reflection would miss the caller's deadline; using rules")
                method = Method.LLM if lessons is not None else Method.RULES
            else:
                log.info("llm budget spent for this hour; using rules", extra={"trigger": trigger})
        if lessons is None:
            lessons = await off_loop(
                lambda: derive_lessons(bank_id, episodes, self.settings.defences),
                size=len(episodes),
                threshold=DERIVE_OFF_LOOP_EPISODES,
            )
        if self.settings.defences:  # the LLM's lessons too: none from tool or outside content alone
            by_id = {episode.id: episode for episode in episodes}
            kept = [
                lesson
                for lesson in lessons
                if vouched([by_id[e] for e in lesson.source_episode_ids if e in by_id] or episodes)
            ]
            if len(kept) < len(lessons):
                log.info(
                    "lessons from unverified sources only not drawn",
                    extra={"count": len(lessons) - len(kept)},
                )
            lessons = kept
        upserted = await self.store.upsert(bank_id, lessons, now, generation)
        if session_id and episodes:
            await self.store.mark_session(bank_id, session_id, now, max(e.moment for e in episodes))
        stored = sorted(upserted.lessons, key=lambda lesson: (-lesson.confidence, lesson.id))
        log.info(
            "reflected",
            extra={
                "episodes_read": len(episodes),
                "lessons": len(stored),
                "method": method.value,
                "trigger": trigger,
                "superseded": upserted.superseded_ids,
                "truncated": truncated,
            },
        )
        return Reflection(stored, len(episodes), method, tuple(upserted.superseded_ids))

    async def lessons(self, bank_id: str, ids: Sequence[str]) -> list[Lesson]:
        """Current lessons by id, in the order asked (unknown, archived and hidden ones left out)."""
        return await self.store.by_ids(bank_id, ids)

    async def list_lessons(self, bank_id: str, page_size: int, page_token: str) -> LessonPage:
        """Current lessons, most confident first."""
        return await self.store.page(bank_id, page_size, page_token)

    async def search(
        self, bank_id: str, query: str | Phrasings, limit: int, tags: Collection[str] = ()
    ) -> list[ScoredLesson]:
        """Lessons by calibrated relevance to the task (0..1, see :mod:`.matching`), best first.

        Candidates are the keyword hits of every phrasing (these count a hit) and, with an inference
        service, the bank's most confident current lessons, matched by meaning; ``tags`` filter them.
        """
        phrasings = Phrasings.of(query)
        await self.store.note_bank(bank_id)
        lists = await self.store.search(bank_id, phrasings.texts, limit, self.clock())
        found = {hit.lesson.id: hit.lesson for hits in lists for hit in hits}
        if self.matcher is not None and self.settings.match_pool > 0:  # lessons sharing no word count too
            pool = await self.store.page(bank_id, self.settings.match_pool, "")
            for lesson in pool.lessons:
                found.setdefault(lesson.id, lesson)
        lessons = [lesson for lesson in found.values() if not tags or lesson.meta.carries_tags(tags)]
        scores = await self._relevance(bank_id, phrasings.texts, lessons)
        hits = [ScoredLesson(lesson, scores[lesson.id]) for lesson in lessons]
        hits = [hit for hit in hits if hit.score >= self.settings.match_min]
        return sorted(hits, key=lambda hit: (-hit.score, hit.lesson.id))[:limit]

    async def search_banks(
        self, banks: Sequence[str], query: str | Phrasings, limit: int, tags: Collection[str] = ()
    ) -> list[ScoredLesson]:
        """:meth:`search` over several banks at once: relevance is calibrated (0..1) whatever the bank, so
        the lessons of every bank are one list by it, each naming its bank."""
        found = await asyncio.gather(*(self.search(bank, query, limit, tags) for bank in banks))
        hits = [replace(hit, bank_id=bank) for bank, some in zip(banks, found, strict=True) for hit in some]
        return sorted(hits, key=lambda hit: (-hit.score, hit.bank_id, hit.lesson.id))[:limit]

    async def _relevance(
        self, bank_id: str, queries: Sequence[str], lessons: Sequence[Lesson]
    ) -> dict[str, float]:
        """Calibrated relevance (0..1, see :mod:`.matching`); by terms alone without vectors or on failure."""
        if self.matcher is not None:
            try:
                return await self.matcher.relevance(bank_id, queries, lessons)
            except Exception as exc:  # the inference layer down must not fail a recall
                log.warning("lesson matching by meaning skipped", extra={"error": repr(exc)})
        return terms_only_relevance(queries, lessons)

    async def import_lessons(self, bank_id: str, lessons: Sequence[Lesson]) -> int:
        """Write lessons as they are (an import); ids already stored are left alone. Returns how many."""
        return await self.store.insert(bank_id, lessons, self.clock())

    async def banks(self) -> list[str]:
        """Banks to maintain."""
        return await self.store.banks()

    async def purge(self, bank_id: str, source_ids: Sequence[str], session_id: str, whole_bank: bool) -> int:
        """Delete for good the lessons drawn from purged records (or every lesson of the bank); returns how
        many are gone.

        A lesson lives while one of its sources lives, but its wording may come from the purged one: it is
        deleted with the rest and drawn again, by the rules, from the episodes it still stands on. It lives
        on (same id) when they still teach it, and is gone when it needed the purged source.
        """
        ids = list(dict.fromkeys(source_ids))
        purged = await self.store.purge(bank_id, ids, session_id, whole_bank)
        if purged.damaged:
            await self._draw_again(bank_id, purged.damaged)
        if whole_bank:
            return purged.deleted
        # The count comes from the tombstones: the edge and the outbox both carry out a purge, and the one
        # that comes second finds the lessons already gone.
        return await self.store.lessons_taken(bank_id, ids)

    async def set_source_states(self, bank_id: str, archived: Sequence[str], live: Sequence[str]) -> int:
        """Note turns archived (forgotten, recoverable) or restored: a lesson standing only on archived
        turns is kept but not listed or found, so a restore brings it back unchanged."""
        return await self.store.set_source_states(
            bank_id, list(dict.fromkeys(archived)), list(dict.fromkeys(live))
        )

    async def _draw_again(self, bank_id: str, damaged: Sequence[Lesson]) -> int:
        """Lessons drawn again from the live episodes they cite; how many came back. A failure leaves them
        deleted (a purge never waits on reflection) and is logged."""
        wanted = {episode_id for lesson in damaged for episode_id in lesson.source_episode_ids}
        if not wanted:
            return 0
        try:
            generation = await self.store.purge_generation(bank_id)
            batch = await self.episodes.read(bank_id, "", self.settings.max_episodes)
        except Exception:
            log.warning("lessons not drawn again after a purge", exc_info=True, extra={"bank_id": bank_id})
            return 0
        episodes = [episode for episode in batch.episodes if episode.id in wanted]
        if not episodes:
            return 0
        drawn = await off_loop(
            lambda: derive_lessons(bank_id, episodes, self.settings.defences),
            size=len(episodes),
            threshold=DERIVE_OFF_LOOP_EPISODES,
        )
        ids = {lesson.id for lesson in damaged}
        again = [lesson for lesson in drawn if lesson.id in ids]
        if self.settings.defences:
            by_id = {episode.id: episode for episode in episodes}
            again = [
                lesson
                for lesson in again
                if vouched([by_id[e] for e in lesson.source_episode_ids if e in by_id])
            ]
        upserted = await self.store.upsert(bank_id, again, self.clock(), generation)
        log.info(
            "lessons drawn again after a purge",
            extra={"bank_id": bank_id, "damaged": len(damaged), "kept": len(upserted.lessons)},
        )
        return len(upserted.lessons)

    async def maintain(self, bank_id: str) -> Maintenance:
        """Triggers, decay, archive, merge: in that order, so new lessons are merged in the same run."""
        report = Maintenance()
        await self.store.note_bank(bank_id)
        report.reflected_session_ids = await self.reflect_due_sessions(bank_id)
        now = self.clock()
        current: list[Lesson] = []
        after = ""
        while batch := await self.store.current(bank_id, after, BATCH):
            after = batch[-1].id
            weights = {}
            archive = []
            for lesson in batch:
                weight = freshness(lesson, now, self.settings)
                if abs(weight - lesson.weight) > 1e-9:
                    weights[lesson.id] = weight
                if should_archive(lesson, weight, now, self.settings):
                    archive.append(lesson.id)
                elif len(current) < self.settings.merge_max_lessons:
                    current.append(lesson)
            await self.store.set_weights(bank_id, weights)
            report.decayed_ids.extend(sorted(weights))
            report.archived_ids.extend(await self.store.archive(bank_id, archive, now))
            report.lessons_checked += len(batch)
        if self.embedder is None:
            report.skipped.append("merge: no inference service configured (HINDSIGHT_INFERENCE_ADDR)")
        elif current:
            vectors = await self.embedder.embed(bank_id, [lesson.lesson for lesson in current])
            merges = await off_loop(
                lambda: near_duplicates(current, vectors, self.settings.merge_similarity),
                size=len(current),
                threshold=MERGE_OFF_LOOP_LESSONS,
            )
            for merge in merges:
                report.merged_ids.extend(await self.store.merge(bank_id, merge, now))
        if self.cold_tier is not None and self.settings.cold_after_days > 0:
            unused_before = now - timedelta(days=self.settings.cold_after_days)
            try:
                report.cold_count = await self.cold_tier.mark_cold(
                    bank_id, unused_before, self.settings.cold_below_importance
                )
            except Unavailable as exc:
                report.skipped.append(f"semantic cold tier: {exc}")
        if self.cold_tier is not None:
            try:
                report.open_conflicts = await self.cold_tier.open_conflicts(bank_id)
            except Unavailable as exc:
                report.skipped.append(f"audit of contradictory facts: {exc}")
        log.info(
            "maintained",
            extra={
                "semantic_cold": report.cold_count,
                "open_conflicts": len(report.open_conflicts),
                "decayed": report.decayed_ids,
                "archived": report.archived_ids,
                "merged": report.merged_ids,
                "reflected_sessions": report.reflected_session_ids,
                "checked": report.lessons_checked,
                "skipped": report.skipped,
            },
        )
        return report

    async def reflect_due_sessions(self, bank_id: str) -> list[str]:
        """Reflect on every session with episodes newer than its last reflection that went idle longer
        than the setting, or that holds a new episode marked important."""
        now = self.clock()
        generation = await self.store.purge_generation(bank_id)
        batch = await self.episodes.read(bank_id, "", self.settings.max_episodes)
        by_session: dict[str, list[Episode]] = defaultdict(list)
        for episode in batch.episodes:
            if episode.session_id:
                by_session[episode.session_id].append(episode)
        marks = await self.store.session_marks(bank_id)
        idle = timedelta(seconds=self.settings.idle_after_seconds)
        reflected = []
        for session_id, episodes in sorted(by_session.items()):
            seen = marks.get(session_id)
            new = [e for e in episodes if seen is None or e.moment > seen]
            if not new:
                continue
            newest = max(e.moment for e in episodes)
            if any(e.meta.importance >= self.settings.important_at for e in new):
                trigger = "important"
            elif now - newest >= idle:
                trigger = "idle"
            else:
                continue
            try:
                await self._reflect_on(bank_id, session_id, episodes, trigger, generation=generation)
            except FailedPrecondition as exc:
                # It would fail the same way on every scan: the sessions after it must still be reflected.
                log.warning(
                    "session not reflected on",
                    extra={"bank_id": bank_id, "session_id": session_id, "reason": str(exc)},
                )
                continue
            reflected.append(session_id)
        return reflected
