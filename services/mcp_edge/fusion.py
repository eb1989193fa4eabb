"""Fusion of the layers' candidate lists: normalised-score fusion (default) or reciprocal rank fusion.

Layer scores are not comparable (BM25, cosines, overlap ratios). Reciprocal rank fusion uses only
ranks: score(d) = sum over layers of 1 / (k + rank of d in that layer). Score fusion keeps how far
ahead a layer's best hit is: each list's scores are min-max scaled to [0, 1], weighted per layer and
summed; then every turn gains a share of the best three fused scores of its session, so that hits
from one conversation support each other (an answer often spans several turns of one session).
A record returned by several layers is one memory that lists all of them, best-ranking layer first.

Both fusions take an optional per-record ``extra`` (the tag signal: what a record's tags share with the
query). After fusion, :func:`adjust` multiplies each score by recency, importance, confidence and trust
factors, adds a boost when the record falls in the query's time range, then normalises to 0..1.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from hindsight.mcp_edge.banks import source_keys
from hindsight.mcp_edge.domain import Candidate, LayerName, RecalledMemory
from hindsight.runtime.records import TimeRange, Trust
from hindsight.runtime.rewrites import min_max_scaled


def reciprocal_rank_fusion(
    lists: Iterable[Iterable[Candidate]],
    k: int = 60,
    top_k: int | None = None,
    extra: Mapping[str, float] | None = None,
) -> list[RecalledMemory]:
    """Fuse ranked candidate lists (each best first) into memories, best first.

    ``extra`` adds per-record signal (0..1 times its weight) on the scale of a first rank, 1 / (k + 1).
    """
    scores: dict[str, float] = {}
    best: dict[str, tuple[int, Candidate]] = {}
    layer_ranks: dict[str, list[tuple[int, LayerName]]] = {}
    chains: dict[str, tuple[str, ...]] = {}
    keys: dict[str, tuple[str, ...]] = {}
    for candidates in lists:
        seen: set[str] = set()
        for rank, candidate in enumerate(candidates, start=1):
            if candidate.id in seen:  # a layer may repeat a record; its best rank counts
                continue
            seen.add(candidate.id)
            scores[candidate.id] = scores.get(candidate.id, 0.0) + 1.0 / (k + rank)
            layer_ranks.setdefault(candidate.id, []).append((rank, candidate.layer))
            chains[candidate.id] = candidate.supersedes or chains.get(candidate.id, ())
            keys[candidate.id] = candidate.statement or keys.get(candidate.id, ())
            if candidate.id not in best or rank < best[candidate.id][0]:
                best[candidate.id] = (rank, candidate)
    for rid, value in (extra or {}).items():
        if rid in scores:
            scores[rid] += value / (k + 1)
    ordered = sorted(scores, key=lambda rid: (-scores[rid], rid))
    if top_k is not None:
        ordered = ordered[:top_k]
    return [
        _memory(
            best[rid][1],
            scores[rid],
            [layer for _, layer in sorted(layer_ranks[rid], key=lambda i: i[0])],
            chains[rid],
            keys[rid],
        )
        for rid in ordered
    ]


def _memory(
    source: Candidate,
    score: float,
    layers: Sequence[LayerName],
    supersedes: tuple[str, ...] = (),
    statement: tuple[str, ...] = (),
) -> RecalledMemory:
    """One fused memory; ``supersedes`` and ``statement`` come from whichever layer knew them."""
    return RecalledMemory(
        id=source.id,
        text=source.text,
        score=score,
        meta=source.meta,
        layers=tuple(dict.fromkeys(layers)),
        speaker=source.speaker,
        kind=source.kind,
        confidence=source.confidence,
        session_id=source.session_id,
        supersedes=supersedes or source.supersedes,
        statement=statement or source.statement,
        bank_id=source.bank_id,
    )


SESSION_SUPPORT_TOP = 3
"""How many of a session's best fused scores make up its support."""


def _scaled(candidates: Sequence[Candidate]) -> dict[str, float]:
    """Min-max scaled layer scores of one list (the first occurrence of a record counts)."""
    return min_max_scaled((candidate.id, candidate.layer_score) for candidate in candidates)


def score_fusion(
    lists: Iterable[Sequence[Candidate]],
    weights: Mapping[LayerName, float] | None = None,
    session_boost: float = 0.0,
    top_k: int | None = None,
    extra: Mapping[str, float] | None = None,
    channel_weights: Mapping[str, float] | None = None,
) -> list[RecalledMemory]:
    """Fuse ranked candidate lists by weighted min-max scaled scores plus session support, best first.

    ``extra`` adds per-record signal (already weighted) before session support is counted. A list built
    by an edge channel (its candidates' ``channel``) weighs ``channel_weights[channel]``, not its layer's.
    """
    fused: dict[str, float] = {}
    best: dict[str, tuple[float, Candidate]] = {}
    layer_scores: dict[str, list[tuple[float, LayerName]]] = {}
    chains: dict[str, tuple[str, ...]] = {}
    keys: dict[str, tuple[str, ...]] = {}
    for candidates in lists:
        if not candidates:
            continue
        layer, channel = candidates[0].layer, candidates[0].channel
        own = (channel_weights or {}).get(channel, 0.0) if channel else None
        weight = own if own is not None else (weights or {}).get(layer, 1.0)
        scaled = _scaled(candidates)
        for candidate in candidates:
            if candidate.id not in scaled:
                continue
            value = scaled.pop(candidate.id)  # a layer may repeat a record; its first (best) score counts
            fused[candidate.id] = fused.get(candidate.id, 0.0) + weight * value
            layer_scores.setdefault(candidate.id, []).append((value, layer))
            chains[candidate.id] = candidate.supersedes or chains.get(candidate.id, ())
            keys[candidate.id] = candidate.statement or keys.get(candidate.id, ())
            if candidate.id not in best or value > best[candidate.id][0]:
                best[candidate.id] = (value, candidate)
    for rid, value in (extra or {}).items():
        if rid in fused:
            fused[rid] += value
    final = dict(fused)
    if session_boost > 0:
        by_session: dict[str, list[float]] = {}
        for rid, value in fused.items():
            session = best[rid][1].session_id
            if session:
                by_session.setdefault(session, []).append(value)
        support = {
            session: sum(sorted(values, reverse=True)[:SESSION_SUPPORT_TOP])
            for session, values in by_session.items()
        }
        for rid in final:
            final[rid] += session_boost * support.get(best[rid][1].session_id, 0.0)
    ordered = sorted(final, key=lambda rid: (-final[rid], rid))
    if top_k is not None:
        ordered = ordered[:top_k]
    return [
        _memory(
            best[rid][1],
            final[rid],
            [layer for _, layer in sorted(layer_scores[rid], key=lambda i: -i[0])],
            chains[rid],
            keys[rid],
        )
        for rid in ordered
    ]


def tag_scores(candidates: Iterable[Candidate], wanted: Collection[str]) -> dict[str, float]:
    """Per record, how much its tags share with what the query names: 0.5 per matching tag, at most 1.

    ``wanted`` holds the recall's tags and the query's keywords and entities, lower-cased.
    """
    if not wanted:
        return {}
    scores: dict[str, float] = {}
    for candidate in candidates:
        matched = sum(1 for tag in candidate.meta.tags if tag.lower() in wanted)
        if matched:
            scores[candidate.id] = max(scores.get(candidate.id, 0.0), min(1.0, 0.5 * matched))
    return scores


TRUST_LEVELS = {Trust.LOW: 0.0, Trust.MEDIUM: 0.5, Trust.HIGH: 1.0}
"""Trust as a 0..1 level for the trust factor."""


@dataclass(frozen=True)
class Adjustments:
    """Multipliers applied to fused scores; each weight 0 turns its factor off."""

    recency_half_life_days: float = 30.0
    recency_weight: float = 0.0
    importance_weight: float = 0.0
    confidence_weight: float = 0.0
    trust_weight: float = 0.0
    time_boost: float = 0.0
    """Share of the list's best score added to records in ``boost_range`` (a time expression of the query)."""


def adjust(
    memories: Sequence[RecalledMemory],
    settings: Adjustments,
    now: datetime,
    boost_range: TimeRange | None = None,
    best_possible: float = 1.0,
) -> list[RecalledMemory]:
    """Scores times the factors, plus the time boost, over ``best_possible`` (clipped to 0..1), best first.

    recency: ``1 - w + w * 0.5 ** (age / half-life)``; importance: ``1 + w * importance``; confidence:
    ``1 - w * (1 - confidence)``; trust: ``1 - w * (1 - trust level)``. A record inside ``boost_range``
    (the query said "yesterday") then gains ``time_boost`` times the best score of the list: added, not
    multiplied, so a weak match from the right day can pass a strong one from another day. The divisor
    keeps factors above 1 from pushing a score past 1.
    """
    ceiling = best_possible * (1 + settings.importance_weight) * (1 + settings.time_boost)
    scored = []
    for memory in memories:
        factor = 1.0
        moment = memory.meta.time
        if settings.recency_weight > 0 and moment is not None and settings.recency_half_life_days > 0:
            age_days = max(0.0, (now - moment).total_seconds() / 86400)
            decay = math.pow(0.5, age_days / settings.recency_half_life_days)
            factor *= 1 - settings.recency_weight + settings.recency_weight * decay
        factor *= 1 + settings.importance_weight * memory.meta.importance
        factor *= 1 - settings.confidence_weight * (1 - min(1.0, max(0.0, memory.confidence)))
        factor *= 1 - settings.trust_weight * (1 - TRUST_LEVELS.get(memory.meta.trust, 0.5))
        scored.append((memory, memory.score * factor))
    top = max((score for _, score in scored), default=0.0)
    result = []
    for memory, score in scored:
        if settings.time_boost > 0 and boost_range is not None and boost_range.contains(memory.meta.time):
            score += settings.time_boost * top
        value = score / ceiling if ceiling > 0 else 0.0
        result.append(dataclasses.replace(memory, score=min(1.0, max(0.0, value))))
    result.sort(key=lambda m: -m.score)  # stable: equal scores keep the fused order
    return result


def lessons_first(memories: Sequence[RecalledMemory]) -> list[RecalledMemory]:
    """Lessons ahead of everything else (stable), so an agent reads what it learned before acting."""
    return [m for m in memories if m.kind == "lesson"] + [m for m in memories if m.kind != "lesson"]


def below_successors(
    memories: Sequence[RecalledMemory], time_ranges: Sequence[TimeRange] = ()
) -> list[RecalledMemory]:
    """Memories a later statement in the list replaced (its ``supersedes`` names them) marked with
    ``superseded_by``; a successor that ranked below what it replaced takes that place, with the replaced
    memory right below it.

    The current value comes first and its history stays in the list, so an agent sees both the value and
    that it was corrected. A correction is about what it corrects, whatever its own words ("Actually,
    it's staging-2"): the query that found the old value best finds its correction there too, rather
    than both sinking to where the correction's own words ranked it, perhaps past ``top_k``. When one of
    ``time_ranges`` (what the query asked about) ends while the old value still held (after it was said,
    before its successor was), the question is about then: the old value goes right above its successor
    instead.
    """
    position = {memory.id: index for index, memory in enumerate(memories)}
    successor: dict[str, RecalledMemory] = {}
    for memory in memories:  # best first: a record several list as replaced goes below the best of them
        for old in memory.supersedes:
            if old in position and old != memory.id:
                successor.setdefault(old, memory)
    looped = set()  # records that claim, through a chain, to replace each other: none of them moves
    for old in successor:
        seen, step = {old}, successor.get(old)
        while step is not None and step.id not in seen:
            seen.add(step.id)
            step = successor.get(step.id)
        if step is not None:
            looped.add(old)
    for old in looped:
        del successor[old]
    if not successor:
        return list(memories)

    def asked_about_then(old: RecalledMemory, new: RecalledMemory) -> bool:
        since, until = old.meta.time, new.meta.time
        return until is not None and any(
            r.end is not None and r.end <= until and (since is None or r.end > since) for r in time_ranges
        )

    below: dict[str, list[RecalledMemory]] = {}
    above: dict[str, list[RecalledMemory]] = {}
    ordered: list[RecalledMemory] = []
    for memory in memories:
        new = successor.get(memory.id)
        if new is None:
            ordered.append(memory)
            continue
        marked = dataclasses.replace(memory, superseded_by=new.id)
        then = asked_about_then(memory, new)
        if then and position[memory.id] > position[new.id]:
            above.setdefault(new.id, []).append(
                dataclasses.replace(marked, score=max(memory.score, new.score))
            )
        elif not then and position[memory.id] < position[new.id]:
            below.setdefault(new.id, []).append(
                dataclasses.replace(marked, score=min(memory.score, new.score))
            )
        else:
            ordered.append(marked)
    anchor = {memory.id: position[memory.id] for memory in ordered}
    for moved in below.values():  # a successor ranks where the best of what it replaced ranked
        for replaced in moved:
            newest = successor[replaced.id]
            while newest.id not in anchor:  # a chain: the newest not itself moved below another
                newest = successor[newest.id]
            anchor[newest.id] = min(anchor[newest.id], position[replaced.id])
    ordered.sort(key=lambda memory: anchor[memory.id])
    result: list[RecalledMemory] = []

    def place(memory: RecalledMemory) -> None:
        chain = {old: rank for rank, old in enumerate(memory.supersedes)}
        for earlier in above.get(memory.id, ()):
            place(earlier)
        result.append(memory)
        for later in sorted(below.get(memory.id, ()), key=lambda m: chain.get(m.id, len(chain))):
            place(later)

    for memory in ordered:
        place(memory)
    return result


def drawn_after_sources(
    memories: Sequence[RecalledMemory], keyed_by_bank: bool = False
) -> list[RecalledMemory]:
    """The memories with each one drawn from turns that all rank above it (a fact extracted from a turn
    already in the list, an episode of turns already there) moved to the end, in its order.
    ``keyed_by_bank``: a recall over several banks, whose ids are ``bank/id`` while they are fused.

    It says again what its turns say: in the first ``top_k`` it takes the place of other evidence. It is
    not dropped, so a short list still holds it, and a fact that carries a validity the turn does not
    (outdated, replaced) is still found after the turns."""
    seen: set[str] = set()
    kept: list[RecalledMemory] = []
    repeated: list[RecalledMemory] = []
    for memory in memories:
        sources = source_keys(memory, keyed_by_bank) - {memory.id}
        if memory.kind != "lesson" and sources and sources <= seen:
            repeated.append(memory)
            continue
        kept.append(memory)
        seen.add(memory.id)
    return kept + repeated
