"""The benchmark's metric (``shared/bench/README.md``): R@k over gold sets, binary NDCG@10, per category.

``R@k`` is the share of a query's gold messages found in the top k (not "any hit"), averaged over
queries. ``overall`` leaves out the ``adversarial`` category, which is reported on its own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

EXCLUDED_FROM_OVERALL = frozenset({"adversarial"})
METRIC_NAMES = ("R@5", "R@10", "NDCG@10")
CONTEXT_BUDGETS = (500, 1000, 2000)
"""Token budgets at which the assembled context is checked for the gold evidence."""
_CONTEXT_ITEM = re.compile(r"^- \[id=([^\s\]]+)", re.MULTILINE)
"""A memory's line in the edge's context opens with its id (a held-back warning's line does not)."""


def dedupe(ids: Iterable[str]) -> list[str]:
    """Ids in first-seen order, each once."""
    return list(dict.fromkeys(ids))


def recall_at(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """|gold ∩ top-k| / |gold|; 0 for an empty gold set."""
    wanted = set(gold)
    if not wanted:
        return 0.0
    return len(wanted.intersection(dedupe(ranked)[:k])) / len(wanted)


def ndcg_at(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Binary-relevance NDCG@k: DCG of the gold hits over the DCG of a perfect ranking."""
    wanted = set(gold)
    if not wanted:
        return 0.0
    dcg = sum(1.0 / math.log2(rank + 2) for rank, rid in enumerate(dedupe(ranked)[:k]) if rid in wanted)
    ideal = sum(1.0 / math.log2(rank + 2) for rank in range(min(len(wanted), k)))
    return dcg / ideal


def score_query(ranked: Sequence[str], gold: Iterable[str]) -> dict[str, float]:
    """The three metrics of one query."""
    gold = tuple(gold)
    return {
        "R@5": recall_at(ranked, gold, 5),
        "R@10": recall_at(ranked, gold, 10),
        "NDCG@10": ndcg_at(ranked, gold, 10),
    }


def ids_in_context(context: str) -> set[str]:
    """The ids of the memories whose lines an assembled context holds (warnings' ids are not memories)."""
    return set(_CONTEXT_ITEM.findall(context))


def _flat(text: str) -> str:
    return " ".join(text.split())


def context_recall(context: str, gold: Iterable[str], texts: Mapping[str, str]) -> float:
    """|gold present in ``context``| / |gold|, the R@k of the assembled context; 0 for an empty gold set.

    A gold turn is present when a line of the context is that turn's own (its id opens the line); a
    derived record that only cites it does not count. A context that carries no ids at all is searched
    for the turn's text (``texts``: message id -> text), whitespace folded.
    """
    wanted = set(gold)
    if not wanted:
        return 0.0
    ids = ids_in_context(context)
    if ids:
        found = wanted & ids
    else:
        flat = _flat(context)
        found = {turn for turn in wanted if _flat(texts.get(turn, "")) and _flat(texts[turn]) in flat}
    return len(found) / len(wanted)


@dataclass
class ContextTally:
    """Running sums of per-query context recall at each budget, counted as :class:`Tally` counts R@k."""

    sums: dict[int, float] = field(default_factory=lambda: dict.fromkeys(CONTEXT_BUDGETS, 0.0))
    count: int = 0

    def add(self, category: str, scores: Mapping[int, float]) -> None:
        """Count one query's context recall per budget; excluded categories are left out, as in overall."""
        if category in EXCLUDED_FROM_OVERALL:
            return
        for budget, value in scores.items():
            self.sums[budget] = self.sums.get(budget, 0.0) + value
        self.count += 1

    def overall(self) -> dict[str, float]:
        """Mean context recall per budget (keys: the budget as a string; 0 when no query was counted)."""
        return {str(budget): total / self.count if self.count else 0.0 for budget, total in self.sums.items()}


@dataclass
class Tally:
    """Running sums of per-query scores, overall and by category."""

    sums: dict[str, dict[str, float]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, category: str, ranked: Sequence[str], gold: Iterable[str]) -> dict[str, float]:
        """Score one query and count it under its category; returns its scores."""
        scores = score_query(ranked, gold)
        bucket = self.sums.setdefault(category, dict.fromkeys(METRIC_NAMES, 0.0))
        for name, value in scores.items():
            bucket[name] += value
        self.counts[category] = self.counts.get(category, 0) + 1
        return scores

    def by_category(self) -> dict[str, dict[str, float]]:
        """Mean of each metric per category."""
        return {
            category: {name: total / self.counts[category] for name, total in sums.items()}
            for category, sums in sorted(self.sums.items())
        }

    def overall(self) -> dict[str, float]:
        """Mean over every query outside the excluded categories (0 when there is none)."""
        kept = [c for c in self.sums if c not in EXCLUDED_FROM_OVERALL]
        count = sum(self.counts[c] for c in kept)
        if not count:
            return dict.fromkeys(METRIC_NAMES, 0.0)
        return {name: sum(self.sums[c][name] for c in kept) / count for name in METRIC_NAMES}

    @property
    def overall_count(self) -> int:
        """Queries counted in :meth:`overall`."""
        return sum(n for c, n in self.counts.items() if c not in EXCLUDED_FROM_OVERALL)


def percentile(values: Sequence[float], share: float) -> float:
    """The ``share`` (0-1) percentile with linear interpolation; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * share
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def first_gold_rank(ranked: Sequence[str], gold: Iterable[str]) -> int | None:
    """The 1-based rank of the first gold id in ``ranked``; None when none is there."""
    wanted = set(gold)
    for rank, rid in enumerate(dedupe(ranked), start=1):
        if rid in wanted:
            return rank
    return None


def rank_summary(ranks: Sequence[int | None], depth: int) -> dict[str, float | int | None]:
    """Median and p90 of first-gold ranks (nearest rank; None: beyond ``depth``) and the share with none."""
    if not ranks:
        return {"median": None, "p90": None, f"none_in_top{depth}": 0.0}
    ordered = sorted(ranks, key=lambda rank: depth + 1 if rank is None else rank)

    def at(share: float) -> int | None:
        return ordered[max(0, math.ceil(share * len(ordered)) - 1)]

    missing = sum(rank is None for rank in ranks)
    return {"median": at(0.5), "p90": at(0.9), f"none_in_top{depth}": round(missing / len(ranks), 4)}
