"""The fault scenarios of ``hindsight bench faults``, shortened: under a small load, each layer killed, the
embedded PostgreSQL and Valkey killed, the semantic layer frozen; no acknowledged retain is lost and no
recall fails (a partial answer is allowed).

One private embedded mesh for the module (its own PostgreSQL and Valkey: a store restart is a real
restart of the mesh's own process), the scenarios in the bench's order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight.bench.faults import SCENARIOS, FaultPlan, Scenario, run_scenario
from hindsight.bench.faults_load import LoadPlan
from hindsight.bench.mesh_process import embedded_mesh
from hindsight.bench.provenance import mesh_environment
from hindsight.cli.credentials import client_token
from hindsight.cli.layers import EDGE
from hindsight.cli.mesh import MeshInfo, read_mesh

PLAN = FaultPlan(
    load=LoadPlan(agents=3),
    before_s=2.0,
    after_s=3.0,
    freeze_s=3.0,
    recovery_timeout_s=120.0,
    catch_up_timeout_s=60.0,
)


@pytest.fixture(scope="module")
def mesh() -> Iterator[MeshInfo]:
    environ = mesh_environment({"HINDSIGHT_UP_RESTART_BACKOFF_SECONDS": "0.2"})
    with embedded_mesh(environ=environ) as (info, _):
        yield info


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[scenario.name for scenario in SCENARIOS])
def test_nothing_acknowledged_is_lost_and_recall_keeps_answering(mesh: MeshInfo, scenario: Scenario) -> None:
    token = client_token(Path(mesh.home))
    result = asyncio.run(run_scenario(mesh, token, scenario, PLAN, say=lambda _: None))

    assert result.acknowledged > 0 and result.recalls > 0
    assert result.lost == 0, (result.missing_by_id, result.missing_by_meaning)
    assert result.recall_errors == 0, result.error_kinds
    assert result.catch_up_s is not None, f"the backlog of {result.backlog} turns never became searchable"
    if scenario.target != EDGE:
        assert result.edge_down_errors == 0
    now = read_mesh(Path(mesh.home))
    assert now is not None  # the mesh healed instead of stopping
    if scenario.kind == "kill":
        restarts = now.stores[scenario.target]["restarts"] if scenario.target in now.stores else None
        assert (restarts if restarts is not None else now.restarts[scenario.target]) == 1
