"""The memory engine behind both fronts (MCP and gRPC): retain, recall, write_episode, reflect, forget.

Retain writes episodic memory first (the system of record; if it fails, the retain fails and nothing
else is written), whose outbox indexes the turns in the semantic layer, then working memory. Recall asks
the layers in parallel under one deadline (all but those whose list would weigh nothing: see
:meth:`MemoryEngine.unweighed`); a layer that fails or is late makes the answer partial, never an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hmac
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import grpc

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.contracts.inference.v1 import inference_pb2_grpc
from hindsight.contracts.reflect.v1 import reflect_pb2, reflect_pb2_grpc
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
from hindsight.mcp_edge.assertions import prefer_assertions
from hindsight.mcp_edge.audit import AuditQueue
from hindsight.mcp_edge.banks import check_weights, keyed, unkeyed, weight_ceiling, weighted
from hindsight.mcp_edge.consensus import assess, defang
from hindsight.mcp_edge.context import assemble_with_warnings
from hindsight.mcp_edge.domain import (
    Candidate,
    CloseSessionResult,
    ForgetResult,
    LayerName,
    LayerOutcome,
    PurgeResult,
    QueryAnalysis,
    RecalledMemory,
    RecallQuery,
    RecallResult,
    RecallWarning,
    RetainResult,
)
from hindsight.mcp_edge.entities import (
    ENTITY_CHANNEL,
    NamedEntity,
    collect_named,
    entity_channel,
    note_named,
)
from hindsight.mcp_edge.fusion import (
    adjust,
    below_successors,
    reciprocal_rank_fusion,
    score_fusion,
    tag_scores,
)
from hindsight.mcp_edge.held import HeldBanks
from hindsight.mcp_edge.query import QueryPlan, understand
from hindsight.mcp_edge.relevance import Cut, relevance_of, select
from hindsight.mcp_edge.rerank import HeadReranker
from hindsight.mcp_edge.screening import instruction_cues
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.mcp_edge.token_registry import TokenRegistry
from hindsight.mcp_edge.validity import at_moment, record_validity, resolve, search_fields
from hindsight.mcp_edge.write_guard import WriteGuard
from hindsight.runtime.background import spawn
from hindsight.runtime.channels import LayerClient, message_limits
from hindsight.runtime.errors import HindsightError, InvalidArgument, PermissionDenied
from hindsight.runtime.interceptors import acting_as, actor_var
from hindsight.runtime.llm import LLMClient, LLMSettings, llm_from_settings
from hindsight.runtime.offload import off_loop
from hindsight.runtime.records import RecordMeta, Source, TimeRange, Turn, from_timestamp, utcnow
from hindsight.runtime.rewrites import Phrasings
from hindsight.runtime.settings import load
from hindsight.runtime.tracing import traced

log = logging.getLogger(__name__)

MAX_TURNS_PER_RETAIN = 1000
SCREEN_OFF_LOOP_CHARS = 2_000
"""Characters of a retain from which screening (regular expressions, ~10 us per character) runs on a
worker thread."""
MAX_FILTERED_TURNS = 10_000
"""Most turns one forget-by-filter archives (a larger selection is refused by episodic memory's own limit)."""
UNDERSTAND_OFF_LOOP_CHARS = 750
"""Query characters from which query understanding (~2.5 us per character) runs on a worker thread."""
FUSION_OFF_LOOP_CANDIDATES = 150
"""Candidates from which fusion and the score factors (~13 us per candidate) run on a worker thread."""
ASSEMBLE_OFF_LOOP_CHARS = 4_000
"""Characters of recalled memories from which the context (token counts: ~0.5 us per character) is
assembled on a worker thread."""
MEANING_LAYERS = frozenset({LayerName.SEMANTIC})
"""Layers that search by meaning alone, where a near-copy of the query finds little new (reflect finds its
candidate lessons by keyword, so it keeps every phrasing)."""


MAX_ACCESS_NOTES_IN_FLIGHT = 256
"""Access notes (hit counts, best effort) sent and not yet answered at most; further ones are dropped and
counted, so a slow or unreachable episodic layer never piles up tasks in the edge."""
ACCESS_DROP_LOG_SECONDS = 10.0
"""At most one warning about dropped access notes this often."""


PURGE_IDS_PER_CALL = 1000
"""Purged ids per delete call to another layer (each layer's request limit is higher)."""


@dataclass(frozen=True)
class DerivedDeletes:
    """What the other layers deleted of purged records."""

    working_removed_count: int
    unindexed_count: int
    lesson_count: int


def _describe(exc: BaseException) -> str:
    """A short reason for a log line or a layer report, led by what happened ("deadline exceeded",
    "unavailable", ...) so a report tells a slow layer from one that is down."""
    if isinstance(exc, grpc.aio.AioRpcError):
        return f"{_status_words(exc.code())}: {exc.details() or ''}".rstrip(": ")
    if isinstance(exc, HindsightError):
        return f"{_status_words(exc.code)}: {exc}"
    if isinstance(exc, TimeoutError):
        return "deadline exceeded"
    return str(exc) or type(exc).__name__


def _status_words(code: grpc.StatusCode) -> str:
    return code.name.lower().replace("_", " ")


def _filters_something(turn_filter: episodic_pb2.TurnFilter) -> bool:
    """Whether a filter narrows the bank at all (forgetting everything by filter is refused)."""
    return bool(
        turn_filter.session_id
        or turn_filter.tags
        or turn_filter.sources
        or turn_filter.min_trust
        or turn_filter.HasField("time_range")
    )


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
        bank_id=hit.bank_id,
    )


def _record_candidate(hit: semantic_pb2.ScoredRecord) -> Candidate:
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
        bank_id=hit.bank_id,
        **record_validity(record),
    )


def _warning(turn: common_pb2.Turn) -> RecallWarning:
    """A held-back turn as a warning: what screening finds in it again, and a defanged excerpt."""
    meta = RecordMeta.from_pb(turn.meta)
    cues = instruction_cues(turn.text)
    kind, reason = (cues[0].kind, cues[0].reason) if cues else ("quarantined", "held back by screening")
    return RecallWarning(
        id=turn.id,
        kind=kind,
        reason=f"held back ({meta.source.value} content): {reason}",
        excerpt=defang(turn.text),
        time=from_timestamp(turn.meta.time) if turn.meta.HasField("time") else None,
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
        confidence=lesson.confidence if lesson.confidence > 0 else 1.0,
        bank_id=hit.bank_id,
    )


def unweighed_layers(
    settings: EdgeSettings, layers: Sequence[LayerName], entity_channel: bool
) -> frozenset[LayerName]:
    """Of the ``layers`` a recall names, those it does not ask: with score fusion, the ones whose list
    weighs 0 and that nothing but the fusion reads (working memory; episodic memory unless the entity
    channel, which picks from its hits, is on). Such a list could only add session support and relevance
    evidence for turns the other layers missed (docs/performance.md: leaving working memory out moved dev
    R@10 by +0.002 to +0.009, and saves about a fifth of a recall's CPU).

    Semantic memory (the entities the query names, validity, similarity) and reflection (lessons lead by
    their own relevance) are asked whatever they weigh; so is every layer of a recall that names only
    weightless ones (``layers=[working]``), and every layer with ``HINDSIGHT_ASK_UNWEIGHTED`` or RRF
    (which weighs no list). A layer not asked has no report in the answer and cannot make it partial.
    """
    if settings.ask_unweighted or settings.fusion != "score":
        return frozenset()
    weights = settings.list_weights()
    readers = {LayerName.SEMANTIC, LayerName.REFLECT, *([LayerName.EPISODIC] if entity_channel else [])}
    idle = frozenset(layer for layer in layers if weights[layer] == 0 and layer not in readers)
    return idle if len(idle) < len(set(layers)) else frozenset()


def _banks_asked(q: RecallQuery) -> dict[str, Any]:
    """The bank fields of a layer's search request: the recall's one bank, or all of its banks at once."""
    return {"bank_ids": list(q.bank_ids)} if q.bank_ids else {"bank_id": q.bank_id}


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
        self,
        clients: LayerClients,
        settings: EdgeSettings,
        reranker: HeadReranker | None = None,
        llm: LLMClient | None = None,
    ) -> None:
        self.clients = clients
        self.settings = settings
        self.reranker = reranker
        self.llm = llm
        self._background: set[asyncio.Task[None]] = set()
        self.audit = AuditQueue(self._send_audit)
        """Security decisions on their way to the audit log (episodic memory), off the request path."""
        self.guard = WriteGuard(settings, self.audit)
        """Write rate limits and screening of every retained turn."""
        self.access_notes_dropped = 0
        """Access notes not sent because too many were in flight (episodic memory slow or down)."""
        self._access_drops_logged_at = float("-inf")
        self.held_banks = HeldBanks()
        """Which banks' review queues have turns: a recall asks for warnings only where there can be some."""
        self.tokens = TokenRegistry(
            clients.episodic,
            self.audit,
            refresh_seconds=settings.token_refresh_seconds,
            stale_seconds=settings.token_stale_seconds,
            touch_seconds=settings.token_touch_seconds,
        )
        """The managed tokens, looked up after the static ones once a front attaches it (see ``start``)."""

    # ----- retain -------------------------------------------------------------------------------------
    async def retain(
        self, bank_id: str, turns: Sequence[Turn], front: str = "", actor: str = ""
    ) -> RetainResult:
        """Store turns: episodic first (durable, and indexed for meaning through its outbox), then working
        memory; logged with bank, sizes and latency (``front`` names the caller: "mcp" or "grpc").

        Episodic memory commits the turns with their outbox entries and, asked with ``index_now``, hands
        them to the semantic layer before answering; a semantic layer that is down or slow leaves them in
        the outbox, which delivers them once it is back, so a retain never loses a write. ``indexed`` says
        whether they were searchable by meaning when the call returned.

        Before anything is written the write guard takes the retain's rate-limit tokens and screens every
        turn (``actor``, the caller's credential label, goes into the audit log): a secret is redacted
        (or the retain refused, by the bank's policy), an instruction aimed at the agent is held back for
        review in episodic memory and never reaches working memory.
        """
        if not turns:
            raise InvalidArgument("turns", "must not be empty")
        if len(turns) > MAX_TURNS_PER_RETAIN:
            raise InvalidArgument("turns", f"at most {MAX_TURNS_PER_RETAIN} per call")
        ids = [turn.id for turn in turns]
        if len(set(ids)) != len(ids):
            raise InvalidArgument("turns", "turn ids must be unique within one call")
        timeout = self.settings.write_timeout
        started = time.perf_counter()
        self.guard.admit(bank_id, turns, actor)
        chars = sum(len(turn.text) for turn in turns)
        guarded = await off_loop(
            lambda: self.guard.screen(bank_id, turns, actor), chars, SCREEN_OFF_LOOP_CHARS
        )
        for decision in guarded.audit:
            self.audit.record(decision)
        if guarded.refused is not None:
            raise guarded.refused
        if guarded.held:
            self.held_banks.note(bank_id, True)
        pb_turns = [turn.to_pb() for turn in guarded.turns]
        record = episodic_pb2.RecordTurnsRequest(
            bank_id=bank_id, turns=pb_turns, index_now=True, quarantine=guarded.held, actor=actor
        )
        message_limits().check_request(record, "turns")  # refused whole, before any layer writes
        with acting_as(actor or actor_var.get()):  # episodic records who retained (trusted from the mesh)
            recorded = await self.clients.episodic.call("RecordTurns", record, timeout)
        working_turns = [turn for turn in pb_turns if turn.id not in guarded.held]
        try:
            if working_turns:
                await self.clients.working.call(
                    "AppendTurns",
                    working_pb2.AppendTurnsRequest(bank_id=bank_id, turns=working_turns),
                    timeout,
                )
        except Exception as exc:
            # The turns are safe in episodic memory: its outbox fills the windows that missed them.
            log.warning(
                "layer write failed after the durable write", extra={"layer": "working", "error": repr(exc)}
            )
            await self._heal_working(bank_id, [turn.id for turn in working_turns], timeout)
        log.info(
            "retain",
            extra={
                "bank": bank_id,
                "front": front,
                "turns": len(turns),
                "chars": sum(len(t.text) for t in turns),
                "duplicates": recorded.duplicate_count,
                "indexed": recorded.indexed,
                "held": len(guarded.held),
                "screened": len(guarded.screened),
                "elapsed_ms": round((time.perf_counter() - started) * 1000, 1),
            },
        )
        return RetainResult(
            turn_ids=tuple(ids),
            duplicate_count=recorded.duplicate_count,
            indexed=recorded.indexed,
            screened=guarded.screened,
        )

    async def _heal_working(self, bank_id: str, turn_ids: Sequence[str], timeout: float) -> None:
        """Ask episodic memory to deliver turns working memory missed (through its outbox, retried until
        working memory answers). Best effort: should this fail too, the window lacks them until it expires."""
        try:
            await self.clients.episodic.call(
                "HealWorkingWindows",
                episodic_pb2.HealWorkingWindowsRequest(bank_id=bank_id, turn_ids=list(turn_ids)),
                timeout,
            )
        except Exception as exc:
            log.warning("working window not queued for healing", extra={"bank": bank_id, "error": repr(exc)})

    async def _send_audit(self, entries: Sequence[common_pb2.AuditEntry]) -> None:
        await self.clients.episodic.call(
            "AppendAudit", episodic_pb2.AppendAuditRequest(entries=list(entries)), self.settings.write_timeout
        )

    # ----- the review queue and the audit log (admin; the fronts check the caller) --------------------
    async def list_quarantine(
        self, bank_id: str, status: str = "", limit: int = 50, page_token: str = ""
    ) -> episodic_pb2.ListQuarantinedResponse:
        """A page of the bank's review queue (turns held back by screening, with the reason)."""
        return await self.clients.episodic.call(
            "ListQuarantined",
            episodic_pb2.ListQuarantinedRequest(
                bank_id=bank_id, status=status, limit=limit, page_token=page_token
            ),
            self.settings.write_timeout,
        )

    async def review_quarantine(
        self, bank_id: str, turn_ids: Sequence[str], decision: int, reviewer: str, note: str = ""
    ) -> episodic_pb2.ReviewQuarantinedResponse:
        """Approve (release into memory, indexed) or reject held turns; episodic memory audits each, naming
        ``reviewer`` (the front's authenticated caller, sent as whom the mesh call acts for)."""
        with acting_as(reviewer or actor_var.get()):
            reply = await self.clients.episodic.call(
                "ReviewQuarantined",
                episodic_pb2.ReviewQuarantinedRequest(
                    bank_id=bank_id, turn_ids=list(turn_ids), decision=decision, reviewer=reviewer, note=note
                ),
                self.settings.write_timeout,
            )
        log.info(
            "review",
            extra={"bank": bank_id, "approved": reply.approved_count, "rejected": reply.rejected_count},
        )
        return reply

    async def list_audit(self, request: episodic_pb2.ListAuditRequest) -> episodic_pb2.ListAuditResponse:
        """A page of the audit log, newest first."""
        return await self.clients.episodic.call("ListAudit", request, self.settings.write_timeout)

    # ----- recall -------------------------------------------------------------------------------------
    async def _ask_working(
        self, q: RecallQuery, phrasings: Phrasings, window: TimeRange, limit: int, timeout: float
    ) -> list[Candidate]:
        reply = await self.clients.working.call(
            "SearchRecent",
            working_pb2.SearchRecentRequest(
                **_banks_asked(q),
                **phrasings.request_fields(),
                session_id=q.session_id,
                limit=limit,
                time_range=window.to_pb(),
                tags=list(q.tags),
            ),
            timeout,
        )
        return [_turn_candidate(hit, LayerName.WORKING) for hit in reply.hits]

    async def _ask_episodic(
        self, q: RecallQuery, phrasings: Phrasings, window: TimeRange, limit: int, timeout: float
    ) -> list[Candidate]:
        reply = await self.clients.episodic.call(
            "SearchTurns",
            episodic_pb2.SearchTurnsRequest(
                **_banks_asked(q),
                **phrasings.request_fields(),
                limit=limit,
                time_range=window.to_pb(),
                filter=episodic_pb2.TurnFilter(tags=list(q.tags), agent=q.agent),
            ),
            timeout,
        )
        return [_turn_candidate(hit, LayerName.EPISODIC) for hit in reply.hits]

    async def _ask_semantic(
        self, q: RecallQuery, phrasings: Phrasings, window: TimeRange, limit: int, timeout: float
    ) -> list[Candidate]:
        reply = await self.clients.semantic.call(
            "Search",
            semantic_pb2.SearchRequest(
                **_banks_asked(q),
                **phrasings.request_fields(),
                limit=limit,
                time_range=window.to_pb(),
                tags=list(q.tags),
                all_tags=True,
                match_entities=self._entity_channel_on(q),
                **search_fields(q, self.settings.recall_validity),  # history too, or what held at as_of
            ),
            timeout,
        )
        note_named(reply)  # the entities the query names, for the entity channel
        return [_record_candidate(hit) for hit in reply.hits]

    async def _ask_reflect(
        self, q: RecallQuery, phrasings: Phrasings, window: TimeRange, limit: int, timeout: float
    ) -> list[Candidate]:
        reply = await self.clients.reflect.call(
            "SearchLessons",
            reflect_pb2.SearchLessonsRequest(
                **_banks_asked(q),
                **phrasings.request_fields(),
                limit=limit,
                tags=list(q.tags),
            ),
            timeout,
        )
        return [_lesson_candidate(hit) for hit in reply.hits]

    async def _ask_layer(
        self, layer: LayerName, q: RecallQuery, queries: Sequence[str], window: TimeRange, timeout: float
    ) -> list[Candidate]:
        """One layer's candidates for the query and its rewrites: one call, which searches every phrasing,
        applies the recall's tags (working memory its time range too) and merges the lists."""
        ask = {
            LayerName.WORKING: self._ask_working,
            LayerName.EPISODIC: self._ask_episodic,
            LayerName.SEMANTIC: self._ask_semantic,
            LayerName.REFLECT: self._ask_reflect,
        }[layer]
        limit = max(self.settings.candidates_per_layer, q.top_k)
        if layer is LayerName.EPISODIC and self._entity_channel_on(q):  # the channel picks from more hits
            limit = max(limit, self.settings.entity_pool)
        phrasings = Phrasings.distinct(queries[0], queries[1:], self.settings.rewrite_weight)
        found = await ask(q, phrasings, window, limit, timeout)
        # A layer older than these contracts ignores the tags and working memory's time range (and the
        # rewrites); with a current one this keeps everything. Only episodic memory filters by agent
        # itself: the other layers' hits are filtered here.
        timed = layer is not LayerName.WORKING
        kept = [
            c
            for c in found
            if c.meta.carries_tags(q.tags)
            and (timed or window.contains(c.meta.time))
            and (not q.agent or c.meta.agent == q.agent)
        ]
        if not q.bank_ids:
            return kept
        return [keyed(c) for c in kept if c.bank_id in q.bank_ids]  # never a bank the recall did not ask

    async def _timed(self, layer: LayerName, ask: Awaitable[list[Candidate]], started: float) -> LayerOutcome:
        try:
            candidates = await ask
        except Exception as exc:
            log.warning("layer failed during recall", extra={"layer": layer.value, "error": repr(exc)})
            return LayerOutcome(
                layer, ok=False, elapsed_ms=(time.perf_counter() - started) * 1000, error=_describe(exc)
            )
        return LayerOutcome(
            layer, ok=True, elapsed_ms=(time.perf_counter() - started) * 1000, candidates=tuple(candidates)
        )

    async def _llm_rewrite(self, query: str, timeout: float) -> str:
        """One rewrite of ``query`` for search by the configured LLM; empty without one, or on failure."""
        if self.llm is None or not self.settings.llm_rewrite or timeout <= 0:
            return ""
        try:
            answer = await asyncio.wait_for(
                self.llm.complete_json(
                    "query_rewrite",
                    "Rewrite the user's question into a short search query for a memory store: keep names, "
                    "dates and content words, drop filler. Answer in the question's language.",
                    query,
                    {
                        "type": "object",
                        "properties": {"query": {"type": "string", "maxLength": 300}},
                        "required": ["query"],
                    },
                    max_tokens=120,
                ),
                timeout,
            )
        except Exception as exc:  # a slow or failing LLM never fails a recall
            log.warning("llm query rewrite skipped", extra={"error": _describe(exc)})
            return ""
        return str(answer.get("query", "")).strip()

    def _plan(self, q: RecallQuery, now: datetime) -> tuple[QueryPlan, TimeRange, TimeRange | None, str]:
        """The query read, the time range to search, the range to boost, and how the time was used."""
        plan = understand(q.query, now, self.settings.query_rewrites, q.time_zone or self.settings.time_zone)
        explicit = q.time_range.start is not None or q.time_range.end is not None
        if plan.time is None or explicit or self.settings.query_time == "off":
            return plan, q.time_range, None, ""
        if self.settings.query_time == "filter":
            return plan, plan.time.time_range, None, "filter"
        return plan, q.time_range, plan.time.time_range, "boost"

    @traced("recall")  # the parent of every layer call the recall makes
    async def recall(self, q: RecallQuery) -> RecallResult:
        """Ask the layers in parallel, each within its share of one deadline, and fuse what came back in time.

        The query is read first (time expressions, keywords, entities, rewrites); each asked layer gets
        one call with the query and its rewrites and answers one merged list; the fused list is adjusted
        (recency, importance, confidence, trust, time), its head reranked; every memory is scored by its
        calibrated relevance, lessons above the floor go first, the rest is cut at the floor (or
        ``min_score``) and ``top_k`` (:mod:`.relevance`), and assembled into a context.
        """
        if not q.layers:
            raise InvalidArgument("layers", "must name at least one layer")
        weights = check_weights(q.bank_weights, q.banks)
        skipped = self.unweighed(q)
        q = at_moment(q)  # as_of: nothing said later is searched, and it is "now"
        started = time.perf_counter()
        deadline = time.monotonic() + self.settings.recall_timeout
        now = q.reference_time or utcnow()
        plan, window, boost, time_use = await off_loop(
            lambda: self._plan(q, now), size=len(q.query), threshold=UNDERSTAND_OFF_LOOP_CHARS
        )
        queries = list(plan.rewrites)
        rewritten = await self._llm_rewrite(q.query, self.settings.recall_timeout * 0.25)
        if rewritten and rewritten not in queries:
            queries.append(rewritten)
        by_meaning = queries
        if not self.settings.rewrites_by_meaning:  # the rule rewrites go to keyword search only
            by_meaning = [queries[0], *(text for text in queries[1:] if text == rewritten)]
        layer_budget = max(0.01, (deadline - time.monotonic()) * self.settings.layer_share)
        named_sink = collect_named()  # filled by the semantic layer's answer
        tasks = {
            layer: asyncio.create_task(
                self._timed(
                    layer,
                    self._ask_layer(
                        layer, q, by_meaning if layer in MEANING_LAYERS else queries, window, layer_budget
                    ),
                    started,
                )
            )
            for layer in q.layers
            if layer not in skipped
        }
        warned = self._warnings_task(q, queries, layer_budget)
        fanned = [*tasks.values(), *([warned] if warned is not None else [])]
        done, pending = await asyncio.wait(fanned, timeout=layer_budget)
        for task in pending:
            task.cancel()
        warnings = self._warnings_of(warned, done)
        outcomes = [
            task.result()
            if task in done
            else LayerOutcome(layer, ok=False, elapsed_ms=layer_budget * 1000, error="deadline exceeded")
            for layer, task in tasks.items()
        ]
        named = tuple(named_sink) if any(o.ok for o in outcomes if o.layer is LayerName.SEMANTIC) else ()
        channel = self._entity_list(outcomes, named)
        fused = await off_loop(
            lambda: adjust(
                weighted(self._fuse(outcomes, plan, q, channel), weights),
                self.settings.adjustments(),
                now,
                boost,
                self._best_possible(outcomes, channel) * weight_ceiling(weights),
            ),
            size=sum(len(o.candidates) for o in outcomes),
            threshold=FUSION_OFF_LOOP_CANDIDATES,
        )
        fused = await self._check(fused, q)
        asked = [r for r in (boost, q.time_range) if r is not None and (r.start or r.end)]
        fused = below_successors(fused, asked)  # a corrected statement ranks below its correction
        pool, fused = fused, fused[: max(q.top_k, self.reranker.head if self.reranker else 0)]
        if self.reranker is not None:  # the head is reordered within what is left of the deadline
            reranked = await self.reranker.rerank(q.banks[0], q.query, fused, deadline)
            fused = below_successors(reranked, asked)
        asked_about = plan.time.time_range if plan.time else None  # validity: what holds (then) first
        fused = resolve(fused, outcomes, q, asked_about, self.settings.recall_validity)
        relevance = relevance_of(queries, [*(o.candidates for o in outcomes), channel])
        if not asked:  # about now: an assertion before its look-alikes (questions, others' values)
            fused = prefer_assertions(fused, q.query, q.top_k, self.settings.look_alike_yield, relevance)
        memories = select(fused, pool, relevance, self._cut(q))  # lessons first, before the cut
        if q.bank_ids:  # each memory by the id its bank knows, naming the bank
            memories = [unkeyed(m) for m in memories]
        else:
            memories = [dataclasses.replace(m, bank_id=q.bank_id) for m in memories]
        budget, order = q.token_budget or self.settings.context_tokens, q.order or self.settings.context_order
        context = await off_loop(
            lambda: assemble_with_warnings(
                memories, warnings, budget, order, banks=q.bank_ids, group_by_bank=q.group_by_bank
            ),
            size=sum(len(m.text) for m in memories),
            threshold=ASSEMBLE_OFF_LOOP_CHARS,
        )
        for bank in q.banks:
            self._note_access(bank, [m for m in memories if m.bank_id == bank])
        result = RecallResult(
            memories=tuple(memories),
            outcomes=tuple(outcomes),
            context=context,
            analysis=QueryAnalysis(
                time_expression=plan.time.expression if plan.time else "",
                time_range=plan.time.time_range if plan.time else TimeRange(),
                time_use=time_use,
                entities=plan.entities,
                keywords=plan.keywords,
                rewrites=tuple(queries),
            ),
            elapsed_ms=(time.perf_counter() - started) * 1000,
            warnings=tuple(warnings),
        )
        log.info(
            "recall",
            extra={
                "bank": ",".join(q.banks),
                "query_chars": len(q.query),
                "rewrites": len(queries),
                "time_use": time_use,
                "layers": {
                    o.layer.value: {"ok": o.ok, "ms": round(o.elapsed_ms, 1), "n": len(o.candidates)}
                    for o in outcomes
                },
                "answered": [o.layer.value for o in outcomes if o.ok],
                "not_asked": [layer.value for layer in skipped],
                "entities": [entity.name for entity in named],
                "partial": result.partial,
                "returned": len(memories),
                "flagged": sum(1 for m in memories if m.flags),
                "warnings": len(warnings),
                "context_tokens": context.tokens,
                "elapsed_ms": round(result.elapsed_ms, 1),
            },
        )
        return result

    def unweighed(self, q: RecallQuery) -> frozenset[LayerName]:
        """The layers of ``q`` this recall does not ask (see :func:`unweighed_layers`)."""
        return unweighed_layers(self.settings, q.layers, self._entity_channel_on(q))

    async def _check(self, fused: list[RecalledMemory], q: RecallQuery) -> list[RecalledMemory]:
        """The recall-time checks (:mod:`.consensus`) on the best candidates: flagged, down-weighted."""
        if not self.settings.defences:
            return fused
        pool = max(self.settings.consensus_pool, q.top_k)
        returned = self.reranker.head if self.reranker else 0  # the head the reranker may reorder
        head, rest = fused[:pool], fused[pool:]
        checked = await off_loop(  # statements and cues: ~1 us per character
            lambda: assess(head, self.settings.consensus(), max(q.top_k, returned), q.query),
            size=sum(len(m.text) for m in head),
            threshold=ASSEMBLE_OFF_LOOP_CHARS,
        )
        return sorted([*checked, *rest], key=lambda m: -m.score)  # stable: equal scores keep their order

    def _warnings_task(
        self, q: RecallQuery, queries: Sequence[str], timeout: float
    ) -> asyncio.Task[list[RecallWarning]] | None:
        """Episodic memory's held-back turns related to the query, asked beside the layers (one call)."""
        if not self.settings.defences or self.settings.warnings_limit <= 0:
            return None
        phrasings = Phrasings.distinct(queries[0], queries[1:], self.settings.rewrite_weight)

        async def ask(bank_id: str) -> list[RecallWarning]:
            if not await self._may_hold(bank_id, timeout):
                return []
            request = episodic_pb2.SearchTurnsRequest(
                bank_id=bank_id,
                **phrasings.request_fields(),
                limit=self.settings.warnings_limit,
                quarantined_only=True,  # the review queue takes no filters: warnings are about its words
            )
            reply = await self.clients.episodic.call("SearchTurns", request, timeout)
            return [_warning(hit.turn) for hit in reply.hits][: self.settings.warnings_limit]

        async def ask_all() -> list[RecallWarning]:
            """Each bank's review queue (one at a time in episodic memory; most banks hold none, known
            without a call), the first warnings of the banks in order."""
            found = await asyncio.gather(*(ask(bank) for bank in q.banks))
            return [w for warnings in found for w in warnings][: self.settings.warnings_limit]

        return asyncio.create_task(ask(q.bank_id) if not q.bank_ids else ask_all())

    async def _may_hold(self, bank_id: str, timeout: float) -> bool:
        """Whether the bank's review queue has any turn (one page of one entry, when not known lately)."""
        known = self.held_banks.known(bank_id)
        if known is not None:
            return known
        page = await self.clients.episodic.call(
            "ListQuarantined",
            episodic_pb2.ListQuarantinedRequest(bank_id=bank_id, status="all", limit=1),
            timeout,
        )
        self.held_banks.note(bank_id, bool(page.items))
        return bool(page.items)

    @staticmethod
    def _warnings_of(
        task: asyncio.Task[list[RecallWarning]] | None, done: set[asyncio.Task[Any]]
    ) -> list[RecallWarning]:
        """The warnings, or none when the search failed or was late (warnings never fail a recall)."""
        if task is None or task not in done:
            return []
        exc = task.exception()
        if exc is not None:
            level = logging.DEBUG
            if not isinstance(exc, grpc.aio.AioRpcError) or exc.code() is not grpc.StatusCode.UNIMPLEMENTED:
                level = logging.WARNING
            log.log(level, "recall warnings skipped", extra={"error": _describe(exc)})
            return []
        return task.result()

    def _cut(self, q: RecallQuery) -> Cut:
        """The floor and support level (a recall's ``min_score`` raises both), ``top_k`` and lessons."""
        floor = max(self.settings.relevance_floor, q.min_score)
        return Cut(
            floor=floor,
            support=min(floor, max(self.settings.relevance_support, q.min_score)),
            top_k=q.top_k,
            max_lessons=self.settings.max_lessons,
            lessons_first=self.settings.lessons_first,
        )

    def _entity_channel_on(self, q: RecallQuery) -> bool:
        """Whether this recall builds the entity channel (it needs score fusion, semantic and episodic, and
        one bank)."""
        return (
            self.settings.entity_weight > 0
            and not q.bank_ids  # the layers name the entities of one bank
            and self.settings.fusion == "score"
            and LayerName.SEMANTIC in q.layers
            and LayerName.EPISODIC in q.layers
        )

    def _entity_list(self, outcomes: Sequence[LayerOutcome], named: Sequence[NamedEntity]) -> list[Candidate]:
        """The entity channel: the keyword hits about the entities the query names (see :mod:`.entities`)."""
        keyword = next((o.candidates for o in outcomes if o.layer is LayerName.EPISODIC), ())
        return entity_channel(keyword, named)

    def _fuse(
        self,
        outcomes: Sequence[LayerOutcome],
        plan: QueryPlan,
        q: RecallQuery,
        channel: Sequence[Candidate] = (),
    ) -> list[RecalledMemory]:
        """The configured fusion of the layers' lists and the entity channel (see :mod:`.fusion`)."""
        plain = max(self.settings.candidates_per_layer, q.top_k)  # episodic may have answered more, for it
        lists = [o.candidates[:plain] for o in outcomes] + ([tuple(channel)] if channel else [])
        wanted = {t.lower() for t in (*q.tags, *plan.keywords, *plan.entities)}
        tags = self.settings.signals()["tags"]
        extra = {
            rid: tags * value
            for rid, value in tag_scores((c for found in lists for c in found), wanted).items()
        }
        if self.settings.fusion == "rrf":
            return reciprocal_rank_fusion(lists, k=self.settings.rrf_k, extra=extra)
        return score_fusion(
            lists,
            weights=self.settings.list_weights(),
            session_boost=self.settings.session_boost,
            extra=extra,
            channel_weights={ENTITY_CHANNEL: self.settings.entity_weight},
        )

    def _best_possible(self, outcomes: Sequence[LayerOutcome], channel: Sequence[Candidate] = ()) -> float:
        """The highest fused score the lists that answered could give, so scores read as 0..1."""
        tags = self.settings.signals()["tags"]
        answered = [o for o in outcomes if o.candidates]
        if self.settings.fusion == "rrf":
            return (len(answered) + tags) / (self.settings.rrf_k + 1) or 1.0
        weights = self.settings.list_weights()
        total = sum(max(0.0, weights[o.layer]) for o in answered) + tags
        total += self.settings.entity_weight if channel else 0.0
        return total * (1 + 3 * self.settings.session_boost) or 1.0

    def _note_access(self, bank_id: str, memories: Sequence[RecalledMemory]) -> None:
        """Tell episodic memory what this recall returned (hit counts), without waiting for it."""
        if not self.settings.record_access or not memories:
            return
        request = episodic_pb2.RecordAccessRequest(
            bank_id=bank_id,
            records=[episodic_pb2.AccessedRecord(id=m.id, layer=m.layer.value) for m in memories],
        )

        async def send() -> None:
            try:
                await self.clients.episodic.call("RecordAccess", request, self.settings.write_timeout)
            except Exception as exc:  # counting hits is best effort; recall already answered
                log.debug("record access not noted", extra={"error": _describe(exc)})

        if len(self._background) >= MAX_ACCESS_NOTES_IN_FLIGHT:
            self.access_notes_dropped += 1
            if time.monotonic() - self._access_drops_logged_at >= ACCESS_DROP_LOG_SECONDS:
                self._access_drops_logged_at = time.monotonic()
                log.warning(
                    "access notes dropped: too many in flight",
                    extra={"dropped_total": self.access_notes_dropped, "in_flight": len(self._background)},
                )
            return
        spawn(send(), name="record-access", timeout=self.settings.write_timeout, keep=self._background)

    async def drain(self) -> None:
        """Wait for background work (access notes, audit entries) to finish; called on close and by tests."""
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        await self.audit.drain()

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
        started = time.perf_counter()
        reply = await self.clients.reflect.call(
            "Reflect",
            reflect_pb2.ReflectRequest(bank_id=bank_id, session_id=session_id),
            self.settings.write_timeout,
        )
        log.info(
            "reflect",
            extra={
                "bank": bank_id,
                "session": session_id,
                "episodes_read": reply.episodes_read,
                "lessons": len(reply.lessons),
                "elapsed_ms": round((time.perf_counter() - started) * 1000, 1),
            },
        )
        return reply

    async def forget(
        self,
        bank_id: str,
        turn_ids: Sequence[str],
        hard: bool = False,
        turn_filter: episodic_pb2.TurnFilter | None = None,
    ) -> ForgetResult:
        """Archive (or hard-delete) turns in episodic memory, then drop them from working memory and index.

        Turns are named by id, by a filter (archive only), or both. Episodic memory goes first, as the
        system of record. Forgetting is idempotent, so when a later layer fails the whole call fails with
        UNAVAILABLE and is safe to repeat.
        """
        filtering = turn_filter is not None and _filters_something(turn_filter)
        if not turn_ids and not filtering:
            raise InvalidArgument("turn_ids", "name turns to forget, or give a filter that selects some")
        if hard and filtering:
            raise InvalidArgument(
                "hard", "hard deletion takes turn ids (or use purge); a filter only archives"
            )
        ids = list(dict.fromkeys(turn_ids))
        if filtering:
            ids = list(dict.fromkeys([*ids, *await self._filtered_ids(bank_id, turn_filter)]))  # type: ignore[arg-type]
        timeout = self.settings.write_timeout
        forgotten = await self.clients.episodic.call(
            "ForgetTurns",
            episodic_pb2.ForgetTurnsRequest(
                bank_id=bank_id, turn_ids=ids, hard=hard, filter=turn_filter if filtering else None
            ),
            timeout,
        )
        if not ids:
            return ForgetResult(forgotten.forgotten_count, 0, 0)
        if hard:  # a purge: every version of the turns and what died with them go in every layer
            derived = await self._purge_derived(bank_id, [*ids, *forgotten.purged_ids])
            await self._purge_copies_derived(forgotten.purged_copies)
            log.info(
                "forget", extra={"bank": bank_id, "ids": len(ids), "hard": hard} | dataclasses.asdict(derived)
            )
            return ForgetResult(
                forgotten.forgotten_count, derived.unindexed_count, derived.working_removed_count
            )
        working, removed = await asyncio.gather(
            self.clients.working.call(
                "ForgetTurns", working_pb2.ForgetTurnsRequest(bank_id=bank_id, turn_ids=ids), timeout
            ),
            self.clients.semantic.call(
                "Delete",
                # an archive is recoverable: a restore's re-index lifts the semantic layer's tombstones
                semantic_pb2.DeleteRequest(bank_id=bank_id, ids=ids, source_turn_ids=ids, archived=not hard),
                timeout,
            ),
        )
        log.info(
            "forget",
            extra={"bank": bank_id, "ids": len(ids), "hard": hard, "forgotten": forgotten.forgotten_count},
        )
        return ForgetResult(forgotten.forgotten_count, removed.deleted_count, working.removed_count)

    async def _turn_pages(
        self,
        bank_id: str,
        pages: int,
        turn_filter: episodic_pb2.TurnFilter | None = None,
    ) -> AsyncIterator[list[common_pb2.Turn]]:
        """Up to ``pages`` pages of 500 turns from episodic memory."""
        token = ""
        for _ in range(pages):
            page = await self.clients.episodic.call(
                "ListTurns",
                episodic_pb2.ListTurnsRequest(
                    bank_id=bank_id,
                    page_size=500,
                    page_token=token,
                    filter=turn_filter,
                ),
                self.settings.write_timeout,
            )
            yield list(page.turns)
            token = page.next_page_token
            if not token:
                return

    async def _filtered_ids(self, bank_id: str, turn_filter: episodic_pb2.TurnFilter) -> list[str]:
        """Ids of the live turns a filter selects (so working memory and the index can drop them too)."""
        live = episodic_pb2.TurnFilter()
        live.CopyFrom(turn_filter)
        live.include_archived = False
        ids: list[str] = []
        async for turns in self._turn_pages(bank_id, MAX_FILTERED_TURNS // 500, live):
            ids.extend(turn.id for turn in turns)
        return ids

    async def purge(
        self, bank_id: str, ids: Sequence[str] = (), session_id: str = "", whole_bank: bool = False
    ) -> PurgeResult:
        """Delete for good: turns and episodes by id, a whole session, or a whole bank, in every layer.

        Episodic memory (the system of record) goes first and queues the deletion of derived records in
        its outbox; the edge also asks each layer directly, so the memories are gone when the call returns.
        Every step is idempotent: a failed purge is safe to repeat.
        """
        chosen = sum([bool(ids), bool(session_id), whole_bank])
        if chosen != 1:
            raise InvalidArgument("ids", "give exactly one of ids, session_id or whole_bank")
        unique = list(dict.fromkeys(ids))
        timeout = self.settings.write_timeout
        purged = await self.clients.episodic.call(
            "Purge",
            episodic_pb2.PurgeRequest(
                bank_id=bank_id, ids=unique, session_id=session_id, whole_bank=whole_bank
            ),
            timeout,
        )
        # Every id episodic memory purged (each version of a turn, held-back turns, episodes that died with
        # their last source turn), so the other layers delete all they derived from them.
        derived = await self._purge_derived(
            bank_id, [] if whole_bank else [*unique, *purged.purged_ids], session_id, whole_bank
        )
        result = PurgeResult(
            turn_count=purged.turn_count,
            episode_count=purged.episode_count,
            unindexed_count=derived.unindexed_count,
            working_removed_count=derived.working_removed_count,
            lesson_count=derived.lesson_count,
            shared_copy_count=await self._purge_copies_derived(purged.purged_copies),
        )
        log.info(
            "purge",
            extra={"bank": bank_id, "ids": len(unique), "session": bool(session_id), "whole_bank": whole_bank}
            | dataclasses.asdict(result),
        )
        return result

    async def _purge_copies_derived(self, copies: Sequence[episodic_pb2.PurgedCopies]) -> int:
        """Delete what the other layers derived from the shared copies a purge took with their sources
        (episodic memory purged them and queued the same deletes); how many copies went."""
        for taken in copies:
            await self._purge_derived(taken.bank_id, list(taken.purged_ids))
        return sum(len(taken.purged_ids) for taken in copies)

    async def _purge_derived(
        self, bank_id: str, ids: Sequence[str], session_id: str = "", whole_bank: bool = False
    ) -> DerivedDeletes:
        """Delete what working memory, the semantic layer and reflection hold of purged records, directly,
        so it is gone when the call returns (episodic memory's outbox sends the same deletes, for a layer
        that is down now). Ids go a thousand a call; the session or bank goes with the first call."""
        timeout = self.settings.write_timeout
        unique = list(dict.fromkeys(ids))
        chunks = [unique[i : i + PURGE_IDS_PER_CALL] for i in range(0, len(unique), PURGE_IDS_PER_CALL)]
        working_removed = unindexed = lessons_deleted = 0
        for index, chunk in enumerate(chunks or [[]]):
            scope_session, scope_bank = (session_id, whole_bank) if index == 0 else ("", False)
            working, removed, lessons = await asyncio.gather(
                self.clients.working.call(
                    "ForgetTurns",
                    working_pb2.ForgetTurnsRequest(
                        bank_id=bank_id, turn_ids=chunk, session_id=scope_session, whole_bank=scope_bank
                    ),
                    timeout,
                ),
                self.clients.semantic.call(
                    "Delete",
                    semantic_pb2.DeleteRequest(
                        bank_id=bank_id,
                        ids=chunk,
                        source_turn_ids=chunk,
                        session_id=scope_session,
                        whole_bank=scope_bank,
                    ),
                    timeout,
                ),
                self.clients.reflect.call(
                    "PurgeLessons",
                    reflect_pb2.PurgeLessonsRequest(
                        bank_id=bank_id, source_ids=chunk, session_id=scope_session, whole_bank=scope_bank
                    ),
                    timeout,
                ),
            )
            working_removed += working.removed_count
            unindexed += removed.deleted_count
            lessons_deleted += lessons.deleted_count
        return DerivedDeletes(working_removed, unindexed, lessons_deleted)

    async def list_recent(
        self,
        bank_id: str,
        limit: int = 20,
        session_id: str = "",
        tags: Sequence[str] = (),
        include_archived: bool = False,
        page_token: str = "",
        agent: str = "",
    ) -> episodic_pb2.ListTurnsResponse:
        """The newest turns of a bank (or one session, or one agent's), newest first, from episodic memory."""
        return await self.clients.episodic.call(
            "ListTurns",
            episodic_pb2.ListTurnsRequest(
                bank_id=bank_id,
                page_size=limit,
                page_token=page_token,
                newest_first=True,
                filter=episodic_pb2.TurnFilter(
                    session_id=session_id, tags=list(tags), include_archived=include_archived, agent=agent
                ),
            ),
            self.settings.write_timeout,
        )

    async def update(
        self,
        bank_id: str,
        turn_id: str,
        text: str = "",
        meta: common_pb2.RecordMeta | None = None,
        actor: str = "",
        agent: str = "",
    ) -> tuple[common_pb2.Turn, str, bool]:
        """Replace a turn by a new version (new id; the old one archived) and move the other layers with it.

        Returns the new turn, the superseded id and whether the new version was indexed for meaning. A new
        text is screened as a retain's is (by the new metadata's source, else the stored turn's). ``agent``
        (the front's stamp, :mod:`.agents`) is recorded as the new version's writer.
        """
        if not turn_id:
            raise InvalidArgument("turn_id", "is required")
        if not text.strip() and meta is None:
            raise InvalidArgument("text", "give a new text or new metadata")
        timeout = self.settings.write_timeout
        if text and self.settings.defences:
            text = await self._screen_update(bank_id, turn_id, text, meta, actor)
        reply = await self.clients.episodic.call(
            "UpdateTurn",
            episodic_pb2.UpdateTurnRequest(
                bank_id=bank_id, turn_id=turn_id, text=text, meta=meta, index_now=True, agent=agent
            ),
            timeout,
        )
        # Episodic's outbox moves the semantic index (new version in, old out) before it answers; working
        # memory is no outbox target for updates, so the old version leaves the session window here.
        try:
            await self.clients.working.call(
                "ForgetTurns",
                working_pb2.ForgetTurnsRequest(bank_id=bank_id, turn_ids=[reply.superseded_id]),
                timeout,
            )
        except Exception as exc:  # episodic holds the truth; a stale window entry ages out
            log.warning("layer update failed after the durable write", extra={"error": _describe(exc)})
        log.info("update", extra={"bank": bank_id, "superseded": reply.superseded_id, "new": reply.turn.id})
        return reply.turn, reply.superseded_id, reply.indexed

    async def _screen_update(
        self, bank_id: str, turn_id: str, text: str, meta: common_pb2.RecordMeta | None, actor: str
    ) -> str:
        """The update's text as screening lets it be stored (redacted), or the refusal."""
        source = RecordMeta.from_pb(meta).source if meta is not None and meta.source else None
        if source is None:
            stored = await self.get_turn(bank_id, turn_id)
            source = RecordMeta.from_pb(stored.meta).source if stored is not None else Source.USER
        guarded = await off_loop(
            lambda: self.guard.screen_update(bank_id, turn_id, text, source, actor),
            len(text),
            SCREEN_OFF_LOOP_CHARS,
        )
        for decision in guarded.audit:
            self.audit.record(decision)
        if guarded.refused is not None:
            raise guarded.refused
        return guarded.turns[0].text if guarded.turns else text

    async def get_turn(self, bank_id: str, turn_id: str) -> common_pb2.Turn | None:
        """A stored turn by id (live or archived), or None when the bank has none with that id."""
        reply = await self.clients.episodic.call(
            "GetTurns",
            episodic_pb2.GetTurnsRequest(bank_id=bank_id, turn_ids=[turn_id]),
            self.settings.write_timeout,
        )
        return reply.turns[0] if reply.turns else None

    async def debug_list(
        self, bank_id: str, admin_token: str | None, limit: int = 100, page_token: str = ""
    ) -> tuple[list[common_pb2.Turn], list[episodic_pb2.Episode], str]:
        """Every turn (archived too, newest first) and episode of a bank; only with the admin token."""
        expected = self.settings.admin_token
        if not expected or not admin_token or not hmac.compare_digest(expected, admin_token):
            raise PermissionDenied("the debug listing needs the admin token")
        timeout = self.settings.write_timeout
        turns, episodes = await asyncio.gather(
            self.clients.episodic.call(
                "ListTurns",
                episodic_pb2.ListTurnsRequest(
                    bank_id=bank_id,
                    page_size=limit,
                    page_token=page_token,
                    newest_first=True,
                    filter=episodic_pb2.TurnFilter(include_archived=True),
                ),
                timeout,
            ),
            self.clients.episodic.call(
                "ListEpisodes", episodic_pb2.ListEpisodesRequest(bank_id=bank_id, page_size=limit), timeout
            ),
        )
        log.info("debug listing", extra={"bank": bank_id, "turns": len(turns.turns)})
        return list(turns.turns), list(episodes.episodes), turns.next_page_token

    # ----- entity pages -------------------------------------------------------------------------------
    async def list_entities(
        self, bank_id: str, entity_type: str = "", prefix: str = "", limit: int = 50, page_token: str = ""
    ) -> semantic_pb2.ListEntitiesResponse:
        """One page of the bank's entities by name, from the semantic layer's entity pages."""
        return await self.clients.semantic.call(
            "ListEntities",
            semantic_pb2.ListEntitiesRequest(
                bank_id=bank_id, type=entity_type, prefix=prefix, limit=limit, page_token=page_token
            ),
            self.settings.write_timeout,
        )

    async def entity_page(
        self, bank_id: str, entity: str, mention_limit: int = 20, page_token: str = ""
    ) -> semantic_pb2.GetEntityPageResponse:
        """What is known about one entity and the turns that mention it (NOT_FOUND for an unknown one)."""
        if not entity.strip():
            raise InvalidArgument("entity", "is required")
        return await self.clients.semantic.call(
            "GetEntityPage",
            semantic_pb2.GetEntityPageRequest(
                bank_id=bank_id, entity=entity, mention_limit=mention_limit, page_token=page_token
            ),
            self.settings.write_timeout,
        )

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
async def open_engine(
    settings: EdgeSettings, llm_settings: LLMSettings | None = None
) -> AsyncIterator[MemoryEngine]:
    """Open channels to every layer (and the LLM client, when one is configured); close them on exit."""
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
    llm = llm_from_settings(llm_settings or load(LLMSettings)) if settings.llm_rewrite else None
    engine = MemoryEngine(clients, settings, reranker, llm)
    try:
        yield engine
    finally:
        await engine.tokens.close()
        await engine.drain()
        await clients.close()
        if llm is not None:
            await llm.close()
        if reranker is not None:
            await reranker.close()
