"""``hindsight bench latency`` end to end on a tiny file, against a real private mesh: the JSON's shape
(never a time: how fast is the bench's to report, not a test's to judge)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hindsight.cli.main import build_parser

SMALL = [("s1", "Melanie", "I ran my first half marathon in Rotterdam this spring.")]
LARGE = [
    ("m1", "Caroline", "I adopted a golden retriever puppy named Biscuit in Lisbon last weekend."),
    ("m2", "Melanie", "That is lovely! How is Biscuit settling in at home?"),
    ("m3", "Caroline", "My sister is moving to Porto for a job at a robotics startup."),
    ("m4", "Caroline", "The pottery workshop I signed up for starts on 14 March."),
]
QUERIES = [
    ("q1", "What is the name of Caroline's puppy?", ["m1"]),
    ("q2", "Where is Caroline's sister moving?", ["m3"]),
]


def _namespace(name: str, messages: list[tuple[str, str, str]]) -> dict[str, object]:
    return {
        "id": name,
        "messages": [
            {"id": i, "speaker": s, "text": t, "session": "1", "time": f"2024-05-01T10:00:0{n}"}
            for n, (i, s, t) in enumerate(messages)
        ],
        "queries": [
            {"id": f"{name}/{i}", "text": t, "category": "single-hop", "gold": g} for i, t, g in QUERIES
        ],
    }


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    data = {"name": "tiny", "namespaces": [_namespace("small", SMALL), _namespace("large", LARGE)]}
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_the_bench_recalls_the_largest_conversation_and_reports_times_by_layer_and_cpu_by_process(
    data_file: Path, tmp_path: Path
) -> None:
    report = tmp_path / "out" / "latency.json"
    args = build_parser().parse_args(
        [
            *("bench", "latency", "--data", str(data_file), "--repeat", "2", "--no-progress"),
            *("--env", "HINDSIGHT_ASK_UNWEIGHTED=1", "--json", str(report)),
        ]
    )
    assert args.run(args) == 0
    data = json.loads(report.read_text(encoding="utf-8"))

    assert {"commit", "settings", "namespace", "turns", "recalls", "recall_ms", "layer_ms"} <= set(data)
    assert data["namespace"] == "large" and data["turns"] == len(LARGE)  # the one with most messages
    assert data["recalls"] == 2 * len(QUERIES) and data["partial"] == 0
    assert data["settings"] == {"HINDSIGHT_ASK_UNWEIGHTED": "1"}
    assert set(data["recall_ms"]) == {"p50", "p95", "p99"}
    assert data["recall_ms"]["p50"] <= data["recall_ms"]["p95"] <= data["recall_ms"]["p99"]
    assert set(data["layer_ms"]) == {"working", "episodic", "semantic", "reflect"}  # asked: the setting
    assert set(data["layer_share"]) == set(data["layer_ms"])
    cpu = data["cpu_ms_per_recall"]
    assert {"mcp_edge", "working", "episodic", "semantic", "reflect", "bench-client", "total"} <= set(cpu)
    assert all(ms >= 0 for ms in cpu.values())


def test_an_unknown_namespace_is_refused_naming_the_flag(
    data_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = build_parser().parse_args(["bench", "latency", "--data", str(data_file), "--namespace", "nope"])
    assert args.run(args) == 2
    assert "--namespace 'nope'" in capsys.readouterr().err
