"""A query and its rewrites, searched by a layer in one call, their hit lists merged into one.

The edge reads a recall's query and derives rewrites of it (the query without its time words; its names
and content words alone); each layer searches every phrasing in one call and answers one list. Scores
of different queries do not compare (BM25 ranks, cosines, overlap ratios), so each phrasing's list is
min-max scaled to 0..1 on its own; a record keeps its best scaled score, where the hits of a rewrite
count ``rewrite_weight`` times, so the original query leads. A query without rewrites keeps the layer's
own scores.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.validation import check_text

DEFAULT_REWRITE_WEIGHT = 0.8
"""How much a rewrite's hits count against the original query's, when the caller does not say."""
MAX_REWRITES = 8
"""Rewrites one search request may carry besides its query."""


class Scored(Protocol):
    """A hit of a layer's search: a dataclass with a score (higher is better within one search)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def score(self) -> float:
        """The layer's score of the hit."""
        ...


S = TypeVar("S", bound=Scored)


def min_max_scaled(scores: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Scores by id scaled to [0, 1] over their range (the first score of an id counts), in first-seen order.

    When every score is the same (one hit, or a search without meaningful scores) the order decides:
    1 for the first, falling evenly.
    """
    first: dict[str, float] = {}
    for rid, value in scores:
        first.setdefault(rid, value)
    if not first:
        return {}
    low, high = min(first.values()), max(first.values())
    if high <= low:
        count = len(first)
        return {rid: 1.0 - index / count for index, rid in enumerate(first)}
    return {rid: (value - low) / (high - low) for rid, value in first.items()}


def merge_rewrites(lists: Sequence[Sequence[S]], key: Callable[[S], str], rewrite_weight: float) -> list[S]:
    """The hit lists of a query (first) and its rewrites as one list, best first, scores 0..1.

    Each list is min-max scaled on its own; a record keeps its best scaled score, where hits of a rewrite
    (every list after the first) count ``rewrite_weight`` times. Ties go by ``key``.
    """
    best: dict[str, tuple[float, S]] = {}
    for index, hits in enumerate(lists):
        factor = 1.0 if index == 0 else rewrite_weight
        by_id: dict[str, S] = {}
        for hit in hits:
            by_id.setdefault(key(hit), hit)
        for rid, value in min_max_scaled((key(hit), hit.score) for hit in hits).items():
            score = factor * value
            if rid not in best or score > best[rid][0]:
                best[rid] = (score, by_id[rid])
    ordered = sorted(best.items(), key=lambda item: (-item[1][0], item[0]))
    return [dataclasses.replace(hit, score=score) for _, (score, hit) in ordered]


@dataclass(frozen=True)
class Phrasings:
    """What one search looks for: a query, and rewrites of it searched in the same call."""

    query: str
    rewrites: tuple[str, ...] = ()
    """Further phrasings, distinct from the query and from each other."""
    rewrite_weight: float = DEFAULT_REWRITE_WEIGHT
    """How much a rewrite's hits count against the query's."""

    @classmethod
    def distinct(
        cls, query: str, rewrites: Sequence[str], rewrite_weight: float = DEFAULT_REWRITE_WEIGHT
    ) -> Phrasings:
        """``query`` with the ``rewrites`` that repeat neither it nor one another (they would find the same
        hits again)."""
        return cls(query, tuple(text for text in dict.fromkeys(rewrites) if text != query), rewrite_weight)

    @classmethod
    def of(cls, query: str | Phrasings) -> Phrasings:
        """``query`` as phrasings (a plain query has no rewrites)."""
        return query if isinstance(query, Phrasings) else cls(query)

    @property
    def texts(self) -> tuple[str, ...]:
        """The query, then its rewrites: one search each."""
        return (self.query, *self.rewrites)

    def request_fields(self) -> dict[str, Any]:
        """The ``query``, ``rewrites`` and ``rewrite_weight`` fields of a layer's search request."""
        return {"query": self.query, "rewrites": list(self.rewrites), "rewrite_weight": self.rewrite_weight}

    def merge(self, lists: Sequence[Sequence[S]], key: Callable[[S], str]) -> list[S]:
        """One hit list per text of :attr:`texts` as one list (without rewrites: the query's, unchanged)."""
        if not self.rewrites:
            return list(lists[0]) if lists else []
        return merge_rewrites(lists, key, self.rewrite_weight)


def check_phrasings(
    query: str, rewrites: Sequence[str], rewrite_weight: float | None, max_chars: int
) -> Phrasings:
    """A search request's ``query``, ``rewrites`` and ``rewrite_weight`` (None: unset), validated.

    Rewrites repeating the query or one another are dropped (see :meth:`Phrasings.distinct`).
    """
    check_text(query, "query", max_chars)
    if len(rewrites) > MAX_REWRITES:
        raise InvalidArgument("rewrites", f"must hold at most {MAX_REWRITES} rewrites")
    for index, text in enumerate(rewrites):
        check_text(text, f"rewrites[{index}]", max_chars)
    weight = DEFAULT_REWRITE_WEIGHT if rewrite_weight is None else rewrite_weight
    if not weight >= 0:  # also refuses NaN
        raise InvalidArgument("rewrite_weight", "must not be negative")
    return Phrasings.distinct(query, rewrites, weight)
