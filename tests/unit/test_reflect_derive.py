"""Deterministic lesson derivation, on plain dataclasses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hindsight.reflect.derive import derive_lessons, lesson_id
from hindsight.reflect.domain import Episode, Lesson, Result
from hindsight.reflect.store import decode_page_token, encode_page_token
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.records import RecordMeta, Source, Trust

START = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def episode(
    episode_id: str,
    minute: int,
    result: Result,
    *,
    action: str = "",
    outcome: str = "",
    task_type: str = "deploy",
    situation: str = "shipping the web app",
    lesson: str = "",
    trust: Trust = Trust.MEDIUM,
    turns: tuple[str, ...] = (),
    tags: tuple[str, ...] = (),
) -> Episode:
    meta = RecordMeta(
        time=START + timedelta(minutes=minute), trust=trust, source_turn_ids=turns, tags=tags, importance=0.1
    )
    return Episode(
        id=episode_id,
        situation=situation,
        action=action,
        outcome=outcome,
        lesson=lesson,
        task_type=task_type,
        result=result,
        meta=meta,
    )


def by_text(lessons: list[Lesson]) -> dict[str, Lesson]:
    return {lesson.lesson: lesson for lesson in lessons}


def test_an_episode_that_states_a_lesson_teaches_it_verbatim() -> None:
    [lesson] = derive_lessons("b", [episode("e1", 0, Result.UNKNOWN, lesson="Always run the tests first.")])
    assert lesson.lesson == "Always run the tests first."
    assert lesson.confidence == pytest.approx(0.7)
    assert lesson.source_episode_ids == ("e1",)
    assert lesson.id == lesson_id("b", "deploy", "Always run the tests first.")


def test_a_failure_followed_by_a_success_teaches_what_worked_where_what_failed() -> None:
    lessons = derive_lessons(
        "b",
        [
            episode("ok", 5, Result.SUCCESS, action="ran the migrations first.", outcome="deployed"),
            episode("bad", 1, Result.FAILURE, action="deployed directly", outcome="the app crashed."),
        ],
    )
    [lesson] = lessons
    assert lesson.lesson == (
        "For deploy: ran the migrations first worked where deployed directly failed (the app crashed)"
    )
    assert lesson.confidence == pytest.approx(0.6)
    assert lesson.source_episode_ids == ("bad", "ok")
    assert (lesson.action, lesson.outcome) == ("ran the migrations first.", "deployed")


def test_a_failure_with_no_later_success_teaches_what_to_avoid() -> None:
    lessons = derive_lessons(
        "b",
        [
            episode("early-ok", 0, Result.SUCCESS, action="used the old script", outcome="fine"),
            episode("bad", 10, Result.FAILURE, action="force-pushed to main", outcome="lost a commit"),
        ],
    )
    [lesson] = lessons
    assert lesson.lesson == "Avoid: force-pushed to main in shipping the web app led to lost a commit"
    assert lesson.confidence == pytest.approx(0.4)
    assert lesson.source_episode_ids == ("bad",)


def test_repeated_successes_earn_a_lesson_and_reinforce_the_lessons_recommending_that_action() -> None:
    episodes = [
        episode("bad", 0, Result.FAILURE, action="deployed directly", outcome="crash"),
        *(
            episode(f"ok{i}", 1 + i, Result.SUCCESS, action="Ran the migrations first", outcome="ok")
            for i in range(3)
        ),
    ]
    lessons = by_text(derive_lessons("b", episodes))
    recovery = lessons["For deploy: Ran the migrations first worked where deployed directly failed (crash)"]
    repeated = lessons["For deploy: Ran the migrations first has worked repeatedly"]
    assert recovery.confidence == pytest.approx(0.8)
    assert repeated.confidence == pytest.approx(0.7)
    assert repeated.source_episode_ids == ("ok0", "ok1", "ok2")


def test_confidence_never_rises_above_the_cap() -> None:
    episodes = [episode(f"ok{i}", i, Result.SUCCESS, action="use the cache") for i in range(20)]
    [lesson] = derive_lessons("b", episodes)
    assert lesson.confidence == pytest.approx(0.8)


def test_different_task_types_never_teach_each_other() -> None:
    lessons = derive_lessons(
        "b",
        [
            episode("bad", 0, Result.FAILURE, action="guessed", outcome="wrong", task_type="billing"),
            episode("ok", 1, Result.SUCCESS, action="asked", outcome="right", task_type="deploy"),
        ],
    )
    assert [lesson.lesson for lesson in lessons] == ["Avoid: guessed in shipping the web app led to wrong"]


def test_without_a_task_type_episodes_are_grouped_by_situation() -> None:
    lessons = derive_lessons(
        "b",
        [
            episode(
                "bad",
                0,
                Result.FAILURE,
                action="retry",
                outcome="timeout",
                task_type="",
                situation="Flaky API",
            ),
            episode(
                "ok", 1, Result.SUCCESS, action="backoff", outcome="ok", task_type="", situation="flaky  api"
            ),
        ],
    )
    assert [lesson.lesson for lesson in lessons] == [
        "For Flaky API: backoff worked where retry failed (timeout)"
    ]


def test_deriving_twice_gives_the_same_ids_and_banks_never_share_them() -> None:
    episodes = [
        episode("bad", 0, Result.FAILURE, action="a", outcome="x"),
        episode("e", 1, Result.UNKNOWN, lesson="Check the logs."),
    ]
    first = [lesson.id for lesson in derive_lessons("b", episodes)]
    assert first == [lesson.id for lesson in derive_lessons("b", list(reversed(episodes)))]
    assert set(first).isdisjoint(lesson.id for lesson in derive_lessons("other", episodes))


def test_a_lesson_carries_its_episodes_provenance_and_their_weakest_trust() -> None:
    lessons = derive_lessons(
        "b",
        [
            episode(
                "bad",
                0,
                Result.FAILURE,
                action="a",
                outcome="x",
                trust=Trust.LOW,
                turns=("t1",),
                tags=("ops",),
            ),
            episode("ok", 3, Result.SUCCESS, action="b", outcome="y", trust=Trust.HIGH, turns=("t2", "t1")),
        ],
    )
    [lesson] = lessons
    assert lesson.meta.trust is Trust.LOW
    assert lesson.meta.source is Source.AGENT
    assert lesson.meta.source_turn_ids == ("t1", "t2")
    assert lesson.meta.tags == ("deploy", "ops")
    assert lesson.meta.time == START + timedelta(minutes=3)


def test_episodes_without_a_result_or_a_lesson_teach_nothing() -> None:
    assert derive_lessons("b", [episode("e", 0, Result.UNKNOWN, action="looked around")]) == []


def test_page_tokens_round_trip_and_malformed_ones_name_the_field() -> None:
    assert decode_page_token(encode_page_token(0.7000000000000001, "abc")) == (0.7000000000000001, "abc")
    assert decode_page_token("") is None
    for bad in ("not-base64!", encode_page_token(0.5, "x")[:-3] + "AAA", "eyJrIjoidHVybnMifQ"):
        with pytest.raises(InvalidArgument) as error:
            decode_page_token(bad)
        assert error.value.field == "page_token"
