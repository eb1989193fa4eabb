"""Segmentation rules, rule-based extraction, outbox back-off and freshness decay, without servers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hindsight.episodic.access import decayed
from hindsight.episodic.episode_rows import dedup_key, jaccard
from hindsight.episodic.models import Episode, Outcome
from hindsight.episodic.outbox import episode_record, episode_text
from hindsight.episodic.outbox_entries import OutboxEntry, retry_times
from hindsight.episodic.segment import (
    SegmentRules,
    episode_id,
    lexical_similarities,
    rule_episode,
    split,
    vector_similarities,
)
from hindsight.runtime.records import RecordMeta, Role, Trust, Turn

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
RULES = SegmentRules(threshold=0.05, gap=timedelta(minutes=30), min_turns=2, max_turns=4)


def turns(*texts: str, gaps: dict[int, float] | None = None) -> list[Turn]:
    result, minute = [], 0.0
    for index, text in enumerate(texts):
        minute += (gaps or {}).get(index, 1)
        result.append(Turn(f"t{index}", "s", text, meta=RecordMeta(time=T0 + timedelta(minutes=minute))))
    return result


def test_a_topic_shift_is_cut_at_the_gap_where_the_topics_differ_most() -> None:
    talk = turns(
        "the printer jams on every page",
        "clean the printer rollers and the jams stop",
        "printer rollers cleaned, no more jams",
        "book a table for dinner on friday",
        "a dinner table for friday is booked",
    )
    similarities = lexical_similarities(talk)
    assert similarities.index(min(similarities)) == 2
    assert [[t.id for t in segment] for segment in split(talk, similarities, RULES)] == [
        ["t0", "t1", "t2"],
        ["t3", "t4"],
    ]


def test_only_a_valley_under_the_threshold_cuts() -> None:
    talk = turns("a", "b", "c", "d", "e")
    # gap 1 is under the threshold but gap 2 is lower still: the cut goes there, once
    segments = split(talk, [0.9, 0.04, 0.01, 0.9], RULES)
    assert [[t.id for t in s] for s in segments] == [["t0", "t1", "t2"], ["t3", "t4"]]


def test_pauses_and_the_size_limit_cut_and_short_segments_are_not_cut_by_topic() -> None:
    talk = turns("a", "b", "c", "d", "e", "f", "g", gaps={2: 31})
    segments = split(talk, [0.9] * 6, RULES)
    assert [[t.id for t in s] for s in segments] == [["t0", "t1"], ["t2", "t3", "t4", "t5"], ["t6"]]
    # a shift right after the first turn of a segment does not cut (min_turns)
    assert len(split(turns("a", "b", "c"), [0.0, 0.9], RULES)) == 1


def test_vector_similarities_compare_the_windows_beside_each_gap() -> None:
    same, other = [1.0, 0.0], [0.0, 1.0]
    values = vector_similarities([same, same, other, other])
    assert values[0] == pytest.approx(1 / 2**0.5) and values[1] == pytest.approx(0.0)


def test_rules_make_an_episode_with_provenance_tools_and_result() -> None:
    talk = [
        Turn("u", "s", "The nightly backup job failed again.", meta=RecordMeta(time=T0, trust=Trust.HIGH)),
        Turn(
            "a",
            "s",
            "Restarting the backup with more disk space.",
            role=Role.ASSISTANT,
            meta=RecordMeta(time=T0),
        ),
        Turn(
            "x", "s", "backup ok", role=Role.TOOL, speaker="restic", meta=RecordMeta(time=T0, importance=0.7)
        ),
        Turn(
            "u2", "s", "It worked, thanks!", meta=RecordMeta(time=T0 + timedelta(minutes=5), trust=Trust.LOW)
        ),
    ]
    episode = rule_episode("bank", talk)
    assert episode.id == episode_id("bank", "s", "u") != episode_id("other", "s", "u")
    assert episode.situation == "The nightly backup job failed again."
    assert episode.action.startswith("Restarting the backup")
    assert episode.outcome == "It worked, thanks!" and episode.result is Outcome.SUCCESS
    assert episode.tools == ("restic",) and "backup" in episode.meta.tags
    assert episode.meta.source_turn_ids == ("u", "a", "x", "u2")
    assert (episode.meta.trust, episode.meta.importance, episode.meta.time) == (
        Trust.LOW,
        0.7,
        T0 + timedelta(minutes=5),
    )


def test_repeated_episodes_share_a_key_whatever_the_wording_order_or_case() -> None:
    one = Episode("1", situation="Deploy failed", action="Ran the migrations")
    two = Episode("2", situation="ran migrations,", action="deploy FAILED")
    assert dedup_key(one) == dedup_key(two)
    assert jaccard(["a", "b"], ["b", "c"]) == pytest.approx(1 / 3) and jaccard([], ["a"]) == 0.0


def test_failed_deliveries_back_off_exponentially_up_to_the_cap() -> None:
    entries = [
        OutboxEntry(i, "b", "semantic", "sync", "turn", f"t{i}", {}, attempts)
        for i, attempts in enumerate((0, 1, 3, 40))
    ]
    times = retry_times(entries, T0, base=0.5, cap=60.0, jitter=[1.0, 1.0, 1.0, 1.2])
    assert [(t - T0).total_seconds() for t in times] == pytest.approx([0.5, 1.0, 4.0, 72.0])


def test_freshness_decays_per_day_and_stays_between_zero_and_one() -> None:
    assert decayed(0.5, T0, T0 + timedelta(days=5), 0.02) == pytest.approx(0.4)
    assert decayed(0.5, T0, T0 + timedelta(days=500), 0.02) == 0.0
    assert decayed(0.5, T0 + timedelta(days=1), T0, 0.02) == 0.5  # a clock behind the record: no change


def test_an_episode_is_indexed_by_meaning_with_its_labelled_parts() -> None:
    episode = Episode(
        "e",
        "s",
        situation="Deploy failed",
        action="",
        outcome="Fixed it",
        meta=RecordMeta(source_turn_ids=("t1",)),
    )
    assert episode_text(episode) == "Situation: Deploy failed\nOutcome: Fixed it"
    record = episode_record(episode)
    assert (record.id, record.session_id, list(record.meta.source_turn_ids)) == ("e", "s", ["t1"])
