"""The scale benchmark's size schedule, turn stream, JSON shape, tables and chart, on fake timings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hindsight.bench.datasets import parse_dataset
from hindsight.bench.provenance import write_json
from hindsight.bench.scale import mesh_environment, settings_overrides
from hindsight.bench.scale_data import SIZES, BankStream, Corpus, size_schedule
from hindsight.bench.scale_report import (
    BackendResult,
    Pass,
    SizeResult,
    SmallBank,
    gains,
    markdown_backend,
    markdown_gain,
    report,
    write_chart,
)
from hindsight.bench.scale_resources import Memory, data_disk


def test_the_schedule_grows_through_the_issue_sizes_by_default() -> None:
    assert size_schedule(100_000) == [1_000, 3_000, 10_000, 30_000, 100_000] == list(SIZES)


def test_max_turns_skips_the_larger_sizes_and_ends_exactly_on_itself() -> None:
    assert size_schedule(10_000) == [1_000, 3_000, 10_000]
    assert size_schedule(12_000) == [1_000, 3_000, 10_000, 12_000]
    assert size_schedule(300) == [300]
    assert size_schedule(250_000)[-2:] == [100_000, 250_000]


def test_a_schedule_needs_a_positive_size() -> None:
    with pytest.raises(ValueError):
        size_schedule(0)


def _file(name: str, sessions: int, per_session: int, queries: int) -> dict[str, object]:
    messages = [
        {"id": f"{s}-{i}", "speaker": f"{name}-spk", "text": f"{name} {s} {i}", "session": str(s)}
        for s in range(sessions)
        for i in range(per_session)
    ]
    asked = [{"id": f"q{q}", "text": f"{name} question {q}", "gold": []} for q in range(queries)]
    return {"name": name, "namespaces": [{"id": "ns", "messages": messages, "queries": asked}]}


def _corpus() -> Corpus:
    big = parse_dataset(_file("big", sessions=8, per_session=3, queries=8))
    small = parse_dataset(_file("small", sessions=2, per_session=2, queries=2))
    return Corpus.from_datasets([big, small])


def test_the_pool_interleaves_the_files_sessions_so_every_prefix_has_the_same_mix() -> None:
    corpus = _corpus()
    assert len(corpus.messages) == 28
    # The small file's two sessions land at the start and the middle, not at the end.
    owners = ["small" if m.text.startswith("small") else "big" for m in corpus.messages]
    assert owners[3:5] == ["small", "small"] and owners[17:19] == ["small", "small"]
    # A session is never split: a chunk's messages stay together and in order.
    assert [m.text for m in corpus.messages[:3]] == ["big 0 0", "big 0 1", "big 0 2"]
    assert corpus.queries[:2] == ("big question 0", "small question 0")


def test_the_query_set_is_the_same_at_every_size_and_cycles_when_the_files_are_short() -> None:
    corpus = _corpus()
    assert corpus.query_set(3) == corpus.query_set(3)
    assert len(corpus.query_set(25)) == 25 and corpus.query_set(25)[10] == corpus.queries[0]


def test_a_bank_turn_is_computed_from_its_index_with_fresh_ids_times_and_sessions() -> None:
    corpus = _corpus()
    stream = BankStream(corpus, "bank", offset=26)
    first, third = stream.turn(0), stream.turn(2)
    assert first.text == corpus.messages[26].text and third.text == corpus.messages[0].text
    assert (first.id, third.id) == ("t0", "t2")
    assert first.time is not None and third.time is not None
    assert (third.time - first.time).total_seconds() == 120
    # The pool's second cycle gets sessions of its own, so a reused session never merges with the first.
    assert first.session == f"c0-s{corpus.messages[26].chunk}" and third.session.startswith("c1-")
    assert [m.id for m in stream.turns(5, 8)] == ["t5", "t6", "t7"]


def _pass(latencies: list[float], semantic: float, partial: int = 0, concurrency: int = 1) -> Pass:
    one = Pass(concurrency=concurrency, wall_s=sum(latencies) / 1000 / concurrency)
    for index, value in enumerate(latencies):
        one.add(value, {"semantic": semantic, "episodic": value / 2}, index < partial)
    return one


def _size(turns: int, scale: float) -> SizeResult:
    return SizeResult(
        turns=turns,
        store_turns=turns + 4_500,
        retained=turns,
        retain_s=turns / 250,
        recall=_pass([10 * scale, 20 * scale, 30 * scale], semantic=8 * scale),
        recall_c8=_pass([40 * scale, 50 * scale], semantic=20 * scale, concurrency=8),
        settled=_pass([9 * scale, 18 * scale, 27 * scale], semantic=7 * scale, partial=1),
        memory=Memory(1200.0, 800.0, {"postgres": 300.0, "semantic": 200.0}),
        disk_mb={"postgres": 40.0, "qdrant": 15.5},
    )


def _backend(name: str, scale: float, sizes: tuple[int, ...]) -> BackendResult:
    small = SmallBank(500, alone=_pass([5.0, 6.0, 7.0], 3.0), crowded=_pass([8.0, 9.0, 10.0], 4.0))
    small.others_turns = 4_000 + sizes[-1]
    return BackendResult(
        backend=name,
        sizes=[_size(turns, scale) for turns in sizes],
        small_bank=small,
        background_turns=4_000,
        background_s=16.0,
        wall_s=100.0,
    )


def test_the_json_has_the_issue_keys_and_the_settled_pass_beside_them(tmp_path: Path) -> None:
    run = {"commit": "abc", "settings": {"max_turns": 3000}}
    path = tmp_path / "out" / "scale.json"
    write_json(path, report(_backend("edge", 1.0, (1_000, 3_000)), _backend("local", 3.0, (1_000,)), run))
    data = json.loads(path.read_text())
    assert {"sizes", "small_bank", "run"} <= set(data)
    assert data["run"] == run
    [first, second] = data["sizes"]
    contract = {"turns", "recall_ms", "recall_ms_c8", "layers_ms", "retain_per_s", "rss_mb", "disk_mb"}
    assert contract <= set(first)
    assert set(first["recall_ms"]) == set(first["recall_ms_c8"]) == {"p50", "p95", "p99"}
    assert first["recall_ms"] == {"p50": 20.0, "p95": 29.0, "p99": 29.8}
    assert first["recall_ms_settled"] == {"p50": 18.0, "p95": 26.1, "p99": 26.82}
    assert first["partial"] == {"recall": 0, "c8": 0, "settled": 1}
    assert first["layers_ms"]["semantic"] == {"p50": 8.0, "p95": 8.0, "share": 0.4}
    assert list(first["layers_ms"]) == ["episodic", "semantic"]
    assert (first["turns"], second["turns"]) == (1_000, 3_000)
    assert first["retain_per_s"] == 250.0 and first["rss_mb"] == 1200.0 and first["disk_mb"] == 55.5
    assert first["disk_mb_per_1k_turns"] == round(55.5 / 5.5, 2)
    assert set(data["small_bank"]) >= {"recall_ms", "alone_ms"}
    assert data["small_bank"]["alone_ms"]["p50"] == 6.0 and data["small_bank"]["recall_ms"]["p50"] == 9.0
    assert data["previous"]["backend"] == "local" and len(data["previous"]["sizes"]) == 1
    assert data["gain"] == [
        {
            "turns": 1_000,
            "p50_ratio": 3.0,
            "p95_ratio": 3.0,
            "c8_p50_ratio": 3.0,
            "retain_ratio": 1.0,
            "settled_p50_ratio": 3.0,
        }
    ]


def test_the_gain_is_taken_against_the_new_backend_run_under_the_previous_ones_conditions() -> None:
    full = _backend("edge", 1.0, (1_000, 3_000))
    compared = _backend("edge", 2.0, (1_000,))
    data = report(full, _backend("local", 6.0, (1_000,)), {"commit": "abc", "settings": {}}, compared)
    assert data["compared"]["sizes"][0]["recall_ms"]["p50"] == 40.0
    assert [row["p50_ratio"] for row in data["gain"]] == [3.0]
    assert data["sizes"][0]["recall_ms"]["p50"] == 20.0  # the top level stays the full run


def test_without_a_comparison_the_report_has_no_previous_backend_and_no_gain() -> None:
    data = report(_backend("edge", 1.0, (1_000,)), None, {"commit": "abc", "settings": {}})
    assert data["previous"] is None and data["gain"] == []


def test_the_table_has_a_row_per_size_and_the_small_bank_line() -> None:
    text = markdown_backend(_backend("edge", 1.0, (1_000, 3_000)))
    assert (
        "| 1,000 | 20.0 / 29.0 / 29.8 | 18.0 / 26.1 / 26.8 | 45.0 / 49.5 / 49.9 "
        "| episodic 10, semantic 8 | 250 | 1200 | 56 (10.1) | 0 / 0 / 1 |" in text
    )
    assert "| 3,000 |" in text
    assert "small bank (500 turns), recall p50 / p95 / p99: alone 6.0 / 6.9 / 7.0 ms;" in text
    assert "beside 7,000 other turns" in text


def test_a_capped_backend_says_where_the_cap_stopped_it() -> None:
    capped = _backend("local", 3.0, (1_000,))
    capped.capped, capped.cap_s = True, 600.0
    assert "stopped by the 600 s cap after 1,000 turns" in markdown_backend(capped)
    empty = BackendResult("local", cap_s=600.0, capped=True)
    assert "no size reached" in markdown_backend(empty)


def test_the_gain_table_compares_only_sizes_both_backends_reached() -> None:
    rows = gains(_backend("edge", 1.0, (1_000, 3_000)), _backend("local", 2.0, (1_000,)))
    text = markdown_gain(rows, "edge", "local")
    assert "| 1,000 | 2.00x | 2.00x | 2.00x | 2.00x | 1.00x |" in text and "3,000" not in text
    assert "no gain to show" in markdown_gain([], "edge", "local")


def test_the_chart_is_a_png(tmp_path: Path) -> None:
    results = [_backend("edge", 1.0, (1_000, 3_000)), BackendResult("local")]
    path = write_chart(tmp_path / "scale-latency.png", results)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_disk_is_counted_per_data_directory_without_the_logs(tmp_path: Path) -> None:
    for name in ("postgres", "qdrant", "logs"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "data").write_bytes(b"x" * 100_000)
    (tmp_path / "mesh.json").write_text("{}")
    usage = data_disk(tmp_path)
    assert set(usage) == {"postgres", "qdrant"}
    assert all(mb >= 100_000 / (1024 * 1024) for mb in usage.values())


def test_each_backend_gets_fresh_embedded_stores_and_its_backend_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://elsewhere/db")
    monkeypatch.setenv("HINDSIGHT_QDRANT_PATH", "/somewhere")
    env = mesh_environment("local")
    assert env["HINDSIGHT_QDRANT_BACKEND"] == "local"
    assert "DATABASE_URL" not in env and "HINDSIGHT_QDRANT_PATH" not in env


def test_the_run_records_setting_overrides_but_never_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_QUERY_REWRITES", "0")
    monkeypatch.setenv("HINDSIGHT_ADMIN_TOKEN", "hunter2")
    overrides = settings_overrides()
    assert overrides["HINDSIGHT_QUERY_REWRITES"] == "0" and "HINDSIGHT_ADMIN_TOKEN" not in overrides
