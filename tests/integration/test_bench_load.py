"""``hindsight bench load`` end to end on a tiny run, against a real private mesh (``hindsight up``).

Three agents (two over MCP streamable HTTP, one over gRPC) for three seconds, after a baseline of one:
the contract JSON is written, operations were served, none failed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hindsight.bench.load import Acknowledged, LoadResult, Sample
from hindsight.cli.main import build_parser


def test_a_tiny_load_run_serves_every_operation_and_writes_the_contract_json(
    tiny_data_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "out" / "load.json"
    args = build_parser().parse_args(
        [
            *("bench", "load", "--data", str(tiny_data_file), "--json", str(report)),
            *("--agents", "3", "--seconds", "3", "--turns-per-bank", "12"),
            *("--baseline-agents", "1", "--baseline-seconds", "2", "--no-progress"),
        ]
    )
    assert args.run(args) == 0
    data = json.loads(report.read_text())

    assert {"agents", "seconds", "ops", "errors", "ops_ms"} <= set(data)
    assert data["agents"] == 3 and data["seconds"] == 3
    assert data["ops"] > 0 and data["errors"] == 0 and data["errors_by_kind"] == {}
    assert data["ops"] + data["errors"] + data["unfinished"] == data["asked"]
    assert set(data["ops_ms"]) == {"recall", "retain", "other"}
    for quantiles in data["ops_ms"].values():
        assert set(quantiles) == {"p50", "p95", "p99"}
    assert data["ops_count"]["recall"] > 0 and data["ops_ms"]["recall"]["p50"] > 0
    assert set(data["by_transport"]) == {"mcp", "grpc"}
    assert data["baseline"]["agents"] == 1 and data["baseline"]["ops"] > 0
    assert len(data["commit"].removesuffix("-dirty")) == 40 or data["commit"] == "unknown"
    assert isinstance(data["settings"], dict)
    assert "operations served" in capsys.readouterr().out


def test_the_summary_counts_errors_by_kind_and_leaves_them_out_of_the_latencies() -> None:
    result = LoadResult(agents=2, seconds=2.0, asked=5)
    result.samples += [
        Sample("recall", "mcp", 10.0, late=False),
        Sample("recall", "grpc", 30.0, late=True, partial=True),
        Sample("retain", "grpc", 5000.0, late=False, error="grpc:UNAVAILABLE"),
        Sample("other", "mcp", 7000.0, late=False, error="mcp:tool_error"),
    ]
    summary = result.summary()
    assert summary["ops"] == 2 and summary["errors"] == 2 and summary["unfinished"] == 1
    assert summary["errors_by_kind"] == {"grpc:UNAVAILABLE": 1, "mcp:tool_error": 1}
    assert summary["errors_by_transport"] == {"grpc": 1, "mcp": 1}
    assert summary["ops_ms"]["recall"] == {"p50": 20.0, "p95": 29.0, "p99": 29.8}
    assert summary["ops_ms"]["retain"] == {"p50": 0.0, "p95": 0.0, "p99": 0.0}
    assert summary["late"] == 1 and summary["recall_partial"] == 1 and summary["throughput_per_s"] == 1.0


def test_acknowledged_retains_carry_what_a_later_check_needs() -> None:
    ack = Acknowledged("bank-1", ("t3", "t4"), ("a", "b"), "mcp", 1.0)
    assert ack.bank == "bank-1" and ack.turn_ids == ("t3", "t4") and ack.texts == ("a", "b")
