"""Recall's validity resolution (:mod:`hindsight.mcp_edge.validity`): what held at the moment asked about
comes first, what did not is marked; ``as_of`` scopes the query; entity pages say when each value held."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.mcp_edge.context import render_item
from hindsight.mcp_edge.domain import Candidate, LayerName, LayerOutcome, RecalledMemory, RecallQuery
from hindsight.mcp_edge.entity_output import _fact_output, validity_words
from hindsight.mcp_edge.validity import at_moment, check_invalidate, resolve, search_fields
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.records import RecordMeta, TimeRange, to_timestamp

MARCH = datetime(2025, 3, 10, tzinfo=UTC)
MAY = datetime(2025, 5, 1, tzinfo=UTC)
JUNE = datetime(2025, 6, 1, tzinfo=UTC)


def _memory(memory_id: str, text: str, said: datetime, **fields: object) -> RecalledMemory:
    return RecalledMemory(
        id=memory_id,
        text=text,
        score=0.9,
        meta=RecordMeta(time=said),
        layers=(LayerName.SEMANTIC,),
        **fields,  # type: ignore[arg-type]
    )


def _semantic(memory_id: str, said: datetime, **fields: object) -> Candidate:
    return Candidate(
        id=memory_id,
        layer=LayerName.SEMANTIC,
        text="",
        layer_score=0.9,
        meta=RecordMeta(time=said),
        **fields,  # type: ignore[arg-type]
    )


def _outcomes(*candidates: Candidate) -> list[LayerOutcome]:
    return [LayerOutcome(LayerName.SEMANTIC, ok=True, elapsed_ms=1.0, candidates=candidates)]


OLD = _memory("old", "My locker number is 112.", MARCH)
NEW = _memory("new", "My locker number is 87.", MAY, supersedes=("old",))
LUNCH = _memory("lunch", "Lunch was a sandwich.", MARCH)
CHAIN = _outcomes(
    _semantic("old", MARCH, valid_from=MARCH, valid_to=MAY, successor="new"),
    _semantic("new", MAY, valid_from=MAY, supersedes=("old",)),
)


def test_a_question_about_now_puts_what_holds_first_and_marks_what_was_replaced() -> None:
    resolved = resolve([OLD, LUNCH, NEW], CHAIN, RecallQuery("b", "locker?"), None)
    assert [m.id for m in resolved] == ["lunch", "new", "old"]
    old = resolved[-1]
    assert old.outdated == "outdated since 2025-05-01, now: My locker number is 87."
    assert old.superseded_by == "new" and old.valid_to == MAY
    assert not resolved[1].outdated and resolved[1].valid_from == MAY
    assert resolved[0] == LUNCH  # nothing known about its validity: left as it was
    assert "[outdated since 2025-05-01, now: My locker number is 87.]" in render_item(old)


def test_a_replaced_value_stays_right_below_its_replacement_and_an_ended_one_goes_last() -> None:
    """The history of the answer comes with the answer, not after everything else the recall found."""
    ended = _memory("ended", "My gym is FitHub.", MARCH)
    outcomes = _outcomes(*CHAIN[0].candidates, _semantic("ended", MARCH, valid_from=MARCH, valid_to=MAY))
    resolved = resolve([NEW, OLD, ended, LUNCH], outcomes, RecallQuery("b", "locker?"), None)
    assert [m.id for m in resolved] == ["new", "old", "lunch", "ended"]
    assert resolved[1].outdated.startswith("outdated since 2025-05-01") and resolved[3].outdated
    # a fact drawn from the new turn ranks first: the old value waits until the new turn is shown too
    fact = dataclasses.replace(
        _memory("fact-new", "user's locker number is 87", MAY),
        meta=RecordMeta(time=MAY, source_turn_ids=("new",)),
    )
    chain = _outcomes(*CHAIN[0].candidates, _semantic("old", MARCH, valid_to=MAY, successor="fact-new"))
    resolved = resolve([fact, OLD, NEW, LUNCH], chain, RecallQuery("b", "locker?"), None)
    assert [m.id for m in resolved] == ["fact-new", "new", "old", "lunch"]
    # another fact of the new turn, ranked far down, does not take the old value down with it
    aside = dataclasses.replace(
        _memory("fact-aside", "user walks to the gym", MAY),
        meta=RecordMeta(time=MAY, source_turn_ids=("new",)),
    )
    fillers = [_memory(f"filler{i}", f"filler {i}", MARCH) for i in range(10)]
    resolved = resolve([NEW, OLD, *fillers, aside], CHAIN, RecallQuery("b", "locker?"), None)
    assert [m.id for m in resolved[:3]] == ["new", "old", "filler0"]


def test_a_question_about_a_time_puts_what_held_then_first() -> None:
    march = TimeRange(datetime(2025, 3, 1, tzinfo=UTC), datetime(2025, 4, 1, tzinfo=UTC))
    resolved = resolve([NEW, OLD], CHAIN, RecallQuery("b", "locker in March?"), march)
    assert [m.id for m in resolved] == ["old", "new"]
    assert resolved[0].outdated == ""
    assert resolved[1].outdated == "not yet valid then: holds since 2025-05-01"


def test_as_of_reads_validity_at_that_moment_and_an_invalidated_memory_is_named_so() -> None:
    ended = _outcomes(_semantic("old", MARCH, valid_from=MARCH, valid_to=MAY))
    before = resolve([OLD], ended, RecallQuery("b", "q", as_of=datetime(2025, 4, 1, tzinfo=UTC)), None)
    assert before[0].outdated == "" and before[0].superseded_by == ""
    after = resolve([OLD], ended, RecallQuery("b", "q", as_of=JUNE), None)
    assert after[0].outdated == "outdated since 2025-05-01 (invalidated)"


def test_a_replacement_that_came_back_without_the_layer_still_dates_the_old_value() -> None:
    """The old statement came from keyword search only: its successor in the list dates its end."""
    marked = _memory("old", "My locker number is 112.", MARCH, superseded_by="new")
    resolved = resolve([marked, NEW], _outcomes(), RecallQuery("b", "q"), None)
    assert [m.id for m in resolved] == ["new", "old"]
    assert resolved[1].valid_to == MAY and resolved[1].outdated.startswith("outdated since 2025-05-01")


def test_as_of_scopes_the_recall_and_a_later_one_is_refused_naming_the_field() -> None:
    scoped = at_moment(RecallQuery("b", "q", reference_time=JUNE, as_of=MAY))
    assert scoped.time_range.end == MAY and scoped.reference_time == JUNE
    assert at_moment(RecallQuery("b", "q", as_of=MAY)).reference_time == MAY
    assert search_fields(scoped) == {"valid_at": to_timestamp(MAY)}
    assert search_fields(RecallQuery("b", "q")) == {"include_history": True}
    with pytest.raises(InvalidArgument, match="as_of"):
        at_moment(RecallQuery("b", "q", reference_time=MAY, as_of=JUNE))


@pytest.mark.parametrize(
    ("ids", "valid_to", "field"),
    [([], None, "ids"), (["a", ""], None, "ids[1]"), (["a"], datetime(2999, 1, 1, tzinfo=UTC), "valid_to")],
)
def test_invalidate_arguments_are_checked_naming_the_field(
    ids: list[str], valid_to: datetime | None, field: str
) -> None:
    with pytest.raises(InvalidArgument) as refused:
        check_invalidate(ids, "", valid_to)
    assert refused.value.field == field


def test_entity_page_facts_say_when_each_value_held() -> None:
    record = semantic_pb2.SemanticRecord(id="f", attribute="lives_in", value="Lisbon", superseded_by="g")
    record.valid_from.CopyFrom(to_timestamp(MARCH))
    record.valid_to.CopyFrom(to_timestamp(MAY))
    fact = _fact_output(record)
    assert (fact.state, fact.validity) == ("superseded", "2025-03-10 to 2025-05-01 (superseded)")
    record.superseded_by = ""
    assert _fact_output(record).state == "invalidated"
    assert validity_words(MAY, None, "") == "since 2025-05-01"


def test_turned_off_it_moves_nothing_unless_as_of_asks() -> None:
    q = RecallQuery("b", "locker?")
    assert resolve([OLD, LUNCH, NEW], CHAIN, q, None, on=False) == [OLD, LUNCH, NEW]
    assert search_fields(q, on=False) == {}
    scoped = RecallQuery("b", "q", as_of=JUNE)
    assert resolve([OLD], CHAIN, scoped, None, on=False)[0].outdated.startswith("outdated since 2025-05-01")
