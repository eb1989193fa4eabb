"""Session windows in Redis: one list of entries per bank and session, with counters and a TTL.

Keys (``{bank}`` is a Redis Cluster hash tag, so every key of one bank lives in one slot and one
MULTI/EXEC may span several sessions of the bank):

- ``<prefix>:{<bank>}:turns:<session>``  list of encoded entries (turns and summaries), oldest first;
- ``<prefix>:{<bank>}:ids:<session>``    sorted set of recent turn ids (score: append time), for idempotency;
- ``<prefix>:{<bank>}:meta:<session>``   hash of the session's counters (tokens, turns, summaries) and its
  epoch: a random token renewed whenever the list is created or rewritten rather than appended to;
- ``<prefix>:{<bank>}:sessions``         sorted set of the bank's live sessions (score: last write).

An entry is stored as a short header and a JSON body, joined by the unit separator (``\\x1f``, which
JSON always escapes): ``2 kind id tokens appended_at terms body``. Searching and budgeting read the
header only (the search terms were computed once, on append); the JSON is decoded for the entries
returned. Lists written by the first version of this layer (plain JSON) are still read.

SearchRecent keeps the headers it has read in a bounded in-process cache, checked on every query against
the session's epoch and length in one MULTI: an unchanged session costs nothing to read again, a session
that was only appended to costs its new entries, and a rewritten one is read afresh. Every replica
therefore answers from Redis' current state.

Every write refreshes the TTL of the keys it touches; entries of the sessions set older than the TTL
belong to expired windows and are pruned on the next write or search. Writes use WATCH + MULTI/EXEC, so
the counters always agree with the list they describe.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import uuid
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any, Protocol, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.exceptions import WatchError

from hindsight.runtime.database import store_errors
from hindsight.runtime.errors import Unavailable
from hindsight.runtime.records import RecordMeta, Role, Turn
from hindsight.runtime.text import terms as text_terms
from hindsight.working.entries import Entry, EntryKind
from hindsight.working.settings import WorkingSettings

log = logging.getLogger(__name__)

_STORE = "working memory store"
"""How errors name this store (``working memory store unreachable: ...``)."""

_MAX_ATTEMPTS = 30
"""Optimistic-lock attempts of one write; only concurrent writes to the same session ever retry."""
_MAX_BACKOFF_SECONDS = 0.05
"""Longest random pause between two attempts."""
_SEP = "\x1f"
_VERSION = "2"
_CACHE_ENTRIES = 200_000
"""Headers the search cache holds at most, over all sessions (least recently searched sessions go first)."""
_T = TypeVar("_T")
_READ_TAILS = """
local out = {}
for i = 1, #ARGV do
  out[#out + 1] = redis.call('HGET', KEYS[2 * i - 1], 'epoch')
  out[#out + 1] = redis.call('LLEN', KEYS[2 * i])
  out[#out + 1] = redis.call('LRANGE', KEYS[2 * i], tonumber(ARGV[i]), -1)
end
return out
"""
"""KEYS: meta and turns key of each session; ARGV: the list position to read each session from."""


@dataclass(frozen=True)
class SessionStats:
    """What a session holds: tokens of every entry, turns and summaries."""

    token_count: int = 0
    turn_count: int = 0
    summary_count: int = 0

    def plus(self, entries: Sequence[Indexed], sign: int = 1) -> SessionStats:
        """The stats with ``entries`` added (``sign`` 1) or removed (-1)."""
        tokens = sum(entry.token_count for entry in entries)
        summaries = sum(1 for entry in entries if entry.kind is EntryKind.SUMMARY)
        return SessionStats(
            self.token_count + sign * tokens,
            self.turn_count + sign * (len(entries) - summaries),
            self.summary_count + sign * summaries,
        )


@dataclass(frozen=True)
class Indexed:
    """An entry's header, read without decoding its JSON body; :meth:`decode` gives the full entry."""

    kind: EntryKind
    id: str
    token_count: int
    appended_at: float
    terms: str
    """Search terms, space-separated, repeats kept."""
    raw: str

    def decode(self) -> Entry:
        """The full entry (raises ValueError, KeyError or TypeError on a malformed body)."""
        return decode_entry(self.raw)

    @cached_property
    def term_counts(self) -> Counter[str]:
        """Counts of the search terms, computed once per cached header."""
        return Counter(self.terms.split())

    @cached_property
    def term_total(self) -> int:
        """Number of search terms, repeats included."""
        return sum(self.term_counts.values())


@dataclass(frozen=True)
class AppendOutcome:
    """How many turns were new, and each touched session's stats after the append."""

    appended: int
    sessions: dict[str, SessionStats]


class WindowStore(Protocol):
    """What working memory needs from its store."""

    async def append(self, bank_id: str, entries: Sequence[Entry], now: float) -> AppendOutcome:
        """Append the turn entries not already in their session, atomically."""
        ...

    async def window(self, bank_id: str, session_id: str, max_entries: int) -> list[Entry]:
        """The last ``max_entries`` entries of a session, oldest first; empty when unknown or expired."""
        ...

    async def headers(self, bank_id: str, session_id: str) -> list[Indexed]:
        """Every entry of a session, oldest first, undecoded."""
        ...

    async def stats(self, bank_id: str, session_id: str) -> SessionStats:
        """The session's counters (zero when unknown or expired)."""
        ...

    async def live_sessions(self, bank_id: str, now: float, limit: int) -> list[str]:
        """Up to ``limit`` live sessions of the bank, most recently active first."""
        ...

    async def recent(self, bank_id: str, session_ids: Sequence[str], per_session: int) -> list[Indexed]:
        """The last ``per_session`` entries of each named session, undecoded."""
        ...

    async def replace(self, bank_id: str, session_id: str, replaced: Sequence[str], entry: Entry) -> bool:
        """Replace the contiguous run of entries ``replaced`` by ``entry``, atomically.

        False (and nothing written) when the run is no longer in the window as read (a concurrent
        forget, close or compression changed it).
        """
        ...

    async def close_session(self, bank_id: str, session_id: str) -> SessionStats | None:
        """Drop a session's keys; its stats before, or None when it was unknown or expired."""
        ...

    async def forget(self, bank_id: str, turn_ids: Sequence[str]) -> int:
        """Remove the turns, and summaries made from them, from every window of the bank (a window left empty
        goes with its keys); return how many."""
        ...

    async def drop_bank(self, bank_id: str) -> int:
        """Drop every session of the bank (all its keys); returns how many entries the windows held."""
        ...

    async def ping(self) -> bool:
        """Whether the store answers; never raises."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


@dataclass(frozen=True)
class Keys:
    """Key names for one prefix (see the module docstring)."""

    prefix: str

    def sessions(self, bank_id: str) -> str:
        return f"{self.prefix}:{{{bank_id}}}:sessions"

    def turns(self, bank_id: str, session_id: str) -> str:
        return f"{self.prefix}:{{{bank_id}}}:turns:{session_id}"

    def ids(self, bank_id: str, session_id: str) -> str:
        return f"{self.prefix}:{{{bank_id}}}:ids:{session_id}"

    def meta(self, bank_id: str, session_id: str) -> str:
        return f"{self.prefix}:{{{bank_id}}}:meta:{session_id}"


def searchable_text(turn: Turn) -> str:
    """What a query is matched against: the speaker's name and the text."""
    return f"{turn.speaker} {turn.text}" if turn.speaker else turn.text


def encode_entry(entry: Entry) -> str:
    """The stored form of an entry: header fields, then the JSON body."""
    turn = entry.turn
    meta = turn.meta
    body = json.dumps(
        {
            "session_id": turn.session_id,
            "role": turn.role.value,
            "speaker": turn.speaker,
            "text": turn.text,
            **meta.to_fields(),
            "time": meta.time.isoformat() if meta.time else None,
            "summary": entry.summary,
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )
    terms = " ".join(entry.terms) if entry.terms else " ".join(text_terms(searchable_text(turn)))
    header = [_VERSION, entry.kind.value, turn.id, str(entry.token_count), repr(entry.appended_at), terms]
    if any(_SEP in part for part in header):
        raise ValueError("an entry header may not contain the unit separator")
    return _SEP.join([*header, body])


def _turn_from(data: dict[str, Any], turn_id: str) -> Turn:
    meta = RecordMeta.from_fields(data, time=datetime.fromisoformat(data["time"]) if data["time"] else None)
    return Turn(
        id=turn_id,
        session_id=data["session_id"],
        text=data["text"],
        role=Role(data["role"]),
        speaker=data["speaker"],
        meta=meta,
    )


def index_entry(raw: str) -> Indexed:
    """The header of a stored entry (raises ValueError on a malformed one)."""
    if raw.startswith("{"):  # first-version entry: plain JSON, no header
        data = json.loads(raw)
        text = f"{data['speaker']} {data['text']}" if data.get("speaker") else data["text"]
        return Indexed(
            EntryKind.TURN, data["id"], 0, float(data["appended_at"]), " ".join(text_terms(text)), raw
        )
    version, kind, entry_id, tokens, appended_at, terms, _ = raw.split(_SEP, 6)
    if version != _VERSION:
        raise ValueError(f"unknown entry version {version!r}")
    return Indexed(EntryKind(kind), entry_id, int(tokens), float(appended_at), terms, raw)


def decode_entry(raw: str) -> Entry:
    """Inverse of :func:`encode_entry`; raises ValueError (or KeyError/TypeError) on a malformed entry."""
    if raw.startswith("{"):
        data = json.loads(raw)
        turn = _turn_from(data, data["id"])
        return Entry(EntryKind.TURN, turn, 0, float(data["appended_at"]))
    header = index_entry(raw)
    data = json.loads(raw.split(_SEP, 6)[6])
    return Entry(
        header.kind,
        _turn_from(data, header.id),
        header.token_count,
        header.appended_at,
        summary=data.get("summary") or "",
        terms=tuple(header.terms.split()),
    )


def _index_all(raws: Sequence[Any], key: str) -> list[Indexed]:
    result = []
    for raw in raws:
        try:
            result.append(index_entry(str(raw)))
        except (ValueError, KeyError, TypeError):
            log.warning("skipping a malformed window entry", extra={"key": key})
    return result


def _decode_all(raws: Sequence[Any], key: str) -> list[Entry]:
    result = []
    for raw in raws:
        try:
            result.append(decode_entry(str(raw)))
        except (ValueError, KeyError, TypeError):
            log.warning("skipping a malformed window entry", extra={"key": key})
    return result


def _turn_time(raw: str) -> datetime | None:
    """The time of the turn an encoded entry holds (None for a summary or an entry that cannot be read)."""
    try:
        entry = decode_entry(raw)
    except (ValueError, KeyError, TypeError):
        return None
    return entry.turn.meta.time if entry.kind is EntryKind.TURN else None


def _older_than(fresh: Sequence[Entry], newest_raw: str) -> bool:
    """Whether a fresh turn is older than the newest entry of the window (so it does not go at the end)."""
    newest = _turn_time(newest_raw)
    return newest is not None and any(
        entry.turn.meta.time is not None and entry.turn.meta.time < newest for entry in fresh
    )


def _insert_by_time(current: list[str], fresh: Sequence[Entry], encoded: dict[str, str]) -> list[str]:
    """``current`` with each fresh turn placed after the last entry that is not newer than it (summaries,
    which open the list, count as older than every turn); the order of what is there is kept."""
    merged = list(current)
    times: list[datetime | None] = [_turn_time(raw) for raw in merged]
    for entry in fresh:
        at = entry.turn.meta.time
        position = len(merged)
        if at is not None:
            position = 0
            for index, when in enumerate(times):
                if when is None or when <= at:
                    position = index + 1
        merged.insert(position, encoded[entry.id])
        times.insert(position, at)
    return merged


def _stats_from(values: Sequence[Any]) -> SessionStats:
    tokens, turns, summaries = (int(value or 0) for value in values)
    return SessionStats(tokens, turns, summaries)


def _new_epoch() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class _AppendPlan:
    fresh: list[Entry]
    encoded: list[str]
    after: SessionStats
    new_epoch: bool
    """The list is created or its head trimmed: positions change, so search caches must reload."""
    rewrite: list[str] | None = None
    """The whole list, when a fresh turn is older than the newest one there (a turn that missed the
    window, appended again from episodic memory) and goes in its place by time rather than at the end."""


@dataclass(frozen=True)
class _Cached:
    """Headers of a session's newest entries as last read, and where the list stood then."""

    epoch: str
    length: int
    entries: list[Indexed]


class RedisWindowStore:
    """:class:`WindowStore` on Redis or Valkey through ``redis.asyncio``."""

    def __init__(self, client: aioredis.Redis, settings: WorkingSettings) -> None:
        self._redis = client
        self._settings = settings
        self._keys = Keys(settings.prefix)
        self._cache: OrderedDict[tuple[str, str], _Cached] = OrderedDict()
        self._cached_entries = 0
        self._read_tails_script = client.register_script(_READ_TAILS)

    @classmethod
    def from_settings(cls, settings: WorkingSettings) -> RedisWindowStore:
        """A store on ``settings.redis_url``; connections open lazily.

        A command that meets a dropped connection (Redis restarted, failed over) is retried on a new one
        a few times with back-off before the caller sees UNAVAILABLE: every write here is idempotent.
        """
        client = aioredis.from_url(
            settings.redis_url,
            decode_responses=True,
            socket_timeout=5.0,
            socket_connect_timeout=2.0,
            health_check_interval=30,
            retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 3),
            retry_on_error=[RedisConnectionError, RedisTimeoutError],
        )
        return cls(client, settings)

    async def _optimistic(self, what: str, attempt_once: Callable[[Any], Awaitable[_T]]) -> _T:
        """Run ``attempt_once(pipe)`` until its EXEC is not beaten by a concurrent writer."""
        async with store_errors(_STORE), self._redis.pipeline(transaction=True) as pipe:
            for attempt in range(_MAX_ATTEMPTS):
                try:
                    return await attempt_once(pipe)
                except WatchError:
                    # Another writer won the race: back off a random, growing moment so that
                    # contenders spread out instead of colliding again in lockstep.
                    log.debug("concurrent write; retrying", extra={"operation": what, "attempt": attempt})
                    await pipe.reset()
                    await asyncio.sleep(random.uniform(0, min(_MAX_BACKOFF_SECONDS, 0.001 * 2**attempt)))
        raise Unavailable(f"working memory is busy: too many concurrent writes during {what}")

    async def append(self, bank_id: str, entries: Sequence[Entry], now: float) -> AppendOutcome:
        by_session: dict[str, list[Entry]] = {}
        for entry in entries:
            by_session.setdefault(entry.turn.session_id, []).append(entry)
        encoded = {entry.id: encode_entry(entry) for entry in entries}

        async def attempt(pipe: Any) -> AppendOutcome:
            # WATCH the id sets and lists: if a concurrent write changes one between our read and EXEC,
            # EXEC fails and we read again, so a turn id is never appended twice and counters stay exact.
            watched = [self._keys.ids(bank_id, s) for s in by_session]
            watched += [self._keys.turns(bank_id, s) for s in by_session]
            await pipe.watch(*watched)
            plans = {
                s: await self._plan_append(pipe, bank_id, s, items, encoded)
                for s, items in by_session.items()
            }
            pipe.multi()
            self._queue_appends(pipe, bank_id, plans, now)
            await pipe.execute()
            return AppendOutcome(
                sum(len(plan.fresh) for plan in plans.values()),
                {session: plan.after for session, plan in plans.items()},
            )

        return await self._optimistic("append", attempt)

    async def _plan_append(
        self, pipe: Any, bank_id: str, session_id: str, items: list[Entry], encoded: dict[str, str]
    ) -> _AppendPlan:
        ids = list(dict.fromkeys(entry.id for entry in items))
        turns_key = self._keys.turns(bank_id, session_id)
        # Read-only commands on a watching pipeline run at once; this one batches them in one round trip.
        async with self._redis.pipeline(transaction=False) as reads:
            reads.zmscore(self._keys.ids(bank_id, session_id), ids)
            reads.llen(turns_key)
            reads.hmget(self._keys.meta(bank_id, session_id), "tokens", "turns", "summaries")
            reads.lindex(turns_key, -1)
            scores, length, counters, newest = await reads.execute()
        seen = {turn_id for turn_id, score in zip(ids, scores, strict=True) if score is not None}
        fresh = []
        for entry in items:
            if entry.id not in seen:
                seen.add(entry.id)
                fresh.append(entry)
        # An empty list under live counters means the list was evicted or expired alone: start over.
        # Counters missing under a live list (the hash was evicted alone) are recounted from the list.
        recount = bool(length) and counters[0] is None
        if recount:
            before = SessionStats().plus(_index_all(await pipe.lrange(turns_key, 0, -1), turns_key))
        else:
            before = _stats_from(counters) if length else SessionStats()
        raws = [encoded[entry.id] for entry in fresh]
        overflow = int(length) + len(fresh) - self._settings.max_window
        trimmed: list[Indexed] = []
        if overflow > 0:
            # The window is full: the oldest entries go (episodic memory has them); keep the counters exact.
            old = await pipe.lrange(turns_key, 0, min(overflow, int(length)) - 1)
            trimmed = _index_all(old, turns_key) + _index_all(
                raws[: max(overflow - int(length), 0)], turns_key
            )
        if fresh and newest is not None and _older_than(fresh, str(newest)):
            merged = _insert_by_time(
                [str(raw) for raw in await pipe.lrange(turns_key, 0, -1)], fresh, encoded
            )
            cut = max(0, len(merged) - self._settings.max_window)
            trimmed = _index_all(merged[:cut], turns_key)
            after = before.plus(_index_all(raws, turns_key)).plus(trimmed, sign=-1)
            return _AppendPlan(fresh, raws, after, new_epoch=True, rewrite=merged[cut:])
        after = before.plus(_index_all(raws, turns_key)).plus(trimmed, sign=-1)
        return _AppendPlan(fresh, raws, after, new_epoch=not length or overflow > 0 or recount)

    def _queue_appends(self, pipe: Any, bank_id: str, plans: dict[str, _AppendPlan], now: float) -> None:
        settings = self._settings
        ttl = settings.ttl_seconds
        sessions_key = self._keys.sessions(bank_id)
        for session_id, plan in plans.items():
            turns_key = self._keys.turns(bank_id, session_id)
            ids_key = self._keys.ids(bank_id, session_id)
            meta_key = self._keys.meta(bank_id, session_id)
            if plan.rewrite is not None:
                pipe.delete(turns_key)
                if plan.rewrite:
                    pipe.rpush(turns_key, *plan.rewrite)
                pipe.zadd(ids_key, {entry.id: now for entry in plan.fresh})
            elif plan.fresh:
                pipe.rpush(turns_key, *plan.encoded)
                pipe.zadd(ids_key, {entry.id: now for entry in plan.fresh})
            pipe.ltrim(turns_key, -settings.max_window, -1)
            pipe.zremrangebyrank(ids_key, 0, -(settings.remembered_ids + 1))
            pipe.hset(meta_key, mapping=_meta_fields(plan.after, _new_epoch() if plan.new_epoch else None))
            for key in (turns_key, ids_key, meta_key):
                pipe.expire(key, ttl)
            pipe.zadd(sessions_key, {session_id: now})
        pipe.zremrangebyscore(sessions_key, "-inf", f"({now - ttl}")
        pipe.expire(sessions_key, ttl)

    async def window(self, bank_id: str, session_id: str, max_entries: int) -> list[Entry]:
        key = self._keys.turns(bank_id, session_id)
        async with store_errors(_STORE):
            raws = await self._redis.lrange(key, -max_entries, -1)
        return _decode_all(raws, key)

    async def headers(self, bank_id: str, session_id: str) -> list[Indexed]:
        key = self._keys.turns(bank_id, session_id)
        async with store_errors(_STORE):
            raws = await self._redis.lrange(key, 0, -1)
        return _index_all(raws, key)

    async def stats(self, bank_id: str, session_id: str) -> SessionStats:
        async with store_errors(_STORE), self._redis.pipeline(transaction=True) as pipe:
            pipe.llen(self._keys.turns(bank_id, session_id))
            pipe.hmget(self._keys.meta(bank_id, session_id), "tokens", "turns", "summaries")
            length, values = await pipe.execute()
        return _stats_from(values) if length else SessionStats()

    async def live_sessions(self, bank_id: str, now: float, limit: int) -> list[str]:
        key = self._keys.sessions(bank_id)
        async with store_errors(_STORE), self._redis.pipeline(transaction=True) as pipe:
            pipe.zremrangebyscore(key, "-inf", f"({now - self._settings.ttl_seconds}")
            pipe.zrevrange(key, 0, limit - 1)
            _, sessions = await pipe.execute()
        return list(sessions)

    async def recent(self, bank_id: str, session_ids: Sequence[str], per_session: int) -> list[Indexed]:
        if not session_ids:
            return []
        cached = [self._cache.get((bank_id, session)) for session in session_ids]
        starts = [item.length if item else -per_session for item in cached]
        fresh = await self._read_tails(bank_id, session_ids, starts)
        stale = []
        result: list[Indexed] = []
        for session, before, (epoch, length, tail) in zip(session_ids, cached, fresh, strict=True):
            if before is None:
                result.extend(self._remember(bank_id, session, epoch, length, tail, per_session))
            elif epoch == before.epoch and length >= before.length:
                entries = before.entries + tail
                result.extend(self._remember(bank_id, session, epoch, length, entries, per_session))
            else:
                stale.append(session)
        if stale:  # rewritten since we cached it (compressed, forgotten, trimmed, expired): read afresh
            again = await self._read_tails(bank_id, stale, [-per_session] * len(stale))
            for session, (epoch, length, tail) in zip(stale, again, strict=True):
                result.extend(self._remember(bank_id, session, epoch, length, tail, per_session))
        return result

    async def _read_tails(
        self, bank_id: str, session_ids: Sequence[str], starts: Sequence[int]
    ) -> list[tuple[str | None, int, list[Indexed]]]:
        """Each session's epoch, list length and entries from ``start`` on, read atomically by one script
        (one command instead of three per session: the client's protocol work dominated the search)."""
        keys = []
        for session in session_ids:
            keys += [self._keys.meta(bank_id, session), self._keys.turns(bank_id, session)]
        async with store_errors(_STORE):
            replies = await self._read_tails_script(keys=keys, args=list(starts))
        return [
            (replies[i], int(replies[i + 1]), _index_all(replies[i + 2], session))
            for i, session in zip(range(0, len(replies), 3), session_ids, strict=True)
        ]

    def _remember(
        self, bank_id: str, session_id: str, epoch: str | None, length: int, entries: list[Indexed], keep: int
    ) -> list[Indexed]:
        key = (bank_id, session_id)
        entries = entries[-keep:]
        old = self._cache.pop(key, None)
        if old is not None:
            self._cached_entries -= len(old.entries)
        if epoch is not None:  # a session with no epoch (first-version data) is never cached
            self._cache[key] = _Cached(str(epoch), length, entries)
            self._cached_entries += len(entries)
            while self._cached_entries > _CACHE_ENTRIES and self._cache:
                _, evicted = self._cache.popitem(last=False)
                self._cached_entries -= len(evicted.entries)
        return entries

    async def replace(self, bank_id: str, session_id: str, replaced: Sequence[str], entry: Entry) -> bool:
        turns_key = self._keys.turns(bank_id, session_id)
        meta_key = self._keys.meta(bank_id, session_id)
        wanted = list(replaced)

        async def attempt(pipe: Any) -> bool:
            await pipe.watch(turns_key)
            current = _index_all(await pipe.lrange(turns_key, 0, -1), turns_key)
            start = _find_run([item.id for item in current], wanted)
            if start is None:
                return False
            before = _stats_from(await pipe.hmget(meta_key, "tokens", "turns", "summaries"))
            encoded = encode_entry(entry)
            after = before.plus(current[start : start + len(wanted)], sign=-1).plus([index_entry(encoded)])
            kept = [item.raw for item in current[:start]]
            kept += [encoded, *(item.raw for item in current[start + len(wanted) :])]
            pipe.multi()
            pipe.delete(turns_key)
            pipe.rpush(turns_key, *kept)
            pipe.hset(meta_key, mapping=_meta_fields(after, _new_epoch()))
            pipe.expire(turns_key, self._settings.ttl_seconds)
            pipe.expire(meta_key, self._settings.ttl_seconds)
            await pipe.execute()
            return True

        return await self._optimistic("compression", attempt)

    async def close_session(self, bank_id: str, session_id: str) -> SessionStats | None:
        keys = self._keys
        turns_key = keys.turns(bank_id, session_id)
        meta_key = keys.meta(bank_id, session_id)
        async with store_errors(_STORE), self._redis.pipeline(transaction=True) as pipe:
            pipe.llen(turns_key)
            pipe.hmget(meta_key, "tokens", "turns", "summaries")
            pipe.delete(turns_key, keys.ids(bank_id, session_id), meta_key)
            pipe.zrem(keys.sessions(bank_id), session_id)
            length, values, _, _ = await pipe.execute()
        return _stats_from(values) if length else None

    async def forget(self, bank_id: str, turn_ids: Sequence[str]) -> int:
        doomed = set(turn_ids)
        sessions_key = self._keys.sessions(bank_id)

        async def attempt(pipe: Any) -> int:
            await pipe.watch(sessions_key)
            sessions = [str(session) for session in await pipe.zrange(sessions_key, 0, -1)]
            turn_keys = [self._keys.turns(bank_id, session) for session in sessions]
            if turn_keys:
                await pipe.watch(*turn_keys)
            kept: dict[str, list[Indexed]] = {}
            removed = 0
            for session, key in zip(sessions, turn_keys, strict=True):
                current = _index_all(await pipe.lrange(key, 0, -1), key)
                keep = [item for item in current if not _mentions(item, doomed)]
                if len(keep) != len(current):
                    removed += len(current) - len(keep)
                    kept[session] = keep
            pipe.multi()
            ttl = self._settings.ttl_seconds
            for session, keep in kept.items():
                key = self._keys.turns(bank_id, session)
                meta_key = self._keys.meta(bank_id, session)
                ids_key = self._keys.ids(bank_id, session)
                pipe.delete(key)
                if not keep:  # nothing of the session is left: no key keeps even its name
                    pipe.delete(meta_key, ids_key)
                    pipe.zrem(sessions_key, session)
                    continue
                pipe.rpush(key, *(item.raw for item in keep))
                pipe.expire(key, ttl)
                pipe.hset(meta_key, mapping=_meta_fields(SessionStats().plus(keep), _new_epoch()))
                pipe.expire(meta_key, ttl)
                pipe.zrem(ids_key, *doomed)
            await pipe.execute()
            return removed

        return await self._optimistic("forget", attempt)

    async def drop_bank(self, bank_id: str) -> int:
        """Every key of the bank shares its hash tag, so a scan of the tag's pattern finds them all, also
        those of sessions no longer in the sessions set."""
        sessions_key = self._keys.sessions(bank_id)
        pattern = _glob_escape(self._keys.sessions(bank_id).removesuffix(":sessions")) + ":*"
        async with store_errors(_STORE):
            sessions = [str(session) for session in await self._redis.zrange(sessions_key, 0, -1)]
            held = 0
            if sessions:
                async with self._redis.pipeline(transaction=False) as reads:
                    for session in sessions:
                        reads.llen(self._keys.turns(bank_id, session))
                    held = sum(int(length) for length in await reads.execute())
            batch: list[str] = []
            async for key in self._redis.scan_iter(match=pattern, count=500):
                batch.append(str(key))
                if len(batch) >= 500:
                    await self._redis.delete(*batch)
                    batch = []
            if batch:
                await self._redis.delete(*batch)
        for key in [key for key in self._cache if key[0] == bank_id]:
            self._cached_entries -= len(self._cache.pop(key).entries)
        return held

    async def ping(self) -> bool:
        try:
            return bool(await asyncio.wait_for(self._redis.ping(), timeout=2.0))
        except Exception:
            log.warning("working memory store did not answer PING", exc_info=True)
            return False

    async def close(self) -> None:
        await self._redis.aclose()


def _glob_escape(text: str) -> str:
    """``text`` matched literally in a Redis glob pattern."""
    return "".join(f"\\{char}" if char in "*?[]\\" else char for char in text)


def _meta_fields(stats: SessionStats, epoch: str | None) -> dict[str, int | str]:
    fields: dict[str, int | str] = {
        "tokens": stats.token_count,
        "turns": stats.turn_count,
        "summaries": stats.summary_count,
    }
    if epoch is not None:
        fields["epoch"] = epoch
    return fields


def _find_run(ids: Sequence[str], run: Sequence[str]) -> int | None:
    """Where ``run`` starts as a contiguous run of ``ids``, or None."""
    if not run:
        return None
    for start in range(len(ids) - len(run) + 1):
        if ids[start] == run[0] and list(ids[start : start + len(run)]) == list(run):
            return start
    return None


def _mentions(item: Indexed, doomed: set[str]) -> bool:
    """Whether an entry is, or summarises, one of the doomed turns (a summary would leak their content)."""
    if item.id in doomed:
        return True
    if item.kind is EntryKind.SUMMARY:
        try:
            return not doomed.isdisjoint(item.decode().source_turn_ids)
        except (ValueError, KeyError, TypeError):
            return True
    return False
