"""Pure parts of the semantic write path: the rule extractor, conflict settling, merging, query names."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hindsight.runtime.records import RecordMeta, Source, Trust
from hindsight.semantic.engine import Outcome, merge_into, query_keys, settle
from hindsight.semantic.extract import RuleExtractor, is_multi_valued
from hindsight.semantic.payloads import from_payload, to_payload
from hindsight.semantic.records import RecordKind, Relation, SemanticRecord

SAID = datetime(2024, 5, 8, 12, tzinfo=UTC)


def turn(text: str, speaker: str = "Caroline", turn_id: str = "t1") -> SemanticRecord:
    return SemanticRecord(
        id=turn_id,
        text=text,
        speaker=speaker,
        session_id="s1",
        meta=RecordMeta(source=Source.USER, trust=Trust.HIGH, time=SAID, tags=("chat",)),
    )


def facts(text: str, speaker: str = "Caroline") -> set[tuple[str, str, str, RecordKind]]:
    found = RuleExtractor().extract([turn(text, speaker)]).facts
    return {(f.subject, f.attribute, f.value, f.kind) for f in found}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My name is Caroline Smith.", ("Caroline", "name", "Caroline Smith", RecordKind.FACT)),
        ("I'm 34 years old!", ("Caroline", "age", "34", RecordKind.FACT)),
        ("I live in Berlin, near the park.", ("Caroline", "lives_in", "Berlin", RecordKind.FACT)),
        ("I moved to Rome last month.", ("Caroline", "lives_in", "Rome", RecordKind.FACT)),
        ("I work at Acme Corp and love it.", ("Caroline", "works_at", "Acme Corp", RecordKind.FACT)),
        (
            "I love hiking in the mountains.",
            ("Caroline", "likes", "hiking in the mountains", RecordKind.PREFERENCE),
        ),
        ("I hate olives.", ("Caroline", "dislikes", "olives", RecordKind.PREFERENCE)),
        (
            "My favourite food is green curry.",
            ("Caroline", "favourite_food", "green curry", RecordKind.PREFERENCE),
        ),
        ("I'm planning to paint a sunset.", ("Caroline", "plans", "paint a sunset", RecordKind.FACT)),
        ("My sister is Beth.", ("Caroline", "sister", "Beth", RecordKind.FACT)),
        ("Beth is my sister.", ("Caroline", "sister", "Beth", RecordKind.FACT)),
        ("Beth's husband is Carl.", ("Beth", "husband", "Carl", RecordKind.FACT)),
        ("Carl works at Globex.", ("Carl", "works_at", "Globex", RecordKind.FACT)),
        ("我叫小美。", ("Caroline", "name", "小美", RecordKind.FACT)),
        ("我住在上海。", ("Caroline", "lives_in", "上海", RecordKind.FACT)),
        ("我在腾讯工作。", ("Caroline", "works_at", "腾讯", RecordKind.FACT)),
        ("我今年30岁。", ("Caroline", "age", "30", RecordKind.FACT)),
        ("我喜欢爬山。", ("Caroline", "likes", "爬山", RecordKind.PREFERENCE)),
        ("我不喜欢香菜。", ("Caroline", "dislikes", "香菜", RecordKind.PREFERENCE)),
        ("我最喜欢的水果是芒果。", ("Caroline", "favourite_水果", "芒果", RecordKind.PREFERENCE)),
        ("我打算明年去日本。", ("Caroline", "plans", "明年去日本", RecordKind.FACT)),
        ("我的妹妹叫小红。", ("Caroline", "sister", "小红", RecordKind.FACT)),
    ],
)
def test_common_statement_shapes_become_facts(text: str, expected: tuple[str, str, str, RecordKind]) -> None:
    assert expected in facts(text)


def test_events_are_dated_relative_to_when_they_were_said() -> None:
    [english] = RuleExtractor().extract([turn("Yesterday I went to the support group.")]).facts
    assert (english.attribute, english.value) == ("event", "went to the support group")
    assert english.valid_from == datetime(2024, 5, 7, tzinfo=UTC)  # the day, from its start
    assert "2024-05-07" in english.text
    [chinese] = RuleExtractor().extract([turn("昨天我去了博物馆。")]).facts
    assert (chinese.value, chinese.valid_from) == ("博物馆", datetime(2024, 5, 7, tzinfo=UTC))


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("On March 31 I went to the museum.", datetime(2024, 3, 31, tzinfo=UTC)),
        ("3月31日我去了博物馆。", datetime(2024, 3, 31, tzinfo=UTC)),
        ("On February 29 I went to the museum.", datetime(2024, 2, 29, tzinfo=UTC)),
        ("Last month I went to the museum.", datetime(2024, 4, 1, tzinfo=UTC)),
        ("上周我去了博物馆。", datetime(2024, 4, 29, tzinfo=UTC)),
    ],
)
def test_event_dates_keep_month_ends_and_leap_days(text: str, day: datetime) -> None:
    [event] = RuleExtractor().extract([turn(text)]).facts
    assert event.valid_from == day


def test_a_fact_keeps_its_turn_and_the_turns_metadata_and_has_a_stable_id() -> None:
    [first] = RuleExtractor().extract([turn("I live in Oslo.")]).facts
    [again] = RuleExtractor().extract([turn("I live in Oslo.")]).facts
    [other] = RuleExtractor().extract([turn("I live in Oslo.", turn_id="t2")]).facts
    assert first.id == again.id != other.id
    assert first.meta.source_turn_ids == ("t1",) and first.meta.trust is Trust.HIGH
    assert (first.session_id, first.meta.tags, first.text) == ("s1", ("chat",), "Caroline lives in Oslo")


def test_small_talk_and_questions_give_nothing() -> None:
    assert facts("How are you doing today?") == set()
    assert facts("The weather is lovely.") == set()


def test_relations_are_stored_at_both_ends_and_places_become_entities() -> None:
    found = RuleExtractor().extract([turn("My sister is Beth. I live in Leeds.")])
    relations = {(e.name, r) for e in found.entities for r in e.relations}
    assert ("Caroline", Relation("sister", "Beth")) in relations
    assert ("Beth", Relation("sister of", "Caroline")) in relations
    assert ("Leeds", Relation("lives_in of", "Caroline")) in relations
    assert {e.type for e in found.entities if e.name == "Leeds"} == {"place"}


def fact(value: str, year: int, trust: Trust = Trust.HIGH, record_id: str = "") -> SemanticRecord:
    return SemanticRecord(
        id=record_id or value,
        text=f"Alice lives in {value}",
        kind=RecordKind.FACT,
        subject="Alice",
        attribute="lives_in",
        value=value,
        meta=RecordMeta(trust=trust, time=datetime(year, 1, 1, tzinfo=UTC)),
    )


@pytest.mark.parametrize(
    ("new", "old", "outcome"),
    [
        (fact("Rome", 2024), fact("Paris", 2023), Outcome.SUPERSEDE),
        (fact("Rome", 2022), fact("Paris", 2023), Outcome.HISTORY),
        (fact("Rome", 2024, Trust.HIGH), fact("Paris", 2024, Trust.LOW), Outcome.SUPERSEDE),
        (fact("Rome", 2024, Trust.LOW), fact("Paris", 2024, Trust.HIGH), Outcome.HISTORY),
        (fact("Rome", 2024), fact("Paris", 2024), Outcome.REVIEW),
        (fact("Rome", 2024, Trust.LOW), fact("Paris", 2023, Trust.HIGH), Outcome.REVIEW),
        (fact("Rome", 2022, Trust.HIGH), fact("Paris", 2023, Trust.LOW), Outcome.REVIEW),
    ],
)
def test_time_and_trust_settle_a_conflict_or_send_it_to_review(new, old, outcome) -> None:
    assert settle(new, old)[0] is outcome


def test_a_merge_keeps_the_id_takes_the_newer_text_and_unions_the_rest_once() -> None:
    kept = SemanticRecord(
        id="a", text="old", kind=RecordKind.FACT, meta=RecordMeta(source_turn_ids=("t1",), tags=("x",))
    )
    new = SemanticRecord(
        id="b", text="new", kind=RecordKind.FACT, meta=RecordMeta(source_turn_ids=("t2", "t1"), tags=("y",))
    )
    merged = merge_into(kept, new)
    assert (merged.id, merged.text, merged.meta.source_turn_ids, merged.meta.tags) == (
        "a",
        "new",
        ("t1", "t2"),
        ("x", "y"),
    )
    assert merged.mention_count == 2 and merge_into(merged, new).mention_count == 2


def test_only_some_attributes_hold_several_values() -> None:
    assert is_multi_valued("likes") and is_multi_valued("sister") and is_multi_valued("works_at of")
    assert not is_multi_valued("lives_in") and not is_multi_valued("husband")


def test_query_keys_hold_names_with_possessives_dropped_and_chinese_runs() -> None:
    keys = query_keys("Where does Alice's brother-in-law work? 小美的妹妹")
    assert "alice" in keys and "小美" in keys and "brother-in-law" in keys


def test_a_fact_survives_the_payload_round_trip() -> None:
    record = SemanticRecord(
        id="f",
        text="Alice lives in Rome",
        kind=RecordKind.FACT,
        subject="Alice",
        attribute="lives_in",
        value="Rome",
        source_episode_ids=("e1",),
        confidence=0.6,
        valid_from=datetime(2023, 1, 1, tzinfo=UTC),
        valid_to=datetime(2024, 1, 1, tzinfo=UTC),
        superseded_by="g",
        merged_ids=("h",),
    )
    payload = to_payload("bank", record)
    assert payload["current"] is False and payload["subject_key"] == "alice"
    assert from_payload(payload) == record
    assert from_payload(payload, cold=True).cold
