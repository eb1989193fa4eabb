"""Calibrated relevance, the floor, the support level and lessons placed first before the cut."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hindsight.mcp_edge.domain import Candidate, LayerName, RecalledMemory
from hindsight.mcp_edge.relevance import Cut, Evidence, memory_relevance, relevance_of, select
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime.records import RecordMeta
from hindsight.runtime.settings import SettingsError, load


def _m(rid: str, kind: str = "turn") -> RecalledMemory:
    return RecalledMemory(
        id=rid, text=rid, score=0.9, meta=RecordMeta(), layers=(LayerName.EPISODIC,), kind=kind
    )


def _c(rid: str, layer: LayerName, score: float, text: str = "", similarity: float = 0.0) -> Candidate:
    return Candidate(
        id=rid, layer=layer, text=text or rid, layer_score=score, meta=RecordMeta(), similarity=similarity
    )


CUT = Cut(floor=0.5, support=0.0, top_k=3, max_lessons=2)


def test_a_lesson_ranked_past_top_k_by_fusion_is_placed_first() -> None:
    fused = [_m("t1"), _m("t2"), _m("t3"), _m("l1", "lesson")]
    relevance = {"t1": 0.9, "t2": 0.8, "t3": 0.7, "l1": 0.6}
    chosen = select(fused[:3], fused, relevance, CUT)
    assert [m.id for m in chosen] == ["l1", "t1", "t2"]
    assert [m.score for m in chosen] == [0.6, 0.9, 0.8]  # the score is the calibrated relevance


def test_lessons_below_the_floor_stay_out_and_at_most_max_lessons_go_first() -> None:
    fused = [_m("l1", "lesson"), _m("l2", "lesson"), _m("l3", "lesson"), _m("l4", "lesson"), _m("t1")]
    relevance = {"l1": 0.4, "l2": 0.7, "l3": 0.9, "l4": 0.8, "t1": 0.6}
    chosen = select(fused[:3], fused, relevance, CUT)
    assert [m.id for m in chosen] == ["l3", "l4", "l2"]  # best first; l1 is below the floor
    wide = select(fused, fused, relevance, Cut(floor=0.5, support=0.0, top_k=10, max_lessons=2))
    assert [m.id for m in wide] == ["l3", "l4", "l2", "t1"]  # past max_lessons a lesson keeps its place


def test_nothing_above_the_floor_returns_nothing() -> None:
    fused = [_m("t1"), _m("t2"), _m("l1", "lesson")]
    assert select(fused, fused, {"t1": 0.45, "t2": 0.3, "l1": 0.49}, CUT) == []


def test_once_one_memory_clears_the_floor_others_stay_down_to_the_support_level() -> None:
    fused = [_m("t1"), _m("t2"), _m("t3")]
    relevance = {"t1": 0.3, "t2": 0.8, "t3": 0.1}
    assert [m.id for m in select(fused, fused, relevance, CUT)] == ["t1", "t2", "t3"]  # fused order kept
    stricter = Cut(floor=0.5, support=0.2, top_k=3, max_lessons=2)
    assert [m.id for m in select(fused, fused, relevance, stricter)] == ["t1", "t2"]


def test_by_default_each_memory_clears_the_floor_on_its_own_and_a_lesson_vouches_for_none() -> None:
    settings = load(EdgeSettings, {})
    default = Cut(settings.relevance_floor, settings.relevance_support, top_k=10, max_lessons=3)
    lenient = Cut(floor=0.5, support=0.0, top_k=10, max_lessons=3)
    fused = [_m("l1", "lesson"), _m("t1"), _m("t2")]
    only_the_lesson = {"l1": 0.9, "t1": 0.45, "t2": 0.2}
    assert [m.id for m in select(fused, fused, only_the_lesson, default)] == ["l1"]
    assert [m.id for m in select(fused, fused, only_the_lesson, lenient)] == ["l1"]
    one_memory = {"l1": 0.9, "t1": 0.6, "t2": 0.2}
    assert [m.id for m in select(fused, fused, one_memory, default)] == ["l1", "t1"]
    assert [m.id for m in select(fused, fused, one_memory, lenient)] == ["l1", "t1", "t2"]


def test_lessons_first_off_keeps_the_fused_order() -> None:
    fused = [_m("t1"), _m("l1", "lesson")]
    off = Cut(floor=0.5, support=0.0, top_k=3, max_lessons=2, lessons_first=False)
    assert [m.id for m in select(fused, fused, {"t1": 0.9, "l1": 0.9}, off)] == ["t1", "l1"]


def test_relevance_is_on_one_scale_and_grows_with_each_piece_of_evidence() -> None:
    base = memory_relevance(Evidence(cosine=0.2, share=0.0, density=0.0))
    assert 0.0 <= base < 0.5
    assert memory_relevance(Evidence(0.6, 0.0, 0.0)) > 0.5 > base  # close in meaning alone
    assert memory_relevance(Evidence(0.2, 0.5, 0.0)) > base  # shared words
    assert memory_relevance(Evidence(0.2, 0.0, 0.3)) > 0.5  # in a bank that holds much near the request
    assert memory_relevance(Evidence(0.0, 1.0, 0.0)) > 0.5  # every word, without vectors


def _bank(query_cosines: dict[str, float]) -> list[Candidate]:
    """The semantic layer's hits: one per memory, its text its id."""
    return [_c(rid, LayerName.SEMANTIC, 1.0, similarity=cosine) for rid, cosine in query_cosines.items()]


def test_one_shared_word_without_meaning_stays_below_the_floor() -> None:
    facts = {
        "We play board games on Fridays": 0.5,
        "The report is due on the fifth": 0.12,
        "I drink tea": 0.1,
    }
    keyword = [_c("The quarterly board report is due", LayerName.EPISODIC, 3.5)]  # not among the close ones
    scores = relevance_of(["Suggest a board game for four players"], [keyword, _bank(facts)])
    assert scores["The quarterly board report is due"] < 0.5 < scores["We play board games on Fridays"]
    answer = relevance_of(
        ["When is the report due?"], [_bank({**facts, "The report is due on the fifth": 0.55})]
    )
    assert answer["The report is due on the fifth"] > 0.5 > answer["I drink tea"]


def test_a_keyword_hit_the_semantic_layer_missed_counts_at_its_lowest_cosine() -> None:
    semantic = _bank({"the deploy runbook": 0.5, "lunch plans": 0.05})
    only_words = [_c("deploy the runbook again", LayerName.EPISODIC, 2.0)]
    scores = relevance_of(["deploy runbook"], [only_words, semantic])
    at_lowest = memory_relevance(Evidence(0.05, 1.0, 0.0))
    assert scores["deploy the runbook again"] == pytest.approx(at_lowest)
    alone = relevance_of(["deploy runbook"], [only_words])  # no semantic layer: words alone
    assert alone["deploy the runbook again"] == pytest.approx(memory_relevance(Evidence(0.0, 1.0, 0.0)))


def test_a_bank_that_holds_much_near_the_request_lets_its_weaker_memories_in() -> None:
    close = {f"turn {i}": 0.36 for i in range(12)}
    sparse = {"turn 0": 0.36, "turn 1": 0.36, **{f"turn {i}": 0.02 for i in range(2, 12)}}
    dense_scores = relevance_of(["q"], [_bank(close)])
    sparse_scores = relevance_of(["q"], [_bank(sparse)])
    assert dense_scores["turn 0"] > 0.5 > sparse_scores["turn 0"]


def test_the_one_memory_clearly_ahead_by_meaning_alone_clears_the_floor_and_only_it() -> None:
    bank = {
        "I adopted a golden retriever puppy": 0.32,
        "How is Biscuit settling in?": 0.19,
        "I like tea": 0.05,
    }
    scores = relevance_of(["Which dog did she get recently?"], [_bank(bank)])
    assert scores["I adopted a golden retriever puppy"] > 0.5 > scores["How is Biscuit settling in?"]
    level = relevance_of(
        ["Which dog did she get recently?"], [_bank({**bank, "How is Biscuit settling in?": 0.32})]
    )
    assert all(score < 0.5 for score in level.values())  # two equally close: neither is clearly the answer
    fact = Candidate(
        id="f1", layer=LayerName.SEMANTIC, text="Caroline adopted a golden retriever puppy", layer_score=1.0,
        meta=RecordMeta(source_turn_ids=("I adopted a golden retriever puppy",)), similarity=0.3, kind="fact",
    )  # fmt: skip
    with_its_fact = relevance_of(["Which dog did she get recently?"], [[*_bank(bank), fact]])
    assert with_its_fact["I adopted a golden retriever puppy"] > 0.5  # a fact drawn from it is no rival
    reply = Candidate(
        id="r1", layer=LayerName.SEMANTIC, text="Congratulations!", layer_score=1.0, meta=RecordMeta(),
        similarity=0.31, replies_to="I adopted a golden retriever puppy",
    )  # fmt: skip
    with_its_reply = relevance_of(["Which dog did she get recently?"], [[*_bank(bank), reply]])
    assert with_its_reply["I adopted a golden retriever puppy"] > 0.5  # a reply read with it is no rival
    rival = relevance_of(["Which dog did she get recently?"], [[*_bank(bank), replace(reply, replies_to="")]])
    assert rival["I adopted a golden retriever puppy"] < 0.5  # the same cosine from another turn is one


def test_a_record_counts_its_best_layer_and_its_best_phrasing() -> None:
    lists = [
        [_c("zephyr codename", LayerName.EPISODIC, 2.0)],
        [_c("zephyr codename", LayerName.SEMANTIC, 1.0, similarity=0.02)],
        [_c("l1", LayerName.REFLECT, 0.73)],
    ]
    assert relevance_of(["xyzzy plugh"], lists)["zephyr codename"] < 0.5
    assert relevance_of(["xyzzy plugh", "zephyr codename"], lists)["zephyr codename"] > 0.5
    assert relevance_of(["xyzzy plugh"], lists)["l1"] == pytest.approx(0.73)  # a lesson keeps its own


def test_chinese_single_characters_are_no_evidence_but_bigrams_are() -> None:
    facts = _bank({"我每周二晚上打羽毛球。": 0.1, "健身房会员六月到期。": 0.1})
    scores = relevance_of(["下周要学会抛接三个球，帮我列个计划吧。"], [facts])  # 周, 球, 要 shared
    assert all(score < 0.5 for score in scores.values()), scores
    asked = relevance_of(["我什么时候打羽毛球？"], [facts])
    assert asked["我每周二晚上打羽毛球。"] > asked["健身房会员六月到期。"]


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("HINDSIGHT_RELEVANCE_FLOOR", "1.5"),
        ("HINDSIGHT_RELEVANCE_SUPPORT", "-0.1"),
        ("HINDSIGHT_MAX_LESSONS", "-1"),
    ],
)
def test_relevance_settings_are_checked(variable: str, value: str) -> None:
    with pytest.raises(SettingsError, match=variable):
        load(EdgeSettings, {variable: value})


def test_a_correction_is_at_least_as_relevant_as_the_statement_it_replaced() -> None:
    old = _c("My deploy target is the staging-1 cluster", LayerName.SEMANTIC, 1.0, similarity=0.6)
    new = Candidate(
        id="Actually, it's staging-2", layer=LayerName.SEMANTIC, text="Actually, it's staging-2",
        layer_score=1.0, meta=RecordMeta(), similarity=0.1, supersedes=(old.id,),
    )  # fmt: skip
    tea = _c("I like tea", LayerName.SEMANTIC, 1.0, similarity=0.05)
    scores = relevance_of(["Which cluster is my deploy target?"], [[old, new, tea]])
    assert scores[new.id] == pytest.approx(scores[old.id]) and scores[old.id] > 0.5 > scores[tea.id]
