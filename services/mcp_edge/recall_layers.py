"""Asking the layers for a recall's candidates: which layers a recall asks at all, one call per layer for
the query and its rewrites, and each call timed into a layer report. A mixin of
:class:`~hindsight.mcp_edge.engine.MemoryEngine`, used by :mod:`~hindsight.mcp_edge.engine_recall`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Sequence

from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.reflect.v1 import reflect_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.contracts.working.v1 import working_pb2
from hindsight.mcp_edge.banks import keyed
from hindsight.mcp_edge.domain import Candidate, LayerName, LayerOutcome, RecallQuery
from hindsight.mcp_edge.engine_base import EngineBase, describe, log
from hindsight.mcp_edge.entities import note_named
from hindsight.mcp_edge.layer_candidates import (
    banks_asked,
    lesson_candidate,
    record_candidate,
    turn_candidate,
)
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.mcp_edge.validity import search_fields
from hindsight.runtime.records import TimeRange
from hindsight.runtime.rewrites import Phrasings


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


class LayerAsking(EngineBase):
    """One call per asked layer, filtered to what the recall asked for."""

    async def _ask_working(
        self, q: RecallQuery, phrasings: Phrasings, window: TimeRange, limit: int, timeout: float
    ) -> list[Candidate]:
        reply = await self.clients.working.call(
            "SearchRecent",
            working_pb2.SearchRecentRequest(
                **banks_asked(q),
                **phrasings.request_fields(),
                session_id=q.session_id,
                limit=limit,
                time_range=window.to_pb(),
                tags=list(q.tags),
            ),
            timeout,
        )
        return [turn_candidate(hit, LayerName.WORKING) for hit in reply.hits]

    async def _ask_episodic(
        self, q: RecallQuery, phrasings: Phrasings, window: TimeRange, limit: int, timeout: float
    ) -> list[Candidate]:
        reply = await self.clients.episodic.call(
            "SearchTurns",
            episodic_pb2.SearchTurnsRequest(
                **banks_asked(q),
                **phrasings.request_fields(),
                limit=limit,
                time_range=window.to_pb(),
                filter=episodic_pb2.TurnFilter(tags=list(q.tags), agent=q.agent),
            ),
            timeout,
        )
        return [turn_candidate(hit, LayerName.EPISODIC) for hit in reply.hits]

    async def _ask_semantic(
        self, q: RecallQuery, phrasings: Phrasings, window: TimeRange, limit: int, timeout: float
    ) -> list[Candidate]:
        reply = await self.clients.semantic.call(
            "Search",
            semantic_pb2.SearchRequest(
                **banks_asked(q),
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
        return [record_candidate(hit) for hit in reply.hits]

    async def _ask_reflect(
        self, q: RecallQuery, phrasings: Phrasings, window: TimeRange, limit: int, timeout: float
    ) -> list[Candidate]:
        reply = await self.clients.reflect.call(
            "SearchLessons",
            reflect_pb2.SearchLessonsRequest(
                **banks_asked(q),
                **phrasings.request_fields(),
                limit=limit,
                tags=list(q.tags),
            ),
            timeout,
        )
        return [lesson_candidate(hit) for hit in reply.hits]

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
                layer, ok=False, elapsed_ms=(time.perf_counter() - started) * 1000, error=describe(exc)
            )
        return LayerOutcome(
            layer, ok=True, elapsed_ms=(time.perf_counter() - started) * 1000, candidates=tuple(candidates)
        )

    def unweighed(self, q: RecallQuery) -> frozenset[LayerName]:
        """The layers of ``q`` this recall does not ask (see :func:`unweighed_layers`)."""
        return unweighed_layers(self.settings, q.layers, self._entity_channel_on(q))

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
