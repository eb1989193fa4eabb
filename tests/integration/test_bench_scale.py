"""``hindsight bench scale`` end to end on tiny sizes, against real private meshes (``hindsight up``).

The new backend runs its whole schedule; the previous one gets a cap of 0 s, so the cap's path (growth
stopped, the small bank still measured) runs too, without a second full run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hindsight.cli.main import build_parser


def test_the_bench_grows_a_bank_measures_each_size_and_writes_the_contract_json(
    tiny_data_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "results" / "scale.json"
    args = build_parser().parse_args(
        [
            *("bench", "scale", "--data", str(tiny_data_file), "--json", str(report)),
            *("--max-turns", "300", "--other-banks", "2", "--other-turns", "100", "--small-turns", "50"),
            *("--queries", "4", "--settle-s", "0", "--local-cap-s", "0", "--no-progress"),
        ]
    )
    assert args.run(args) == 0
    data = json.loads(report.read_text())

    [size] = data["sizes"]
    assert size["turns"] == 300 and size["store_turns"] == 300 + 2 * 100 + 50
    contract = {"turns", "recall_ms", "recall_ms_c8", "layers_ms", "retain_per_s", "rss_mb", "disk_mb"}
    assert contract <= set(size)
    for pass_name in ("recall_ms", "recall_ms_c8", "recall_ms_settled"):
        assert set(size[pass_name]) == {"p50", "p95", "p99"} and size[pass_name]["p50"] > 0
    assert size["queries"] == 4 and size["unindexed_batches"] == 0
    assert {"episodic", "semantic", "reflect"} <= set(size["layers_ms"])  # working weighs 0: not asked
    assert size["retain_per_s"] > 0 and size["rss_mb"] > 0 and size["disk_mb"] > 0
    assert {"inference", "mcp_edge", "semantic", "postgres"} <= set(size["rss_mb_by_service"])
    assert {"postgres", "qdrant"} <= set(size["disk_mb_by_dir"])

    small = data["small_bank"]
    assert set(small["recall_ms"]) == set(small["alone_ms"]) == {"p50", "p95", "p99"}
    assert small["turns"] == 50 and small["others_turns"] == 500

    assert data["backend"] == "edge" and not data["capped"]
    previous = data["previous"]
    assert previous["backend"] == "local" and previous["capped"] and previous["sizes"] == []
    assert previous["small_bank"]["alone_ms"]["p50"] > 0 and data["gain"] == []

    run = data["run"]
    assert len(run["commit"]) == 40 or run["commit"] == "unknown"
    assert run["settings"]["sizes"] == [300] and run["settings"]["other_banks"] == 2
    assert (report.parent / "scale-latency.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out
    assert "| 300 |" in printed and "stopped by the 0 s cap" in printed
