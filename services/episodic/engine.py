"""Episodic-memory logic: recording, searching, paging, the life cycle, segmentation and access statistics,
on an :class:`EpisodicStore`, with an outbox deliverer that hands writes to the other layers."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Generic, TypeVar

from hindsight.episodic import cpu
from hindsight.episodic.access import AccessRecorder
from hindsight.episodic.dead_letters import DeadLetterPage, Handled
from hindsight.episodic.episode_records import SegmentWrite
from hindsight.episodic.keyword import analyse_query
from hindsight.episodic.models import (
    AccessStats,
    Episode,
    EpisodeFilter,
    PurgeResult,
    PurgeScope,
    ScoredEpisode,
    TurnFilter,
)
from hindsight.episodic.outbox import OutboxDeliverer
from hindsight.episodic.outbox_entries import SEMANTIC
from hindsight.episodic.outbox_queue import OutboxCounts
from hindsight.episodic.paging import PageKey, decode_page_token, encode_page_token
from hindsight.episodic.quarantine import AuditEntry, HeldTurn, ReviewResult, Screening
from hindsight.episodic.rows import Decay, ScoredTurn
from hindsight.episodic.segment import (
    Embed,
    SegmentRules,
    extract,
    lexical_similarities,
    split,
    vector_similarities,
)
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.shares import Copy, ShareWrite
from hindsight.episodic.store import EpisodicStore
from hindsight.episodic.turn_records import RecordResult
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.llm import LLMClient
from hindsight.runtime.logs import deadline_var
from hindsight.runtime.offload import off_loop
from hindsight.runtime.records import RecordMeta, Turn, utcnow
from hindsight.runtime.rewrites import Phrasings
from hindsight.runtime.text import terms
from hindsight.runtime.trust import review_mark_kept
from hindsight.runtime.tsearch import query_terms

log = logging.getLogger(__name__)

T = TypeVar("T")

TURNS_LIST = "turns"
RECENT_TURNS_LIST = "recent-turns"
EPISODES_LIST = "episodes"
QUARANTINE_LIST = "quarantine"
AUDIT_LIST = "audit"


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list and the token for the next ("" on the last page)."""

    items: list[T]
    next_page_token: str


@dataclass(frozen=True)
class Recorded:
    """How a RecordTurns went: new and duplicate turns, and whether they reached the semantic layer."""

    recorded: int
    duplicates: int
    indexed: bool
    quarantined: int = 0


@dataclass(frozen=True)
class Updated:
    """The new version of a turn and the id of the one it superseded."""

    turn: Turn
    superseded_id: str
    indexed: bool = False
    """The semantic layer had the change when the call returned (asked with ``index_now``)."""


@dataclass(frozen=True)
class Segmented:
    """Episodes a segmentation made (or merged into) and how it found them."""

    episodes: list[Episode]
    method: str


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
    settings: EpisodicSettings = field(default_factory=EpisodicSettings)
    deliverer: OutboxDeliverer | None = None
    llm: LLMClient | None = None
    embed: Embed | None = None
    clock: Callable[[], datetime] = field(default=utcnow)
    access: AccessRecorder = field(init=False)

    def __post_init__(self) -> None:
        self.access = AccessRecorder(self.store, self.settings, self._now)

    def _now(self) -> datetime:
        return self.clock()

    def _decay(self) -> Decay:
        return Decay(self.clock(), self.settings.half_life_days, self.settings.decay_floor)

    def _index_budget(self) -> float:
        """Seconds ``index_now`` may spend: the outbox timeout, within the caller's deadline less a margin
        (a fifth of what is left), so the answer that the turns are recorded is never lost to the deadline."""
        budget = self.settings.outbox_timeout_seconds
        deadline = deadline_var.get()
        if deadline is not None:
            budget = min(budget, (deadline - time.monotonic()) * 0.8)
        return budget

    def _wake_deliverer(self) -> None:
        if self.deliverer is not None:
            self.deliverer.wake()

    # ----- turns ---------------------------------------------------------------------------------------
    async def record_turns(
        self,
        bank_id: str,
        turns: Sequence[Turn],
        index_now: bool = False,
        quarantine: Mapping[str, Screening] | None = None,
        actor: str = "",
    ) -> Recorded:
        """Store turns idempotently: an id already stored in the bank counts as a duplicate, unchanged.

        A turn without a time happened when it was recorded; those of one request get successive
        microseconds so that listing in time order keeps the order they were sent in. With
        ``index_now`` the new turns' outbox entries are delivered before returning (what fails stays
        queued for the background deliverer). Turns named in ``quarantine`` are held back for review
        (no search, listing, episodes or indexing until approved), each audited as decided by ``actor``.
        """
        if quarantine:
            known = {turn.id for turn in turns}
            stray = sorted(set(quarantine) - known)
            if stray:
                raise InvalidArgument(
                    "quarantine", f"names turns not in this request: {', '.join(stray[:5])}"
                )
        now = self.clock()
        timed = [
            turn
            if turn.meta.time
            else replace(turn, meta=replace(turn.meta, time=now + timedelta(microseconds=i)))
            for i, turn in enumerate(turns)
        ]
        claim = self._claim(index_now, now)
        result: RecordResult = await self.store.record_turns(bank_id, timed, claim, quarantine or {}, actor)
        indexed = await self._deliver_now(bank_id, result.outbox_ids, claim)
        if result.quarantined:
            log.info("held turns for review", extra={"bank_id": bank_id, "turns": result.quarantined})
        return Recorded(result.recorded, result.duplicates, indexed, result.quarantined)

    def _claim(self, index_now: bool, now: datetime) -> datetime | None:
        """Until when a write's new outbox entries are held for delivery by the call itself (None: the
        background deliverer takes them)."""
        if index_now and self.deliverer is not None and SEMANTIC in self.store.targets:
            return now + timedelta(seconds=self.settings.outbox_lease_seconds)
        return None

    async def _deliver_now(self, bank_id: str, outbox_ids: Sequence[int], claim: datetime | None) -> bool:
        """Deliver claimed entries within the call's budget (what fails stays queued), or wake the
        background deliverer when none were claimed; True when all were delivered."""
        if claim is None or self.deliverer is None:
            self._wake_deliverer()
            return False
        try:
            return await self.deliverer.deliver_claimed(outbox_ids, self._index_budget())
        except Exception:
            log.warning(
                "indexing at once failed; the outbox retries", exc_info=True, extra={"bank_id": bank_id}
            )
            return False

    async def search_turns(
        self, bank_id: str, query: str | Phrasings, where: TurnFilter, limit: int, banks: Sequence[str] = ()
    ) -> list[ScoredTurn]:
        """Turns sharing keywords (English stems, Chinese characters and bigrams), ranked by BM25 times
        time decay; with rewrites, every phrasing is searched and the lists merged into one (see
        :mod:`hindsight.runtime.rewrites`).

        ``banks``: search these banks together instead of ``bank_id``. Each bank is ranked by its own
        statistics (N, df and the mean length are per bank), all at once, and each phrasing's hits of every
        bank are one list by score, each hit naming its bank."""
        phrasings = Phrasings.of(query)
        decay = self._decay()

        async def one(text: str) -> list[ScoredTurn]:
            lexemes = await analyse_query(text)  # repeats weigh more
            if not lexemes:
                return []
            if not banks:
                return await self.store.search_turns(bank_id, lexemes, where, decay, limit)
            found = await asyncio.gather(
                *(self.store.search_turns(bank, lexemes, where, decay, limit) for bank in banks)
            )
            hits = [
                replace(hit, bank_id=bank) for bank, some in zip(banks, found, strict=True) for hit in some
            ]
            hits.sort(key=lambda hit: (-hit.score, hit.bank_id, hit.turn.id))
            return hits[:limit]

        lists = await asyncio.gather(*(one(text) for text in phrasings.texts))
        return phrasings.merge(lists, key=lambda hit: f"{hit.bank_id}/{hit.turn.id}")

    async def search_quarantined(self, bank_id: str, query: str | Phrasings, limit: int) -> list[ScoredTurn]:
        """Held-back turns (pending and rejected) sharing the query's keywords, to warn related recalls."""
        phrasings = Phrasings.of(query)

        async def one(text: str) -> list[ScoredTurn]:  # the keyword rank alone: held turns are few
            lexemes = await analyse_query(text)
            return await self.store.search_quarantined(bank_id, lexemes, limit) if lexemes else []

        lists = await asyncio.gather(*(one(text) for text in phrasings.texts))
        return phrasings.merge(lists, key=lambda hit: hit.turn.id)

    async def list_quarantined(
        self, bank_id: str, status: str, page_size: int, page_token: str
    ) -> tuple[Page[HeldTurn], int]:
        """A page of the review queue, oldest first, and how many turns of the bank wait for review."""
        after = decode_page_token(QUARANTINE_LIST, page_token)
        rows, pending = await self.store.list_quarantined(bank_id, status, after, page_size + 1)
        items = rows[:page_size]
        token = (
            encode_page_token(QUARANTINE_LIST, PageKey(items[-1].quarantined_at, items[-1].turn.id))
            if len(rows) > page_size
            else ""
        )
        return Page(items, token), pending

    async def review_quarantined(
        self, bank_id: str, turn_ids: Sequence[str], decision: str, reviewer: str, note: str
    ) -> ReviewResult:
        """Approve (release into memory and index) or reject pending turns, audited in one transaction."""
        result = await self.store.review(bank_id, turn_ids, decision, reviewer, note)
        self._wake_deliverer()
        log.info(
            "reviewed held turns",
            extra={
                "bank_id": bank_id,
                "decision": decision,
                "approved": result.approved,
                "rejected": result.rejected,
            },
        )
        return result

    async def append_audit(self, entries: Sequence[AuditEntry]) -> int:
        """Record security decisions."""
        return await self.store.append_audit(entries)

    async def list_audit(
        self, bank_id: str, action: str, since: datetime | None, page_size: int, page_token: str
    ) -> Page[AuditEntry]:
        """A page of the audit log, newest first."""
        before = decode_page_token(AUDIT_LIST, page_token)
        rows = await self.store.list_audit(bank_id, action, since, before, page_size + 1)
        items = rows[:page_size]
        last = items[-1] if items else None
        token = (
            encode_page_token(AUDIT_LIST, PageKey(last.time, last.id))
            if len(rows) > page_size and last is not None and last.time is not None
            else ""
        )
        return Page(items, token)

    async def list_turns(
        self, bank_id: str, where: TurnFilter, page_size: int, page_token: str, newest_first: bool = False
    ) -> Page[Turn]:
        """A page of turns in time order (a timeline), or newest first (list recent)."""
        kind = RECENT_TURNS_LIST if newest_first else TURNS_LIST
        after = decode_page_token(kind, page_token)
        rows = await self.store.list_turns(bank_id, where, after, newest_first, page_size + 1)
        items = rows[:page_size]
        token = encode_page_token(kind, _key_of_turn(items[-1])) if len(rows) > page_size else ""
        return Page(items, token)

    async def update_turn(
        self,
        bank_id: str,
        turn_id: str,
        text: str,
        meta: RecordMeta | None,
        index_now: bool = False,
        agent: str = "",
    ) -> Updated:
        """Supersede a turn: the new version (new id) links the old one, which is archived, not lost.

        With ``index_now`` the semantic layer gets the change (new version in, old out) before returning.
        ``agent``: who wrote the new version (empty: the agent of ``meta``, else the old version's)."""
        old = await self.store.get_turn(bank_id, turn_id)
        new_meta = meta if meta is not None else old.meta
        new_meta = replace(
            new_meta,
            agent=agent or new_meta.agent or old.meta.agent,
            tags=review_mark_kept(old.meta.tags, new_meta.tags, same_text=not text or text == old.text),
        )
        provenance = (turn_id, *(i for i in new_meta.source_turn_ids if i != turn_id))
        new = Turn(
            id=uuid.uuid4().hex,
            session_id=old.session_id,
            text=text or old.text,
            role=old.role,
            speaker=old.speaker,
            meta=replace(new_meta, source_turn_ids=provenance, time=new_meta.time or self.clock()),
        )
        claim = self._claim(index_now, self.clock())
        stored, outbox_ids = await self.store.update_turn(bank_id, turn_id, new, claim)
        indexed = await self._deliver_now(bank_id, outbox_ids, claim)
        return Updated(stored, turn_id, indexed)

    async def get_turns(self, bank_id: str, turn_ids: Sequence[str]) -> list[Turn]:
        """Turns by id, live or archived, in the order asked; unknown ids are left out."""
        return await self.store.get_turns(bank_id, turn_ids)

    async def restore_turns(self, bank_id: str, turn_ids: Sequence[str]) -> int:
        """Bring archived turns back (and into the semantic index)."""
        count = await self.store.restore_turns(bank_id, list(dict.fromkeys(turn_ids)))
        self._wake_deliverer()
        return count

    async def forget_turns(
        self, bank_id: str, turn_ids: Sequence[str], hard: bool, where: TurnFilter | None = None
    ) -> int:
        """Archive turns named or matching a filter (recoverable), or purge the named ones when ``hard``."""
        ids = list(dict.fromkeys(turn_ids))
        if where is not None and where.is_empty():
            raise InvalidArgument(
                "filter", "must filter on something (session, tags, sources, trust or time)"
            )
        if hard:
            return (await self.hard_forget(bank_id, ids, where)).turns
        count = await self.store.forget_turns(bank_id, ids, where)
        self._wake_deliverer()
        return count

    async def hard_forget(
        self, bank_id: str, turn_ids: Sequence[str], where: TurnFilter | None = None
    ) -> PurgeResult:
        """Forget for good: a purge of the named turns (every version of each, and what dies with them)."""
        if where is not None:
            raise InvalidArgument("hard", "hard deletes take ids only; purge a session or bank with Purge")
        return await self.purge(bank_id, PurgeScope(ids=tuple(dict.fromkeys(turn_ids))))

    async def purge(self, bank_id: str, scope: PurgeScope) -> PurgeResult:
        """Delete for good, here and (through the outbox) in every layer that derived records from it.

        Queued accesses are written first, so none of a purged record is written back after it. The new
        text of the episodes that lived on reaches the semantic layer before answering (within the call's
        budget; what is not delivered by then stays queued), so their old text is not found after the
        call; the deletes go through the outbox (and the edge asks each layer directly too).
        """
        await self.access.flush()
        claim = self._claim(True, self.clock())
        result = await self.store.purge(bank_id, scope, claim)
        await self._deliver_now(bank_id, result.outbox_ids, claim)
        for copies in result.copies:  # copies shared from what it took, purged from their banks
            await self._deliver_now(copies.bank_id, copies.outbox_ids, claim)
        return result

    async def share(
        self,
        bank_id: str,
        source_bank_id: str,
        ids: Sequence[str],
        copies: Sequence[Copy],
        agent: str,
        index_now: bool = False,
    ) -> tuple[ShareWrite, bool]:
        """Copy records of the source bank into ``bank_id`` (see :mod:`hindsight.episodic.shares`); with
        ``index_now`` the copies reach the semantic layer before returning. Returns what was written and
        whether it was indexed; nothing is written when an id names no live turn or episode."""
        if bank_id == source_bank_id:
            raise InvalidArgument("source_bank_id", "must name another bank than bank_id")
        claim = self._claim(index_now, self.clock())
        written = await self.store.share(bank_id, source_bank_id, ids, copies, agent, claim)
        if written.unknown:
            return written, False
        return written, await self._deliver_now(bank_id, written.outbox_ids, claim)

    # ----- episodes ------------------------------------------------------------------------------------
    async def write_episode(self, bank_id: str, episode: Episode) -> Episode:
        """Store an episode, generating its id when empty; writing a stored id again returns it unchanged."""
        if not episode.id:
            episode = replace(episode, id=uuid.uuid4().hex)
        stored = await self.store.write_episode(bank_id, episode)
        self._wake_deliverer()
        return stored

    async def list_episodes(
        self, bank_id: str, session_id: str, page_size: int, page_token: str
    ) -> Page[Episode]:
        """A page of episodes, newest first, optionally of one session."""
        before = decode_page_token(EPISODES_LIST, page_token)
        rows = await self.store.list_episodes(bank_id, session_id, before, page_size + 1)
        items = rows[:page_size]
        token = encode_page_token(EPISODES_LIST, _key_of_episode(items[-1])) if len(rows) > page_size else ""
        return Page(items, token)

    async def search_episodes(
        self, bank_id: str, query: str, where: EpisodeFilter, limit: int
    ) -> list[ScoredEpisode]:
        """Episodes passing the filters, by keyword rank times time decay; newest first without a query."""
        lexemes = (
            await off_loop(lambda: query_terms(query, terms), len(query), cpu.MIN_CHARS)
            if query.strip()
            else []
        )
        if query.strip() and not lexemes:
            return []
        return await self.store.search_episodes(bank_id, lexemes, where, self._decay(), limit)

    async def segment_session(self, bank_id: str, session_id: str, final: bool) -> Segmented:
        """Make episodes of the session's finished segments (all of them when ``final``)."""
        settings = self.settings
        turns = await self.store.unsegmented_turns(bank_id, session_id, settings.segment_max_read)
        if not turns:
            return Segmented([], "similarity")
        size = len(turns)  # similarities are the costly part (0.1-0.4 ms a turn)
        if self.embed is not None:
            try:
                vectors = await self.embed(bank_id, [f"{turn.speaker} {turn.text}".strip() for turn in turns])
                similarities = await off_loop(lambda: vector_similarities(vectors), size, cpu.MIN_TURNS)
                threshold = settings.segment_embedding_threshold
            except Exception:
                log.warning("embedding turns failed; segmenting by shared words", exc_info=True)
                similarities = await off_loop(lambda: lexical_similarities(turns), size, cpu.MIN_TURNS)
                threshold = settings.segment_lexical_threshold
        else:
            similarities = await off_loop(lambda: lexical_similarities(turns), size, cpu.MIN_TURNS)
            threshold = settings.segment_lexical_threshold
        rules = SegmentRules(
            threshold=threshold,
            gap=timedelta(minutes=settings.segment_gap_minutes),
            min_turns=settings.segment_min_turns,
            max_turns=settings.segment_max_turns,
        )
        segments = await off_loop(lambda: split(turns, similarities, rules), size, cpu.MIN_TURNS)
        finished = segments if final else segments[:-1]
        if not finished:
            return Segmented([], "similarity")
        extraction = await extract(self.llm, bank_id, finished, settings.llm_max_tokens)
        through = _key_of_turn(finished[-1][-1])
        saved = await self.store.save_segments(
            bank_id,
            session_id,
            SegmentWrite(extraction.episodes, extraction.method, through),
            settings.dedup_similarity,
        )
        self._wake_deliverer()
        log.info(
            "segmented session",
            extra={
                "bank_id": bank_id,
                "session_id": session_id,
                "episodes": len(saved),
                "method": extraction.method,
            },
        )
        return Segmented(saved, extraction.method)

    # ----- access statistics and the outbox -----------------------------------------------------------
    def record_access(self, bank_id: str, records: Sequence[tuple[str, str]]) -> int:
        """Queue accesses (id, layer); they are written in batches in the background."""
        return self.access.record(bank_id, records)

    async def access_stats(self, bank_id: str, ids: Sequence[str]) -> list[AccessStats]:
        """Statistics of the records that have any."""
        return await self.access.stats(bank_id, list(dict.fromkeys(ids)))

    async def outbox_status(self, bank_id: str) -> OutboxCounts:
        """Entries waiting, delivered and dead-lettered by target layer."""
        return await self.store.outbox_counts(bank_id)

    async def list_dead_letters(self, bank_id: str, limit: int, page_token: str) -> DeadLetterPage:
        """A page of the dead-letter list, oldest first (every bank when ``bank_id`` is empty)."""
        return await self.store.dead_letters.page(bank_id, limit, page_token)

    async def retry_dead_letters(self, bank_id: str, ids: Sequence[int], actor: str) -> Handled:
        """Queue dead letters again (all of the bank, or of every bank, when no id is named), audited."""
        handled = await self.store.dead_letters.retry(bank_id, ids, actor)
        self._wake_deliverer()
        return handled

    async def heal_working_windows(self, bank_id: str, turn_ids: Sequence[str]) -> int:
        """Queue recorded turns for working memory, whose append missed them; returns entries queued."""
        queued = await self.store.queue_working_turns(bank_id, list(dict.fromkeys(turn_ids)))
        self._wake_deliverer()
        return queued

    async def drop_dead_letters(self, bank_id: str, ids: Sequence[int], actor: str) -> Handled:
        """Delete dead letters for good (all of the bank, or of every bank, when no id is named), audited."""
        return await self.store.dead_letters.drop(bank_id, ids, actor)

    async def run_background(self) -> None:
        """The deliverer and the access flusher, until cancelled."""
        jobs = [self.access.run()]
        if self.deliverer is not None:
            jobs.append(self.deliverer.run())
        await asyncio.gather(*jobs)
