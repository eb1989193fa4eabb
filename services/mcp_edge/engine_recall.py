"""Recall: the query read (time, keywords, entities, rewrites), the layers asked in parallel under one
deadline, their lists fused, checked, reranked and cut, and the context assembled. A layer that fails or is
late makes the answer partial, never an error.

A mixin of :class:`~hindsight.mcp_edge.engine.MemoryEngine`, on the parts each step calls: asking the layers
(:mod:`.recall_layers`), the warnings (:mod:`.recall_warnings`), the fusion glue (:mod:`.recall_fusion`)
and the access notes (:mod:`.access_notes`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from hindsight.mcp_edge.access_notes import AccessNotes
from hindsight.mcp_edge.assertions import prefer_assertions
from hindsight.mcp_edge.banks import check_weights, unkeyed
from hindsight.mcp_edge.context import assemble_with_warnings
from hindsight.mcp_edge.domain import (
    LayerName,
    LayerOutcome,
    QueryAnalysis,
    RecalledMemory,
    RecallQuery,
    RecallResult,
    RecallWarning,
)
from hindsight.mcp_edge.engine_base import describe, log
from hindsight.mcp_edge.entities import NamedEntity, collect_named
from hindsight.mcp_edge.fusion import below_successors, drawn_after_sources
from hindsight.mcp_edge.query import QueryPlan, understand
from hindsight.mcp_edge.recall_fusion import ASSEMBLE_OFF_LOOP_CHARS, Fusing
from hindsight.mcp_edge.recall_layers import LayerAsking
from hindsight.mcp_edge.recall_warnings import RecallWarnings
from hindsight.mcp_edge.relevance import knows_meaning, relevance_of, select
from hindsight.mcp_edge.validity import at_moment, resolve
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.offload import off_loop
from hindsight.runtime.records import TimeRange, utcnow
from hindsight.runtime.tracing import traced

UNDERSTAND_OFF_LOOP_CHARS = 750
"""Query characters from which query understanding (~2.5 us per character) runs on a worker thread."""
MEANING_LAYERS = frozenset({LayerName.SEMANTIC})
"""Layers that search by meaning alone, where a near-copy of the query finds little new (reflect finds its
candidate lessons by keyword, so it keeps every phrasing)."""


@dataclass(frozen=True)
class _Reading:
    """A recall's query as read: the plan, the time ranges searched, boosted and asked about, and the
    phrasings each kind of search gets."""

    plan: QueryPlan
    window: TimeRange
    """The time range searched."""
    boost: TimeRange | None
    """The time range boosted, when the query's time boosts rather than filters."""
    time_use: str
    asked: list[TimeRange]
    """The time ranges the recall asks about (boosted or given): with none, the recall is about now."""
    queries: list[str]
    """The query and its rewrites, for keyword search."""
    by_meaning: list[str]
    """The phrasings the layers that search by meaning alone get (:data:`MEANING_LAYERS`)."""

    def analysis(self) -> QueryAnalysis:
        """What the recall's answer says of how the query was read."""
        plan = self.plan
        return QueryAnalysis(
            time_expression=plan.time.expression if plan.time else "",
            time_range=plan.time.time_range if plan.time else TimeRange(),
            time_use=self.time_use,
            entities=plan.entities,
            keywords=plan.keywords,
            rewrites=tuple(self.queries),
        )


@dataclass(frozen=True)
class _Answers:
    """What came back within the layers' budget: a report per asked layer, the warnings, and the entities
    the query names (only when the semantic layer answered)."""

    outcomes: list[LayerOutcome]
    warnings: list[RecallWarning]
    named: tuple[NamedEntity, ...]


class Recalling(LayerAsking, RecallWarnings, Fusing, AccessNotes):
    """One recall, step by step: read, ask, rank, assemble, note."""

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
            log.warning("llm query rewrite skipped", extra={"error": describe(exc)})
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
        reading = await self._read(q, now)
        answers = await self._ask(q, reading, skipped, started, deadline)
        memories = await self._ranked(q, reading, answers, weights, now, deadline)
        budget, order = q.token_budget or self.settings.context_tokens, q.order or self.settings.context_order
        context = await off_loop(
            lambda: assemble_with_warnings(
                memories, answers.warnings, budget, order, banks=q.bank_ids, group_by_bank=q.group_by_bank
            ),
            size=sum(len(m.text) for m in memories),
            threshold=ASSEMBLE_OFF_LOOP_CHARS,
        )
        for bank in q.banks:
            self._note_access(bank, [m for m in memories if m.bank_id == bank])
        result = RecallResult(
            memories=tuple(memories),
            outcomes=tuple(answers.outcomes),
            context=context,
            analysis=reading.analysis(),
            elapsed_ms=(time.perf_counter() - started) * 1000,
            warnings=tuple(answers.warnings),
        )
        self._log_recall(q, reading, answers, skipped, result)
        return result

    async def _read(self, q: RecallQuery, now: datetime) -> _Reading:
        """The query read (off the loop when long), with the LLM's rewrite when one is configured; the rule
        rewrites go to keyword search only unless ``rewrites_by_meaning``."""
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
        asked = [r for r in (boost, q.time_range) if r is not None and (r.start or r.end)]
        return _Reading(plan, window, boost, time_use, asked, queries, by_meaning)

    async def _ask(
        self,
        q: RecallQuery,
        reading: _Reading,
        skipped: frozenset[LayerName],
        started: float,
        deadline: float,
    ) -> _Answers:
        """Every asked layer and the warnings at once, within the layers' share of what is left of the
        deadline; a layer still running then is cancelled and reported late."""
        layer_budget = max(0.01, (deadline - time.monotonic()) * self.settings.layer_share)
        named_sink = collect_named()  # filled by the semantic layer's answer
        tasks = {
            layer: asyncio.create_task(
                self._timed(
                    layer,
                    self._ask_layer(
                        layer,
                        q,
                        reading.by_meaning if layer in MEANING_LAYERS else reading.queries,
                        reading.window,
                        layer_budget,
                    ),
                    started,
                )
            )
            for layer in q.layers
            if layer not in skipped
        }
        warned = self._warnings_task(q, reading.queries, layer_budget)
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
        return _Answers(outcomes, warnings, named)

    async def _ranked(
        self,
        q: RecallQuery,
        reading: _Reading,
        answers: _Answers,
        weights: Mapping[str, float],
        now: datetime,
        deadline: float,
    ) -> list[RecalledMemory]:
        """The memories to return, best first: fused and checked, a corrected statement below its
        correction, the head reranked, validity resolved, scored by relevance and cut
        (:mod:`.relevance`), each named by the id its bank knows."""
        outcomes, asked = answers.outcomes, reading.asked
        channel = self._entity_list(outcomes, answers.named)
        fused = await self._fused(q, reading.plan, outcomes, channel, weights, now, reading.boost)
        fused = await self._check(fused, q)
        fused = below_successors(fused, asked)  # a corrected statement ranks below its correction
        if self.settings.drawn_after_sources:  # a fact of a turn already above it: past the head
            fused = drawn_after_sources(fused, keyed_by_bank=bool(q.bank_ids))
        pool, fused = fused, fused[: max(q.top_k, self.reranker.head if self.reranker else 0)]
        if self.reranker is not None:  # the head is reordered within what is left of the deadline
            reranked = await self.reranker.rerank(q.banks[0], q.query, fused, deadline)
            fused = below_successors(reranked, asked)
        plan = reading.plan
        asked_about = plan.time.time_range if plan.time else None  # validity: what holds (then) first
        fused = resolve(fused, outcomes, q, asked_about, self.settings.recall_validity)
        lists = [*(o.candidates for o in outcomes), channel]
        measured: dict[str, float] = {}
        if self.meaning is not None and not knows_meaning(lists):  # semantic down, late, not asked
            measured = await self.meaning.cosines(q.banks[0], q.query, pool, deadline)
        relevance = relevance_of(reading.queries, lists, measured)
        if not asked:  # about now: an assertion before its look-alikes (questions, others' values)
            fused = prefer_assertions(fused, q.query, q.top_k, self.settings.look_alike_yield, relevance)
        memories = select(fused, pool, relevance, self._cut(q))  # lessons first, before the cut
        if q.bank_ids:  # each memory by the id its bank knows, naming the bank
            return [unkeyed(m) for m in memories]
        return [dataclasses.replace(m, bank_id=q.bank_id) for m in memories]

    @staticmethod
    def _log_recall(
        q: RecallQuery,
        reading: _Reading,
        answers: _Answers,
        skipped: frozenset[LayerName],
        result: RecallResult,
    ) -> None:
        """One log line per recall: what was asked, what each layer did, and what came back."""
        outcomes, memories = answers.outcomes, result.memories
        log.info(
            "recall",
            extra={
                "bank": ",".join(q.banks),
                "query_chars": len(q.query),
                "rewrites": len(reading.queries),
                "time_use": reading.time_use,
                "layers": {
                    o.layer.value: {"ok": o.ok, "ms": round(o.elapsed_ms, 1), "n": len(o.candidates)}
                    for o in outcomes
                },
                "answered": [o.layer.value for o in outcomes if o.ok],
                "not_asked": [layer.value for layer in skipped],
                "entities": [entity.name for entity in answers.named],
                "partial": result.partial,
                "returned": len(memories),
                "flagged": sum(1 for m in memories if m.flags),
                "warnings": len(answers.warnings),
                "context_tokens": result.context.tokens,
                "elapsed_ms": round(result.elapsed_ms, 1),
            },
        )
