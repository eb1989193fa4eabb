"""What ``hindsight bench scale`` shows: a Markdown table per backend, the gain, a JSON file and a PNG.

The JSON's named keys are a contract other tools read (``sizes[].turns``, ``recall_ms``, ``recall_ms_c8``,
``layers_ms``, ``retain_per_s``, ``rss_mb``, ``disk_mb``; ``small_bank.recall_ms`` and ``alone_ms``;
``run.commit`` and ``run.settings``); everything else sits beside them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hindsight.bench.metrics import percentile
from hindsight.bench.scale_resources import Memory

LAYER_ORDER = ("working", "episodic", "semantic", "reflect")
BACKEND_LABELS = {"edge": "Qdrant Edge (in process)", "local": "qdrant-client local mode (previous)"}


@dataclass
class Pass:
    """One pass of recalls over the query set, at one concurrency."""

    concurrency: int = 1
    latencies_ms: list[float] = field(default_factory=list)
    """Each recall as the client saw it."""
    layer_ms: dict[str, list[float]] = field(default_factory=dict)
    """Per layer, its time inside the edge on each recall."""
    partial: int = 0
    """Recalls that came back partial (a layer failed or missed the deadline)."""
    wall_s: float = 0.0
    after_write_s: float = 0.0
    """Seconds from the end of the last write to the start of this pass."""

    def add(self, elapsed_ms: float, layer_ms: dict[str, float], partial: bool) -> None:
        """Record one recall."""
        self.latencies_ms.append(elapsed_ms)
        self.partial += partial
        for layer, spent in layer_ms.items():
            self.layer_ms.setdefault(layer, []).append(spent)

    def summary(self) -> dict[str, float]:
        """p50 / p95 / p99 in ms."""
        return {
            name: round(percentile(self.latencies_ms, share), 2)
            for name, share in (("p50", 0.50), ("p95", 0.95), ("p99", 0.99))
        }

    def layers(self) -> dict[str, dict[str, float]]:
        """Per layer: p50 / p95 ms, and ``share``, its p50 over the recall's p50 (layers run in parallel)."""
        total = percentile(self.latencies_ms, 0.50)
        ordered = sorted(self.layer_ms, key=lambda name: (_rank(name), name))
        return {
            layer: {
                "p50": round(percentile(self.layer_ms[layer], 0.50), 2),
                "p95": round(percentile(self.layer_ms[layer], 0.95), 2),
                "share": round(percentile(self.layer_ms[layer], 0.50) / total, 3) if total > 0 else 0.0,
            }
            for layer in ordered
        }

    @property
    def per_s(self) -> float:
        """Recalls answered per second of the pass."""
        return len(self.latencies_ms) / self.wall_s if self.wall_s > 0 else 0.0


def _rank(layer: str) -> int:
    return LAYER_ORDER.index(layer) if layer in LAYER_ORDER else len(LAYER_ORDER)


@dataclass
class SizeResult:
    """The big bank at one size: its growth step's retain, then recall right after it and later."""

    turns: int
    store_turns: int
    """Turns in the whole store (every bank) at this size."""
    retained: int
    retain_s: float
    unindexed: int = 0
    """Retain batches the edge stored without indexing in time."""
    recall: Pass = field(default_factory=Pass)
    recall_c8: Pass = field(default_factory=lambda: Pass(concurrency=8))
    settled: Pass | None = None
    memory: Memory = field(default_factory=lambda: Memory(0.0, 0.0))
    disk_mb: dict[str, float] = field(default_factory=dict)

    @property
    def retain_per_s(self) -> float:
        return self.retained / self.retain_s if self.retain_s > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        disk = sum(self.disk_mb.values())
        data: dict[str, Any] = {
            "turns": self.turns,
            "recall_ms": self.recall.summary(),
            "recall_ms_c8": self.recall_c8.summary(),
            "layers_ms": self.recall.layers(),
            "retain_per_s": round(self.retain_per_s, 1),
            "rss_mb": round(self.memory.rss_mb, 1),
            "disk_mb": round(disk, 1),
            "recall_ms_settled": self.settled.summary() if self.settled else None,
            "layers_ms_settled": self.settled.layers() if self.settled else None,
            "layers_ms_c8": self.recall_c8.layers(),
            "recall_per_s_c8": round(self.recall_c8.per_s, 1),
            "recall_after_write_s": round(self.recall.after_write_s, 1),
            "settled_after_write_s": round(self.settled.after_write_s, 1) if self.settled else None,
            "queries": len(self.recall.latencies_ms),
            "partial": {
                "recall": self.recall.partial,
                "c8": self.recall_c8.partial,
                "settled": self.settled.partial if self.settled else 0,
            },
            "store_turns": self.store_turns,
            "retained": self.retained,
            "retain_seconds": round(self.retain_s, 2),
            "unindexed_batches": self.unindexed,
            "pss_mb": round(self.memory.pss_mb, 1),
            "rss_mb_by_service": {name: round(mb, 1) for name, mb in self.memory.by_service.items()},
            "disk_mb_by_dir": {name: round(mb, 1) for name, mb in self.disk_mb.items()},
            "disk_mb_per_1k_turns": round(disk / (self.store_turns / 1000), 2) if self.store_turns else 0.0,
        }
        return data


@dataclass
class SmallBank:
    """A small bank asked alone (first, in an empty store) and again once the store holds every other bank."""

    turns: int
    alone: Pass = field(default_factory=Pass)
    crowded: Pass | None = None
    others_turns: int = 0
    """Turns of the other banks in the store when ``crowded`` was measured."""

    def to_json(self) -> dict[str, Any]:
        return {
            "recall_ms": self.crowded.summary() if self.crowded else None,
            "alone_ms": self.alone.summary(),
            "turns": self.turns,
            "others_turns": self.others_turns,
            "layers_ms": self.crowded.layers() if self.crowded else None,
            "alone_layers_ms": self.alone.layers(),
            "partial": {"recall": self.crowded.partial if self.crowded else 0, "alone": self.alone.partial},
        }


@dataclass
class BackendResult:
    """One backend's run on its own private mesh."""

    backend: str
    sizes: list[SizeResult] = field(default_factory=list)
    small_bank: SmallBank | None = None
    background_turns: int = 0
    background_s: float = 0.0
    cap_s: float | None = None
    capped: bool = False
    """The time cap ended the growth before the largest size."""
    wall_s: float = 0.0
    mesh_startup_s: float = 0.0

    @property
    def reached_turns(self) -> int:
        return self.sizes[-1].turns if self.sizes else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "sizes": [size.to_json() for size in self.sizes],
            "small_bank": self.small_bank.to_json() if self.small_bank else None,
            "background": {
                "turns": self.background_turns,
                "retain_per_s": round(self.background_turns / self.background_s, 1)
                if self.background_s
                else 0.0,
                "retain_seconds": round(self.background_s, 1),
            },
            "cap_s": self.cap_s,
            "capped": self.capped,
            "reached_turns": self.reached_turns,
            "wall_seconds": round(self.wall_s, 1),
            "mesh_startup_seconds": round(self.mesh_startup_s, 1),
        }


def _ratio(slow: float, fast: float) -> float | None:
    return round(slow / fast, 2) if fast > 0 and slow > 0 else None


def gains(new: BackendResult, previous: BackendResult) -> list[dict[str, Any]]:
    """Per size both backends reached: the previous backend's latency over the new one's (above 1: faster)."""
    theirs = {size.turns: size for size in previous.sizes}
    rows = []
    for size in new.sizes:
        if (old := theirs.get(size.turns)) is None:
            continue
        ours, prior = size.recall.summary(), old.recall.summary()
        row: dict[str, Any] = {
            "turns": size.turns,
            "p50_ratio": _ratio(prior["p50"], ours["p50"]),
            "p95_ratio": _ratio(prior["p95"], ours["p95"]),
            "c8_p50_ratio": _ratio(old.recall_c8.summary()["p50"], size.recall_c8.summary()["p50"]),
            "retain_ratio": _ratio(size.retain_per_s, old.retain_per_s),
        }
        if size.settled and old.settled:
            row["settled_p50_ratio"] = _ratio(old.settled.summary()["p50"], size.settled.summary()["p50"])
        rows.append(row)
    return rows


def report(
    new: BackendResult,
    previous: BackendResult | None,
    run: dict[str, Any],
    compared: BackendResult | None = None,
) -> dict[str, Any]:
    """The JSON document: the new backend's figures at the top level, the previous one's beside them.

    ``compared`` is the new backend run again under the previous one's conditions (fewer other banks,
    up to the size the previous one reached): the gain is taken against it, side by side.
    """
    data = new.to_json()
    data["previous"] = previous.to_json() if previous else None
    data["compared"] = compared.to_json() if compared else None
    data["gain"] = gains(compared or new, previous) if previous else []
    data["run"] = run
    return data


def _triple(summary: dict[str, float]) -> str:
    return f"{summary['p50']:.1f} / {summary['p95']:.1f} / {summary['p99']:.1f}"


def _layers_cell(one: Pass) -> str:
    return ", ".join(f"{layer} {values['p50']:.0f}" for layer, values in one.layers().items()) or "n/a"


def markdown_backend(result: BackendResult) -> str:
    """One row per size: recall right after the write, later, at concurrency 8; retain; memory; disk."""
    label = BACKEND_LABELS.get(result.backend, result.backend)
    lines = [
        f"**{result.backend}**: {label}; {result.background_turns:,} turns of other banks beside the bank",
        "",
        "| bank turns | recall p50 / p95 / p99 ms (first minute) | settled p50 / p95 / p99 "
        "| c8 p50 / p95 / p99 | per layer p50 ms | retain msg/s | RSS MB | disk MB (per 1k turns) "
        "| partial |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for size in result.sizes:
        data = size.to_json()
        settled = _triple(data["recall_ms_settled"]) if size.settled else "n/a"
        partial = data["partial"]
        lines.append(
            f"| {size.turns:,} | {_triple(data['recall_ms'])} | {settled} | {_triple(data['recall_ms_c8'])} "
            f"| {_layers_cell(size.recall)} | {data['retain_per_s']:.0f} | {data['rss_mb']:.0f} "
            f"| {data['disk_mb']:.0f} ({data['disk_mb_per_1k_turns']:.1f}) "
            f"| {partial['recall']} / {partial['c8']} / {partial['settled']} |"
        )
    if not result.sizes:
        lines.append("| - | no size reached | | | | | | | |")
    if result.capped:
        lines += ["", f"stopped by the {result.cap_s:.0f} s cap after {result.reached_turns:,} turns"]
    if (small := result.small_bank) is not None:
        crowded = (
            f"{_triple(small.crowded.summary())} ms beside {small.others_turns:,} other turns"
            if small.crowded
            else "not measured"
        )
        lines += [
            "",
            f"small bank ({small.turns:,} turns), recall p50 / p95 / p99: "
            f"alone {_triple(small.alone.summary())} ms; {crowded}",
        ]
    return "\n".join(lines) + "\n"


def markdown_gain(rows: list[dict[str, Any]], new: str, previous: str) -> str:
    """The previous backend's latency over the new one's, at each size both reached."""
    if not rows:
        return f"no size measured on both {new} and {previous}: no gain to show\n"
    lines = [
        f"gain: {previous} / {new} (above 1: {new} is faster)",
        "",
        "| bank turns | p50 | p95 | settled p50 | c8 p50 | retain (new / previous) |",
        "|---|---|---|---|---|---|",
    ]

    def cell(value: Any) -> str:
        return f"{value:.2f}x" if isinstance(value, float) else "n/a"

    for row in rows:
        lines.append(
            f"| {row['turns']:,} | {cell(row['p50_ratio'])} | {cell(row['p95_ratio'])} "
            f"| {cell(row.get('settled_p50_ratio'))} | {cell(row['c8_p50_ratio'])} "
            f"| {cell(row['retain_ratio'])} |"
        )
    return "\n".join(lines) + "\n"


def write_chart(path: Path, results: list[BackendResult]) -> Path:
    """Recall p50 (solid) and p95 (dashed) against bank size, log x, one colour per backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7.5, 4.5))
    for index, result in enumerate(results):
        if not result.sizes:
            continue
        colour = f"C{index}"
        turns = [size.turns for size in result.sizes]
        summaries = [size.recall.summary() for size in result.sizes]
        axis.plot(turns, [s["p50"] for s in summaries], "o-", color=colour, label=f"{result.backend} p50")
        axis.plot(turns, [s["p95"] for s in summaries], "s--", color=colour, label=f"{result.backend} p95")
    axis.set_xscale("log")
    axis.set_xlabel("turns in the bank (log)")
    axis.set_ylabel("recall ms (first minute after the write, concurrency 1)")
    axis.grid(alpha=0.3, which="both")
    axis.legend(fontsize=8)
    axis.set_title("hindsight bench scale: recall latency against bank size")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
