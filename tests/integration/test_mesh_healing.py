"""A mesh that heals: ``hindsight up`` restarts a layer or an embedded store that was killed, on the same
address, and counts it in ``hindsight status``; a layer that keeps crashing makes it give up, saying why.

Each test runs a real ``hindsight up`` (see ``test_mesh``) and kills its processes with SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

import psutil
import pytest

from hindsight.cli.layers import LAYERS
from hindsight.cli.mesh import READY_LINE, CrashHistory, SupervisorSettings
from hindsight.client import MemoryClient, Turn
from hindsight.client.errors import HindsightError
from tests.integration import test_mesh
from tests.integration.test_mesh import STOP_TIMEOUT, start_up, stop_for_sure

environment = test_mesh.environment  # a fresh home, no store settings
shared_stores = test_mesh.shared_stores  # the test run's PostgreSQL and Redis under names of the test's own

BACK_TIMEOUT = 120.0
"""Seconds a killed process gets to be serving again (a layer imports its code again: seconds of CPU)."""
FAST_RESTARTS = {
    "HINDSIGHT_UP_RESTART_BACKOFF_SECONDS": "0.2",
    "HINDSIGHT_UP_RESTART_MAX_BACKOFF_SECONDS": "1",
}


def status(env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "hindsight.cli.main", "status", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    state: dict[str, Any] = json.loads(done.stdout)
    return state


def wait_for_status(
    env: dict[str, str], what: str, check: Any, timeout: float = BACK_TIMEOUT
) -> dict[str, Any]:
    """The first ``status --json`` for which ``check(state)`` holds; fails after ``timeout``."""
    deadline = time.monotonic() + timeout
    state: dict[str, Any] = {}
    while time.monotonic() < deadline:
        state = status(env)
        if check(state):
            return state
        time.sleep(0.5)
    pytest.fail(f"{what}: not within {timeout:.0f}s; last status: {json.dumps(state, indent=1)}")


def retried(call: Any, timeout: float = BACK_TIMEOUT) -> Any:
    """``call()``'s first truthy answer: the mesh reconnects to a restarted process within ``timeout``
    (until then a call fails, or a recall is partial)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if answer := call():
                return answer
        except HindsightError:
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            pytest.fail(f"no answer within {timeout:.0f}s")
        time.sleep(0.5)


def found_by_meaning(client: MemoryClient, bank: str, text: str, turn_id: str) -> bool:
    reply = client.recall(bank, text, top_k=5, layers=["semantic"])
    cited = {tid for memory in reply.memories for tid in (*memory.meta.source_turn_ids, memory.id)}
    return not reply.partial and turn_id in cited


def test_a_killed_layer_comes_back_on_its_address_with_a_new_pid_and_recall_works_again(
    shared_stores: dict[str, str],
) -> None:
    env = shared_stores | FAST_RESTARTS
    mesh = start_up(env)
    try:
        mesh.wait_for_line(READY_LINE)
        before = status(env)
        assert all(service["restarts"] == 0 for service in before["services"].values())
        assert all(service["supervisor"] == "running" for service in before["services"].values())
        old = before["services"]["semantic"]
        with MemoryClient.from_home(mesh.home) as client:
            text = "The lighthouse keeper paints the railings green every April."
            client.retain("healing", Turn(text, id="turn-before"))
            assert found_by_meaning(client, "healing", text, "turn-before")

            os.kill(old["pid"], signal.SIGKILL)
            after = wait_for_status(
                env,
                "semantic back",
                lambda s: (
                    s["services"]["semantic"]["restarts"] == 1
                    and s["services"]["semantic"]["state"] == "SERVING"
                    and s["services"]["semantic"]["supervisor"] == "running"
                ),
            )
            back = after["services"]["semantic"]
            assert back["address"] == old["address"]
            assert back["pid"] != old["pid"] and back["alive"] and psutil.pid_exists(back["pid"])
            assert not psutil.pid_exists(old["pid"]) or psutil.Process(old["pid"]).status() == "zombie"
            others = {name: s["restarts"] for name, s in after["services"].items() if name != "semantic"}
            assert others == {layer.name: 0 for layer in LAYERS if layer.name != "semantic"}

            assert retried(lambda: found_by_meaning(client, "healing", text, "turn-before"))
            second = "Every second Tuesday the choir rehearses in the old boathouse."
            retried(lambda: client.retain("healing", Turn(second, id="turn-after")))
            assert retried(lambda: found_by_meaning(client, "healing", second, "turn-after"))
        assert mesh.process.poll() is None  # the mesh never stopped
        errors = (mesh.home / "up.stderr").read_text(errors="replace")
        assert "semantic exited with code -9; restarting it in 0.2s (restart 1)" in errors
        logged = [json.loads(line) for line in errors.splitlines() if line.startswith("{")]
        restart = next(entry for entry in logged if entry["msg"] == "process exited; restarting it")
        assert restart["level"] == "error" and restart["target"] == "semantic" and restart["code"] == -9
        assert restart["tail"] and restart["restarts"] == 0 and restart["restart_in_s"] == 0.2
    finally:
        stop_for_sure(mesh)
    assert mesh.process.returncode == 0


def _occupy(port: int, timeout: float = 5.0) -> socket.socket:
    """Listen on ``port`` without SO_REUSEPORT, so a gRPC server cannot bind it."""
    deadline = time.monotonic() + timeout
    while True:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen()
            return sock
        except OSError:
            sock.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def test_a_layer_that_keeps_crashing_makes_the_mesh_give_up_and_say_why(
    shared_stores: dict[str, str],
) -> None:
    env = shared_stores | {
        "HINDSIGHT_UP_RESTART_BACKOFF_SECONDS": "1",
        "HINDSIGHT_UP_CRASH_LIMIT": "3",
        "HINDSIGHT_UP_CRASH_WINDOW_SECONDS": "600",
    }
    mesh = start_up(env)
    try:
        mesh.wait_for_line(READY_LINE)
        working = status(env)["services"]["working"]
        family = mesh.family()
        os.kill(working["pid"], signal.SIGKILL)
        # Its port taken by someone else: every restart fails at once.
        blocker = _occupy(int(working["address"].rsplit(":", 1)[1]))
        try:
            assert mesh.process.wait(timeout=BACK_TIMEOUT + STOP_TIMEOUT) == 1
        finally:
            blocker.close()
        errors = (mesh.home / "up.stderr").read_text(errors="replace")
        assert "working exited 3 times within 600s" in errors
        assert "giving up on it (HINDSIGHT_UP_CRASH_LIMIT=3)" in errors
        assert "restarting it in 1.0s (restart 1)" in errors and "restarting it in 2.0s (restart 2)" in errors
        assert "could not bind" in errors or "Failed to bind" in errors  # the failed restarts' own output
        survivors = [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        assert survivors == []
        assert not (mesh.home / "mesh.json").exists()
    finally:
        stop_for_sure(mesh)


def test_killed_embedded_postgres_and_valkey_are_restarted_on_their_ports(
    environment: dict[str, str],
) -> None:
    env = environment | FAST_RESTARTS
    mesh = start_up(env)
    try:
        mesh.wait_for_line(READY_LINE)
        stores = status(env)["stores"]
        assert set(stores) == {"postgres", "valkey"}
        assert all(store["restarts"] == 0 and store["alive"] for store in stores.values())
        with MemoryClient.from_home(mesh.home) as client:
            client.retain("stores", Turn("The ferry to the island leaves at seven.", id="turn-1"))
            for number, name in enumerate(("postgres", "valkey"), start=2):
                old = stores[name]
                os.kill(old["pid"], signal.SIGKILL)
                state = wait_for_status(
                    env,
                    f"{name} back",
                    lambda s, name=name: (
                        s["stores"][name]["restarts"] == 1
                        and s["stores"][name]["supervisor"] == "running"
                        and s["stores"][name]["alive"]
                    ),
                )
                back = state["stores"][name]
                assert back["address"] == old["address"] and back["pid"] != old["pid"]
                turn = Turn(f"Note {number}: the {name} server came back.", id=f"turn-{number}")
                retried(lambda turn=turn: client.retain("stores", turn))
                stores = state["stores"]
            # Every turn is still there, from the system of record and from the session window.
            page = retried(lambda: client.list_recent("stores", limit=10))
            assert {turn.id for turn in page.turns} == {"turn-1", "turn-2", "turn-3"}
        final = status(env)
        assert {name: s["restarts"] for name, s in final["stores"].items()} == {"postgres": 1, "valkey": 1}
        assert mesh.process.poll() is None
    finally:
        stop_for_sure(mesh)
    assert mesh.process.returncode == 0


def test_restarts_wait_longer_after_each_recent_crash_and_the_limit_gives_up() -> None:
    settings = SupervisorSettings(backoff=0.5, max_backoff=3.0, crash_limit=5, crash_window=60.0)
    crashes = CrashHistory(settings)
    assert [crashes.record(at) for at in (0.0, 1.0, 2.0, 3.0)] == [0.5, 1.0, 2.0, 3.0]  # capped at 3
    assert crashes.record(4.0) is None  # the fifth exit within the window
    calm = CrashHistory(settings)
    assert [calm.record(at) for at in (0.0, 61.0, 122.0, 183.0, 244.0, 305.0)] == [0.5] * 6  # spread out


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("HINDSIGHT_UP_CRASH_LIMIT", "0"),
        ("HINDSIGHT_UP_CRASH_LIMIT", "many"),
        ("HINDSIGHT_UP_RESTART_BACKOFF_SECONDS", "-1"),
        ("HINDSIGHT_UP_CRASH_WINDOW_SECONDS", "0"),
    ],
)
def test_a_bad_supervisor_setting_is_refused_naming_it_before_anything_starts(
    environment: dict[str, str], variable: str, value: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hindsight.cli.main", "up", "--mcp-port", "0"],
        env=environment | {variable: value},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert variable in done.stderr
    assert not os.path.exists(environment["HINDSIGHT_HOME"])  # nothing written
