"""Working-memory logic: appending with token accounting, context within a budget, compression, search.

A session is a list of entries, oldest first: the running summaries of compressed turns, then turns.
When a session's tokens pass the threshold, its oldest turns are replaced, 5 to 8 at a time, by
summaries until it is back under the target; the turns themselves stay in episodic memory.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import math
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from hindsight.runtime.background import spawn
from hindsight.runtime.offload import off_loop
from hindsight.runtime.records import TimeRange, Turn
from hindsight.runtime.rewrites import Phrasings
from hindsight.runtime.text import term_counts, terms
from hindsight.runtime.token_counts import ScriptEstimate, TokenCounter
from hindsight.working.entries import Entry, EntryKind, summary_entry, with_importance
from hindsight.working.settings import WorkingSettings
from hindsight.working.store import Indexed, SessionStats, WindowStore, searchable_text
from hindsight.working.summarise import EXTRACTIVE, ExtractiveSummariser, Summariser, source_text

log = logging.getLogger(__name__)

RECENCY_BOOST = 0.1
"""How much a brand-new turn's score grows: it orders near-ties, never beats a better match."""
GROUP_MIN = 5
GROUP_MAX = 8
"""Turns per summary."""
_MAX_GROUPS_PER_CALL = 10_000
"""A bound on one compression's loop, far above any real session."""
ENTRIES_OFF_LOOP_CHARS = 2_500
"""Characters of one append from which its entries (terms, tokens, importance; ~0.8 us per character)
are built on a worker thread rather than on the event loop."""
RANK_OFF_LOOP = 400
"""Candidates times phrasings of one search from which ranking (~5 us each) runs on a worker thread."""
BACKGROUND_COMPRESSION_SECONDS = 600.0
"""Seconds a compression by an LLM, run after the append answered, may take before it is given up (the
session is compressed again at the next append that passes the threshold)."""


@dataclass(frozen=True)
class RecentHit:
    """A recent entry that shares terms with the query, and its score."""

    turn: Turn
    score: float
    bank_id: str = ""
    """Its bank, in a search over several banks (empty in a search of one)."""


@dataclass(frozen=True)
class AppendResult:
    """Turns appended, and summaries the append's compression wrote."""

    appended: int
    compressed_groups: int = 0


@dataclass(frozen=True)
class ContextResult:
    """What of a session fits a token budget."""

    summaries: list[Entry]
    turns: list[Entry]
    token_count: int
    session_token_count: int
    omitted_count: int
    budget: int


@dataclass(frozen=True)
class CompressionResult:
    """What one compression did."""

    groups: int
    summarised_turns: int
    tokens_before: int
    tokens_after: int
    summariser: str


def recency_weight(age_seconds: float, half_life_seconds: float) -> float:
    """1 for a turn appended now, halving every ``half_life_seconds``."""
    return 0.5 ** (max(age_seconds, 0.0) / half_life_seconds)


def rank_recent(
    query: str, candidates: Sequence[Indexed], now: float, half_life_seconds: float, limit: int
) -> list[tuple[Indexed, float]]:
    """Candidates scored by term overlap with ``query`` times a small recency boost, best first.

    Works on the stored headers only: each entry's terms were computed when it was written, and
    entries sharing no term with the query are skipped before any counting. Recency alone never
    makes a hit.
    """
    query_terms = term_counts(query)
    if not query_terms:
        return []
    query_set = set(query_terms)
    query_norm = math.sqrt(sum(query_terms.values()))
    scored: list[tuple[float, float, str, Indexed]] = []
    for candidate in candidates:
        counts = candidate.term_counts
        if query_set.isdisjoint(counts):
            continue
        shared = sum(min(count, counts[term]) for term, count in query_terms.items() if term in counts)
        overlap = shared / (query_norm * math.sqrt(candidate.term_total))
        boost = 1.0 + RECENCY_BOOST * recency_weight(now - candidate.appended_at, half_life_seconds)
        scored.append((overlap * boost, candidate.appended_at, candidate.id, candidate))
    best = heapq.nsmallest(limit, scored, key=lambda item: (-item[0], -item[1], item[2]))
    return [(item[3], item[0]) for item in best]


def next_group(entries: Sequence[Indexed], keep_recent: int, allow_small: bool) -> list[Indexed]:
    """The oldest run of turns to summarise next, 5 to 8 long, never touching the newest ``keep_recent``.

    A run of 9 to 12 is split in two near-equal groups so that no group falls under 5. Shorter runs are
    taken only with ``allow_small`` (a session still over its target). With no turns left to take, the
    oldest summaries are merged instead.
    """
    turn_positions = [i for i, entry in enumerate(entries) if entry.kind is EntryKind.TURN]
    if keep_recent <= 0 or not turn_positions:
        cutoff = len(entries)
    else:
        cutoff = turn_positions[-min(keep_recent, len(turn_positions))]
    start = next((i for i in turn_positions if i < cutoff), None)
    if start is not None:
        run = []
        for entry in entries[start:cutoff]:
            if entry.kind is not EntryKind.TURN:
                break
            run.append(entry)
        size = _group_size(len(run), allow_small)
        if size:
            return run[:size]
    summaries = []
    for entry in entries:
        if entry.kind is not EntryKind.SUMMARY:
            break
        summaries.append(entry)
    if allow_small and len(summaries) >= 2:
        return summaries[:GROUP_MAX]
    return []


def _group_size(available: int, allow_small: bool) -> int:
    if available > GROUP_MAX:
        return GROUP_MAX if available >= GROUP_MAX + GROUP_MIN else math.ceil(available / 2)
    if available >= GROUP_MIN or (allow_small and available > 0):
        return available
    return 0


def fit_budget(
    entries: Sequence[Indexed], budget: int, summary_share: float
) -> tuple[list[Indexed], list[Indexed]]:
    """The summaries and recent turns that fit ``budget`` tokens, each oldest first.

    The newest summaries first take up to ``summary_share`` of the budget; the newest turns, without
    gaps, fill what is left; summaries then take any remainder. The total never exceeds the budget.
    """
    summaries = [entry for entry in entries if entry.kind is EntryKind.SUMMARY]
    turns = [entry for entry in entries if entry.kind is EntryKind.TURN]
    used = 0
    taken_summaries: list[Indexed] = []
    for entry in reversed(summaries):
        if used + entry.token_count > budget * summary_share:
            break
        taken_summaries.append(entry)
        used += entry.token_count
    taken_turns: list[Indexed] = []
    for entry in reversed(turns):
        if used + entry.token_count > budget:
            break
        taken_turns.append(entry)
        used += entry.token_count
    for entry in reversed(summaries[: len(summaries) - len(taken_summaries)]):
        if used + entry.token_count > budget:
            break
        taken_summaries.append(entry)
        used += entry.token_count
    return taken_summaries[::-1], taken_turns[::-1]


@dataclass
class WorkingMemory:
    """Session windows of a bank, on a :class:`WindowStore`."""

    store: WindowStore
    settings: WorkingSettings
    clock: Callable[[], float] = field(default=time.time)
    counter: TokenCounter = field(default_factory=ScriptEstimate)
    summariser: Summariser = field(default_factory=ExtractiveSummariser)
    _fallback: ExtractiveSummariser = field(default_factory=ExtractiveSummariser, init=False)
    _locks: dict[tuple[str, str], asyncio.Lock] = field(default_factory=dict, init=False)
    _background: set[asyncio.Task[CompressionResult | None]] = field(default_factory=set, init=False)

    def entry_for(self, turn: Turn, now: float) -> Entry:
        """The entry a turn is stored as: importance by rule when not given, tokens, search terms."""
        turn = with_importance(turn)
        return Entry(
            EntryKind.TURN,
            turn,
            self.counter.count(turn.text),
            now,
            terms=tuple(terms(searchable_text(turn))),
        )

    async def append(self, bank_id: str, turns: Sequence[Turn]) -> AppendResult:
        """Append turns to their windows, skipping those already there, and compress what passed the
        threshold (inline with the extractive summariser; in the background with an LLM, which is slow)."""
        if not turns:
            return AppendResult(0)
        now = self.clock()
        entries = await off_loop(
            lambda: [self.entry_for(turn, now) for turn in turns],
            size=sum(len(turn.text) for turn in turns),
            threshold=ENTRIES_OFF_LOOP_CHARS,
        )
        outcome = await self.store.append(bank_id, entries, now)
        groups = 0
        for session_id, stats in outcome.sessions.items():
            if stats.token_count <= self.settings.threshold_tokens:
                continue
            if self.summariser.name == EXTRACTIVE:
                groups += (await self.compress(bank_id, session_id, self.settings.target_tokens)).groups
            else:
                self._compress_later(bank_id, session_id)
        return AppendResult(outcome.appended, groups)

    def _compress_later(self, bank_id: str, session_id: str) -> None:
        if self._lock(bank_id, session_id).locked():
            return  # a compression of this session is already running
        spawn(
            self.compress(bank_id, session_id, self.settings.target_tokens),
            name="working-compression",
            timeout=BACKGROUND_COMPRESSION_SECONDS,
            keep=self._background,
        )

    async def drain(self) -> None:
        """Wait for background compressions (on shutdown and in tests)."""
        while self._background:
            await asyncio.gather(*self._background, return_exceptions=True)

    def _lock(self, bank_id: str, session_id: str) -> asyncio.Lock:
        return self._locks.setdefault((bank_id, session_id), asyncio.Lock())

    async def window(self, bank_id: str, session_id: str, max_turns: int) -> list[Turn]:
        """The turns among the last ``max_turns`` entries of the session, oldest first."""
        entries = await self.store.window(bank_id, session_id, max_turns)
        return [entry.turn for entry in entries if entry.kind is EntryKind.TURN]

    async def context(self, bank_id: str, session_id: str, budget: int) -> ContextResult:
        """Running summaries and the most recent turns that together fit ``budget`` tokens."""
        headers = await self.store.headers(bank_id, session_id)
        summaries, recent = fit_budget(headers, budget, self.settings.summary_share)
        chosen = len(summaries) + len(recent)
        return ContextResult(
            summaries=[item.decode() for item in summaries],
            turns=[item.decode() for item in recent],
            token_count=sum(item.token_count for item in (*summaries, *recent)),
            session_token_count=sum(item.token_count for item in headers),
            omitted_count=len(headers) - chosen,
            budget=budget,
        )

    async def compress(self, bank_id: str, session_id: str, target_tokens: int | None) -> CompressionResult:
        """Summarise the session's oldest turns until it holds at most ``target_tokens`` tokens.

        ``None`` compresses every complete group of turns but the newest few. One compression per
        session runs at a time in this process; across processes the store's compare-and-replace keeps
        a group from being summarised twice.
        """
        lock = self._lock(bank_id, session_id)
        async with lock:
            headers = await self.store.headers(bank_id, session_id)
            before = sum(item.token_count for item in headers)
            groups = summarised = 0
            used = EXTRACTIVE
            for _ in range(_MAX_GROUPS_PER_CALL):
                total = sum(item.token_count for item in headers)
                if target_tokens is not None and total <= target_tokens:
                    break
                group = next_group(headers, self.settings.keep_recent, allow_small=target_tokens is not None)
                if not group:
                    break
                entries = [item.decode() for item in group]
                text, used = await self._summarise(entries)
                tokens = self.counter.count(text)
                if tokens >= sum(item.token_count for item in group) and len(group) == 1:
                    break  # nothing left to gain
                entry = summary_entry(session_id, entries, text, tokens, self.clock())
                if await self.store.replace(bank_id, session_id, [item.id for item in group], entry):
                    groups += 1
                    summarised += sum(1 for item in group if item.kind is EntryKind.TURN)
                headers = await self.store.headers(bank_id, session_id)
            after = sum(item.token_count for item in headers)
        if not lock.locked():
            self._locks.pop((bank_id, session_id), None)
        if groups:
            log.info(
                "compressed a session",
                extra={
                    "session_id": session_id,
                    "groups": groups,
                    "tokens_before": before,
                    "tokens_after": after,
                },
            )
        return CompressionResult(groups, summarised, before, after, used if groups else self.summariser.name)

    async def _summarise(self, entries: Sequence[Entry]) -> tuple[str, str]:
        """A summary no longer than its source, and the summariser that wrote it (the extractive one
        stands in when the configured one fails or overruns)."""
        limit = len(source_text(entries))
        if self.summariser.name != EXTRACTIVE:
            try:
                text = (await self.summariser.summarise(entries, limit)).strip()
                if text and len(text) <= limit:
                    return text, self.summariser.name
                log.warning("summary rejected: empty or longer than its source", extra={"chars": len(text)})
            except Exception:
                log.warning("summariser failed; using the extractive one", exc_info=True)
        return await self._fallback.summarise(entries, limit), EXTRACTIVE

    async def stats(self, bank_id: str, session_id: str) -> SessionStats:
        """The session's token and entry counts."""
        return await self.store.stats(bank_id, session_id)

    async def close_session(self, bank_id: str, session_id: str) -> SessionStats | None:
        """Drop the session's working state; None when it was unknown or expired."""
        async with self._lock(bank_id, session_id):
            stats = await self.store.close_session(bank_id, session_id)
        self._locks.pop((bank_id, session_id), None)
        return stats

    async def forget(
        self, bank_id: str, turn_ids: Sequence[str], session_id: str = "", whole_bank: bool = False
    ) -> int:
        """Remove turns (and summaries made from them) from every live window of the bank, and drop a
        whole session or every session of the bank; returns how many entries went."""
        if whole_bank:
            removed = await self.store.drop_bank(bank_id)
            for key in [key for key in self._locks if key[0] == bank_id]:
                self._locks.pop(key, None)
            return removed
        removed = 0
        if session_id:
            stats = await self.close_session(bank_id, session_id)
            removed += stats.turn_count + stats.summary_count if stats is not None else 0
        if turn_ids:
            removed += await self.store.forget(bank_id, list(dict.fromkeys(turn_ids)))
        return removed

    async def search(
        self,
        bank_id: str,
        query: str | Phrasings,
        session_id: str,
        limit: int,
        window: TimeRange | None = None,
        tags: Collection[str] = (),
        banks: Sequence[str] = (),
    ) -> list[RecentHit]:
        """Recent entries of one session (or of the bank's live sessions) ranked against ``query`` and each
        of its rewrites, the lists merged into one (see :mod:`hindsight.runtime.rewrites`).

        The entries are read once for every phrasing. ``window`` and ``tags`` filter each phrasing's best
        ``limit`` turns before the merge (the stored headers hold neither times nor tags). ``banks``: search
        these banks together instead of ``bank_id``; term-overlap scores do not depend on the bank, so each
        phrasing's hits of every bank are one ranking, and each hit names its bank.
        """
        phrasings = Phrasings.of(query)
        window = window or TimeRange()
        now = self.clock()
        chosen = tuple(banks) or (bank_id,)

        async def entries(bank: str) -> list[Indexed]:
            if session_id:
                sessions = [session_id]
            else:
                sessions = await self.store.live_sessions(bank, now, self.settings.search_sessions)
            return await self.store.recent(bank, sessions, self.settings.search_entries)

        pools = await asyncio.gather(*(entries(bank) for bank in chosen))
        half_life = self.settings.recency_half_life_seconds

        def ranked() -> list[list[RecentHit]]:
            decoded: dict[tuple[str, str], Turn | None] = {}
            lists = []
            for text in phrasings.texts:
                found = [
                    (bank, item, score)
                    for bank, candidates in zip(chosen, pools, strict=True)
                    for item, score in rank_recent(text, candidates, now, half_life, limit)
                ]
                if len(chosen) > 1:  # the best ``limit`` of every bank's, ordered as one bank's are
                    found.sort(key=lambda hit: (-hit[2], -hit[1].appended_at, hit[0], hit[1].id))
                    found = found[:limit]
                hits = []
                for bank, item, score in found:
                    if (bank, item.id) not in decoded:
                        decoded[bank, item.id] = _decoded_turn(item)
                    turn = decoded[bank, item.id]
                    if turn is not None and window.contains(turn.meta.time) and turn.meta.carries_tags(tags):
                        hits.append(RecentHit(turn, score, bank if banks else ""))
                lists.append(hits)
            return lists

        size = sum(len(pool) for pool in pools) * len(phrasings.texts)
        lists = await off_loop(ranked, size=size, threshold=RANK_OFF_LOOP)
        return phrasings.merge(lists, key=lambda hit: f"{hit.bank_id}/{hit.turn.id}")


def _decoded_turn(item: Indexed) -> Turn | None:
    """The turn of a window entry; None (logged) for a malformed one."""
    try:
        return item.decode().turn
    except (ValueError, KeyError, TypeError):
        log.warning("skipping a malformed window entry", extra={"entry_id": item.id})
        return None
