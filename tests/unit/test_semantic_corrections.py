"""Corrections: what a turn states and denies (English and Chinese), when a later statement replaces an
earlier one, and how recall ranks a replaced memory below the one that replaced it."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from hindsight.mcp_edge.domain import Candidate, LayerName, RecalledMemory
from hindsight.mcp_edge.fusion import below_successors, drawn_after_sources, score_fusion
from hindsight.runtime.records import RecordMeta, Source, TimeRange, Trust
from hindsight.semantic.corrections import (
    Statement,
    affirmatives,
    has_cue,
    keyed,
    read,
    replaces,
    same_value,
    stored_statement,
)
from hindsight.semantic.extract import RuleExtractor, is_multi_valued
from hindsight.semantic.records import SemanticRecord


def turn(
    text: str,
    day: int = 1,
    speaker: str = "",
    session: str = "s1",
    trust: Trust = Trust.HIGH,
    turn_id: str = "",
    source: Source = Source.USER,
) -> SemanticRecord:
    return SemanticRecord(
        id=turn_id or f"t{day}",
        text=text,
        speaker=speaker,
        session_id=session,
        meta=RecordMeta(time=datetime(2025, 5, day, 12, tzinfo=UTC), source=source, trust=trust),
    )


def stated(text: str, speaker: str = "") -> list[tuple[str, str, str, tuple[str, ...]]]:
    record = turn(text, speaker=speaker)
    facts = RuleExtractor().extract([record]).facts
    reading = read(record, facts, {f.attribute for f in facts if not is_multi_valued(f.attribute)})
    return [(s.owner, s.attribute, s.value, s.denied) for s in reading.statements]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "My deploy target is the staging-1 cluster.",
            [("user", "deploy_target", "the staging-1 cluster", ())],
        ),
        (
            "Correction: my deploy target is the staging-2 cluster, not staging-1.",
            [("user", "deploy_target", "the staging-2 cluster", ("staging-1",))],
        ),
        (
            "My deploy target is not staging-1 but staging-2.",
            [("user", "deploy_target", "staging-2", ("staging-1",))],
        ),
        ("My deploy target changed to staging-2.", [("user", "deploy_target", "staging-2", ())]),
        (
            "My deploy target has changed from staging-1 to staging-2",
            [("user", "deploy_target", "staging-2", ("staging-1",))],
        ),
        ("My deploy target is no longer staging-1.", [("user", "deploy_target", "", ("staging-1",))]),
        (
            "My deploy target isn't staging-1 anymore, it's staging-2.",
            [("user", "deploy_target", "staging-2", ("staging-1",))],
        ),
        (
            "I've switched my deploy target from staging-1 to staging-2.",
            [("user", "deploy_target", "staging-2", ("staging-1",))],
        ),
        ("My new phone number is 555-0000.", [("user", "phone_number", "555-0000", ())]),
        ("Alice's phone number is 555-1234.", [("Alice", "phone_number", "555-1234", ())]),
        (
            "My sister's deploy target is staging-3.",
            [("user", "sister's_deploy_target", "staging-3", ())],
        ),
        ("My favorite color is blue.", [("user", "favourite_color", "blue", ())]),
        ("I live in Lisbon.", [("user", "lives_in", "Lisbon", ())]),
        ("My locker number is 87.", [("Sam", "locker_number", "87", ())]),
    ],
)
def test_english_statements_name_owner_attribute_value_and_what_they_deny(
    text: str, expected: list[tuple[str, str, str, tuple[str, ...]]]
) -> None:
    assert stated(text, speaker="Sam" if "locker" in text else "") == expected


@pytest.mark.parametrize(
    "text",
    [
        "My sister is a nurse.",  # describes a person
        "My kids are so sweet.",  # plural: several values
        "My day was great!",  # past, and an evaluation
        "My art is important to me.",  # a predicate, not a value
        "My art is about expressing my story.",
        "My goal is to help people.",
        "The gym is awesome, but tiring.",
        "Our team bond is awesome.",
        "Everyone's favorite part is the music.",
        "It's downtown which is awesome.",
        "I actually enjoyed the concert.",
        "In 2019 I lived in Paris.",  # past: history, not a current value
    ],
)
def test_descriptions_evaluations_and_plurals_state_no_value(text: str) -> None:
    assert stated(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我的部署目标是staging-1集群。", [("user", "部署目标", "staging-1集群", ())]),
        (
            "更正：我的部署目标是staging-2集群，不是staging-1。",
            [("user", "部署目标", "staging-2集群", ("staging-1",))],
        ),
        ("我的部署目标不是staging-1，而是staging-2。", [("user", "部署目标", "staging-2", ("staging-1",))]),
        ("我的部署目标改成了staging-2。", [("user", "部署目标", "staging-2", ())]),
        ("我的部署目标从staging-1改成了staging-2。", [("user", "部署目标", "staging-2", ("staging-1",))]),
        ("我的部署目标已经不是staging-1了", [("user", "部署目标", "", ("staging-1",))]),
        ("我同事生日是12月31号。", [("user", "同事生日", "12月31号", ())]),
        ("我把部署目标换成了staging-2。", [("user", "部署目标", "staging-2", ())]),
        ("我的新手机号是13800000000。", [("user", "手机号", "13800000000", ())]),
        ("我婶婶的电话号码是19805913091。", [("user", "婶婶电话号码", "19805913091", ())]),
        ("我住在杭州。", [("user", "lives_in", "杭州", ())]),
    ],
)
def test_chinese_statements_name_owner_attribute_value_and_what_they_deny(
    text: str, expected: list[tuple[str, str, str, tuple[str, ...]]]
) -> None:
    assert stated(text) == expected


@pytest.mark.parametrize("text", ["我的上司是个程序员。", "我的下属他是北京人。", "我觉得这个是对的。"])
def test_chinese_descriptions_of_people_state_no_value(text: str) -> None:
    assert stated(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "Actually, it's staging-2.",
        "Correction: the flight is at 9.",
        "I no longer live in Paris.",
        "It is not red but blue.",
        "其实我住在上海。",
        "更正：是周三。",
        "我的号码改成了123。",
        "我已经不在腾讯工作了。",
        "不是周二，而是周三。",
        "My deploy target isn't staging-1 anymore.",
        "I changed my phone number to 555-0000.",
        "My mistake, the flight is at 10.",
        "Sorry, I got that wrong earlier: the flat is on floor 3.",
        "That was wrong, the meeting is on Tuesday.",
        "Let me fix what I said: it's 40 euros.",
        "刚才口误了，是周四。",
        "改一下之前说的：周会在周三。",
        "错了错了，我住在成都。",
        "修正一下：房租是九百。",
    ],
)
def test_correction_cues_in_both_languages(text: str) -> None:
    assert has_cue(text)


@pytest.mark.parametrize(
    "text",
    [
        "My deploy target is staging-1.",
        "Not only fun but useful.",
        "Any more paintings?",
        "我住在上海。",
        "That was a great film.",
        "我错过了末班车。",
    ],
)
def test_plain_statements_carry_no_cue(text: str) -> None:
    assert not has_cue(text)


def test_an_unnamed_agent_speaks_for_itself_not_for_the_user() -> None:
    record = turn("I live in the cloud. My deploy target is prod.", source=Source.AGENT)
    facts = RuleExtractor().extract([record]).facts
    assert [(s.owner, s.attribute) for s in read(record, facts, {"lives_in"}).statements] == [
        ("agent", "deploy_target")
    ]


def test_a_denied_predicate_is_read_as_the_affirmative_it_ends() -> None:
    assert affirmatives("I no longer live in Paris.") == ["I live in Paris"]
    assert affirmatives("I don't work at Acme anymore.") == ["I work at Acme"]
    assert affirmatives("我已经不在腾讯工作了。") == ["我在腾讯工作"]
    assert affirmatives("I live in Paris.") == []


def test_values_compare_without_articles_case_or_elaboration() -> None:
    assert same_value("the staging-1 cluster", "Staging-1 cluster")
    assert same_value("staging-1", "the staging-1 cluster")  # an elaboration, not a new value
    assert not same_value("staging-1", "staging-2")
    assert not same_value("", "staging-2")


def _statement(value: str, owner: str = "user", denied: tuple[str, ...] = ()) -> Statement:
    return Statement(owner, "locker_number", value, denied)


def test_a_later_different_value_replaces_and_the_same_or_an_earlier_one_does_not() -> None:
    old, new = turn("x", day=1), turn("y", day=5)
    assert replaces(_statement("87"), new, False, _statement("112"), old)
    assert not replaces(_statement("112"), new, False, _statement("112"), old)  # a repetition
    assert not replaces(_statement("87"), old, False, _statement("112"), new)  # said before
    assert not replaces(Statement("user", "desk", "87"), new, False, _statement("112"), old)  # another thing
    assert not replaces(_statement("87", owner="Beth"), new, False, _statement("112"), old)  # someone else


def test_a_less_trusted_source_never_replaces_a_more_trusted_one() -> None:
    old, new = turn("x", day=1), turn("y", day=5, trust=Trust.LOW)
    assert not replaces(_statement("87"), new, True, _statement("112"), old)


def test_an_unnamed_speaker_needs_a_cue_to_reach_another_session_and_a_named_one_does_not() -> None:
    old, new = turn("x", day=1, session="a"), turn("y", day=5, session="b")
    assert not replaces(_statement("87"), new, False, _statement("112"), old)
    assert replaces(_statement("87"), new, True, _statement("112"), old)
    named_old = turn("x", day=1, session="a", speaker="Sam")
    named_new = turn("y", day=5, session="b", speaker="Sam")
    assert replaces(_statement("87", "Sam"), named_new, False, _statement("112", "Sam"), named_old)


def test_a_denial_without_a_new_value_replaces_only_the_value_it_names() -> None:
    old, new = turn("x", day=1), turn("y", day=5)
    assert replaces(_statement("", denied=("112",)), new, True, _statement("112"), old)
    assert not replaces(_statement("", denied=("64",)), new, True, _statement("112"), old)


def test_a_turn_is_keyed_by_its_first_statement_apart_from_the_facts_about_its_owner() -> None:
    record = turn("My locker number is 87. My desk is 4B.", speaker="Sam")
    reading = read(record)
    chained = keyed(record, reading)
    assert chained.subject != "Sam" and chained.attribute == "locker_number" and chained.value == "87"
    assert stored_statement(chained) == Statement("Sam", "locker_number", "87")
    assert keyed(turn("Hello there!"), read(turn("Hello there!"))).subject == ""


# ----- recall ranks a replaced memory below its successor --------------------------------------------------
def memory(
    memory_id: str, score: float, day: int, supersedes: tuple[str, ...] = (), kind: str = "turn"
) -> RecalledMemory:
    return RecalledMemory(
        id=memory_id,
        text=memory_id,
        score=score,
        meta=RecordMeta(time=datetime(2025, 5, day, 12, tzinfo=UTC)),
        layers=(LayerName.EPISODIC,),
        kind=kind,
        supersedes=supersedes,
    )


def test_a_successor_takes_the_place_of_what_it_replaced_which_follows_it_and_says_by_whom() -> None:
    ranked = below_successors(
        [memory("old", 0.9, 1), memory("other", 0.8, 2), memory("new", 0.7, 5, supersedes=("old",))]
    )
    assert [m.id for m in ranked] == ["new", "old", "other"]
    assert ranked[1].superseded_by == "new" and ranked[1].score == pytest.approx(0.7)
    assert ranked[0].supersedes == ("old",) and ranked[0].superseded_by == ""


def test_a_correction_ranked_past_top_k_by_its_own_words_comes_up_with_what_it_corrects() -> None:
    fillers = [memory(f"filler{i}", 0.8 - i / 100, 2) for i in range(12)]
    new = memory("new", 0.1, 5, supersedes=("old",))  # "Actually, it's staging-2": few words in common
    ranked = below_successors([memory("old", 0.9, 1), *fillers, new])
    assert [m.id for m in ranked[:3]] == ["new", "old", "filler0"]
    assert [m.id for m in ranked[2:]] == [f"filler{i}" for i in range(12)]  # the rest keep their order


def test_a_chain_lists_below_its_head_newest_first_and_lower_memories_stay_where_they_are() -> None:
    ranked = below_successors(
        [
            memory("first", 0.9, 1),
            memory("second", 0.8, 2),
            memory("third", 0.7, 3, supersedes=("second", "first")),
            memory("unrelated", 0.6, 4),
            memory("older", 0.1, 1),
        ]
    )
    assert [m.id for m in ranked] == ["third", "second", "first", "unrelated", "older"]
    assert [m.superseded_by for m in ranked[:3]] == ["", "third", "third"]


def test_without_a_successor_in_the_list_nothing_moves() -> None:
    given = [memory("old", 0.9, 1), memory("new", 0.7, 5, supersedes=("gone",))]
    assert below_successors(given) == given


def test_a_question_about_the_time_the_old_value_held_puts_it_first() -> None:
    given = [memory("new", 0.9, 20, supersedes=("old",)), memory("old", 0.5, 1)]
    then = TimeRange(datetime(2025, 5, 1, tzinfo=UTC), datetime(2025, 5, 8, tzinfo=UTC))
    ranked = below_successors(given, [then])
    assert [m.id for m in ranked] == ["old", "new"] and ranked[0].superseded_by == "new"
    later = TimeRange(datetime(2025, 5, 1, tzinfo=UTC), None)  # up to now: the current value
    assert [m.id for m in below_successors(given, [later])] == ["new", "old"]


def test_records_that_claim_to_replace_each_other_stay_where_they_ranked() -> None:
    given = [memory("a", 0.9, 1, supersedes=("b",)), memory("b", 0.8, 2, supersedes=("a",))]
    assert [m.id for m in below_successors(given)] == ["a", "b"]


def test_fusion_keeps_the_chain_a_layer_knew_whichever_layer_ranked_the_record_best() -> None:
    meta = RecordMeta(time=datetime(2025, 5, 5, tzinfo=UTC))
    keyword = [
        Candidate("new", LayerName.EPISODIC, "new", 9.0, meta),
        Candidate("old", LayerName.EPISODIC, "old", 1.0, meta),
    ]
    vector = [
        Candidate("x", LayerName.SEMANTIC, "x", 0.9, meta),
        Candidate("new", LayerName.SEMANTIC, "new", 0.5, meta, supersedes=("old",)),
    ]
    fused = {m.id: m for m in score_fusion([keyword, vector])}
    assert fused["new"].layer is LayerName.EPISODIC and fused["new"].supersedes == ("old",)


def _drawn(memory_id: str, *sources: str, kind: str = "fact") -> RecalledMemory:
    return RecalledMemory(
        id=memory_id,
        text=memory_id,
        score=0.5,
        meta=RecordMeta(time=datetime(2025, 5, 1, tzinfo=UTC), source_turn_ids=sources),
        layers=(LayerName.SEMANTIC,),
        kind=kind,
    )


def test_a_fact_of_turns_already_above_it_waits_at_the_end_and_is_not_dropped() -> None:
    given = [
        memory("t1", 0.9, 1),
        _drawn("fact-of-t1", "t1"),  # says again what t1 says: past the head
        _drawn("fact-of-t9", "t9"),  # its turn is not above it: stays
        memory("t2", 0.5, 2),
        _drawn("episode", "t1", "t2", kind="episode"),  # every turn of it above: past the head
        _drawn("fact-of-t2-t3", "t2", "t3"),  # t3 is not above: stays
        _drawn("lesson", "t1", kind="lesson"),  # a lesson is placed by its own rules
    ]
    ranked = drawn_after_sources(given)
    assert [m.id for m in ranked] == [
        "t1",
        "fact-of-t9",
        "t2",
        "fact-of-t2-t3",
        "lesson",
        "fact-of-t1",
        "episode",
    ]
    turn_below = [_drawn("fact-of-t1", "t1"), memory("t1", 0.9, 1)]  # the fact first: nothing moves
    assert drawn_after_sources(turn_below) == turn_below


def test_across_banks_a_fact_waits_only_behind_its_own_banks_turn() -> None:
    def in_bank(bank: str, item: RecalledMemory) -> RecalledMemory:
        return dataclasses.replace(item, id=f"{bank}/{item.id}", bank_id=bank)

    given = [
        in_bank("home", memory("t1", 0.9, 1)),
        in_bank("work", _drawn("fact-of-t1", "t1")),  # another bank's t1: a different turn, stays
        in_bank("home", _drawn("fact-of-t1", "t1")),  # says again what home's t1 says
        in_bank("work", memory("t2", 0.5, 2)),
    ]
    ranked = drawn_after_sources(given, keyed_by_bank=True)
    assert [m.id for m in ranked] == ["home/t1", "work/fact-of-t1", "work/t2", "home/fact-of-t1"]
    assert drawn_after_sources(given) == given  # read with unkeyed sources, nothing would match
