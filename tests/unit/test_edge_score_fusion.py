"""Score fusion of layer candidate lists: normalised weighted scores plus support from the same session."""

from __future__ import annotations

import pytest

from hindsight.mcp_edge.domain import Candidate, LayerName
from hindsight.mcp_edge.fusion import score_fusion
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime.records import RecordMeta
from hindsight.runtime.settings import SettingsError


def _c(record_id: str, layer: LayerName, score: float, session: str = "") -> Candidate:
    return Candidate(
        id=record_id, layer=layer, text=record_id, layer_score=score, meta=RecordMeta(), session_id=session
    )


def test_each_list_is_scaled_to_its_own_range_so_raw_score_units_do_not_matter() -> None:
    episodic = [_c("a", LayerName.EPISODIC, 30.0), _c("b", LayerName.EPISODIC, 10.0)]
    semantic = [_c("c", LayerName.SEMANTIC, 0.9), _c("b", LayerName.SEMANTIC, 0.5)]
    fused = score_fusion([episodic, semantic])
    assert [m.id for m in fused] == ["a", "c", "b"]  # "a" and "c" tie at 1.0; ids break the tie
    assert fused[0].score == pytest.approx(1.0)
    assert {m.id: m.score for m in fused}["b"] == pytest.approx(0.0)


def test_how_far_ahead_a_hit_is_counts_not_only_its_rank() -> None:
    # Ranks alone tie "a" and "b" (each first once, second once); the scores say "a" is far ahead.
    episodic = [
        _c("a", LayerName.EPISODIC, 20.0),
        _c("b", LayerName.EPISODIC, 19.0),
        _c("z", LayerName.EPISODIC, 0.0),
    ]
    semantic = [
        _c("b", LayerName.SEMANTIC, 0.61),
        _c("a", LayerName.SEMANTIC, 0.60),
        _c("z", LayerName.SEMANTIC, 0.1),
    ]
    assert [m.id for m in score_fusion([episodic, semantic])][:2] == ["a", "b"]
    assert [m.id for m in score_fusion([semantic, episodic])][:2] == ["a", "b"]


def test_layer_weights_scale_a_layers_contribution() -> None:
    working = [_c("w", LayerName.WORKING, 5.0), _c("v", LayerName.WORKING, 1.0)]
    episodic = [_c("e", LayerName.EPISODIC, 5.0), _c("v", LayerName.EPISODIC, 1.0)]
    fused = score_fusion([working, episodic], weights={LayerName.WORKING: 0.5})
    assert [m.id for m in fused][:2] == ["e", "w"]
    assert fused[1].score == pytest.approx(0.5)


def test_turns_of_the_session_with_the_strongest_hits_gain_support() -> None:
    # "b2" and "c2" tie on their own; b2's session also holds the best hit, so b2 wins.
    episodic = [
        _c("b1", LayerName.EPISODIC, 10.0, "b"),
        _c("b2", LayerName.EPISODIC, 5.0, "b"),
        _c("c2", LayerName.EPISODIC, 5.0, "c"),
        _c("z", LayerName.EPISODIC, 0.0, "c"),
    ]
    fused = score_fusion([episodic], session_boost=0.3)
    assert [m.id for m in fused][:3] == ["b1", "b2", "c2"]
    assert fused[1].score == pytest.approx(0.5 + 0.3 * (1.0 + 0.5))
    assert [m.id for m in score_fusion([episodic], session_boost=0.0)][:3] == ["b1", "b2", "c2"]


def test_a_record_from_several_layers_lists_them_best_first_and_a_repeat_in_one_layer_counts_once() -> None:
    episodic = [
        _c("a", LayerName.EPISODIC, 1.0),
        _c("a", LayerName.EPISODIC, 9.0),
        _c("b", LayerName.EPISODIC, 0.0),
    ]
    semantic = [_c("b", LayerName.SEMANTIC, 0.8), _c("a", LayerName.SEMANTIC, 0.6)]
    fused = {m.id: m for m in score_fusion([episodic, semantic])}
    assert fused["a"].layers == (LayerName.EPISODIC, LayerName.SEMANTIC)
    assert fused["a"].score == pytest.approx(1.0)
    assert fused["b"].layers == (LayerName.SEMANTIC, LayerName.EPISODIC)


def test_a_list_whose_scores_are_all_equal_falls_back_to_its_ranks() -> None:
    fused = score_fusion([[_c("p", LayerName.REFLECT, 0.0), _c("q", LayerName.REFLECT, 0.0)]], top_k=1)
    assert [m.id for m in fused] == ["p"]


def test_fusion_settings_are_checked_when_loaded() -> None:
    assert EdgeSettings().layer_weights()[LayerName.WORKING] == 0.0
    assert EdgeSettings(fusion_weights="semantic=2").layer_weights()[LayerName.SEMANTIC] == 2.0
    with pytest.raises(SettingsError):
        EdgeSettings(fusion_weights="episodc=1")
    with pytest.raises(SettingsError):
        EdgeSettings(fusion="mean")
