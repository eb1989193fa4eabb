"""The MCP output models that only repeat a domain record are derived from its dataclass and filled from it
by name (``model_validate(record, from_attributes=True)``): the record's fields, in its order, described
by the record's own docstrings."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel

from hindsight.mcp_edge.domain import PurgeResult, RetainResult, Screened
from hindsight.mcp_edge.mcp_share import SharedOutput
from hindsight.mcp_edge.tools.derived import output_model
from hindsight.mcp_edge.tools.outputs import (
    ForgetOutput,
    InvalidateOutput,
    PurgeOutput,
    RetainOutput,
    ScreenedOutput,
)
from hindsight.mcp_edge.tools.recall_output import FlagOutput, WarningOutput
from hindsight.runtime.results import (
    ForgetResult,
    InvalidateResult,
    SecurityFlag,
    SecurityWarning,
    SharedMemory,
)

MOMENT = datetime(2025, 5, 1, tzinfo=UTC)
SCREENED = Screened("t2", "secret", "an API key", "redact")
RECORDS: list[tuple[type[BaseModel], Any, dict[str, Any]]] = [
    (
        ForgetOutput,
        ForgetResult(3, 2, 1),
        {"forgotten_count": 3, "unindexed_count": 2, "working_removed_count": 1},
    ),
    (
        InvalidateOutput,
        InvalidateResult(("a", "b"), (), ("c",), ("d",)),
        {"invalidated_ids": ["a", "b"], "unchanged_ids": [], "unknown_ids": ["c"], "derived_ids": ["d"]},
    ),
    (
        PurgeOutput,
        PurgeResult(4, 1, 3, 2, 1, 5),
        {
            "turn_count": 4,
            "episode_count": 1,
            "unindexed_count": 3,
            "working_removed_count": 2,
            "lesson_count": 1,
            "shared_copy_count": 5,
        },
    ),
    (
        ScreenedOutput,
        SCREENED,
        {"turn_id": "t2", "kind": "secret", "reason": "an API key", "action": "redact"},
    ),
    (
        RetainOutput,
        RetainResult(("t1", "t2"), 1, False, (SCREENED,)),
        {
            "turn_ids": ["t1", "t2"],
            "duplicate_count": 1,
            "indexed": False,
            "screened": [{"turn_id": "t2", "kind": "secret", "reason": "an API key", "action": "redact"}],
        },
    ),
    (
        SharedOutput,
        SharedMemory("s1", "c1", "episodic", "turn"),
        {"source_id": "s1", "id": "c1", "layer": "episodic", "kind": "turn"},
    ),
    (FlagOutput, SecurityFlag("instruction", "why"), {"kind": "instruction", "reason": "why"}),
    (
        WarningOutput,
        SecurityWarning("q1", "instruction", "why", "x", MOMENT),
        {"id": "q1", "kind": "instruction", "reason": "why", "excerpt": "x", "time": MOMENT},
    ),
]


@pytest.mark.parametrize(("model", "record", "expected"), RECORDS, ids=lambda v: getattr(v, "__name__", ""))
def test_an_output_model_keeps_its_records_fields_and_copies_them(
    model: type[BaseModel], record: Any, expected: dict[str, Any]
) -> None:
    assert list(model.model_fields) == [f.name for f in dataclasses.fields(record)]
    assert model.model_validate(record, from_attributes=True).model_dump() == expected


def test_a_derived_model_describes_each_field_with_the_docstring_under_it() -> None:
    schema = RetainOutput.model_json_schema()
    screened = schema["$defs"]["ScreenedOutput"]
    assert screened["properties"]["kind"]["description"] == "instruction, tool_imperative, secret, ..."
    assert "description" not in screened["properties"]["turn_id"]  # no docstring, no description
    assert schema["properties"]["screened"]["items"] == {"$ref": "#/$defs/ScreenedOutput"}
    assert schema["properties"]["screened"]["default"] == []
    assert schema["description"] == "What a retain stored."
    assert ScreenedOutput is output_model(Screened)  # one model per record, wherever it is nested
    assert SharedOutput.model_fields["layer"].description == (
        "Where a recall finds the copy: `episodic`, or `reflect` for a lesson."
    )
