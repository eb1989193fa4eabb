"""Write rate limits at the edge: token buckets per bank, and per bank and untrusted source.

A flood of writes is one way to poison a memory (drown the true records, or plant many variants of one
false one); content from tools and outside sources gets a much smaller bucket than the bank as a whole.
A retain takes one token per turn from every bucket it touches, all or nothing: a refused retain writes
nothing and takes nothing. Buckets live in this process (each edge replica limits what it serves); idle
ones are dropped so that the table stays bounded.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hindsight.runtime.records import Source

MAX_BUCKETS = 100_000
"""Buckets kept at most; beyond it the full (idle longest) ones are dropped first."""


@dataclass
class _Bucket:
    tokens: float
    at: float


@dataclass(frozen=True)
class Limit:
    """A bucket's refill rate (tokens per second; 0: unlimited) and size."""

    rate: float
    burst: int

    @property
    def unlimited(self) -> bool:
        return self.rate <= 0


@dataclass(frozen=True)
class Refusal:
    """Which limit a write exceeded, in words that name it, and when to try again."""

    limit: str
    """``bank`` or ``source:<name>``."""
    reason: str
    retry_after: float


class WriteLimiter:
    """Token buckets keyed by (bank) and (bank, source) for the untrusted sources."""

    def __init__(
        self,
        bank: Limit,
        untrusted: Limit,
        untrusted_sources: frozenset[Source] = frozenset({Source.TOOL, Source.EXTERNAL}),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.bank = bank
        self.untrusted = untrusted
        self.untrusted_sources = untrusted_sources
        self._clock = clock
        self._buckets: dict[tuple[str, str], _Bucket] = {}

    def _wanted(self, bank_id: str, sources: Sequence[Source]) -> list[tuple[tuple[str, str], Limit, int]]:
        wanted: list[tuple[tuple[str, str], Limit, int]] = []
        if not self.bank.unlimited:
            wanted.append(((bank_id, ""), self.bank, len(sources)))
        if not self.untrusted.unlimited:
            counts = Counter(source for source in sources if source in self.untrusted_sources)
            for source, count in sorted(counts.items(), key=lambda item: item[0].value):
                wanted.append(((bank_id, source.value), self.untrusted, count))
        return wanted

    def _level(self, key: tuple[str, str], limit: Limit, now: float) -> _Bucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _Bucket(float(limit.burst), now)
        else:
            bucket.tokens = min(float(limit.burst), bucket.tokens + (now - bucket.at) * limit.rate)
            bucket.at = now
        return bucket

    def take(self, bank_id: str, sources: Sequence[Source]) -> Refusal | None:
        """Take one token per turn (``sources``: each turn's source) or none at all; the refusal says
        which limit was hit."""
        now = self._clock()
        wanted = self._wanted(bank_id, sources)
        levels = [(key, limit, count, self._level(key, limit, now)) for key, limit, count in wanted]
        for key, limit, count, bucket in levels:
            if bucket.tokens < count:
                self._keep(levels)
                name = "bank" if not key[1] else f"source:{key[1]}"
                missing = count - bucket.tokens
                wait = missing / limit.rate if count <= limit.burst else float("inf")
                what = "the bank" if not key[1] else f"{key[1]} content in the bank"
                return Refusal(
                    name,
                    f"write rate limit of {what} exceeded: {count} turns asked, "
                    f"{int(bucket.tokens)} left (at most {limit.burst} at once, {limit.rate:g} per second)",
                    wait,
                )
        for _, _, count, bucket in levels:
            bucket.tokens -= count
        self._keep(levels)
        return None

    def _keep(self, levels: Sequence[tuple[tuple[str, str], Limit, int, _Bucket]]) -> None:
        for key, _, _, bucket in levels:
            self._buckets[key] = bucket
        if len(self._buckets) > MAX_BUCKETS:
            oldest = sorted(self._buckets, key=lambda key: self._buckets[key].at)
            for key in oldest[: len(self._buckets) - MAX_BUCKETS]:
                del self._buckets[key]
