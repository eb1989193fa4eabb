"""Sharing memories into a team bank: the ``share`` MCP tool and the ``Share`` RPC.

An agent that may read its own bank and write its team's copies chosen memories across, by the ids recall
and list_recent return: turns, episodes, facts and lessons. Every copy is a record of episodic memory in
the team bank, so the team bank finds it by keyword and by meaning, reflects on it and purges it as any
other: a turn is copied as a turn, an episode as an episode, a fact as a turn stating it, and a lesson as
an episode stating it, from which the team bank's reflection draws the same lesson at once. Each copy is
written by the sharing agent and linked, in episodic memory, to the source bank and to every record it
was drawn from; a purge of any of them in the source bank purges the copy too, unless the team bank
re-stated it (the rule: :mod:`hindsight.episodic.shares`).

The call is all or nothing: an id the source bank does not hold fails it, naming the id, before anything is
written; so does a credential without ``read`` on the source or ``write`` on the team bank (checked by
the fronts before the call reaches here).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.memory.v1 import memory_pb2
from hindsight.contracts.reflect.v1 import reflect_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.runtime.auth import Caller
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.interceptors import acting_as
from hindsight.runtime.permissions import Operation
from hindsight.runtime.results import SharedMemory
from hindsight.runtime.validation import check_bank_id

log = logging.getLogger(__name__)

MAX_SHARE_IDS = 100
"""Memories one share copies at most."""
MAX_ID_CHARS = 256
TASK_TYPE_CHARS = 200
"""The longest task type an episode may carry (a lesson's topic is one, or its situation's key)."""
SHARED_SESSION = "shared"
"""The session of a fact's copy when the fact names none."""
EPISODIC, REFLECT = "episodic", "reflect"
_EPISODIC_KINDS = frozenset(
    {semantic_pb2.RECORD_KIND_UNSPECIFIED, semantic_pb2.RECORD_KIND_TURN, semantic_pb2.RECORD_KIND_EPISODE}
)
"""Records the semantic layer holds of episodic memory's (turns, episodes): episodic memory copies those."""
_ROLE_OF_SOURCE = {
    common_pb2.SOURCE_USER: common_pb2.ROLE_USER,
    common_pb2.SOURCE_TOOL: common_pb2.ROLE_TOOL,
}


@dataclass(frozen=True)
class ShareResult:
    """What a share copied, in the order asked."""

    target_bank_id: str
    shared: tuple[SharedMemory, ...]
    indexed: bool
    """Whether the copies were searchable by meaning when the call returned."""


def check_share(
    caller: Caller, bank_id: str, target_bank_id: str, ids: Sequence[str], target_field: str
) -> tuple[str, list[str]]:
    """The team bank and the ids, checked (the source bank is checked by the front); PERMISSION_DENIED,
    naming the team bank and ``write``, unless ``caller`` may write there."""
    target = check_bank_id(target_bank_id, target_field)
    if target == bank_id:
        raise InvalidArgument(target_field, f"must name another bank than the source bank {bank_id!r}")
    caller.require(target, Operation.WRITE)
    wanted = list(dict.fromkeys(i.strip() for i in ids))
    if not wanted:
        raise InvalidArgument("ids", "name at least one memory to share")
    if len(wanted) > MAX_SHARE_IDS:
        raise InvalidArgument("ids", f"at most {MAX_SHARE_IDS} per call")
    for index, value in enumerate(wanted):
        if not value or len(value) > MAX_ID_CHARS:
            raise InvalidArgument(f"ids[{index}]", f"must be 1 to {MAX_ID_CHARS} characters")
    return target, wanted


def _copied_meta(source: common_pb2.RecordMeta) -> common_pb2.RecordMeta:
    """What a copy keeps of its source's meta, for facts and lessons alike: source (an agent's when unset),
    trust, tags, importance and time."""
    meta = common_pb2.RecordMeta(
        source=source.source or common_pb2.SOURCE_AGENT,
        trust=source.trust,
        tags=list(source.tags),
        importance=source.importance,
    )
    if source.HasField("time"):
        meta.time.CopyFrom(source.time)
    return meta


def _fact_copy(record: semantic_pb2.SemanticRecord) -> episodic_pb2.SharedCopy:
    """A fact (or any record the semantic layer holds of its own) as a turn stating it."""
    meta = _copied_meta(record.meta)
    turn = common_pb2.Turn(
        session_id=record.session_id or SHARED_SESSION,
        role=_ROLE_OF_SOURCE.get(meta.source, common_pb2.ROLE_ASSISTANT),
        speaker=record.speaker,
        text=record.text,
        meta=meta,
    )
    return episodic_pb2.SharedCopy(
        source_id=record.id,
        source_kind="fact",
        lineage_ids=[*record.meta.source_turn_ids, *record.source_episode_ids],
        source_agent=record.meta.agent,
        turn=turn,
    )


def _lesson_copy(lesson: reflect_pb2.Lesson) -> episodic_pb2.SharedCopy:
    """A lesson as an episode that states it, in a session of its own (the lesson's id), so that the team
    bank's reflection on that session draws the lesson from it and from nothing else."""
    meta = _copied_meta(lesson.meta)
    episode = episodic_pb2.Episode(
        session_id=lesson.id,
        situation=lesson.situation or lesson.lesson,
        action=lesson.action,
        outcome=lesson.outcome,
        lesson=lesson.lesson,
        task_type=lesson.topic if len(lesson.topic) <= TASK_TYPE_CHARS else "",
        meta=meta,
    )
    return episodic_pb2.SharedCopy(
        source_id=lesson.id,
        source_kind="lesson",
        lineage_ids=[*lesson.source_episode_ids, *lesson.meta.source_turn_ids],
        source_agent=lesson.meta.agent,
        episode=episode,
    )


async def _records_of_other_layers(
    engine: MemoryEngine, bank_id: str, ids: Sequence[str]
) -> list[episodic_pb2.SharedCopy]:
    """The facts and lessons among ``ids``, as copies (turns and episodes are episodic memory's to read)."""
    timeout = engine.settings.write_timeout
    records, lessons = await asyncio.gather(
        engine.clients.semantic.call(
            "GetRecords", semantic_pb2.GetRecordsRequest(bank_id=bank_id, ids=list(ids)), timeout
        ),
        engine.clients.reflect.call(
            "GetLessons", reflect_pb2.GetLessonsRequest(bank_id=bank_id, ids=list(ids)), timeout
        ),
    )
    copies = {r.id: _fact_copy(r) for r in records.records if r.kind not in _EPISODIC_KINDS}
    for lesson in lessons.lessons:
        copies.setdefault(lesson.id, _lesson_copy(lesson))
    return [copies[i] for i in ids if i in copies]


async def _drawn_lesson(engine: MemoryEngine, target_bank_id: str, lesson_id: str, anchor: str) -> str:
    """The team bank's lesson drawn from a shared lesson's episode (``anchor``), drawn now; empty when the
    reflection drew none from it."""
    reply = await engine.reflect(target_bank_id, lesson_id)
    return next((lesson.id for lesson in reply.lessons if anchor in lesson.source_episode_ids), "")


async def share_memories(
    engine: MemoryEngine,
    bank_id: str,
    target_bank_id: str,
    ids: Sequence[str],
    agent: str,
    actor: str,
) -> ShareResult:
    """Copy the memories ``ids`` of ``bank_id`` into ``target_bank_id``, written by ``agent`` (the
    caller's name); ``actor`` is whom the layer calls act for. INVALID_ARGUMENT naming the first id the
    bank does not hold, with nothing written."""
    copies = await _records_of_other_layers(engine, bank_id, ids)
    copied = {copy.source_id for copy in copies}
    request = episodic_pb2.ShareRecordsRequest(
        bank_id=target_bank_id,
        source_bank_id=bank_id,
        ids=[i for i in ids if i not in copied],
        copies=copies,
        agent=agent,
        index_now=True,
    )
    with acting_as(actor):
        reply = await engine.clients.episodic.call("ShareRecords", request, engine.settings.write_timeout)
    if reply.unknown_ids:
        named = ", ".join(repr(i) for i in reply.unknown_ids[:5])
        raise InvalidArgument(
            "ids",
            f"{named} {'is' if len(reply.unknown_ids) == 1 else 'are'} no memory of bank {bank_id!r} "
            "(give ids as recall or list_recent return them: turns, episodes, facts or lessons); "
            "nothing was shared",
        )
    by_source = {record.source_id: record for record in reply.shared}
    shared: list[SharedMemory] = []
    for source_id in ids:
        record = by_source[source_id]
        layer, copy_id = EPISODIC, record.id
        if record.source_kind == "lesson":
            drawn = await _drawn_lesson(engine, target_bank_id, source_id, record.id)
            layer, copy_id = (REFLECT, drawn) if drawn else (EPISODIC, record.id)
        shared.append(SharedMemory(source_id, copy_id, layer, record.source_kind))
    log.info(
        "share",
        extra={
            "bank": bank_id,
            "target_bank": target_bank_id,
            "shared": len(shared),
            "new": reply.stored_count,
            "indexed": reply.indexed,
        },
    )
    return ShareResult(target_bank_id, tuple(shared), reply.indexed)


def share_reply(result: ShareResult) -> memory_pb2.ShareResponse:
    """A share's result for the gRPC front."""
    return memory_pb2.ShareResponse(
        target_bank_id=result.target_bank_id,
        shared=[
            memory_pb2.SharedMemory(source_id=m.source_id, id=m.id, layer=m.layer, kind=m.kind)
            for m in result.shared
        ],
        indexed=result.indexed,
    )
