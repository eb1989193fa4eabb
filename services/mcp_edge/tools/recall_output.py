"""Recall's result as the tool returns it: fused memories with what an agent needs to cite and trust them,
the assembled context, and how each layer answered."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from hindsight.mcp_edge.domain import RecallResult
from hindsight.mcp_edge.tools.access import LayerChoice, SourceName
from hindsight.mcp_edge.tools.derived import output_model
from hindsight.runtime.results import SecurityFlag, SecurityWarning

if TYPE_CHECKING:  # derived from the records at import time (see .derived)
    FlagOutput = BaseModel
    WarningOutput = BaseModel
else:
    FlagOutput = output_model(SecurityFlag, "FlagOutput")
    WarningOutput = output_model(SecurityWarning, "WarningOutput")


class MemoryOutput(BaseModel):
    """One recalled memory, with what an agent needs to cite it."""

    id: str
    layer: LayerChoice = Field(description="The layer that ranked it best.")
    text: str
    speaker: str
    score: float = Field(description="Calibrated relevance to the query, 0 to 1 (0.5: even odds).")
    layers: list[LayerChoice]
    kind: str = Field(description="turn, lesson, fact, ... (layers may add kinds).")
    time: datetime | None
    source: SourceName
    source_turn_ids: list[str]
    tags: list[str]
    importance: float
    supersedes: list[str] = Field(
        default_factory=list, description="Ids of earlier statements this one corrected (kept as history)."
    )
    superseded_by: str = Field("", description="Id of the later statement that corrected this one.")
    flags: list[FlagOutput] = Field(
        default_factory=list, description="Cautions found at recall (unverified source, dissent, ...)."
    )
    valid_from: datetime | None = Field(None, description="Since when it holds, when known.")
    valid_to: datetime | None = Field(
        None, description="When it stopped holding (superseded or invalidated); null: it still holds."
    )
    outdated: bool = Field(
        False, description="It did not hold at the moment asked about (now, as_of, or the query's time)."
    )
    outdated_note: str = Field("", description="Why, as the context says it: 'outdated since ..., now: ...'.")
    bank_id: str = Field("", description="The bank it belongs to (one of `banks` in a recall over several).")
    agent: str = Field("", description="The agent that wrote it; empty when not known.")


class LayerReportOutput(BaseModel):
    """How one layer answered."""

    layer: LayerChoice
    ok: bool
    elapsed_ms: float
    candidates: int
    error: str = ""


class AnalysisOutput(BaseModel):
    """What was read from the query."""

    time_expression: str
    time_start: datetime | None
    time_end: datetime | None
    time_use: str = Field(description="filter, boost or empty.")
    entities: list[str]
    keywords: list[str]
    rewrites: list[str]


class RecallOutput(BaseModel):
    """Fused memories, best first, and the context assembled from them."""

    memories: list[MemoryOutput]
    context: str = Field(description="The memories that fit the token budget, one marked section per layer.")
    context_ids: list[str]
    context_tokens: int
    partial: bool = Field(description="True when a layer failed or was late; the named layers are missing.")
    layers: list[LayerReportOutput]
    analysis: AnalysisOutput
    elapsed_ms: float
    warnings: list[WarningOutput] = Field(
        default_factory=list, description="Held-back records related to the query (detected attacks)."
    )


def recall_output(result: RecallResult) -> RecallOutput:
    """A recall result as the tool returns it."""
    analysis = result.analysis
    return RecallOutput(
        memories=[
            MemoryOutput(
                id=m.id,
                layer=m.layer.value,
                text=m.text,
                speaker=m.speaker,
                score=round(m.score, 6),
                layers=[layer.value for layer in m.layers],
                kind=m.kind,
                time=m.meta.time,
                source=m.meta.source.value,
                source_turn_ids=list(m.meta.source_turn_ids),
                tags=list(m.meta.tags),
                importance=m.meta.importance,
                supersedes=list(m.supersedes),
                superseded_by=m.superseded_by,
                flags=[FlagOutput.model_validate(f, from_attributes=True) for f in m.flags],
                valid_from=m.valid_from,
                valid_to=m.valid_to,
                outdated=bool(m.outdated),
                outdated_note=m.outdated,
                bank_id=m.bank_id,
                agent=m.meta.agent,
            )
            for m in result.memories
        ],
        warnings=[WarningOutput.model_validate(w, from_attributes=True) for w in result.warnings],
        context=result.context.text,
        context_ids=list(result.context.ids),
        context_tokens=result.context.tokens,
        partial=result.partial,
        layers=[
            LayerReportOutput(
                layer=o.layer.value,
                ok=o.ok,
                elapsed_ms=round(o.elapsed_ms, 2),
                candidates=len(o.candidates),
                error=o.error,
            )
            for o in result.outcomes
        ],
        analysis=AnalysisOutput(
            time_expression=analysis.time_expression,
            time_start=analysis.time_range.start,
            time_end=analysis.time_range.end,
            time_use=analysis.time_use,
            entities=list(analysis.entities),
            keywords=list(analysis.keywords),
            rewrites=list(analysis.rewrites),
        ),
        elapsed_ms=round(result.elapsed_ms, 2),
    )
