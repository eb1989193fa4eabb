"""The Grafana dashboard in the repository reads only metrics the services export: every PromQL expression
of every panel (and of the template variables) names series found in a scrape of a real service, and every
metric the services define has a panel."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
from hindsight.runtime.embedded import free_port
from hindsight.runtime.testing import channel_to, serving
from hindsight.working.service import open_service as open_working
from hindsight.working.settings import WorkingSettings
from tests.integration.prometheus import scrape

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "hindsight.json"
PROMQL_WORDS = {
    # functions, aggregations and keywords the panels use; anything else outside braces is a series name
    *("sum", "max", "min", "avg", "count", "rate", "irate", "increase", "changes", "histogram_quantile"),
    *(
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "offset",
        "bool",
        "and",
        "or",
        "unless",
    ),
    "label_values",
}


def _expressions(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, PromQL) for every panel target and query variable."""
    found = [
        (panel["title"], target["expr"])
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
    ]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            found.append((f"${variable['name']}", variable["query"]["query"]))
    return found


def series_named(expression: str) -> set[str]:
    """The series names an expression reads (label matchers, groupings, ranges and variables stripped)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expression)  # strings (label values)
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges
    text = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", text)  # grouping labels
    text = re.sub(
        r"label_values\(\s*([a-zA-Z_:][\w:]*)\s*,[^)]*\)", r"\1", text
    )  # label_values(metric, label)
    text = re.sub(r"\$\w+", "", text)
    words = set(re.findall(r"\b[a-zA-Z_:][\w:]*\b", text))
    return words - PROMQL_WORDS


def test_the_stripping_leaves_only_series_names() -> None:
    expression = (
        "histogram_quantile(0.99, sum by (le, grpc_method) "
        '(rate(m_bucket{grpc_code!="OK"}[$__rate_interval])))'
    )
    assert series_named(expression) == {"m_bucket"}
    assert series_named("label_values(a_count, grpc_service)") == {"a_count"}


@pytest.fixture
def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


async def test_every_panel_reads_series_a_real_service_exports_and_every_metric_has_a_panel(
    dashboard: dict[str, Any], redis_url: str, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    monkeypatch.setenv("HINDSIGHT_METRICS_PORT", str(port))
    settings = WorkingSettings(redis_url=redis_url, prefix=f"t:{unique_name}")
    async with serving(lambda: open_working(settings)) as server, channel_to(server) as channel:
        stub = working_pb2_grpc.WorkingMemoryServiceStub(channel)
        await stub.GetWindow(working_pb2.GetWindowRequest(bank_id=unique_name, session_id="s1"))
        exported = (await scrape(port)).series_names()

    assert "hindsight_grpc_server_handling_seconds_bucket" in exported
    used: set[str] = set()
    for where, expression in _expressions(dashboard):
        names = series_named(expression)
        assert names, f"{where}: no series in {expression!r}"
        missing = names - exported
        assert not missing, f"{where}: {sorted(missing)} is not exported by the services"
        used |= names
    defined = {name for name in exported if name.startswith("hindsight_")}
    families = {re.sub(r"_(bucket|count|sum|total)$", "", name) for name in defined}
    uncovered = {f for f in families if not any(u == f or u.startswith(f + "_") for u in used)}
    assert not uncovered, f"metrics without a panel: {sorted(uncovered)}"


def test_every_panel_has_a_unique_place_a_datasource_and_a_description(dashboard: dict[str, Any]) -> None:
    places = set()
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        assert (grid["x"], grid["y"]) not in places, panel["title"]
        places.add((grid["x"], grid["y"]))
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["description"], panel["title"]
        assert len({t["refId"] for t in panel["targets"]}) == len(panel["targets"]), panel["title"]
    titles = " ".join(p["title"].lower() for p in dashboard["panels"])
    for topic in ("rate", "p50", "p95", "p99", "error", "backlog", "lag", "batch", "queue", "restarts"):
        assert topic in titles, topic
