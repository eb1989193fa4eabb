"""The layers' search hits as the edge's candidates: one shape for turns (working and episodic memory),
records (the semantic layer) and lessons (reflection), whatever their contracts say, so fusion reads
every list alike.
"""

from __future__ import annotations

from typing import Any

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.reflect.v1 import reflect_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.mcp_edge.domain import Candidate, LayerName, RecallQuery
from hindsight.mcp_edge.validity import record_validity
from hindsight.runtime.records import RecordMeta


def turn_candidate(hit: common_pb2.ScoredTurn, layer: LayerName) -> Candidate:
    turn = hit.turn
    return Candidate(
        id=turn.id,
        layer=layer,
        text=turn.text,
        layer_score=hit.score,
        meta=RecordMeta.from_pb(turn.meta),
        speaker=turn.speaker,
        session_id=turn.session_id,
        bank_id=hit.bank_id,
    )


def record_candidate(hit: semantic_pb2.ScoredRecord) -> Candidate:
    record = hit.record
    try:
        kind = semantic_pb2.RecordKind.Name(record.kind).removeprefix("RECORD_KIND_").lower()
    except ValueError:  # a kind newer than these contracts: still a memory worth returning
        kind = "record"
    return Candidate(
        id=record.id,
        layer=LayerName.SEMANTIC,
        text=record.text,
        layer_score=hit.score,
        meta=RecordMeta.from_pb(record.meta),
        speaker=record.speaker,
        kind="turn" if kind == "unspecified" else kind,
        session_id=record.session_id,
        confidence=record.confidence if record.confidence > 0 else 1.0,  # 0: the record states none
        supersedes=tuple(record.supersedes),
        statement=(record.subject, record.attribute, record.value)
        if record.subject and record.attribute and record.value
        else (),
        similarity=hit.similarity,
        replies_to=record.replies_to.id,
        bank_id=hit.bank_id,
        **record_validity(record),
    )


def lesson_candidate(hit: reflect_pb2.ScoredLesson) -> Candidate:
    lesson = hit.lesson
    text = lesson.lesson if not lesson.situation else f"{lesson.lesson} (when: {lesson.situation})"
    return Candidate(
        id=lesson.id,
        layer=LayerName.REFLECT,
        text=text,
        layer_score=hit.score,
        meta=RecordMeta.from_pb(lesson.meta),
        kind="lesson",
        confidence=lesson.confidence if lesson.confidence > 0 else 1.0,
        bank_id=hit.bank_id,
    )


def banks_asked(q: RecallQuery) -> dict[str, Any]:
    """The bank fields of a layer's search request: the recall's one bank, or all of its banks at once."""
    return {"bank_ids": list(q.bank_ids)} if q.bank_ids else {"bank_id": q.bank_id}
