"""Working memory's pure logic: ranking, the entry encoding, importance rules, grouping and budgets."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from hindsight.runtime.records import RecordMeta, Role, Source, Trust, Turn
from hindsight.runtime.settings import SettingsError
from hindsight.working.engine import RECENCY_BOOST, fit_budget, next_group, rank_recent, recency_weight
from hindsight.working.entries import (
    ANSWER_IMPORTANCE,
    GREETING_IMPORTANCE,
    INSTRUCTION_IMPORTANCE,
    TOOL_RESULT_IMPORTANCE,
    Entry,
    EntryKind,
    default_importance,
    summary_entry,
    with_importance,
)
from hindsight.working.settings import WorkingSettings
from hindsight.working.store import Indexed, Keys, decode_entry, encode_entry, index_entry

NOW = 1_000_000.0


def _entry(
    turn_id: str, text: str = "x", age: float = 0.0, speaker: str = "", tokens: int = 1, summary: bool = False
) -> Entry:
    turn = Turn(id=turn_id, session_id="s", text=text, speaker=speaker)
    return Entry(EntryKind.SUMMARY if summary else EntryKind.TURN, turn, tokens, NOW - age)


def _indexed(*args: object, **kwargs: object) -> Indexed:
    return index_entry(encode_entry(_entry(*args, **kwargs)))  # type: ignore[arg-type]


def _ids(hits: list[tuple[Indexed, float]]) -> list[str]:
    return [item.id for item, _ in hits]


def test_turns_sharing_no_term_with_the_query_are_never_returned() -> None:
    hits = rank_recent(
        "database migration",
        [_indexed("a", "lunch was nice"), _indexed("b", "the migration")],
        NOW,
        1800.0,
        10,
    )
    assert _ids(hits) == ["b"]


def test_a_better_match_wins_over_a_newer_weaker_one() -> None:
    candidates = [
        _indexed("old", "database migration timed out", age=7200),
        _indexed("new", "database is up"),
    ]
    assert _ids(rank_recent("database migration", candidates, NOW, 1800.0, 10)) == ["old", "new"]


def test_recency_breaks_a_tie_between_equal_matches() -> None:
    candidates = [_indexed("older", "deploy failed", age=3600), _indexed("newer", "deploy failed", age=10)]
    hits = rank_recent("deploy", candidates, NOW, 1800.0, 10)
    assert _ids(hits) == ["newer", "older"]
    assert hits[0][1] / hits[1][1] <= 1 + RECENCY_BOOST


def test_chinese_queries_match_chinese_turns_and_the_limit_applies() -> None:
    candidates = [_indexed(str(i), "我在北京大学") for i in range(5)] + [_indexed("x", "上海")]
    hits = rank_recent("北京", candidates, NOW, 1800.0, 3)
    assert len(hits) == 3 and all(item.decode().turn.text == "我在北京大学" for item, _ in hits)


def test_the_speaker_name_is_searchable() -> None:
    hits = rank_recent("caroline", [_indexed("a", "I adopted a dog", speaker="Caroline")], NOW, 1800.0, 10)
    assert _ids(hits) == ["a"]


def test_recency_weight_halves_every_half_life_and_never_exceeds_one() -> None:
    assert recency_weight(0, 60) == 1.0
    assert recency_weight(60, 60) == pytest.approx(0.5)
    assert recency_weight(-5, 60) == 1.0


def test_an_entry_survives_the_encoding_unchanged_and_its_header_reads_without_the_body() -> None:
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
    entry = Entry(EntryKind.TURN, turn, 7, 12.5, summary="greets the world")
    raw = encode_entry(entry)
    assert decode_entry(raw) == entry
    header = index_entry(raw)
    assert (header.kind, header.id, header.token_count, header.appended_at) == (EntryKind.TURN, "t1", 7, 12.5)
    assert set(header.terms.split()) >= {"bot", "world", "你", "你好"}


def test_entries_written_by_the_first_version_are_still_read() -> None:
    legacy = json.dumps(
        {
            "id": "old",
            "session_id": "s",
            "role": "user",
            "speaker": "Ann",
            "text": "the deploy failed",
            **RecordMeta().to_fields(),
            "time": None,
            "appended_at": 5.0,
        }
    )
    assert decode_entry(legacy).turn.text == "the deploy failed"
    assert _ids(rank_recent("deploy", [index_entry(legacy)], NOW, 1800.0, 10)) == ["old"]


def test_all_keys_of_a_bank_share_one_cluster_hash_slot_and_never_collide() -> None:
    keys = Keys("hs:wm")
    names = {
        keys.sessions("b"),
        keys.turns("b", "ids:x"),
        keys.ids("b", "x"),
        keys.turns("b", "x"),
        keys.meta("b", "x"),
    }
    assert len(names) == 5
    assert all("{b}" in name for name in names)


def test_settings_refuse_a_window_larger_than_the_remembered_ids() -> None:
    with pytest.raises(SettingsError, match="HINDSIGHT_WORKING_REMEMBERED_IDS"):
        WorkingSettings(max_window=500, remembered_ids=100)


def test_the_default_threshold_is_forty_percent_of_a_128k_context() -> None:
    settings = WorkingSettings()
    assert settings.threshold_tokens == 51_200
    assert settings.target_tokens < settings.threshold_tokens


@pytest.mark.parametrize(
    ("role", "text", "expected"),
    [
        (Role.USER, "Deploy the build to staging before 5pm.", INSTRUCTION_IMPORTANCE),
        (Role.USER, "Please never email the client directly", INSTRUCTION_IMPORTANCE),
        (Role.SYSTEM, "You are a careful assistant.", INSTRUCTION_IMPORTANCE),
        (Role.TOOL, '{"status": "ok", "rows": 42}', TOOL_RESULT_IMPORTANCE),
        (Role.ASSISTANT, "The migration finished in 4 minutes.", ANSWER_IMPORTANCE),
        (Role.USER, "I went hiking last weekend with my sister.", ANSWER_IMPORTANCE),
        (Role.USER, "Thanks!", GREETING_IMPORTANCE),
        (Role.ASSISTANT, "ok, got it", GREETING_IMPORTANCE),
        (Role.USER, "好的，谢谢！", GREETING_IMPORTANCE),
    ],
)
def test_importance_defaults_by_rule(role: Role, text: str, expected: float) -> None:
    assert default_importance(role, text) == expected


def test_an_importance_given_by_the_caller_wins_over_the_rule() -> None:
    turn = Turn(id="a", session_id="s", text="Thanks!", meta=RecordMeta(importance=0.95))
    assert with_importance(turn).meta.importance == 0.95
    assert (
        with_importance(Turn(id="b", session_id="s", text="Thanks!")).meta.importance == GREETING_IMPORTANCE
    )


def test_groups_are_five_to_eight_turns_and_the_newest_turns_are_never_taken() -> None:
    def sizes(count: int, keep: int = 2, allow_small: bool = False) -> int:
        return len(next_group([_indexed(f"t{i}") for i in range(count)], keep, allow_small))

    assert sizes(30) == 8
    assert sizes(2 + 11) == 6  # 11 eligible: split 6 + 5 rather than 8 + 3
    assert sizes(2 + 7) == 7
    assert sizes(2 + 4) == 0  # too few for a group
    assert sizes(2 + 4, allow_small=True) == 4  # unless the session is still over its target
    assert sizes(2, allow_small=True) == 0  # the newest turns are kept whatever the pressure
    entries = [_indexed("s1", summary=True)] + [_indexed(f"t{i}") for i in range(12)]
    group = next_group(entries, 4, allow_small=False)
    assert [item.id for item in group] == [f"t{i}" for i in range(8)]


def test_with_no_turns_left_the_oldest_summaries_are_merged() -> None:
    entries = [_indexed(f"s{i}", summary=True) for i in range(3)] + [_indexed("t0"), _indexed("t1")]
    assert next_group(entries, 2, allow_small=False) == []
    assert [item.id for item in next_group(entries, 2, allow_small=True)] == ["s0", "s1", "s2"]


def test_the_context_never_exceeds_its_budget_and_keeps_summaries_and_the_newest_turns() -> None:
    entries = [_indexed(f"s{i}", summary=True, tokens=30) for i in range(3)]
    entries += [_indexed(f"t{i}", tokens=10 + i) for i in range(20)]
    for budget in range(0, 700, 7):
        summaries, turns = fit_budget(entries, budget, 0.25)
        used = sum(item.token_count for item in (*summaries, *turns))
        assert used <= budget
        # the turns are the newest ones, without gaps, and the next older one would not have fitted
        assert [item.id for item in turns] == [f"t{i}" for i in range(20 - len(turns), 20)]
        if len(turns) < 20:
            assert used + entries[3 + 19 - len(turns)].token_count > budget
    summaries, turns = fit_budget(entries, 200, 0.25)
    assert [item.id for item in summaries] == ["s2"] and turns  # a quarter of 200 holds one summary


def test_a_summary_entry_keeps_the_provenance_of_what_it_replaced() -> None:
    replaced = [
        Entry(
            EntryKind.TURN,
            Turn(id=f"t{i}", session_id="s", text="x", meta=RecordMeta(trust=Trust.HIGH, importance=0.2 * i)),
            1,
            NOW,
        )
        for i in range(1, 4)
    ]
    replaced.append(
        Entry(
            EntryKind.TURN,
            Turn(id="tool", session_id="s", text="y", meta=RecordMeta(trust=Trust.LOW)),
            1,
            NOW,
        )
    )
    entry = summary_entry("s", replaced, "short", 1, NOW)
    assert entry.turn.meta.source_turn_ids == ("t1", "t2", "t3", "tool")
    assert entry.turn.meta.trust is Trust.LOW  # as trusted as its least trusted source
    assert entry.turn.meta.importance == pytest.approx(0.6)
    assert entry.turn.role is Role.SYSTEM and entry.summary == "short"
    merged = summary_entry("s", [entry, replaced[0]], "shorter", 1, NOW)
    assert merged.source_turn_ids == ("t1", "t2", "t3", "tool")
