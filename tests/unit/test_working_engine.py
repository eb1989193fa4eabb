"""Recent-turn ranking and the window encoding: pure logic of working memory."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hindsight.runtime.records import RecordMeta, Role, Source, Trust, Turn
from hindsight.runtime.settings import SettingsError
from hindsight.working.engine import RECENCY_BOOST, rank_recent, recency_weight
from hindsight.working.settings import WorkingSettings
from hindsight.working.store import Keys, StoredTurn, decode_turn, encode_turn

NOW = 1_000_000.0


def _stored(turn_id: str, text: str, age: float = 0.0, speaker: str = "") -> StoredTurn:
    return StoredTurn(Turn(id=turn_id, session_id="s", text=text, speaker=speaker), NOW - age)


def test_turns_sharing_no_term_with_the_query_are_never_returned() -> None:
    hits = rank_recent(
        "database migration", [_stored("a", "lunch was nice"), _stored("b", "the migration")], NOW, 1800.0, 10
    )
    assert [hit.turn.id for hit in hits] == ["b"]


def test_a_better_match_wins_over_a_newer_weaker_one() -> None:
    candidates = [_stored("old", "database migration timed out", age=7200), _stored("new", "database is up")]
    hits = rank_recent("database migration", candidates, NOW, 1800.0, 10)
    assert [hit.turn.id for hit in hits] == ["old", "new"]


def test_recency_breaks_a_tie_between_equal_matches() -> None:
    candidates = [_stored("older", "deploy failed", age=3600), _stored("newer", "deploy failed", age=10)]
    hits = rank_recent("deploy", candidates, NOW, 1800.0, 10)
    assert [hit.turn.id for hit in hits] == ["newer", "older"]
    assert hits[0].score / hits[1].score <= 1 + RECENCY_BOOST


def test_chinese_queries_match_chinese_turns_and_the_limit_applies() -> None:
    candidates = [_stored(str(i), "我在北京大学") for i in range(5)] + [_stored("x", "上海")]
    hits = rank_recent("北京", candidates, NOW, 1800.0, 3)
    assert len(hits) == 3 and all(hit.turn.text == "我在北京大学" for hit in hits)


def test_the_speaker_name_is_searchable() -> None:
    hits = rank_recent("caroline", [_stored("a", "I adopted a dog", speaker="Caroline")], NOW, 1800.0, 10)
    assert [hit.turn.id for hit in hits] == ["a"]


def test_recency_weight_halves_every_half_life_and_never_exceeds_one() -> None:
    assert recency_weight(0, 60) == 1.0
    assert recency_weight(60, 60) == pytest.approx(0.5)
    assert recency_weight(-5, 60) == 1.0


def test_a_turn_survives_the_window_encoding_unchanged() -> None:
    turn = Turn(
        id="t1",
        session_id="s1",
        text="你好 world",
        role=Role.ASSISTANT,
        speaker="bot",
        meta=RecordMeta(
            source_turn_ids=("t1",),
            source=Source.TOOL,
            trust=Trust.LOW,
            time=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC),
            tags=("a", "b"),
            importance=0.25,
        ),
    )
    assert decode_turn(encode_turn(turn, 12.5)) == StoredTurn(turn, 12.5)


def test_all_keys_of_a_bank_share_one_cluster_hash_slot_and_never_collide() -> None:
    keys = Keys("hs:wm")
    names = {keys.sessions("b"), keys.turns("b", "ids:x"), keys.ids("b", "x"), keys.turns("b", "x")}
    assert len(names) == 4
    assert all("{b}" in name for name in names)


def test_settings_refuse_a_window_larger_than_the_remembered_ids() -> None:
    with pytest.raises(SettingsError, match="HINDSIGHT_WORKING_REMEMBERED_IDS"):
        WorkingSettings(max_window=500, remembered_ids=100)
