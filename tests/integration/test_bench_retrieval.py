"""``hindsight bench retrieval`` end to end on a tiny dataset, against every real layer served in-process."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from hindsight.bench.datasets import load_dataset
from hindsight.bench.retrieval import Options, run_benchmark
from hindsight.cli.main import build_parser
from hindsight.mcp_edge.engine import MemoryEngine, open_engine
from hindsight.mcp_edge.http import serving_mcp_http
from hindsight.mcp_edge.service import memory_service_spec
from hindsight.runtime.auth import Grants
from hindsight.runtime.embedded import free_port
from hindsight.runtime.server import ServiceSpec
from hindsight.runtime.testing import serving
from tests.integration.mesh import layer_mesh

PETS = [
    ("p1", "Caroline", "I adopted a golden retriever puppy named Biscuit last weekend.", "1"),
    ("p2", "Melanie", "That is lovely! How is Biscuit settling in?", "1"),
    ("p3", "Caroline", "My sister is moving to Lisbon for a job at a robotics startup.", "1"),
    ("p4", "Melanie", "I ran my first half marathon in Rotterdam this spring.", "2"),
    ("p5", "Caroline", "The quarterly report is due on the fourteenth of March.", "2"),
]
CHINESE = [
    ("c1", "user", "周末我们全家去杭州西湖划船了。", "a"),
    ("c2", "user", "妈妈喜欢喝龙井茶，不喜欢咖啡。", "a"),
    ("c3", "user", "弟弟在深圳的一家科技公司做软件工程师。", "b"),
]
QUERIES = {
    "pets": [
        ("q1", "Where did Melanie run her first half marathon?", "single-hop", ["p4"]),
        ("q2", "What is the name of Caroline's puppy?", "single-hop", ["p1", "p2"]),
        ("q3", "Where is Caroline's sister moving?", "adversarial", ["p3"]),
    ],
    "家": [("q4", "弟弟在哪里工作？", "simple", ["c3"])],
}


def _dataset() -> dict[str, object]:
    def messages(rows: list[tuple[str, str, str, str]], day: int) -> list[dict[str, str]]:
        return [
            {"id": i, "speaker": s, "text": t, "session": se, "time": f"2024-05-0{day}T10:00:0{n}"}
            for n, (i, s, t, se) in enumerate(rows)
        ]

    def queries(name: str) -> list[dict[str, object]]:
        return [{"id": i, "text": t, "category": c, "gold": g} for i, t, c, g in QUERIES[name]]

    return {
        "name": "tiny",
        "namespaces": [
            {"id": "pets", "messages": messages(PETS, 1), "queries": queries("pets")},
            {"id": "家", "messages": messages(CHINESE, 2), "queries": queries("家")},
        ],
    }


@dataclass(frozen=True)
class Edge:
    grpc_address: str
    mcp_url: str


@contextlib.asynccontextmanager
async def _memory_service(engine: MemoryEngine) -> AsyncIterator[ServiceSpec]:
    yield memory_service_spec(engine)


@pytest.fixture(scope="module")
async def edge(
    database_url: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Edge]:
    """Every layer and the edge (gRPC and MCP over HTTP), as the benchmark's embedded mesh runs them, with
    no relevance floor: these tests check the harness (every query scored, banks apart), and a bank of five
    messages holds too little near a question for a weakly related gold turn to clear the floor alone."""
    unfloored = {"relevance_floor": 0.0, "relevance_support": 0.0}
    async with (
        layer_mesh(database_url, redis_url, tmp_path_factory.mktemp("qdrant")) as layers,
        open_engine(layers.edge_settings(**unfloored)) as engine,
        serving(lambda: _memory_service(engine)) as server,
        serving_mcp_http(
            engine,
            layers.edge_settings(mcp_port=free_port(), default_bank="bench", **unfloored),
            Grants.off(),
        ) as url,
    ):
        yield Edge(f"127.0.0.1:{server.port}", url)


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(_dataset(), ensure_ascii=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("transport", ["grpc", "mcp"])
async def test_every_namespace_gets_a_fresh_bank_and_every_query_is_scored(
    edge: Edge, data_file: Path, transport: str
) -> None:
    options = Options(transport=transport, batch_size=2, details=True)
    [result] = await run_benchmark([load_dataset(data_file)], edge.grpc_address, edge.mcp_url, options)
    assert (result.namespaces, result.messages, result.queries) == (2, 8, 4)
    assert result.hindsight.counts == {"single-hop": 2, "adversarial": 1, "simple": 1}
    assert result.hindsight.overall_count == 3
    by_query = {row["query"]: row for row in result.details}
    assert by_query["q1"]["hindsight"][0] == "p4"
    assert by_query["q4"]["hindsight"][0] == "c3"
    # Banks are isolated: a namespace's recall never returns another namespace's messages.
    assert set(by_query["q4"]["hindsight"]) <= {"c1", "c2", "c3"}
    assert set(by_query["q1"]["hindsight"]) <= {p[0] for p in PETS}
    # The context the edge assembled, at each budget, holds the top gold turn's own line.
    assert result.context.count == 3  # the queries of overall: adversarial left out, as R@k does
    assert by_query["q1"]["context_recall"] == {"500": 1.0, "1000": 1.0, "2000": 1.0}
    assert "p4" in by_query["q1"]["context_ids"]["500"]
    contexts = result.context.overall()
    assert 0 < contexts["500"] <= contexts["1000"] <= contexts["2000"] <= 1
    assert result.context_recalls_differing == 0
    assert result.hindsight.overall()["R@10"] == 1.0
    assert result.bm25.overall()["R@10"] == 1.0
    assert len(result.recall_ms) == 4 and result.retain_per_s > 0
    assert result.partial == 0


async def test_the_command_prints_the_table_and_writes_the_json_and_a_chart(
    edge: Edge, data_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "results" / "r.json"
    args = build_parser().parse_args(
        [
            *("bench", "retrieval", "--data", str(data_file), "--address", edge.grpc_address),
            *("--json", str(report), "--limit", "1", "--no-progress"),
        ]
    )
    assert await asyncio.to_thread(args.run, args) == 0
    [entry] = json.loads(report.read_text())["files"]
    assert entry["name"] == "tiny" and entry["namespaces"] == 1 and entry["queries"] == 3
    assert set(entry["overall"]) == {"R@5", "R@10", "NDCG@10"}
    assert (report.parent / "retrieval-tiny.png").is_file()
    assert "| tiny | 2 |" in capsys.readouterr().out


def _dated_dataset() -> dict[str, object]:
    """Two near-identical messages a day apart, asked about "yesterday": the time of asking decides."""

    def namespace(prefix: str, asked: str | None) -> dict[str, object]:
        texts = ("We reviewed the quarterly budget.", "We reviewed the hiring budget.")
        messages = [
            {"id": f"{prefix}{n + 1}", "speaker": "Dana", "text": text, "time": f"2024-03-{30 + n}T10:00:00"}
            for n, text in enumerate(texts)
        ]
        query: dict[str, object] = {"id": f"q-{prefix}", "text": "Which budget did we review yesterday?"}
        query |= {"category": "temporal", "gold": [f"{prefix}2"], **({"time": asked} if asked else {})}
        return {"id": prefix, "messages": messages, "queries": [query]}

    return {"name": "dated", "namespaces": [namespace("m", "2024-04-01T09:00:00"), namespace("n", None)]}


@pytest.mark.parametrize("transport", ["grpc", "mcp"])
async def test_each_query_is_asked_at_its_time_in_the_data_or_at_its_namespace_last_message(
    edge: Edge, tmp_path: Path, transport: str
) -> None:
    path = tmp_path / "dated.json"
    path.write_text(json.dumps(_dated_dataset()), encoding="utf-8")
    runs = {
        mode: await run_benchmark(
            [load_dataset(path)],
            edge.grpc_address,
            edge.mcp_url,
            Options(transport=transport, details=True, query_time=mode),
        )
        for mode in ("dataset", "clock")
    }
    [asked], [clocked] = runs["dataset"], runs["clock"]
    by_query = {row["query"]: row for row in asked.details}
    assert by_query["q-m"]["asked_at"] == "2024-04-01T09:00:00+00:00"
    assert by_query["q-n"]["asked_at"] == "2024-03-31T10:00:00+00:00"  # its last message
    assert asked.query_time_sources == {"query": 1, "last_message": 1}
    # Asked on 1 April, "yesterday" is 31 March: the hiring review, which the clock's today does not find.
    assert by_query["q-m"]["hindsight"][0] == "m2"
    assert {row["query"]: row for row in clocked.details}["q-m"]["hindsight"][0] == "m1"
    assert clocked.query_time_sources == {"clock": 2}
    assert asked.first_gold[0] == 1 and clocked.first_gold[0] == 2


async def test_mesh_settings_are_refused_for_a_running_edge(edge: Edge, data_file: Path) -> None:
    args = build_parser().parse_args(
        [*("bench", "retrieval", "--data", str(data_file), "--address", edge.grpc_address), "--llm"]
    )
    assert await asyncio.to_thread(args.run, args) == 2
