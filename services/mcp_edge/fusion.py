"""Fusion of the layers' candidate lists: normalised-score fusion (default) or reciprocal rank fusion.

Layer scores are not comparable (BM25, cosines, overlap ratios). Reciprocal rank fusion uses only
ranks: score(d) = sum over layers of 1 / (k + rank of d in that layer). Score fusion keeps how far
ahead a layer's best hit is: each list's scores are min-max scaled to [0, 1], weighted per layer and
summed; then every turn gains a share of the best three fused scores of its session, so that hits
from one conversation support each other (an answer often spans several turns of one session).
A record returned by several layers is one memory that lists all of them, best-ranking layer first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from hindsight.mcp_edge.domain import Candidate, LayerName, RecalledMemory


def reciprocal_rank_fusion(
    lists: Iterable[Iterable[Candidate]], k: int = 60, top_k: int | None = None
) -> list[RecalledMemory]:
    """Fuse ranked candidate lists (each best first) into memories, best first."""
    scores: dict[str, float] = {}
    best: dict[str, tuple[int, Candidate]] = {}
    layer_ranks: dict[str, list[tuple[int, LayerName]]] = {}
    for candidates in lists:
        seen: set[str] = set()
        for rank, candidate in enumerate(candidates, start=1):
            if candidate.id in seen:  # a layer may repeat a record; its best rank counts
                continue
            seen.add(candidate.id)
            scores[candidate.id] = scores.get(candidate.id, 0.0) + 1.0 / (k + rank)
            layer_ranks.setdefault(candidate.id, []).append((rank, candidate.layer))
            if candidate.id not in best or rank < best[candidate.id][0]:
                best[candidate.id] = (rank, candidate)
    ordered = sorted(scores, key=lambda rid: (-scores[rid], rid))
    if top_k is not None:
        ordered = ordered[:top_k]
    memories = []
    for rid in ordered:
        source = best[rid][1]
        layers = tuple(layer for _, layer in sorted(layer_ranks[rid], key=lambda item: item[0]))
        memories.append(
            RecalledMemory(
                id=rid,
                text=source.text,
                score=scores[rid],
                meta=source.meta,
                layers=layers,
                speaker=source.speaker,
                kind=source.kind,
            )
        )
    return memories


SESSION_SUPPORT_TOP = 3
"""How many of a session's best fused scores make up its support."""


def _scaled(candidates: Sequence[Candidate]) -> dict[str, float]:
    """Min-max scaled layer scores of one list (the first occurrence of a record counts)."""
    scores: dict[str, float] = {}
    for candidate in candidates:
        scores.setdefault(candidate.id, candidate.layer_score)
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high <= low:  # one candidate, or a layer without meaningful scores: rank order decides
        count = len(scores)
        return {rid: 1.0 - index / count for index, rid in enumerate(scores)}
    return {rid: (value - low) / (high - low) for rid, value in scores.items()}


def score_fusion(
    lists: Iterable[Sequence[Candidate]],
    weights: Mapping[LayerName, float] | None = None,
    session_boost: float = 0.0,
    top_k: int | None = None,
) -> list[RecalledMemory]:
    """Fuse ranked candidate lists by weighted min-max scaled scores plus session support, best first."""
    fused: dict[str, float] = {}
    best: dict[str, tuple[float, Candidate]] = {}
    layer_scores: dict[str, list[tuple[float, LayerName]]] = {}
    for candidates in lists:
        if not candidates:
            continue
        layer = candidates[0].layer
        weight = (weights or {}).get(layer, 1.0)
        scaled = _scaled(candidates)
        for candidate in candidates:
            if candidate.id not in scaled:
                continue
            value = scaled.pop(candidate.id)  # a layer may repeat a record; its first (best) score counts
            fused[candidate.id] = fused.get(candidate.id, 0.0) + weight * value
            layer_scores.setdefault(candidate.id, []).append((value, layer))
            if candidate.id not in best or value > best[candidate.id][0]:
                best[candidate.id] = (value, candidate)
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
    memories = []
    for rid in ordered:
        source = best[rid][1]
        layers = tuple(layer for _, layer in sorted(layer_scores[rid], key=lambda item: -item[0]))
        memories.append(
            RecalledMemory(
                id=rid,
                text=source.text,
                score=final[rid],
                meta=source.meta,
                layers=layers,
                speaker=source.speaker,
                kind=source.kind,
            )
        )
    return memories
