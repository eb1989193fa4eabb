"""Session windows in Redis: one list of JSON turns per bank and session, with a TTL.

Keys (``{bank}`` is a Redis Cluster hash tag, so every key of one bank lives in one slot and one
MULTI/EXEC may span several sessions of the bank):

- ``<prefix>:{<bank>}:turns:<session>``  list of JSON-encoded turns, oldest first, trimmed to the window;
- ``<prefix>:{<bank>}:ids:<session>``    sorted set of recent turn ids (score: append time), for idempotency;
- ``<prefix>:{<bank>}:sessions``         sorted set of the bank's live sessions (score: last write).

Every write refreshes the TTL of the keys it touches; entries of the sessions set older than the TTL
belong to expired windows and are pruned on the next write or search.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.exceptions import WatchError

from hindsight.runtime.errors import Unavailable
from hindsight.runtime.records import RecordMeta, Role, Turn
from hindsight.working.settings import WorkingSettings

log = logging.getLogger(__name__)

_MAX_ATTEMPTS = 30
"""Optimistic-lock attempts of one append; only concurrent appends to the same session ever retry."""
_MAX_BACKOFF_SECONDS = 0.05
"""Longest random pause between two attempts."""


@dataclass(frozen=True)
class StoredTurn:
    """A turn as held in a window, with the time it was appended (seconds since the epoch)."""

    turn: Turn
    appended_at: float


class WindowStore(Protocol):
    """What working memory needs from its store."""

    async def append(self, bank_id: str, turns: Sequence[Turn], now: float) -> int:
        """Append the turns not already in their session's window, atomically; return how many were new."""
        ...

    async def window(self, bank_id: str, session_id: str, max_turns: int) -> list[StoredTurn]:
        """The last ``max_turns`` turns of a session, oldest first; empty when unknown or expired."""
        ...

    async def live_sessions(self, bank_id: str, now: float, limit: int) -> list[str]:
        """Up to ``limit`` live sessions of the bank, most recently active first."""
        ...

    async def recent(self, bank_id: str, session_ids: Sequence[str], per_session: int) -> list[StoredTurn]:
        """The last ``per_session`` turns of each named session."""
        ...

    async def forget(self, bank_id: str, turn_ids: Sequence[str]) -> int:
        """Remove the turns from every window of the bank, atomically; return how many were removed."""
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


def encode_turn(turn: Turn, appended_at: float) -> str:
    """The JSON a window holds for one turn."""
    meta = turn.meta
    return json.dumps(
        {
            "id": turn.id,
            "session_id": turn.session_id,
            "role": turn.role.value,
            "speaker": turn.speaker,
            "text": turn.text,
            **meta.to_fields(),
            "time": meta.time.isoformat() if meta.time else None,
            "appended_at": appended_at,
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def decode_turn(raw: str | bytes) -> StoredTurn:
    """Inverse of :func:`encode_turn`; raises ValueError (or KeyError/TypeError) on a malformed entry."""
    data: dict[str, Any] = json.loads(raw)
    meta = RecordMeta.from_fields(data, time=datetime.fromisoformat(data["time"]) if data["time"] else None)
    turn = Turn(
        id=data["id"],
        session_id=data["session_id"],
        text=data["text"],
        role=Role(data["role"]),
        speaker=data["speaker"],
        meta=meta,
    )
    return StoredTurn(turn, float(data["appended_at"]))


def _decode_all(raws: Sequence[str | bytes], key: str) -> list[StoredTurn]:
    result = []
    for raw in raws:
        try:
            result.append(decode_turn(raw))
        except (ValueError, KeyError, TypeError):
            log.warning("skipping a malformed window entry", extra={"key": key})
    return result


@contextlib.asynccontextmanager
async def _unavailable_on_connection_errors() -> AsyncIterator[None]:
    """A store that cannot be reached is UNAVAILABLE to the caller (retryable), not INTERNAL."""
    try:
        yield
    except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
        raise Unavailable(f"working memory store unreachable: {exc}") from exc


class RedisWindowStore:
    """:class:`WindowStore` on Redis or Valkey through ``redis.asyncio``."""

    def __init__(self, client: aioredis.Redis, settings: WorkingSettings) -> None:
        self._redis = client
        self._settings = settings
        self._keys = Keys(settings.prefix)

    @classmethod
    def from_settings(cls, settings: WorkingSettings) -> RedisWindowStore:
        """A store on ``settings.redis_url``; connections open lazily."""
        client = aioredis.from_url(
            settings.redis_url,
            decode_responses=True,
            socket_timeout=5.0,
            socket_connect_timeout=2.0,
            health_check_interval=30,
        )
        return cls(client, settings)

    async def append(self, bank_id: str, turns: Sequence[Turn], now: float) -> int:
        by_session: dict[str, list[Turn]] = {}
        for turn in turns:
            by_session.setdefault(turn.session_id, []).append(turn)
        id_keys = [self._keys.ids(bank_id, session) for session in by_session]
        async with _unavailable_on_connection_errors(), self._redis.pipeline(transaction=True) as pipe:
            for attempt in range(_MAX_ATTEMPTS):
                try:
                    # WATCH the id sets: if a concurrent append changes one between our read and EXEC,
                    # EXEC fails and we read again, so a turn id is never appended twice.
                    await pipe.watch(*id_keys)
                    fresh = {
                        session: await self._unseen(pipe, bank_id, session, items)
                        for session, items in by_session.items()
                    }
                    pipe.multi()
                    self._queue_writes(pipe, bank_id, fresh, now)
                    await pipe.execute()
                    return sum(len(items) for items in fresh.values())
                except WatchError:
                    # Another writer won the race: back off a random, growing moment so that
                    # contenders spread out instead of colliding again in lockstep.
                    log.debug("concurrent append; retrying", extra={"bank_id": bank_id, "attempt": attempt})
                    await asyncio.sleep(random.uniform(0, min(_MAX_BACKOFF_SECONDS, 0.001 * 2**attempt)))
        raise Unavailable("working memory is busy: too many concurrent appends to the same session")

    async def _unseen(self, pipe: Any, bank_id: str, session_id: str, items: list[Turn]) -> list[Turn]:
        """The turns whose ids are neither remembered for the session nor repeated earlier in ``items``."""
        ids = list(dict.fromkeys(turn.id for turn in items))
        scores = await pipe.zmscore(self._keys.ids(bank_id, session_id), ids)
        seen = {turn_id for turn_id, score in zip(ids, scores, strict=True) if score is not None}
        unseen = []
        for turn in items:
            if turn.id not in seen:
                seen.add(turn.id)
                unseen.append(turn)
        return unseen

    def _queue_writes(self, pipe: Any, bank_id: str, fresh: dict[str, list[Turn]], now: float) -> None:
        settings = self._settings
        sessions_key = self._keys.sessions(bank_id)
        for session_id, items in fresh.items():
            turns_key = self._keys.turns(bank_id, session_id)
            ids_key = self._keys.ids(bank_id, session_id)
            if items:
                pipe.rpush(turns_key, *(encode_turn(turn, now) for turn in items))
                pipe.zadd(ids_key, {turn.id: now for turn in items})
            pipe.ltrim(turns_key, -settings.max_window, -1)
            pipe.zremrangebyrank(ids_key, 0, -(settings.remembered_ids + 1))
            pipe.expire(turns_key, settings.ttl_seconds)
            pipe.expire(ids_key, settings.ttl_seconds)
            pipe.zadd(sessions_key, {session_id: now})
        pipe.zremrangebyscore(sessions_key, "-inf", f"({now - settings.ttl_seconds}")
        pipe.expire(sessions_key, settings.ttl_seconds)

    async def window(self, bank_id: str, session_id: str, max_turns: int) -> list[StoredTurn]:
        key = self._keys.turns(bank_id, session_id)
        async with _unavailable_on_connection_errors():
            raws = await self._redis.lrange(key, -max_turns, -1)
        return _decode_all(raws, key)

    async def live_sessions(self, bank_id: str, now: float, limit: int) -> list[str]:
        key = self._keys.sessions(bank_id)
        async with _unavailable_on_connection_errors(), self._redis.pipeline(transaction=True) as pipe:
            pipe.zremrangebyscore(key, "-inf", f"({now - self._settings.ttl_seconds}")
            pipe.zrevrange(key, 0, limit - 1)
            _, sessions = await pipe.execute()
        return list(sessions)

    async def recent(self, bank_id: str, session_ids: Sequence[str], per_session: int) -> list[StoredTurn]:
        if not session_ids:
            return []
        keys = [self._keys.turns(bank_id, session_id) for session_id in session_ids]
        async with _unavailable_on_connection_errors(), self._redis.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.lrange(key, -per_session, -1)
            lists = await pipe.execute()
        return [entry for key, raws in zip(keys, lists, strict=True) for entry in _decode_all(raws, key)]

    async def forget(self, bank_id: str, turn_ids: Sequence[str]) -> int:
        doomed = set(turn_ids)
        sessions_key = self._keys.sessions(bank_id)
        async with _unavailable_on_connection_errors(), self._redis.pipeline(transaction=True) as pipe:
            for attempt in range(_MAX_ATTEMPTS):
                try:
                    await pipe.watch(sessions_key)
                    sessions = [str(session) for session in await pipe.zrange(sessions_key, 0, -1)]
                    turn_keys = [self._keys.turns(bank_id, session) for session in sessions]
                    if turn_keys:
                        await pipe.watch(*turn_keys)
                    kept: dict[str, list[str]] = {}
                    removed = 0
                    for session, key in zip(sessions, turn_keys, strict=True):
                        raws = [str(raw) for raw in await pipe.lrange(key, 0, -1)]
                        keep = [raw for raw in raws if decode_turn(raw).turn.id not in doomed]
                        if len(keep) != len(raws):
                            removed += len(raws) - len(keep)
                            kept[session] = keep
                    pipe.multi()
                    for session, keep in kept.items():
                        key = self._keys.turns(bank_id, session)
                        ttl = self._settings.ttl_seconds
                        pipe.delete(key)
                        if keep:
                            pipe.rpush(key, *keep)
                            pipe.expire(key, ttl)
                        pipe.zrem(self._keys.ids(bank_id, session), *doomed)
                    await pipe.execute()
                    return removed
                except WatchError:
                    log.debug("concurrent write during forget; retrying", extra={"attempt": attempt})
                    await asyncio.sleep(random.uniform(0, min(_MAX_BACKOFF_SECONDS, 0.001 * 2**attempt)))
        raise Unavailable("working memory is busy: too many concurrent writes to the same bank")

    async def ping(self) -> bool:
        try:
            return bool(await asyncio.wait_for(self._redis.ping(), timeout=2.0))
        except Exception:
            log.warning("working memory store did not answer PING", exc_info=True)
            return False

    async def close(self) -> None:
        await self._redis.aclose()
