"""Score factors after fusion, the tag signal, lessons first, and their settings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hindsight.mcp_edge.domain import Candidate, LayerName, RecalledMemory
from hindsight.mcp_edge.fusion import (
    Adjustments,
    adjust,
    lessons_first,
    score_fusion,
    tag_scores,
)
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime.records import RecordMeta, TimeRange, Trust
from hindsight.runtime.settings import SettingsError

NOW = datetime(2026, 1, 31, tzinfo=UTC)


def _m(rid: str, score: float = 0.5, days_old: float = 0, **meta: object) -> RecalledMemory:
    confidence = float(meta.pop("confidence", 1.0))  # type: ignore[arg-type]
    kind = str(meta.pop("kind", "turn"))
    record = RecordMeta(time=NOW - timedelta(days=days_old), **meta)  # type: ignore[arg-type]
    return RecalledMemory(
        id=rid,
        text=rid,
        score=score,
        meta=record,
        layers=(LayerName.EPISODIC,),
        confidence=confidence,
        kind=kind,
    )


def _c(rid: str, layer: LayerName, score: float, tags: tuple[str, ...] = ()) -> Candidate:
    return Candidate(id=rid, layer=layer, text=rid, layer_score=score, meta=RecordMeta(tags=tags))


def test_with_every_factor_off_scores_are_only_normalised() -> None:
    adjusted = adjust([_m("a", 0.8), _m("b", 0.4)], Adjustments(), NOW, best_possible=2.0)
    assert [(m.id, m.score) for m in adjusted] == [("a", 0.4), ("b", 0.2)]


def test_recency_halves_the_decaying_share_every_half_life() -> None:
    settings = Adjustments(recency_half_life_days=30, recency_weight=1.0)
    fresh, month, two = adjust([_m("f"), _m("m", days_old=30), _m("t", days_old=60)], settings, NOW)
    assert (fresh.score, month.score, two.score) == pytest.approx((0.5, 0.25, 0.125))
    half = adjust([_m("m", days_old=30)], Adjustments(recency_weight=0.5), NOW)[0]
    assert half.score == pytest.approx(0.5 * (0.5 + 0.5 * 0.5))


def test_importance_confidence_and_trust_move_a_record_past_an_equal_one() -> None:
    settings = Adjustments(importance_weight=0.3, confidence_weight=0.5, trust_weight=0.2)
    ranked = adjust(
        [
            _m("plain", trust=Trust.MEDIUM),
            _m("important", importance=1.0, trust=Trust.MEDIUM),
            _m("doubtful", confidence=0.2, trust=Trust.MEDIUM),
            _m("trusted", trust=Trust.HIGH),
        ],
        settings,
        NOW,
    )
    assert [m.id for m in ranked] == ["important", "trusted", "plain", "doubtful"]
    assert all(0 <= m.score <= 1 for m in ranked)


def test_a_record_in_the_querys_time_range_is_boosted() -> None:
    window = TimeRange(NOW - timedelta(days=3), NOW - timedelta(days=1))
    ranked = adjust(
        [_m("recent", 0.5, days_old=0), _m("in-range", 0.4, days_old=2)],
        Adjustments(time_boost=0.5),
        NOW,
        boost_range=window,
    )
    assert [m.id for m in ranked] == ["in-range", "recent"]


def test_the_tag_signal_counts_half_per_matching_tag_up_to_one() -> None:
    candidates = [
        _c("two", LayerName.EPISODIC, 1, ("Deploy", "staging")),
        _c("one", LayerName.EPISODIC, 1, ("deploy",)),
        _c("none", LayerName.EPISODIC, 1, ("other",)),
        _c("three", LayerName.SEMANTIC, 1, ("deploy", "staging", "prod")),
    ]
    assert tag_scores(candidates, {"deploy", "staging", "prod"}) == {"two": 1.0, "one": 0.5, "three": 1.0}
    assert tag_scores(candidates, set()) == {}
    fused = score_fusion([candidates[:3]], extra={"none": 2.0})
    assert fused[0].id == "none"


def test_lessons_move_ahead_and_keep_their_order() -> None:
    memories = [_m("t1"), _m("l1", kind="lesson"), _m("t2"), _m("l2", kind="lesson")]
    assert [m.id for m in lessons_first(memories)] == ["l1", "l2", "t1", "t2"]


def test_signal_weights_multiply_layer_weights_and_are_checked() -> None:
    weights = EdgeSettings().list_weights()
    assert weights[LayerName.SEMANTIC] == pytest.approx(0.5)
    assert weights[LayerName.EPISODIC] == pytest.approx(0.5)
    assert EdgeSettings(signal_weights="vector=0.5,keyword=0.3").list_weights()[LayerName.EPISODIC] == 0.3
    assert weights[LayerName.WORKING] == 0.0
    assert EdgeSettings().signals()["tags"] == pytest.approx(0.2)
    assert EdgeSettings(signal_weights="vector=1").signals() == {"vector": 1.0, "keyword": 0.0, "tags": 0.0}
    with pytest.raises(SettingsError, match="unknown signal"):
        EdgeSettings(signal_weights="vectors=1")
    with pytest.raises(SettingsError, match="HINDSIGHT_QUERY_TIME"):
        EdgeSettings(query_time="sometimes")
    with pytest.raises(SettingsError, match="HINDSIGHT_CONTEXT_ORDER"):
        EdgeSettings(context_order="random")
