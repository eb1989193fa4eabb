"""The gRPC edge of the reflect layer: validates and converts protobuf, then calls the engine."""

from __future__ import annotations

import grpc

from hindsight.contracts.reflect.v1 import reflect_pb2, reflect_pb2_grpc
from hindsight.reflect.domain import Lesson, Method
from hindsight.reflect.engine import ReflectEngine
from hindsight.runtime.auth import ALL_BANKS, Grants, bearer
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.records import to_timestamp
from hindsight.runtime.rewrites import check_phrasings
from hindsight.runtime.validation import check_limit, check_tags

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
DEFAULT_LIMIT = 10
MAX_LIMIT = 100
MAX_SESSION_ID_CHARS = 256
MAX_QUERY_CHARS = 10_000
MAX_PURGE_IDS = 10_000
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
    )


class ReflectServicer(reflect_pb2_grpc.ReflectServiceServicer):
    """Thin: protobuf in, engine call, protobuf out."""

    def __init__(self, engine: ReflectEngine, grants: Grants | None = None) -> None:
        self.engine = engine
        self.grants = grants or Grants()

    async def Reflect(
        self, request: reflect_pb2.ReflectRequest, context: grpc.aio.ServicerContext
    ) -> reflect_pb2.ReflectResponse:
        if len(request.session_id) > MAX_SESSION_ID_CHARS:
            raise InvalidArgument("session_id", f"must be at most {MAX_SESSION_ID_CHARS} characters")
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
        return reflect_pb2.MaintainResponse(
            decayed_ids=report.decayed_ids,
            archived_ids=report.archived_ids,
            merged_ids=report.merged_ids,
            reflected_session_ids=report.reflected_session_ids,
            lessons_checked=report.lessons_checked,
            skipped=report.skipped,
            cold_count=report.cold_count,
            open_conflicts=report.open_conflicts,
        )

    async def ListBanks(
        self, request: reflect_pb2.ListBanksRequest, context: grpc.aio.ServicerContext
    ) -> reflect_pb2.ListBanksResponse:
        """No bank in the request, so the token is checked here: a caller sees only the banks it holds."""
        header = next(
            (str(item.value) for item in context.invocation_metadata() or () if item.key == "authorization"),
            None,
        )
        granted = self.grants.authenticate(bearer(header))
        banks = await self.engine.banks()
        visible = banks if ALL_BANKS in granted else [bank for bank in banks if bank in granted]
        return reflect_pb2.ListBanksResponse(bank_ids=visible)

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
        hits = await self.engine.search(request.bank_id, phrasings, limit, check_tags(request.tags))
        return reflect_pb2.SearchLessonsResponse(
            hits=[reflect_pb2.ScoredLesson(lesson=lesson_to_pb(hit.lesson), score=hit.score) for hit in hits]
        )

    async def PurgeLessons(
        self, request: reflect_pb2.PurgeLessonsRequest, context: grpc.aio.ServicerContext
    ) -> reflect_pb2.PurgeLessonsResponse:
        if not request.source_ids and not request.session_id and not request.whole_bank:
            raise InvalidArgument("source_ids", "give source ids, a session_id or whole_bank")
        if len(request.source_ids) > MAX_PURGE_IDS:
            raise InvalidArgument("source_ids", f"must hold at most {MAX_PURGE_IDS} ids")
        if len(request.session_id) > MAX_SESSION_ID_CHARS:
            raise InvalidArgument("session_id", f"must be at most {MAX_SESSION_ID_CHARS} characters")
        deleted = await self.engine.purge(
            request.bank_id, list(request.source_ids), request.session_id, request.whole_bank
        )
        return reflect_pb2.PurgeLessonsResponse(deleted_count=deleted)
