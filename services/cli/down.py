"""``hindsight down``: stop the mesh running on a home, however it was started (``up`` or ``mcp``).

The supervisor named in ``mesh.json`` gets SIGTERM, as a Ctrl-C would: it stops the edge, the layers and
the stores in order and removes ``mesh.json``. If it has not exited after the grace period it gets SIGKILL
(its services then stop with their process groups' supervisor gone; the next ``up`` stops any leftovers).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import psutil


def add_command(commands: Any) -> None:
    """Register ``down`` on the ``hindsight`` sub-command parser."""
    down = commands.add_parser("down", help="stop the mesh running on this home")
    down.add_argument(
        "--home", type=Path, default=None, help="data directory (default: $HINDSIGHT_HOME or ~/.hindsight)"
    )
    down.add_argument(
        "--grace", type=float, default=60.0, help="seconds the mesh gets to stop before it is killed"
    )
    down.set_defaults(run=run)


def stop_mesh(home: Path, grace: float) -> bool:
    """Stop the mesh on ``home``; False when none was running. Returns once the supervisor is gone."""
    from hindsight.runtime.home import MESH_FILE, read_mesh

    info = read_mesh(home)  # checks the pid's start time: a reused pid is never signalled
    if info is None:
        return False
    from hindsight.runtime.embedded import wait_until_gone

    try:
        supervisor = psutil.Process(info.pid)
        supervisor.terminate()
        if not wait_until_gone(supervisor, grace):
            supervisor.kill()
            wait_until_gone(supervisor, 10.0)
    except psutil.NoSuchProcess:
        pass
    deadline = time.monotonic() + 5.0
    while (home / MESH_FILE).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    (home / MESH_FILE).unlink(missing_ok=True)  # a killed supervisor could not remove it
    return True


def run(args: argparse.Namespace) -> int:
    """Entry of ``hindsight down``: 0 when a mesh was stopped, 1 when none ran on the home."""
    from hindsight.runtime.home import resolve_home

    home = resolve_home(args.home)
    if not stop_mesh(home, args.grace):
        print(f"no mesh running on {home}")
        return 1
    print(f"mesh on {home} stopped")
    return 0
