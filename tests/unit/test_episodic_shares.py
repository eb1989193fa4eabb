"""How a shared record is copied: a stable id, the sharing agent as writer, lineage kept on the link instead
of the copy, and an episode reported only by tools never made to look vouched for by sharing it."""

from __future__ import annotations

from datetime import UTC, datetime

from hindsight.episodic.models import Episode, Outcome
from hindsight.episodic.shares import copy_id, episode_copy, turn_copy
from hindsight.runtime.records import RecordMeta, Role, Source, Trust, Turn

WHEN = datetime(2025, 6, 1, 9, tzinfo=UTC)


def _episode() -> Episode:
    return Episode(
        id="ep-1",
        session_id="incident-7",
        situation="Deploying the indexer",
        action="rolled the nodes one at a time",
        result=Outcome.SUCCESS,
        meta=RecordMeta(
            source_turn_ids=("t1", "t2"), source=Source.AGENT, trust=Trust.HIGH, time=WHEN, agent="a"
        ),
    )


def test_a_turn_copy_keeps_what_was_said_and_names_the_sharing_agent_and_its_lineage_on_the_link() -> None:
    turn = Turn(
        id="t9",
        session_id="s1",
        role=Role.USER,
        speaker="Dana",
        text="I live in Lisbon.",
        meta=RecordMeta(
            source_turn_ids=("t8",), source=Source.USER, time=WHEN, tags=("home",), agent="alpha"
        ),
    )
    copy = turn_copy(turn, "alpha-bank", "team", "sharer")
    assert copy.turn is not None and copy.id == copy_id("alpha-bank", "t9", "team") == copy.turn.id
    assert copy.id not in {
        "t9",
        copy_id("alpha-bank", "t9", "other-team"),
        copy_id("beta-bank", "t9", "team"),
    }
    assert (copy.turn.text, copy.turn.speaker, copy.turn.session_id) == (turn.text, "Dana", "s1")
    assert copy.turn.meta.time == WHEN and copy.turn.meta.tags == ("home",)
    assert copy.turn.meta.agent == "sharer" and copy.turn.meta.source_turn_ids == ()
    assert copy.lineage_ids == ("t9", "t8") and copy.source_agent == "alpha"
    assert (copy.kind, copy.source_kind) == ("turn", "turn")


def test_an_episode_copy_keeps_its_source_when_its_turns_are_trusted() -> None:
    copy = episode_copy(_episode(), [Source.USER, Source.TOOL], "alpha-bank", "team", "sharer")
    assert copy.episode is not None and copy.kind == "episode"
    assert copy.episode.meta.source is Source.AGENT and copy.episode.meta.trust is Trust.HIGH
    assert copy.episode.meta.source_turn_ids == () and copy.lineage_ids == ("ep-1", "t1", "t2")
    assert copy.episode.session_id == "incident-7" and copy.episode.meta.agent == "sharer"


def test_an_episode_reported_only_by_a_tool_stays_a_tools_word_in_its_copy() -> None:
    copy = episode_copy(_episode(), [Source.TOOL, Source.TOOL], "alpha-bank", "team", "sharer")
    assert copy.episode is not None
    assert copy.episode.meta.source is Source.TOOL and copy.episode.meta.trust is Trust.LOW
