"""A private ``hindsight up`` for one benchmark run, and the peak memory of its processes.

The mesh runs as a subprocess on a temporary ``HINDSIGHT_HOME`` (so a benchmark never touches the
user's memories), on a free MCP port; it is stopped with SIGINT, as a user's Ctrl-C would.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import psutil

from hindsight.cli.mesh import MESH_FILE, READY_LINE, MeshError, MeshInfo, read_mesh

log = logging.getLogger("hindsight.bench.mesh")

STOP_TIMEOUT = 60.0
TAIL_LINES = 200


class PeakMemory:
    """Samples the summed RSS of a process tree in a background thread and keeps the peak."""

    def __init__(self, root_pid: int, interval: float = 0.25) -> None:
        self._root = psutil.Process(root_pid)
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-peak-rss", daemon=True)
        self.peak_bytes = 0

    def sample(self) -> int:
        """Summed RSS, in bytes, of the root and every descendant right now."""
        total = 0
        with contextlib.suppress(psutil.Error):
            processes = [self._root, *self._root.children(recursive=True)]
            for process in processes:
                with contextlib.suppress(psutil.Error):
                    total += process.memory_info().rss
        self.peak_bytes = max(self.peak_bytes, total)
        return total

    def reset(self) -> None:
        """Start a new peak from the current use."""
        self.peak_bytes = 0
        self.sample()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.sample()

    def __enter__(self) -> PeakMemory:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    @property
    def peak_mb(self) -> float:
        return self.peak_bytes / (1024 * 1024)


def _read_written_mesh(home: Path, patience: float = 10.0) -> MeshInfo | None:
    """``mesh.json`` as the mesh wrote it before its ready line, looked for again for a while: on a loaded
    machine a read that lands between two rewrites, or a slow process table, must not fail a start."""
    deadline = time.monotonic() + patience
    while True:
        info = read_mesh(home)
        if info is not None or time.monotonic() > deadline:
            if info is None:
                path = home / MESH_FILE
                what = path.read_text()[:2000] if path.exists() else "no such file"
                log.error("the ready mesh's file could not be read", extra={"mesh_file": what})
            return info
        time.sleep(0.1)


def _wait_ready(
    process: subprocess.Popen[str], home: Path, timeout: float
) -> tuple[MeshInfo, collections.deque[str]]:
    """Read ``hindsight up``'s output until its ready line; the mesh as written to ``mesh.json`` and the
    mesh's last lines of output, kept up to date."""
    assert process.stdout is not None
    lines: list[str] = []
    outcome: list[MeshInfo] = []

    def reader() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if line.startswith(READY_LINE):
                info = _read_written_mesh(home)
                if info is not None:
                    outcome.append(info)
                break

    thread = threading.Thread(target=reader, name="bench-mesh-ready", daemon=True)
    thread.start()
    thread.join(timeout)
    if not outcome:
        ready = any(line.startswith(READY_LINE) for line in lines)
        what = f"was not ready within {timeout:.0f}s"
        if ready:
            what = "said it was ready, but its mesh.json could not be read"
        raise MeshError(f"hindsight up {what} (exit code {process.poll()}):\n" + "".join(lines))
    # Keep draining its output, so a chatty mesh never blocks on a full pipe; its last lines are kept for
    # the report of a run that fails (a service restarted or exited while serving says so there).
    tail = collections.deque(lines, maxlen=TAIL_LINES)
    threading.Thread(target=lambda: tail.extend(process.stdout or ()), daemon=True).start()
    return outcome[0], tail


@contextlib.contextmanager
def embedded_mesh(
    timeout: float = 240.0, environ: Mapping[str, str] | None = None
) -> Iterator[tuple[MeshInfo, int]]:
    """Run ``hindsight up`` on a fresh temporary home; yields the mesh and the supervisor's pid.

    ``environ`` replaces this process's environment for the mesh (a suite that compares settings side
    by side passes each its own). Not under pytest's private temp base: the embedded PostgreSQL runs as
    its own system user when started as root, and must traverse the path.
    """
    with tempfile.TemporaryDirectory(prefix="hindsight-bench-") as tmp:
        home = Path(tmp) / "home"
        env = dict(os.environ if environ is None else environ, HINDSIGHT_HOME=str(home))
        command = [sys.executable, "-m", "hindsight.cli.main", "up", "--home", str(home), "--mcp-port", "0"]
        command += ["--timeout", str(timeout)]
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        try:
            info, tail = _wait_ready(process, home, timeout + 30.0)
            try:
                yield info, process.pid
            except BaseException:
                lines = tail.copy()  # one C-level copy: the drain thread may append while this reads
                print("the mesh's last lines of output:\n" + "".join(lines), file=sys.stderr, flush=True)
                raise
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
