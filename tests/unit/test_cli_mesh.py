"""The supervisor's bookkeeping: which mesh is running on a home, one mesh per home, the command line."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import psutil
import pytest

from hindsight.cli.layers import BY_NAME, LAYERS
from hindsight.cli.main import build_parser
from hindsight.cli.mesh import MeshInfo, _HomeLock, _port_is_free, read_mesh, resolve_home


def _info(pid: int, started: float, home: Path) -> MeshInfo:
    return MeshInfo(
        pid=pid,
        pid_started=started,
        home=str(home),
        addresses={layer.name: f"127.0.0.1:{5000 + i}" for i, layer in enumerate(LAYERS)},
        mcp_url="http://127.0.0.1:8765/mcp",
        database_url="postgresql://postgres:secret@127.0.0.1:5432/hindsight",
        redis_url="redis://127.0.0.1:6379/0",
        qdrant=str(home / "qdrant"),
        children={"working": 4242},
        startup_seconds=3.2,
    )


def test_read_mesh_returns_the_mesh_whose_supervisor_is_alive(tmp_path: Path) -> None:
    info = _info(os.getpid(), psutil.Process().create_time(), tmp_path)
    (tmp_path / "mesh.json").write_text(info.to_json())
    assert read_mesh(tmp_path) == info
    assert read_mesh(tmp_path).memory_address == info.addresses["mcp_edge"]  # type: ignore[union-attr]


def test_read_mesh_ignores_a_file_whose_pid_now_belongs_to_another_process(tmp_path: Path) -> None:
    reused = _info(os.getpid(), psutil.Process().create_time() - 3600, tmp_path)
    (tmp_path / "mesh.json").write_text(reused.to_json())
    assert read_mesh(tmp_path) is None


def test_read_mesh_ignores_a_missing_or_damaged_file(tmp_path: Path) -> None:
    assert read_mesh(tmp_path) is None
    (tmp_path / "mesh.json").write_text("{not json")
    assert read_mesh(tmp_path) is None


def test_only_one_supervisor_can_hold_a_home_and_the_lock_frees_on_release(tmp_path: Path) -> None:
    first, second = _HomeLock(tmp_path), _HomeLock(tmp_path)
    assert first.acquire()
    try:
        assert not second.acquire()
        first.record({"working": (1234, 5.0)})
    finally:
        first.release()
    assert second.acquire()
    second.release()


def test_the_home_comes_from_the_argument_then_the_environment_then_the_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HINDSIGHT_HOME", str(tmp_path / "from-env"))
    assert resolve_home(tmp_path / "given") == tmp_path / "given"
    assert resolve_home() == tmp_path / "from-env"
    monkeypatch.delenv("HINDSIGHT_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_home() == tmp_path / ".hindsight"


def test_a_port_someone_listens_on_is_not_free() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        assert not _port_is_free(busy.getsockname()[1])


def test_the_command_line_knows_every_layer_and_the_defaults_of_up() -> None:
    parser = build_parser()
    assert parser.parse_args(["serve", "episodic"]).layer == "episodic"
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "nonsense"])
    up = parser.parse_args(["up"])
    assert (up.mcp_port, up.timeout) == (8765, 180.0)
    check = parser.parse_args(["healthcheck", "--address", "127.0.0.1:1", "--service", "working"])
    assert BY_NAME[check.service].service == "hindsight.working.v1.WorkingMemoryService"
