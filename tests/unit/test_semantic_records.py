"""Pure parts of the semantic layer: collection naming, point ids and the payload round trip."""

from __future__ import annotations

from datetime import UTC, datetime

from hindsight.runtime.records import RecordMeta, Source, Trust
from hindsight.semantic.payloads import from_payload, point_id, to_payload
from hindsight.semantic.records import ModelIdentity, RecordKind, SemanticRecord, collection_name


def test_a_collection_name_is_sanitised_and_changes_with_the_model_file() -> None:
    model = ModelIdentity("USE Multilingual/v3", 512, "ab12cd34ef56" + "0" * 52)
    assert collection_name("hs", model) == "hs_use_multilingual_v3_ab12cd34ef56"
    retrained = ModelIdentity("USE Multilingual/v3", 512, "ffffffffffff" + "0" * 52)
    assert collection_name("hs", retrained) != collection_name("hs", model)
    assert collection_name("hs", ModelIdentity("mini", 384)) == "hs_mini_d384"


def test_point_ids_are_stable_uuids_distinct_per_bank() -> None:
    assert point_id("bank-a", "r1") == point_id("bank-a", "r1")
    assert point_id("bank-a", "r1") != point_id("bank-b", "r1")
    assert len(point_id("bank-a", "r1")) == 36


def test_a_record_survives_the_payload_round_trip_exactly() -> None:
    moment = datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=UTC)
    record = SemanticRecord(
        id="r1",
        text="Caroline prefers tea.",
        kind=RecordKind.PREFERENCE,
        speaker="Caroline",
        session_id="s1",
        meta=RecordMeta(
            source_turn_ids=("t1", "t2"),
            source=Source.TOOL,
            trust=Trust.LOW,
            time=moment,
            tags=("drinks",),
            importance=0.25,
        ),
    )
    payload = to_payload("bank", record)
    assert payload["bank_id"] == "bank" and payload["time_ts"] == moment.timestamp()
    assert from_payload(payload) == record
    undated = SemanticRecord(id="r2", text="No time.")
    assert from_payload(to_payload("bank", undated)) == undated
