"""What a retrieval benchmark run shows: a Markdown table, a JSON file and one PNG chart per input file."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hindsight.bench.metrics import (
    CONTEXT_BUDGETS,
    EXCLUDED_FROM_OVERALL,
    METRIC_NAMES,
    ContextTally,
    Tally,
    percentile,
    rank_summary,
)
from hindsight.bench.provenance import write_json as write_report

RANK_DEPTH = 10
"""First-gold ranks are read in the top 10 a recall returns."""


@dataclass
class FileResult:
    """Everything measured on one benchmark file."""

    name: str
    path: str
    namespaces: int
    messages: int
    queries: int
    hindsight: Tally = field(default_factory=Tally)
    bm25: Tally = field(default_factory=Tally)
    retain_seconds: float = 0.0
    recall_ms: list[float] = field(default_factory=list)
    layer_ms: dict[str, list[float]] = field(default_factory=dict)
    """Per layer, its time inside the edge on each recall: where a slow recall spends its time."""
    peak_rss_mb: float | None = None
    partial: int = 0
    """Recalls that came back partial (a layer failed or was late)."""
    details: list[dict[str, Any]] = field(default_factory=list)
    query_time_sources: dict[str, int] = field(default_factory=dict)
    """How many queries were asked at the dataset's time of the question, its last message, or the clock."""
    first_gold: list[int | None] = field(default_factory=list)
    """Per query counted in overall: rank of the first gold message in Hindsight's list (None: not there)."""
    bm25_first_gold: list[int | None] = field(default_factory=list)
    context: ContextTally = field(default_factory=ContextTally)
    """Per budget, the share of gold evidence in the context the edge assembled (queries as in overall)."""
    context_recalls_differing: int = 0
    """Recalls asked again for a smaller budget's context whose ranked ids differed from the scored one."""

    def note_query(self, category: str, source: str, ours: int | None, bm25: int | None) -> None:
        """Count where the query's time came from and (outside excluded categories) its first-gold ranks."""
        self.query_time_sources[source] = self.query_time_sources.get(source, 0) + 1
        if category not in EXCLUDED_FROM_OVERALL:
            self.first_gold.append(ours)
            self.bm25_first_gold.append(bm25)

    @property
    def query_time_source(self) -> str:
        """The one source of every query's time, or "mixed"."""
        if not self.query_time_sources:
            return ""
        return next(iter(self.query_time_sources)) if len(self.query_time_sources) == 1 else "mixed"

    @property
    def retain_per_s(self) -> float:
        return self.messages / self.retain_seconds if self.retain_seconds > 0 else 0.0

    def latency(self) -> dict[str, float]:
        return {
            "p50": percentile(self.recall_ms, 0.50),
            "p95": percentile(self.recall_ms, 0.95),
            "p99": percentile(self.recall_ms, 0.99),
        }

    def to_json(self, with_details: bool = False) -> dict[str, Any]:
        """The issue's keys (name, overall, bm25, by_category, retain_per_s, recall_ms) plus context."""
        bm25_by_category = self.bm25.by_category()
        by_category = {
            category: {
                **_rounded(scores),
                "queries": self.hindsight.counts[category],
                "bm25": _rounded(bm25_by_category.get(category, {})),
            }
            for category, scores in self.hindsight.by_category().items()
        }
        data: dict[str, Any] = {
            "name": self.name,
            "path": self.path,
            "namespaces": self.namespaces,
            "messages": self.messages,
            "queries": self.queries,
            "overall_queries": self.hindsight.overall_count,
            "overall": _rounded(self.hindsight.overall()),
            "bm25": _rounded(self.bm25.overall()),
            "context_recall": _rounded(self.context.overall()),
            "context_recalls_differing": self.context_recalls_differing,
            "by_category": by_category,
            "retain_per_s": round(self.retain_per_s, 1),
            "retain_seconds": round(self.retain_seconds, 2),
            "recall_ms": {key: round(value, 2) for key, value in self.latency().items()},
            "recall_layer_ms": {
                layer: {
                    "p50": round(percentile(times, 0.50), 2),
                    "p95": round(percentile(times, 0.95), 2),
                }
                for layer, times in sorted(self.layer_ms.items())
            },
            "peak_rss_mb": round(self.peak_rss_mb, 1) if self.peak_rss_mb is not None else None,
            "partial_recalls": self.partial,
            "query_time_source": self.query_time_source,
            "query_time_sources": dict(sorted(self.query_time_sources.items())),
            "first_gold_rank": {
                "hindsight": rank_summary(self.first_gold, RANK_DEPTH),
                "bm25": rank_summary(self.bm25_first_gold, RANK_DEPTH),
            },
        }
        if with_details:
            data["details"] = self.details
        return data


def _rounded(scores: dict[str, float]) -> dict[str, float]:
    return {name: round(value, 4) for name, value in scores.items()}


def _cell(value: float) -> str:
    return f"{value:.3f}"


def _rank(value: float | int | None) -> str:
    return f">{RANK_DEPTH}" if value is None else str(value)


def _provenance_line(result: FileResult) -> str:
    """Where the file's query times came from, and how far its recalls are from holding the gold."""
    sources = ", ".join(f"{name} {count}" for name, count in sorted(result.query_time_sources.items()))
    ours, base = rank_summary(result.first_gold, RANK_DEPTH), rank_summary(result.bm25_first_gold, RANK_DEPTH)
    missing = f"none_in_top{RANK_DEPTH}"
    return (
        f"{result.name}: query time from {sources or 'nothing'}; first gold rank median / p90 / none in top "
        f"{RANK_DEPTH}: {_rank(ours['median'])} / {_rank(ours['p90'])} / {ours[missing]:.1%} "
        f"(BM25 {_rank(base['median'])} / {_rank(base['p90'])} / {base[missing]:.1%})"
    )


def markdown(results: list[FileResult]) -> str:
    """A summary table (one row per file) and a per-category table per file."""
    lines = [
        "| file | queries | R@5 | R@10 | NDCG@10 | "
        + " | ".join(f"context@{budget}" for budget in CONTEXT_BUDGETS)
        + " | BM25 R@5 | BM25 R@10 | BM25 NDCG@10 | retain msg/s | recall p50 / p95 / p99 ms | peak RSS MB |",
        "|---|---|---|---|---|" + "---|" * len(CONTEXT_BUDGETS) + "---|---|---|---|---|---|",
    ]
    for result in results:
        ours, base, lat = result.hindsight.overall(), result.bm25.overall(), result.latency()
        context = result.context.overall()
        rss = f"{result.peak_rss_mb:.0f}" if result.peak_rss_mb is not None else "n/a"
        lines.append(
            f"| {result.name} | {result.hindsight.overall_count} "
            + " ".join(f"| {_cell(ours[m])}" for m in METRIC_NAMES)
            + " "
            + " ".join(f"| {_cell(context[str(budget)])}" for budget in CONTEXT_BUDGETS)
            + " "
            + " ".join(f"| {_cell(base[m])}" for m in METRIC_NAMES)
            + f" | {result.retain_per_s:.0f} "
            + f"| {lat['p50']:.1f} / {lat['p95']:.1f} / {lat['p99']:.1f} | {rss} |"
        )
    for result in results:
        lines += ["", _provenance_line(result)]
    for result in results:
        if result.layer_ms:
            per_layer = ", ".join(
                f"{layer} {percentile(times, 0.50):.1f} / {percentile(times, 0.95):.1f}"
                for layer, times in sorted(result.layer_ms.items())
            )
            lines += ["", f"{result.name}: time per layer inside recall, p50 / p95 ms: {per_layer}"]
    for result in results:
        lines += ["", f"**{result.name}** by category (Hindsight / BM25)", ""]
        lines += ["| category | queries | R@5 | R@10 | NDCG@10 |", "|---|---|---|---|---|"]
        base_by = result.bm25.by_category()
        for category, scores in result.hindsight.by_category().items():
            base = base_by.get(category, dict.fromkeys(METRIC_NAMES, 0.0))
            cells = " | ".join(f"{_cell(scores[m])} / {_cell(base[m])}" for m in METRIC_NAMES)
            lines.append(f"| {category} | {result.hindsight.counts[category]} | {cells} |")
    return "\n".join(lines) + "\n"


def write_json(
    path: Path, results: list[FileResult], run: dict[str, Any], with_details: bool = False
) -> None:
    """The JSON report: ``{"run": {...}, "files": [per-file results]}``."""
    data = {"run": run, "files": [result.to_json(with_details) for result in results]}
    write_report(path, data)


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "data"


def write_chart(directory: Path, result: FileResult) -> Path:
    """``retrieval-<name>.png``: R@5, R@10 and NDCG@10 per category (and overall), Hindsight vs BM25."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ours_by, base_by = result.hindsight.by_category(), result.bm25.by_category()
    labels = ["overall", *ours_by]
    ours = [result.hindsight.overall(), *ours_by.values()]
    base = [result.bm25.overall(), *(base_by[c] for c in ours_by)]
    figure, axes = plt.subplots(1, len(METRIC_NAMES), figsize=(5 + 1.6 * len(labels), 4.2), sharey=True)
    positions = range(len(labels))
    width = 0.4
    for axis, metric in zip(axes, METRIC_NAMES, strict=True):
        axis.bar([p - width / 2 for p in positions], [s[metric] for s in ours], width, label="Hindsight")
        axis.bar([p + width / 2 for p in positions], [s[metric] for s in base], width, label="BM25")
        axis.set_title(metric)
        axis.set_xticks(list(positions), labels, rotation=30, ha="right", fontsize=8)
        axis.set_ylim(0, 1)
        axis.grid(axis="y", alpha=0.3)
    axes[0].legend(loc="upper left", fontsize=8)
    figure.suptitle(f"{result.name}: Hindsight vs BM25 ({result.hindsight.overall_count} queries in overall)")
    figure.tight_layout()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"retrieval-{_slug(result.name)}.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
