"""Reciprocal rank fusion of the layers' candidate lists.

Layer scores are not comparable (BM25-like ranks, cosines, overlap ratios), so only ranks are
fused: score(d) = sum over layers of 1 / (k + rank of d in that layer). A record returned by
several layers is one memory that lists all of them, best-ranking layer first.
"""

from __future__ import annotations

from collections.abc import Iterable

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
