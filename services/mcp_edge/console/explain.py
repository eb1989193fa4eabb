"""The recall explainer: one real recall, laid out step by step (query reading, each layer's candidates,
fusion, the score factors, the rerank and the assembled context).

The factors are not recomputed here by formula: each is read back from :func:`fusion.adjust` run on the
memory alone with only that factor switched on, so the page shows what recall itself applies.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from hindsight.mcp_edge.domain import RecalledMemory, RecallQuery, RecallResult
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.mcp_edge.fusion import Adjustments, adjust
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.records import utcnow

MAX_QUERY_CHARS = 2000


def _factor(memory: RecalledMemory, alone: Adjustments, now: datetime, scale: float) -> float:
    """The multiplier ``alone`` (one factor switched on) applies to ``memory``."""
    unit = dataclasses.replace(memory, score=1.0)
    [adjusted] = adjust([unit], alone, now, None, 1.0)
    return round(adjusted.score * scale, 4)


def factors(memory: RecalledMemory, settings: Adjustments, now: datetime) -> dict[str, float]:
    """Recency, importance, confidence and trust multipliers recall applied to ``memory``."""
    off = Adjustments(
        recency_half_life_days=settings.recency_half_life_days,
        recency_weight=0.0,
        importance_weight=0.0,
        confidence_weight=0.0,
        trust_weight=0.0,
        time_boost=0.0,
    )
    return {
        "recency": _factor(
            memory, dataclasses.replace(off, recency_weight=settings.recency_weight), now, 1.0
        ),
        "importance": _factor(
            memory,
            dataclasses.replace(off, importance_weight=settings.importance_weight),
            now,
            1 + settings.importance_weight,  # adjust divides by the largest factor possible
        ),
        "confidence": _factor(
            memory, dataclasses.replace(off, confidence_weight=settings.confidence_weight), now, 1.0
        ),
        "trust": _factor(memory, dataclasses.replace(off, trust_weight=settings.trust_weight), now, 1.0),
    }


def _layers(result: RecallResult) -> list[dict[str, Any]]:
    return [
        {
            "layer": outcome.layer.value,
            "ok": outcome.ok,
            "elapsed_ms": round(outcome.elapsed_ms, 1),
            "error": outcome.error,
            "candidates": [
                {
                    "id": c.id,
                    "rank": rank,
                    "kind": c.kind,
                    "score": round(c.layer_score, 4),
                    "text": c.text,
                    "channel": c.channel,
                }
                for rank, c in enumerate(outcome.candidates, start=1)
            ],
        }
        for outcome in result.outcomes
    ]


async def explain(engine: MemoryEngine, bank_id: str, query: str, top_k: int = 10) -> dict[str, Any]:
    """Run recall for ``query`` and say how each memory got where it is."""
    query = query.strip()
    if not query or len(query) > MAX_QUERY_CHARS:
        raise InvalidArgument("query", f"must hold 1 to {MAX_QUERY_CHARS} characters")
    if not 1 <= top_k <= 100:
        raise InvalidArgument("top_k", "must be between 1 and 100")
    now = utcnow()
    result = await engine.recall(RecallQuery(bank_id=bank_id, query=query, top_k=top_k, reference_time=now))
    settings = engine.settings
    adjustments = settings.adjustments()
    ranks = {
        (outcome.layer.value, c.id): (rank, c.layer_score)
        for outcome in result.outcomes
        for rank, c in enumerate(outcome.candidates, start=1)
    }
    boost = result.analysis.time_range if result.analysis.time_use == "boost" else None
    memories = []
    for position, memory in enumerate(result.memories, start=1):
        contributions = [
            {
                "layer": layer.value,
                "rank": ranks[(layer.value, memory.id)][0],
                "score": round(ranks[(layer.value, memory.id)][1], 4),
            }
            for layer in memory.layers
            if (layer.value, memory.id) in ranks
        ]
        memories.append(
            {
                "position": position,
                "id": memory.id,
                "kind": memory.kind,
                "text": memory.text,
                "score": round(memory.score, 4),
                "layers": contributions,
                "factors": factors(memory, adjustments, now),
                "time_boosted": bool(
                    boost is not None and adjustments.time_boost > 0 and boost.contains(memory.meta.time)
                ),
                "superseded_by": memory.superseded_by,
            }
        )
    analysis = result.analysis
    return {
        "query": query,
        "analysis": {
            "keywords": list(analysis.keywords),
            "entities": list(analysis.entities),
            "rewrites": list(analysis.rewrites),
            "time_expression": analysis.time_expression,
            "time_use": analysis.time_use,
        },
        "layers": _layers(result),
        "fusion": {"method": settings.fusion, "rrf_k": settings.rrf_k},
        "adjustments": dataclasses.asdict(adjustments),
        "rerank": {"on": engine.reranker is not None, "head": engine.reranker.head if engine.reranker else 0},
        "memories": memories,
        "context": {"text": result.context.text, "tokens": result.context.tokens},
        "partial": result.partial,
        "elapsed_ms": round(result.elapsed_ms, 1),
    }
