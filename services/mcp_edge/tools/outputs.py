"""The tools' output models (the SDK publishes them as output schemas) and the converters from the layers'
messages that several tools share. Recall's larger result lives in :mod:`.recall_output`.

A model that only repeats a domain record (forget, invalidate, purge, retain) is derived from the record's
dataclass (:func:`~.derived.output_model`: its fields, and its docstrings as descriptions) and filled from
it by name, ``Model.model_validate(record, from_attributes=True)``, with no converter. The type checker
sees them as pydantic models; the SDK reads the derived model from the tool's return annotation.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.reflect.v1 import reflect_pb2
from hindsight.mcp_edge.domain import PurgeResult, RetainResult, Screened
from hindsight.mcp_edge.tools.derived import output_model
from hindsight.runtime.records import RecordMeta, from_timestamp
from hindsight.runtime.results import ForgetResult, InvalidateResult

if TYPE_CHECKING:  # models built at import time are plain pydantic models to the type checker
    ForgetOutput = BaseModel
    InvalidateOutput = BaseModel
    PurgeOutput = BaseModel
    RetainOutput = BaseModel
    ScreenedOutput = BaseModel
else:
    ForgetOutput = output_model(ForgetResult)
    InvalidateOutput = output_model(InvalidateResult)
    PurgeOutput = output_model(PurgeResult)
    ScreenedOutput = output_model(Screened)  # the one RetainOutput nests
    RetainOutput = output_model(RetainResult)


class QuarantinedOutput(BaseModel):
    """A turn in the review queue."""

    turn: TurnOutput
    kind: str
    reason: str
    action: str
    quarantined_at: datetime | None
    status: str = Field(description="pending, approved or rejected.")
    reviewer: str


class QuarantineListOutput(BaseModel):
    """A page of the review queue, oldest first."""

    items: list[QuarantinedOutput]
    pending_count: int
    next_page_token: str


class ReviewOutput(BaseModel):
    """What a review did."""

    approved_count: int
    rejected_count: int
    not_pending_ids: list[str] = Field(description="Ids that were not waiting for review.")


class AuditEntryOutput(BaseModel):
    """One security decision."""

    id: str
    time: datetime | None
    actor: str
    bank_id: str
    action: str
    target: str
    reason: str
    details: dict[str, Any]


class AuditLogOutput(BaseModel):
    """A page of the audit log, newest first."""

    entries: list[AuditEntryOutput]
    next_page_token: str


class TurnOutput(BaseModel):
    """A stored turn."""

    id: str
    session_id: str
    role: str
    speaker: str
    text: str
    time: datetime | None
    tags: list[str]
    importance: float
    source: str
    source_turn_ids: list[str]
    agent: str = Field("", description="The agent that wrote it; empty when not known.")


class ListRecentOutput(BaseModel):
    """Recent turns, newest first."""

    turns: list[TurnOutput]
    next_page_token: str


class UpdateOutput(BaseModel):
    """The new version of a turn."""

    turn: TurnOutput
    superseded_id: str = Field(description="The id it replaced (archived, recoverable).")
    indexed: bool


class LessonOutput(BaseModel):
    """A lesson drawn from finished work."""

    id: str
    situation: str
    lesson: str
    confidence: float
    source_episode_ids: list[str]


class ReflectOutput(BaseModel):
    """Lessons written by a reflection."""

    lessons: list[LessonOutput]
    episodes_read: int


class EpisodeOutput(BaseModel):
    """The stored episode."""

    episode_id: str


class CompressOutput(BaseModel):
    """What a compression of working memory did."""

    group_count: int = Field(description="Summaries written (each replaces 5 to 8 of the oldest turns).")
    summarised_turn_count: int
    tokens_before: int
    tokens_after: int
    summariser: str


class CloseSessionOutput(BaseModel):
    """What closing a session did."""

    closed: bool = Field(description="False when working memory held nothing for the session.")
    turn_count: int
    summary_count: int
    token_count: int
    reflected: bool = Field(description="Whether the reflection that closing triggers succeeded.")
    reflect_error: str = ""
    lessons: list[LessonOutput]
    episodes_read: int


def _lesson_outputs(lessons: Iterable[reflect_pb2.Lesson]) -> list[LessonOutput]:
    """Lessons as tools return them."""
    return [
        LessonOutput(
            id=item.id,
            situation=item.situation,
            lesson=item.lesson,
            confidence=round(item.confidence, 3),
            source_episode_ids=list(item.source_episode_ids),
        )
        for item in lessons
    ]


def _turn_output(turn: common_pb2.Turn) -> TurnOutput:
    meta = RecordMeta.from_pb(turn.meta)
    role = {
        common_pb2.ROLE_USER: "user",
        common_pb2.ROLE_ASSISTANT: "assistant",
        common_pb2.ROLE_TOOL: "tool",
        common_pb2.ROLE_SYSTEM: "system",
    }.get(turn.role, "")
    return TurnOutput(
        id=turn.id,
        session_id=turn.session_id,
        role=role,
        speaker=turn.speaker,
        text=turn.text,
        time=meta.time,
        tags=list(meta.tags),
        importance=meta.importance,
        source=meta.source.value,
        source_turn_ids=list(meta.source_turn_ids),
        agent=meta.agent,
    )


def _quarantined_output(item: common_pb2.QuarantinedTurn) -> QuarantinedOutput:
    return QuarantinedOutput(
        turn=_turn_output(item.turn),
        kind=item.screening.kind,
        reason=item.screening.reason,
        action=item.screening.action,
        quarantined_at=from_timestamp(item.quarantined_at) if item.HasField("quarantined_at") else None,
        status=item.status,
        reviewer=item.reviewer,
    )
