"""The gRPC edge of the reflect layer: validates and converts protobuf, then calls the engine."""

from __future__ import annotations

import grpc

from hindsight.contracts.reflect.v1 import reflect_pb2, reflect_pb2_grpc
from hindsight.reflect.domain import Lesson
from hindsight.reflect.engine import ReflectEngine
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.records import to_timestamp
from hindsight.runtime.validation import check_limit, check_text

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
DEFAULT_LIMIT = 10
MAX_LIMIT = 100
MAX_SESSION_ID_CHARS = 256


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
    )


class ReflectServicer(reflect_pb2_grpc.ReflectServiceServicer):
    """Thin: protobuf in, engine call, protobuf out."""

    def __init__(self, engine: ReflectEngine) -> None:
        self.engine = engine

    async def Reflect(
        self, request: reflect_pb2.ReflectRequest, context: grpc.aio.ServicerContext
    ) -> reflect_pb2.ReflectResponse:
        if len(request.session_id) > MAX_SESSION_ID_CHARS:
            raise InvalidArgument("session_id", f"must be at most {MAX_SESSION_ID_CHARS} characters")
        reflection = await self.engine.reflect(request.bank_id, request.session_id)
        return reflect_pb2.ReflectResponse(
            lessons=[lesson_to_pb(lesson) for lesson in reflection.lessons],
            episodes_read=reflection.episodes_read,
        )

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
        query = check_text(request.query, "query", max_chars=10_000)
        limit = check_limit(request.limit, "limit", DEFAULT_LIMIT, MAX_LIMIT)
        hits = await self.engine.search(request.bank_id, query, limit)
        return reflect_pb2.SearchLessonsResponse(
            hits=[reflect_pb2.ScoredLesson(lesson=lesson_to_pb(hit.lesson), score=hit.score) for hit in hits]
        )
