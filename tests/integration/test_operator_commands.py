"""``hindsight status``, ``doctor`` and ``down`` against a real ``hindsight up``, run as a user runs them.

The mesh uses the test run's PostgreSQL and Redis under names of this test's own (see ``shared_stores``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import psutil
import pytest

from hindsight.cli.layers import LAYERS
from hindsight.cli.mesh import READY_LINE, read_mesh
from tests.integration import test_mesh
from tests.integration.test_mesh import STOP_TIMEOUT, background_mesh, start_up, stop_for_sure

environment = test_mesh.environment  # the fixtures of the mesh tests: a fresh home, the shared stores
shared_stores = test_mesh.shared_stores


def hindsight(env: dict[str, str], *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hindsight.cli.main", *arguments],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_status_doctor_and_down_against_a_running_mesh(shared_stores: dict[str, str]) -> None:
    mesh = start_up(shared_stores)
    try:
        mesh.wait_for_line(READY_LINE)
        info = read_mesh(mesh.home)
        assert info is not None
        mesh.home.chmod(0o700)  # as `up` makes it (the test made it first, for the stderr file)

        status = hindsight(shared_stores, "status", "--json")
        assert status.returncode == 0, status.stderr
        state = json.loads(status.stdout)
        assert state["running"] and state["pid"] == mesh.process.pid
        assert set(state["services"]) == {layer.name for layer in LAYERS}
        for name, service in state["services"].items():
            assert service["state"] == "SERVING", name
            assert service["alive"] and service["restarts"] == 0
            assert service["pid"] == info.children[name] and service["address"] == info.addresses[name]
        assert isinstance(state["outbox_backlog"], dict)
        assert all(isinstance(count, int) and count >= 0 for count in state["outbox_backlog"].values())
        assert set(state["store_bytes"]) == {"postgres", "valkey", "qdrant"}
        assert state["store_bytes"]["qdrant"] > 0  # the embedded Qdrant Edge keeps its files in the home
        assert state["store_bytes"]["postgres"] == 0  # PostgreSQL is the test run's, not embedded

        text = hindsight(shared_stores, "status")
        assert text.returncode == 0, text.stderr
        assert f"mesh running on {mesh.home}" in text.stdout
        assert "outbox backlog:" in text.stdout and "embedded stores:" in text.stdout
        assert sum("SERVING" in line for line in text.stdout.splitlines()) == len(LAYERS)

        healthy = hindsight(shared_stores, "doctor", "--json", "--mcp-port", info.mcp_url.split(":")[2][:-4])
        report = json.loads(healthy.stdout)
        assert healthy.returncode == 0, [check for check in report["checks"] if not check["ok"]]
        assert report["ok"]
        names = {check["name"] for check in report["checks"]}
        assert names >= {"python", "models", "mcp_port", "permissions", "tokens", "postgres", "clock"}
        assert names >= {"schema_episodic", "schema_reflect"}
        assert "same SHA-256" in next(c["detail"] for c in report["checks"] if c["name"] == "models")

        credentials = mesh.home / "credentials.json"
        credentials.chmod(0o644)
        exposed = hindsight(shared_stores, "doctor")
        assert exposed.returncode == 1
        assert "FAIL permissions" in exposed.stdout
        assert f"fix: chmod 600 {credentials}" in exposed.stdout
        credentials.chmod(0o600)

        down = hindsight(shared_stores, "down")
        assert down.returncode == 0, down.stdout + down.stderr
        assert "stopped" in down.stdout
        assert mesh.process.wait(timeout=STOP_TIMEOUT) == 0
        assert not (mesh.home / "mesh.json").exists()
        assert [pid for pid in info.children.values() if psutil.pid_exists(pid)] == []

        again = hindsight(shared_stores, "down")
        assert again.returncode == 1 and "no mesh running" in again.stdout
        stopped = hindsight(shared_stores, "status", "--json")
        assert stopped.returncode == 1 and json.loads(stopped.stdout)["running"] is False
    finally:
        stop_for_sure(mesh)


def test_down_stops_a_mesh_started_in_the_background_by_hindsight_mcp(
    shared_stores: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, _, supervisor = background_mesh(shared_stores, monkeypatch)
    family = supervisor.children(recursive=True)
    try:
        down = hindsight(dict(os.environ), "down", "--home", str(home))
        assert down.returncode == 0, down.stdout + down.stderr
        assert not supervisor.is_running() or supervisor.status() == psutil.STATUS_ZOMBIE
        assert [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE] == []
        assert read_mesh(home) is None and not (home / "mesh.json").exists()
    finally:
        if supervisor.is_running():
            supervisor.send_signal(2)
            psutil.wait_procs([supervisor], timeout=STOP_TIMEOUT)
