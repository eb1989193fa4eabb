"""The deterministic rules added for reflection, the life-cycle arithmetic, and reading an LLM's answer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hindsight.reflect.derive import derive_lessons
from hindsight.reflect.domain import Episode, Lesson, Method, Result
from hindsight.reflect.engine import freshness, merged_confidence, near_duplicates, should_archive
from hindsight.reflect.llm_reflect import SYSTEM, lesson_schema, lessons_from_answer, prompt
from hindsight.reflect.settings import ReflectSettings
from hindsight.runtime.records import RecordMeta

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
SETTINGS = ReflectSettings(episodic_addr="x:1")


def ep(i: int, result: Result, action: str, outcome: str = "", tools: tuple[str, ...] = ()) -> Episode:
    return Episode(
        id=f"e{i}",
        task_type="migrate",
        situation="migrating the schema",
        action=action,
        outcome=outcome,
        result=result,
        tools=tools,
        meta=RecordMeta(time=T0 + timedelta(minutes=i)),
    )


def test_the_same_action_failing_twice_teaches_to_change_approach() -> None:
    lessons = derive_lessons(
        "b", [ep(1, Result.FAILURE, "ran the migration"), ep(2, Result.FAILURE, "ran the migration")]
    )
    [retries] = [x for x in lessons if "retried" in x.lesson]
    assert "ran the migration" in retries.lesson and retries.outcome.startswith("failed 2 times")
    assert retries.confidence == pytest.approx(0.4) and retries.stance == -1


def test_a_tool_error_in_a_failed_episode_teaches_to_check_that_tool() -> None:
    lessons = derive_lessons(
        "b", [ep(1, Result.FAILURE, "called psql", "ERROR: relation does not exist", ("psql",))]
    )
    [tool] = [x for x in lessons if "tool psql" in x.lesson]
    assert tool.confidence == pytest.approx(0.35)


def test_a_user_correction_teaches_to_follow_it() -> None:
    lessons = derive_lessons(
        "b", [ep(1, Result.SUCCESS, "used tabs", "the user corrected: spaces, not tabs")]
    )
    [fix] = [x for x in lessons if "corrected" in x.lesson]
    assert "used tabs" in fix.lesson and fix.confidence == pytest.approx(0.45)


def test_rules_never_claim_more_than_the_rule_cap_and_are_marked_as_rules() -> None:
    episodes = [ep(i, Result.SUCCESS, "used the dry-run flag") for i in range(6)]
    assert all(x.confidence <= 0.8 and x.method is Method.RULES for x in derive_lessons("b", episodes))


def _lesson(confidence: float = 0.5, **extra: object) -> Lesson:
    values: dict[str, object] = {"id": "l", "situation": "", "action": "", "outcome": "", "lesson": "x"}
    values.update(confidence=confidence, source_episode_ids=(), created_at=T0, **extra)
    return Lesson(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(("days", "weight"), [(0, 1.0), (29.9, 1.0), (30, 0.9), (61, 0.81), (90, 0.729)])
def test_freshness_falls_by_the_factor_per_whole_period_unused(days: float, weight: float) -> None:
    assert freshness(_lesson(), T0 + timedelta(days=days), SETTINGS) == pytest.approx(weight)


def test_a_recall_hit_restarts_the_unused_time() -> None:
    hit = _lesson(last_hit_at=T0 + timedelta(days=50))
    assert freshness(hit, T0 + timedelta(days=70), SETTINGS) == 1.0


def test_archive_needs_both_the_age_and_a_low_weighted_confidence() -> None:
    at = T0 + timedelta(days=90)
    assert should_archive(_lesson(0.4), 0.729, at, SETTINGS)
    assert not should_archive(_lesson(0.6), 0.729, at, SETTINGS)
    assert not should_archive(_lesson(0.1), 0.9, T0 + timedelta(days=89), SETTINGS)


def test_near_duplicates_fold_into_the_most_confident_and_corroboration_raises_confidence() -> None:
    lessons = [_lesson(0.5, id="a"), _lesson(0.7, id="b"), _lesson(0.6, id="c")]
    vectors = [[1.0, 0.0], [0.99, 0.05], [0.0, 1.0]]
    [merge] = near_duplicates(lessons, vectors, 0.95)
    assert (merge.keep_id, merge.merged_ids) == ("b", ["a"])
    assert merge.confidence == pytest.approx(merged_confidence([0.7, 0.5])) == pytest.approx(0.85)
    assert near_duplicates(lessons, vectors, 0.9999) == []


def test_the_prompt_asks_the_three_questions_and_labels_the_episodes() -> None:
    text = prompt([ep(1, Result.FAILURE, "ran it"), ep(2, Result.SUCCESS, "dry-run first")])
    assert "E1 [failure]" in text and "E2 [success]" in text
    for question in ("what went well", "what should be improved", "what to do next time"):
        assert question in SYSTEM
    assert lesson_schema(3)["properties"]["lessons"]["maxItems"] == 3


def test_answer_lessons_without_a_shown_episode_or_a_next_step_are_dropped() -> None:
    shown = [ep(1, Result.FAILURE, "ran it"), ep(2, Result.SUCCESS, "dry-run first")]
    item = {
        "situation": "", "action": "dry-run first", "outcome": "worked", "went_well": "dry-run",
        "to_improve": "", "next_time": "Dry-run the migration first", "stance": "do", "confidence": 1.4,
        "tags": ["db"], "episodes": ["e2", "E7"],
    }  # fmt: skip
    answer = {"lessons": [item, {**item, "episodes": ["E9"]}, {**item, "next_time": " "}]}
    [lesson] = lessons_from_answer("b", shown, answer)
    assert lesson.source_episode_ids == ("e2",) and lesson.confidence == 0.95 and lesson.stance == 1
    assert (
        lesson.method is Method.LLM
        and lesson.situation == "migrating the schema"
        and "db" in lesson.meta.tags
    )
