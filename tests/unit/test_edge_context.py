"""Context assembly: a token budget, lessons first, one marker per layer, citable items, orders."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from hindsight.mcp_edge.context import SECTIONS, assemble, count_tokens, render_item
from hindsight.mcp_edge.domain import LayerName, RecalledMemory
from hindsight.runtime.records import RecordMeta, Source


def _m(
    rid: str, layer: LayerName, day: int, importance: float = 0.0, kind: str = "turn", score: float = 0.5
) -> RecalledMemory:
    meta = RecordMeta(source=Source.USER, time=datetime(2025, 5, day, 12, tzinfo=UTC), importance=importance)
    return RecalledMemory(
        id=rid, text=f"memory {rid} text", score=score, meta=meta, layers=(layer,), kind=kind, speaker="Ann"
    )


MEMORIES = [
    _m("e1", LayerName.EPISODIC, 3, importance=0.2, score=0.9),
    _m("s1", LayerName.SEMANTIC, 1, importance=0.9, score=0.8),
    _m("e2", LayerName.EPISODIC, 1, importance=0.8, score=0.7),
    _m("l1", LayerName.REFLECT, 2, kind="lesson", score=0.6),
    _m("w1", LayerName.WORKING, 4, score=0.5),
]


def test_every_item_is_one_compact_line_with_its_id_time_and_speaker() -> None:
    assert render_item(MEMORIES[0]) == "- [id=e1 2025-05-03 12:00Z] Ann: memory e1 text"
    # the layer is the section's marker and the rank the line's place: neither is repeated on the line
    assert "layer=" not in render_item(MEMORIES[0]) and "score=" not in render_item(MEMORIES[0])


def test_a_source_other_than_the_user_is_named_and_an_unknown_time_is_left_out() -> None:
    told = dataclasses.replace(MEMORIES[0], meta=RecordMeta(source=Source.TOOL))
    assert render_item(told) == "- [id=e1 source=tool] Ann: memory e1 text"


def test_lessons_come_first_and_each_layer_sits_under_its_own_marker() -> None:
    context = assemble(MEMORIES, budget=10_000)
    markers = [marker for _, marker in SECTIONS]
    positions = [context.text.index(marker) for marker in markers]
    assert positions == sorted(positions)
    assert context.text.startswith(
        "## Lessons from past work\n- [id=l1 2025-05-02 12:00Z] Ann: memory l1 text"
    )
    assert context.ids == ("l1", "w1", "s1", "e1", "e2")
    assert context.tokens == count_tokens(context.text)


def test_the_budget_is_never_exceeded_and_the_best_ranked_memories_get_in_first() -> None:
    full = assemble(MEMORIES, budget=10_000)
    for budget in (0, 20, 40, 60, 90):
        context = assemble(MEMORIES, budget=budget)
        assert context.tokens <= budget
        assert set(context.ids) <= set(full.ids)
    one = count_tokens("## Earlier conversations") + 2 + count_tokens(render_item(MEMORIES[0])) + 1
    assert assemble(MEMORIES, budget=one).ids == ("e1",)
    assert assemble(MEMORIES, budget=one - 1).ids == ()


def test_orders_arrange_each_section() -> None:
    episodic = [MEMORIES[0], MEMORIES[2]]  # e1 (day 3, importance 0.2), e2 (day 1, importance 0.8)
    assert assemble(episodic, 10_000, "score").ids == ("e1", "e2")
    assert assemble(episodic, 10_000, "importance").ids == ("e2", "e1")
    assert assemble(episodic, 10_000, "time_asc").ids == ("e2", "e1")
    assert assemble(episodic, 10_000, "time_desc").ids == ("e1", "e2")
    assert assemble(episodic, 10_000, "mix").ids == ("e2", "e1")


def test_mix_chooses_by_importance_then_shows_the_chosen_in_time_order() -> None:
    three = [MEMORIES[0], MEMORIES[2], _m("e3", LayerName.EPISODIC, 2, importance=0.7, score=0.1)]
    one_line = count_tokens(render_item(three[0])) + 1
    budget = count_tokens("## Earlier conversations") + 2 + 2 * one_line
    context = assemble(three, budget, "mix")
    assert context.ids == ("e2", "e3")  # the two most important, oldest first; e1 ranked first is left out
    assert assemble(three, budget, "score").ids == ("e1", "e2")


def test_records_of_new_kinds_say_their_kind() -> None:
    fact = _m("f1", LayerName.SEMANTIC, 1, kind="fact")
    assert "kind=fact]" in render_item(fact)
    assert "kind=" not in render_item(MEMORIES[0])


def test_a_memory_is_shown_once_and_the_best_ranked_copy_stays() -> None:
    turn = MEMORIES[0]
    again = dataclasses.replace(turn, layers=(LayerName.SEMANTIC,), score=0.3)  # the same record twice
    retained_twice = dataclasses.replace(turn, id="e1b")  # same speaker, words and time
    restated = dataclasses.replace(turn, id="f1", kind="fact", speaker="")  # a fact repeating the turn
    said_later = _m("e9", LayerName.EPISODIC, 9)
    said_later = dataclasses.replace(said_later, text=turn.text)  # the same words on another day
    context = assemble([restated, turn, again, retained_twice, said_later], budget=10_000)
    assert context.ids == ("e1", "e9")  # the turn, not the fact ranked above it that repeats it
    assert context.text.count("memory e1 text") == 2
    # what a duplicate would have cost leaves room for the next memory at a small budget
    budget = count_tokens("## Earlier conversations") + 2 + 2 * (count_tokens(render_item(turn)) + 1)
    assert assemble([turn, retained_twice, said_later], budget).ids == ("e1", "e9")
