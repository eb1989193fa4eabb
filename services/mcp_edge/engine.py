"""The memory engine behind both fronts (MCP and gRPC): retain, recall, write_episode, reflect, forget.

Retain writes episodic memory first (the system of record; if it fails, the retain fails and nothing
else is written), then working memory and the semantic index in parallel. Recall asks every layer in
parallel under one deadline; a layer that fails or is late makes the answer partial, never an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.contracts.inference.v1 import inference_pb2_grpc
from hindsight.contracts.reflect.v1 import reflect_pb2, reflect_pb2_grpc
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
from hindsight.mcp_edge.domain import (
    Candidate,
    CloseSessionResult,
    ForgetResult,
    LayerName,
    LayerOutcome,
    RecalledMemory,
    RecallQuery,
    RecallResult,
    RetainResult,
)
from hindsight.mcp_edge.fusion import reciprocal_rank_fusion, score_fusion
from hindsight.mcp_edge.rerank import HeadReranker
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.records import RecordMeta, Turn

log = logging.getLogger(__name__)

MAX_TURNS_PER_RETAIN = 1000


def _turn_candidate(hit: common_pb2.ScoredTurn, layer: LayerName) -> Candidate:
    turn = hit.turn
    return Candidate(
        id=turn.id,
        layer=layer,
        text=turn.text,
        layer_score=hit.score,
        meta=RecordMeta.from_pb(turn.meta),
        speaker=turn.speaker,
        session_id=turn.session_id,
    )


def _record_candidate(hit: semantic_pb2.ScoredRecord) -> Candidate:
    record = hit.record
    kind = semantic_pb2.RecordKind.Name(record.kind).removeprefix("RECORD_KIND_").lower()
    return Candidate(
        id=record.id,
        layer=LayerName.SEMANTIC,
        text=record.text,
        layer_score=hit.score,
        meta=RecordMeta.from_pb(record.meta),
        speaker=record.speaker,
        kind="turn" if kind == "unspecified" else kind,
        session_id=record.session_id,
    )


def _lesson_candidate(hit: reflect_pb2.ScoredLesson) -> Candidate:
    lesson = hit.lesson
    text = lesson.lesson if not lesson.situation else f"{lesson.lesson} (when: {lesson.situation})"
    return Candidate(
        id=lesson.id,
        layer=LayerName.REFLECT,
        text=text,
        layer_score=hit.score,
        meta=RecordMeta.from_pb(lesson.meta),
        kind="lesson",
    )


@dataclass
class LayerClients:
    """One channel per layer the edge talks to."""

    working: LayerClient[working_pb2_grpc.WorkingMemoryServiceStub]
    episodic: LayerClient[episodic_pb2_grpc.EpisodicServiceStub]
    semantic: LayerClient[semantic_pb2_grpc.SemanticServiceStub]
    reflect: LayerClient[reflect_pb2_grpc.ReflectServiceStub]

    async def close(self) -> None:
        """Close every channel."""
        await asyncio.gather(
            self.working.close(), self.episodic.close(), self.semantic.close(), self.reflect.close()
        )


class MemoryEngine:
    """Retain, recall, reflect and forget across the layers, scoped to one bank per call."""

    def __init__(
        self, clients: LayerClients, settings: EdgeSettings, reranker: HeadReranker | None = None
    ) -> None:
        self.clients = clients
        self.settings = settings
        self.reranker = reranker

    # ----- retain -------------------------------------------------------------------------------------
    async def retain(self, bank_id: str, turns: Sequence[Turn]) -> RetainResult:
        """Store turns: episodic first (durable), then working memory and the semantic index."""
        if not turns:
            raise InvalidArgument("turns", "must not be empty")
        if len(turns) > MAX_TURNS_PER_RETAIN:
            raise InvalidArgument("turns", f"at most {MAX_TURNS_PER_RETAIN} per call")
        ids = [turn.id for turn in turns]
        if len(set(ids)) != len(ids):
            raise InvalidArgument("turns", "turn ids must be unique within one call")
        timeout = self.settings.write_timeout
        pb_turns = [turn.to_pb() for turn in turns]
        recorded = await self.clients.episodic.call(
            "RecordTurns", episodic_pb2.RecordTurnsRequest(bank_id=bank_id, turns=pb_turns), timeout
        )
        records = [
            semantic_pb2.SemanticRecord(
                id=t.id,
                kind=semantic_pb2.RECORD_KIND_TURN,
                text=t.text,
                speaker=t.speaker,
                session_id=t.session_id,
                meta=t.meta,
            )
            for t in pb_turns
        ]
        outcomes: list[object] = await asyncio.gather(
            self.clients.working.call(
                "AppendTurns", working_pb2.AppendTurnsRequest(bank_id=bank_id, turns=pb_turns), timeout
            ),
            self.clients.semantic.call(
                "Upsert", semantic_pb2.UpsertRequest(bank_id=bank_id, records=records), timeout
            ),
            return_exceptions=True,
        )
        working, semantic = outcomes
        for name, outcome in (("working", working), ("semantic", semantic)):
            if isinstance(outcome, BaseException):
                # The turns are safe in episodic memory; a layer that missed them can be rebuilt from there.
                log.warning(
                    "layer write failed after the durable write",
                    extra={"layer": name, "error": repr(outcome)},
                )
        return RetainResult(
            turn_ids=tuple(ids),
            duplicate_count=recorded.duplicate_count,
            indexed=not isinstance(semantic, BaseException),
        )

    # ----- recall -------------------------------------------------------------------------------------
    async def _ask_working(self, q: RecallQuery, limit: int) -> list[Candidate]:
        reply = await self.clients.working.call(
            "SearchRecent",
            working_pb2.SearchRecentRequest(
                bank_id=q.bank_id, query=q.query, session_id=q.session_id, limit=limit
            ),
        )
        return [_turn_candidate(hit, LayerName.WORKING) for hit in reply.hits]

    async def _ask_episodic(self, q: RecallQuery, limit: int) -> list[Candidate]:
        reply = await self.clients.episodic.call(
            "SearchTurns",
            episodic_pb2.SearchTurnsRequest(
                bank_id=q.bank_id, query=q.query, limit=limit, time_range=q.time_range.to_pb()
            ),
        )
        return [_turn_candidate(hit, LayerName.EPISODIC) for hit in reply.hits]

    async def _ask_semantic(self, q: RecallQuery, limit: int) -> list[Candidate]:
        reply = await self.clients.semantic.call(
            "Search",
            semantic_pb2.SearchRequest(
                bank_id=q.bank_id, query=q.query, limit=limit, time_range=q.time_range.to_pb()
            ),
        )
        return [_record_candidate(hit) for hit in reply.hits]

    async def _ask_reflect(self, q: RecallQuery, limit: int) -> list[Candidate]:
        reply = await self.clients.reflect.call(
            "SearchLessons", reflect_pb2.SearchLessonsRequest(bank_id=q.bank_id, query=q.query, limit=limit)
        )
        return [_lesson_candidate(hit) for hit in reply.hits]

    async def _timed(
        self, layer: LayerName, ask: Awaitable[list[Candidate]], q: RecallQuery, started: float
    ) -> LayerOutcome:
        try:
            candidates = await ask
        except Exception as exc:
            log.warning("layer failed during recall", extra={"layer": layer.value, "error": repr(exc)})
            return LayerOutcome(
                layer,
                ok=False,
                elapsed_ms=(time.perf_counter() - started) * 1000,
                error=str(exc) or type(exc).__name__,
            )
        if layer is LayerName.WORKING:  # working memory has no time index: filter here
            candidates = [c for c in candidates if q.time_range.contains(c.meta.time)]
        return LayerOutcome(
            layer, ok=True, elapsed_ms=(time.perf_counter() - started) * 1000, candidates=tuple(candidates)
        )

    async def recall(self, q: RecallQuery) -> RecallResult:
        """Ask the layers in parallel under one deadline and fuse what came back in time."""
        asks: dict[LayerName, Callable[[RecallQuery, int], Awaitable[list[Candidate]]]] = {
            LayerName.WORKING: self._ask_working,
            LayerName.EPISODIC: self._ask_episodic,
            LayerName.SEMANTIC: self._ask_semantic,
            LayerName.REFLECT: self._ask_reflect,
        }
        limit = max(self.settings.candidates_per_layer, q.top_k)
        started = time.perf_counter()
        tasks = {
            layer: asyncio.create_task(self._timed(layer, asks[layer](q, limit), q, started))
            for layer in q.layers
        }
        done, pending = await asyncio.wait(tasks.values(), timeout=self.settings.recall_timeout)
        for task in pending:
            task.cancel()
        outcomes = []
        for layer, task in tasks.items():
            if task in done:
                outcomes.append(task.result())
            else:
                outcomes.append(
                    LayerOutcome(
                        layer,
                        ok=False,
                        elapsed_ms=self.settings.recall_timeout * 1000,
                        error="deadline exceeded",
                    )
                )
        fused = self._fuse(outcomes, max(q.top_k, self.reranker.head if self.reranker else 0))
        if self.reranker is not None:  # the head is reordered within what is left of the deadline
            deadline = time.monotonic() + self.settings.recall_timeout - (time.perf_counter() - started)
            fused = await self.reranker.rerank(q.bank_id, q.query, fused, deadline)
        fused = fused[: q.top_k]
        log.info(
            "recall",
            extra={
                "layers": {
                    o.layer.value: {"ok": o.ok, "ms": round(o.elapsed_ms, 1), "n": len(o.candidates)}
                    for o in outcomes
                },
                "returned": len(fused),
            },
        )
        return RecallResult(memories=tuple(fused), outcomes=tuple(outcomes))

    def _fuse(self, outcomes: Sequence[LayerOutcome], top_k: int) -> list[RecalledMemory]:
        """The configured fusion of the layers' lists (see :mod:`hindsight.mcp_edge.fusion`)."""
        lists = [o.candidates for o in outcomes]
        if self.settings.fusion == "rrf":
            return reciprocal_rank_fusion(lists, k=self.settings.rrf_k, top_k=top_k)
        return score_fusion(
            lists,
            weights=self.settings.layer_weights(),
            session_boost=self.settings.session_boost,
            top_k=top_k,
        )

    # ----- episodes, reflection, forgetting ----------------------------------------------------------
    async def write_episode(self, bank_id: str, episode: episodic_pb2.Episode) -> episodic_pb2.Episode:
        """Record an episode for later reflection."""
        reply = await self.clients.episodic.call(
            "WriteEpisode",
            episodic_pb2.WriteEpisodeRequest(bank_id=bank_id, episode=episode),
            self.settings.write_timeout,
        )
        return reply.episode

    async def reflect(self, bank_id: str, session_id: str = "") -> reflect_pb2.ReflectResponse:
        """Draw lessons from the bank's (or one session's) episodes."""
        return await self.clients.reflect.call(
            "Reflect",
            reflect_pb2.ReflectRequest(bank_id=bank_id, session_id=session_id),
            self.settings.write_timeout,
        )

    async def forget(self, bank_id: str, turn_ids: Sequence[str], hard: bool = False) -> ForgetResult:
        """Archive (or hard-delete) turns in episodic memory, then drop them from working memory and index.

        Episodic memory goes first, as the system of record. Forgetting is idempotent, so when a later
        layer fails the whole call fails with UNAVAILABLE and is safe to repeat.
        """
        if not turn_ids:
            raise InvalidArgument("turn_ids", "must not be empty")
        ids = list(dict.fromkeys(turn_ids))
        timeout = self.settings.write_timeout
        forgotten = await self.clients.episodic.call(
            "ForgetTurns", episodic_pb2.ForgetTurnsRequest(bank_id=bank_id, turn_ids=ids, hard=hard), timeout
        )
        working, removed = await asyncio.gather(
            self.clients.working.call(
                "ForgetTurns", working_pb2.ForgetTurnsRequest(bank_id=bank_id, turn_ids=ids), timeout
            ),
            self.clients.semantic.call(
                "Delete", semantic_pb2.DeleteRequest(bank_id=bank_id, ids=ids, source_turn_ids=ids), timeout
            ),
        )
        return ForgetResult(forgotten.forgotten_count, removed.deleted_count, working.removed_count)

    # ----- sessions -----------------------------------------------------------------------------------
    async def compress(self, bank_id: str, session_id: str) -> working_pb2.CompressResponse:
        """Summarise the oldest turns of a session's working memory (episodic memory keeps the turns)."""
        if not session_id:
            raise InvalidArgument("session_id", "is required")
        return await self.clients.working.call(
            "Compress",
            working_pb2.CompressRequest(bank_id=bank_id, session_id=session_id),
            self.settings.write_timeout,
        )

    async def close_session(self, bank_id: str, session_id: str) -> CloseSessionResult:
        """Drop the session's working memory, then reflect on the session (closing is a reflection trigger).

        A failed reflection does not undo the close: the session's episodes stay in episodic memory and
        Reflect can run on them later, so the result says what went wrong instead of failing.
        """
        if not session_id:
            raise InvalidArgument("session_id", "is required")
        closed = await self.clients.working.call(
            "CloseSession",
            working_pb2.CloseSessionRequest(bank_id=bank_id, session_id=session_id),
            self.settings.write_timeout,
        )
        try:
            reflection = await self.reflect(bank_id, session_id)
        except Exception as exc:
            log.warning("reflection after closing a session failed", extra={"error": repr(exc)})
            return CloseSessionResult(
                closed.closed,
                closed.turn_count,
                closed.summary_count,
                closed.token_count,
                reflected=False,
                reflect_error=str(exc) or type(exc).__name__,
            )
        return CloseSessionResult(
            closed.closed,
            closed.turn_count,
            closed.summary_count,
            closed.token_count,
            reflected=True,
            lessons=tuple(reflection.lessons),
            episodes_read=reflection.episodes_read,
        )


@contextlib.asynccontextmanager
async def open_engine(settings: EdgeSettings) -> AsyncIterator[MemoryEngine]:
    """Open channels to every layer; close them on exit."""
    token = settings.internal_token
    clients = LayerClients(
        working=LayerClient(settings.working_addr, working_pb2_grpc.WorkingMemoryServiceStub, token=token),
        episodic=LayerClient(settings.episodic_addr, episodic_pb2_grpc.EpisodicServiceStub, token=token),
        semantic=LayerClient(settings.semantic_addr, semantic_pb2_grpc.SemanticServiceStub, token=token),
        reflect=LayerClient(settings.reflect_addr, reflect_pb2_grpc.ReflectServiceStub, token=token),
    )
    reranker = None
    if settings.inference_addr and settings.rerank_head > 0:
        inference = LayerClient(settings.inference_addr, inference_pb2_grpc.InferenceServiceStub, token=token)
        reranker = HeadReranker(inference, settings.rerank_head, settings.reranker, settings.rerank_blend)
    try:
        yield MemoryEngine(clients, settings, reranker)
    finally:
        await clients.close()
        if reranker is not None:
            await reranker.close()
