"""The gRPC edge of the reflect layer: validates and converts protobuf, then calls the engine."""

from __future__ import annotations

import grpc

from hindsight.contracts.reflect.v1 import reflect_pb2, reflect_pb2_grpc
from hindsight.reflect.domain import Lesson, Method
from hindsight.reflect.engine import ReflectEngine
from hindsight.reflect.export_rows import lessons_page
from hindsight.runtime.banks import requested_banks
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.interceptors import caller_var
from hindsight.runtime.records import RecordMeta, from_timestamp, to_timestamp
from hindsight.runtime.replies import reply_from
from hindsight.runtime.rewrites import check_phrasings
from hindsight.runtime.validation import check_length, check_limit, check_removal_scope, check_tags

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
DEFAULT_LIMIT = 10
MAX_LIMIT = 100
MAX_SESSION_ID_CHARS = 256
MAX_QUERY_CHARS = 10_000
MAX_PURGE_IDS = 10_000
MAX_GET_LESSONS = 1000
METHOD_TO_PB = {
    Method.RULES: reflect_pb2.REFLECTION_METHOD_RULES,
    Method.LLM: reflect_pb2.REFLECTION_METHOD_LLM,
}
TRIGGER_FROM_PB = {
    reflect_pb2.REFLECT_TRIGGER_UNSPECIFIED: "explicit",
    reflect_pb2.REFLECT_TRIGGER_EXPLICIT: "explicit",
    reflect_pb2.REFLECT_TRIGGER_SESSION_CLOSED: "session_closed",
    reflect_pb2.REFLECT_TRIGGER_IDLE: "idle",
    reflect_pb2.REFLECT_TRIGGER_IMPORTANT: "important",
}


def lesson_to_pb(lesson: Lesson) -> reflect_pb2.Lesson:
    """Convert to protobuf."""
    return reflect_pb2.Lesson(
        id=lesson.id,
        situation=lesson.situation,
        action=lesson.action,
        outcome=lesson.outcome,
        lesson=lesson.lesson,
        confidence=lesson.confidence,
        source_episode_ids=list(lesson.source_episode_ids),
        meta=lesson.meta.to_pb(),
        hit_count=lesson.hit_count,
        last_hit_at=to_timestamp(lesson.last_hit_at),
        weight=lesson.weight,
        superseded_by=lesson.superseded_by,
        merged_into=lesson.merged_into,
        archived_at=to_timestamp(lesson.archived_at),
        method=METHOD_TO_PB[lesson.method],
        topic=lesson.topic,
        action_key=lesson.action_key,
        stance=lesson.stance,
        created_at=to_timestamp(lesson.created_at),
    )


MAX_IMPORT_LESSONS = 1000
METHOD_FROM_PB = {value: key for key, value in METHOD_TO_PB.items()}


def lesson_from_pb(message: reflect_pb2.Lesson, field_name: str) -> Lesson:
    """A lesson given whole (``ImportLessons``): its id, text, statistics and life cycle as they are."""
    if not message.id.strip():
        raise InvalidArgument(f"{field_name}.id", "must not be empty")
    if not message.lesson.strip():
        raise InvalidArgument(f"{field_name}.lesson", "must not be empty")
    if not 0.0 <= message.confidence <= 1.0:
        raise InvalidArgument(f"{field_name}.confidence", "must be between 0 and 1")
    if not 0.0 <= message.weight <= 1.0:
        raise InvalidArgument(f"{field_name}.weight", "must be between 0 and 1")
    if message.stance not in (-1, 0, 1):
        raise InvalidArgument(f"{field_name}.stance", "must be -1, 0 or 1")
    if message.method not in METHOD_FROM_PB:
        raise InvalidArgument(f"{field_name}.method", "must be RULES or LLM")
    stamp = {
        name: from_timestamp(getattr(message, name)) if message.HasField(name) else None
        for name in ("last_hit_at", "archived_at", "created_at")
    }
    return Lesson(
        id=message.id,
        situation=message.situation,
        action=message.action,
        outcome=message.outcome,
        lesson=message.lesson,
        confidence=message.confidence,
        source_episode_ids=tuple(message.source_episode_ids),
        meta=RecordMeta.from_pb(message.meta, f"{field_name}.meta"),
        hit_count=message.hit_count,
        last_hit_at=stamp["last_hit_at"],
        method=METHOD_FROM_PB[message.method],
        topic=message.topic,
        action_key=message.action_key,
        stance=message.stance,
        weight=message.weight,
        archived_at=stamp["archived_at"],
        superseded_by=message.superseded_by,
        merged_into=message.merged_into,
        created_at=stamp["created_at"],
    )


class ReflectServicer(reflect_pb2_grpc.ReflectServiceServicer):
    """Thin: protobuf in, engine call, protobuf out."""

    def __init__(self, engine: ReflectEngine) -> None:
        self.engine = engine

    async def Reflect(
        self, request: reflect_pb2.ReflectRequest, context: grpc.aio.ServicerContext
    ) -> reflect_pb2.ReflectResponse:
        check_length(request.session_id, "session_id", MAX_SESSION_ID_CHARS)
        if request.trigger not in TRIGGER_FROM_PB:
            raise InvalidArgument("trigger", "is not a known trigger")
        reflection = await self.engine.reflect(
            request.bank_id, request.session_id, TRIGGER_FROM_PB[request.trigger]
        )
        return reflect_pb2.ReflectResponse(
            lessons=[lesson_to_pb(lesson) for lesson in reflection.lessons],
            episodes_read=reflection.episodes_read,
            method=METHOD_TO_PB[reflection.method],
            superseded_ids=list(reflection.superseded_ids),
        )

    async def Maintain(
        self, request: reflect_pb2.MaintainRequest, context: grpc.aio.ServicerContext
    ) -> reflect_pb2.MaintainResponse:
        report = await self.engine.maintain(request.bank_id)
        return reply_from(reflect_pb2.MaintainResponse, report)

    async def ListBanks(
        self, request: reflect_pb2.ListBanksRequest, context: grpc.aio.ServicerContext
    ) -> reflect_pb2.ListBanksResponse:
        """Every bank with lessons. The request names no bank, so the interceptor admits only callers that
        grant every bank (the mesh, maintenance, an operator)."""
        return reflect_pb2.ListBanksResponse(bank_ids=await self.engine.banks())

    async def ListLessons(
        self, request: reflect_pb2.ListLessonsRequest, context: grpc.aio.ServicerContext
    ) -> reflect_pb2.ListLessonsResponse:
        size = check_limit(request.page_size, "page_size", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        page = await self.engine.list_lessons(request.bank_id, size, request.page_token)
        return reflect_pb2.ListLessonsResponse(
            lessons=[lesson_to_pb(lesson) for lesson in page.lessons], next_page_token=page.next_page_token
        )

    async def SearchLessons(
        self, request: reflect_pb2.SearchLessonsRequest, context: grpc.aio.ServicerContext
    ) -> reflect_pb2.SearchLessonsResponse:
        weight = request.rewrite_weight if request.HasField("rewrite_weight") else None
        phrasings = check_phrasings(request.query, request.rewrites, weight, MAX_QUERY_CHARS)
        limit = check_limit(request.limit, "limit", DEFAULT_LIMIT, MAX_LIMIT)
        tags = check_tags(request.tags)
        if request.bank_ids:
            banks = requested_banks(request.bank_id, request.bank_ids)
            hits = await self.engine.search_banks(banks, phrasings, limit, tags)
        else:
            hits = await self.engine.search(request.bank_id, phrasings, limit, tags)
        return reflect_pb2.SearchLessonsResponse(
            hits=[
                reflect_pb2.ScoredLesson(
                    lesson=lesson_to_pb(hit.lesson), score=hit.score, bank_id=hit.bank_id
                )
                for hit in hits
            ]
        )

    async def PurgeLessons(
        self, request: reflect_pb2.PurgeLessonsRequest, context: grpc.aio.ServicerContext
    ) -> reflect_pb2.PurgeLessonsResponse:
        ids = check_removal_scope(request, "source_ids", MAX_PURGE_IDS, MAX_SESSION_ID_CHARS)
        deleted = await self.engine.purge(request.bank_id, ids, request.session_id, request.whole_bank)
        return reflect_pb2.PurgeLessonsResponse(deleted_count=deleted)

    async def SetSourceStates(
        self, request: reflect_pb2.SetSourceStatesRequest, context: grpc.aio.ServicerContext
    ) -> reflect_pb2.SetSourceStatesResponse:
        for name in ("archived_ids", "live_ids"):
            ids = getattr(request, name)
            if len(ids) > MAX_PURGE_IDS:
                raise InvalidArgument(name, f"must hold at most {MAX_PURGE_IDS} ids")
            if any(not turn_id or len(turn_id) > MAX_SESSION_ID_CHARS for turn_id in ids):
                raise InvalidArgument(name, f"ids must be 1 to {MAX_SESSION_ID_CHARS} characters")
        changed = await self.engine.set_source_states(
            request.bank_id, list(request.archived_ids), list(request.live_ids)
        )
        return reflect_pb2.SetSourceStatesResponse(changed_count=changed)

    async def ImportLessons(
        self, request: reflect_pb2.ImportLessonsRequest, context: grpc.aio.ServicerContext
    ) -> reflect_pb2.ImportLessonsResponse:
        """Lessons with their statistics, as exported: for an operator restoring a bank, not for agents."""
        caller_var.get().require_all_banks("ImportLessons")
        if len(request.lessons) > MAX_IMPORT_LESSONS:
            raise InvalidArgument("lessons", f"must hold at most {MAX_IMPORT_LESSONS} lessons")
        lessons = [lesson_from_pb(lesson, f"lessons[{i}]") for i, lesson in enumerate(request.lessons)]
        written = await self.engine.import_lessons(request.bank_id, lessons)
        return reflect_pb2.ImportLessonsResponse(
            imported_count=written, duplicate_count=len({lesson.id for lesson in lessons}) - written
        )

    async def GetLessons(
        self, request: reflect_pb2.GetLessonsRequest, context: grpc.aio.ServicerContext
    ) -> reflect_pb2.GetLessonsResponse:
        if len(request.ids) > MAX_GET_LESSONS:
            raise InvalidArgument("ids", f"must hold at most {MAX_GET_LESSONS} ids")
        if any(not lesson_id or len(lesson_id) > MAX_SESSION_ID_CHARS for lesson_id in request.ids):
            raise InvalidArgument("ids", f"ids must be 1 to {MAX_SESSION_ID_CHARS} characters")
        lessons = await self.engine.lessons(request.bank_id, list(request.ids))
        return reflect_pb2.GetLessonsResponse(lessons=[lesson_to_pb(lesson) for lesson in lessons])

    async def ExportLessons(
        self, request: reflect_pb2.ExportLessonsRequest, context: grpc.aio.ServicerContext
    ) -> reflect_pb2.ExportLessonsResponse:
        """Every lesson, archived ones too, by id: for an operator exporting a bank."""
        caller_var.get().require_all_banks("ExportLessons")
        size = check_limit(request.page_size, "page_size", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        lessons, following = await lessons_page(self.engine.store, request.bank_id, size, request.page_token)
        return reflect_pb2.ExportLessonsResponse(
            lessons=[lesson_to_pb(lesson) for lesson in lessons], next_page_token=following
        )
