"""Reciprocal rank fusion of layer candidate lists."""

from __future__ import annotations

import pytest

from hindsight.mcp_edge.domain import Candidate, LayerName
from hindsight.mcp_edge.fusion import reciprocal_rank_fusion
from hindsight.runtime.records import RecordMeta


def _c(record_id: str, layer: LayerName, text: str = "") -> Candidate:
    return Candidate(id=record_id, layer=layer, text=text or record_id, layer_score=1.0, meta=RecordMeta())


def test_a_record_found_by_two_layers_outranks_records_found_by_one() -> None:
    episodic = [_c("a", LayerName.EPISODIC), _c("b", LayerName.EPISODIC)]
    semantic = [_c("c", LayerName.SEMANTIC), _c("b", LayerName.SEMANTIC)]
    fused = reciprocal_rank_fusion([episodic, semantic], k=60)
    assert fused[0].id == "b"
    assert fused[0].layers == (LayerName.EPISODIC, LayerName.SEMANTIC)
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 62)


def test_scores_follow_ranks_and_ties_break_by_id_so_output_is_deterministic() -> None:
    fused = reciprocal_rank_fusion(
        [[_c("z", LayerName.WORKING), _c("y", LayerName.WORKING)], [_c("x", LayerName.SEMANTIC)]], k=10
    )
    assert [m.id for m in fused] == ["x", "z", "y"]
    assert fused[0].score == pytest.approx(1 / 11)


def test_the_best_ranking_layer_supplies_the_text_and_comes_first() -> None:
    fused = reciprocal_rank_fusion(
        [
            [_c("q", LayerName.EPISODIC), _c("a", LayerName.EPISODIC, "from episodic")],
            [_c("a", LayerName.SEMANTIC, "from semantic")],
        ]
    )
    memory = next(m for m in fused if m.id == "a")
    assert memory.text == "from semantic"
    assert memory.layer is LayerName.SEMANTIC


def test_a_layer_repeating_a_record_counts_only_its_best_rank_and_top_k_cuts_the_list() -> None:
    fused = reciprocal_rank_fusion(
        [
            [
                _c("a", LayerName.WORKING),
                _c("a", LayerName.WORKING),
                _c("b", LayerName.WORKING),
                _c("c", LayerName.WORKING),
            ]
        ],
        k=60,
        top_k=2,
    )
    assert [m.id for m in fused] == ["a", "b"]
    assert fused[0].score == pytest.approx(1 / 61)
    assert fused[1].score == pytest.approx(1 / 63)


def test_no_candidates_give_no_memories() -> None:
    assert reciprocal_rank_fusion([[], []]) == []
