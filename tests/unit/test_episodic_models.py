"""Episodes validate at the edge, naming the field, and convert to protobuf and back unchanged."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.episodic.models import Episode, Outcome
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.records import RecordMeta, Source, Trust


def test_an_episode_survives_a_round_trip_through_protobuf() -> None:
    episode = Episode(
        id="e1",
        session_id="s1",
        situation="deploy to staging",
        action="ran the migration first",
        outcome="it worked",
        lesson="migrate before deploying",
        task_type="deploy",
        tools=("kubectl", "psql"),
        result=Outcome.SUCCESS,
        meta=RecordMeta(
            source_turn_ids=("t1",),
            source=Source.AGENT,
            trust=Trust.MEDIUM,
            time=datetime(2025, 5, 1, tzinfo=UTC),
            tags=("ops",),
            importance=0.5,
        ),
        recorded_at=datetime(2025, 5, 2, tzinfo=UTC),
    )
    assert Episode.from_pb(episode.to_pb()) == episode


def test_an_episode_needs_a_situation_or_an_action() -> None:
    with pytest.raises(InvalidArgument) as error:
        Episode.from_pb(episodic_pb2.Episode(outcome="fine", lesson="none"))
    assert error.value.field == "episode.situation"
    assert Episode.from_pb(episodic_pb2.Episode(action="restarted the pod")).action == "restarted the pod"


def test_importance_outside_zero_to_one_is_refused() -> None:
    message = episodic_pb2.Episode(situation="x", meta=common_pb2.RecordMeta(importance=1.5))
    with pytest.raises(InvalidArgument) as error:
        Episode.from_pb(message)
    assert error.value.field == "episode.meta.importance"


def test_tools_are_trimmed_and_deduplicated_and_an_unknown_source_defaults_to_the_agent() -> None:
    episode = Episode.from_pb(episodic_pb2.Episode(situation="x", tools=[" git ", "git", "", "make"]))
    assert episode.tools == ("git", "make")
    assert episode.meta.source is Source.AGENT
    assert episode.meta.trust is Trust.MEDIUM
