"""The fusion glue of a recall: the layers' lists (and the entity channel) fused by the configured method
and adjusted, the recall-time checks on the best candidates, and the cut of what is returned. The
arithmetic lives in :mod:`.fusion` and :mod:`.relevance`; this is where the edge's settings meet it. A mixin
of :class:`~hindsight.mcp_edge.engine.MemoryEngine`, used by :mod:`~hindsight.mcp_edge.engine_recall`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from hindsight.mcp_edge.banks import weight_ceiling, weighted
from hindsight.mcp_edge.consensus import assess
from hindsight.mcp_edge.domain import Candidate, LayerName, LayerOutcome, RecalledMemory, RecallQuery
from hindsight.mcp_edge.engine_base import EngineBase
from hindsight.mcp_edge.entities import ENTITY_CHANNEL, NamedEntity, entity_channel
from hindsight.mcp_edge.fusion import adjust, reciprocal_rank_fusion, score_fusion, tag_scores
from hindsight.mcp_edge.query import QueryPlan
from hindsight.mcp_edge.relevance import Cut
from hindsight.runtime.offload import off_loop
from hindsight.runtime.records import TimeRange

FUSION_OFF_LOOP_CANDIDATES = 150
"""Candidates from which fusion and the score factors (~13 us per candidate) run on a worker thread."""
ASSEMBLE_OFF_LOOP_CHARS = 4_000
"""Characters of recalled memories from which the context (token counts: ~0.5 us per character) is
assembled on a worker thread."""


class Fusing(EngineBase):
    """Fuse, check and cut a recall's candidates by the edge's settings."""

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

    async def _fused(
        self,
        q: RecallQuery,
        plan: QueryPlan,
        outcomes: Sequence[LayerOutcome],
        channel: Sequence[Candidate],
        weights: Mapping[str, float],
        now: datetime,
        boost: TimeRange | None,
    ) -> list[RecalledMemory]:
        """The lists fused, weighted by bank and adjusted (recency, importance, confidence, trust, time), on a
        worker thread when there are many candidates."""
        return await off_loop(
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
