"""The recall explainer's factors are the multipliers recall's own adjustment applies."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from hindsight.mcp_edge.console.explain import factors
from hindsight.mcp_edge.domain import LayerName, RecalledMemory
from hindsight.mcp_edge.fusion import Adjustments, adjust
from hindsight.runtime.records import RecordMeta, Trust, utcnow

SETTINGS = Adjustments(
    recency_half_life_days=10.0,
    recency_weight=0.5,
    importance_weight=0.3,
    confidence_weight=0.5,
    trust_weight=0.2,
    time_boost=0.0,
)


def memory(age_days: float, importance: float, confidence: float, trust: Trust) -> RecalledMemory:
    now = utcnow()
    meta = RecordMeta(time=now - timedelta(days=age_days), importance=importance, trust=trust)
    return RecalledMemory("m", "text", 0.6, meta, (LayerName.SEMANTIC,), confidence=confidence)


def test_each_factor_is_the_documented_multiplier() -> None:
    shown = factors(memory(10.0, 0.5, 0.8, Trust.LOW), SETTINGS, utcnow())
    assert shown["recency"] == pytest.approx(0.75, abs=1e-3)  # one half-life: 1 - w + w / 2
    assert shown["importance"] == pytest.approx(1.15, abs=1e-3)
    assert shown["confidence"] == pytest.approx(0.9, abs=1e-3)
    assert shown["trust"] == pytest.approx(0.8, abs=1e-3)  # low trust counts 0


def test_the_factors_multiply_to_the_score_recall_gives() -> None:
    now = utcnow()
    recalled = memory(3.0, 0.2, 0.7, Trust.MEDIUM)
    shown = factors(recalled, SETTINGS, now)
    [adjusted] = adjust([recalled], SETTINGS, now, None, 1.0)
    expected = recalled.score * math.prod(shown.values()) / (1 + SETTINGS.importance_weight)
    assert adjusted.score == pytest.approx(expected, abs=1e-3)
