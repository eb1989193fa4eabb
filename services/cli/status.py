"""``hindsight status``: is a mesh running on this home, and how is each service doing.

It reads ``mesh.json`` and ``credentials.json``, asks the process table, each service's gRPC health,
the episodic outbox table in PostgreSQL (the mesh's ``database_url``) and the sizes of the embedded
stores' directories. gRPC and psycopg load only when a mesh runs, so importing this module stays cheap.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import psutil

STORE_DIRECTORIES = ("postgres", "valkey", "qdrant")
"""The embedded stores' directories under the home, whose sizes ``status`` reports."""
_PROBE_TIMEOUT = 3.0


def add_command(commands: Any) -> None:
    """Register ``status`` on the ``hindsight`` sub-command parser."""
    status = commands.add_parser("status", help="is a mesh running on this home; its services and tokens")
    status.add_argument(
        "--home", type=Path, default=None, help="data directory (default: $HINDSIGHT_HOME or ~/.hindsight)"
    )
    status.add_argument(
        "--tokens", action="store_true", help="also print the admin and agent tokens (they are secrets)"
    )
    status.add_argument("--json", action="store_true", help="one JSON object instead of text")
    status.set_defaults(run=run)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def directory_size(path: Path) -> int:
    """Bytes on disk of the files under ``path``, as ``du`` counts them (a store's preallocated, sparse
    files count what they use, not their length); 0 when it is missing, unreadable entries skipped."""
    total = 0
    if not path.is_dir():
        return 0
    for entry in path.rglob("*"):
        try:
            if entry.is_file() and not entry.is_symlink():
                total += entry.stat().st_blocks * 512
        except OSError:
            continue
    return total


def store_sizes(home: Path) -> dict[str, int]:
    """Bytes on disk of each embedded store under ``home`` (0 for one that is not embedded)."""
    return {name: directory_size(home / name) for name in STORE_DIRECTORIES}


def _health_state(address: str, service: str) -> str:
    """The service's gRPC health (SERVING, NOT_SERVING, ...), or UNREACHABLE."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with grpc.insecure_channel(address) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=_PROBE_TIMEOUT
            )
        except grpc.RpcError:
            return "UNREACHABLE"
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))


def outbox_backlog(database_url: str, schema: str, table: str = "outbox") -> dict[str, int] | None:
    """Outbox entries waiting for delivery (or, with ``table="outbox_dead_letters"``, in the dead-letter
    list), by target layer, read from the episodic schema in PostgreSQL (every bank at once, with no token);
    None when it cannot be read."""
    import psycopg
    from psycopg import sql

    query = sql.SQL("SELECT target, count(*) FROM {} GROUP BY target ORDER BY target").format(
        sql.Identifier(schema, table)
    )
    try:
        with psycopg.connect(database_url, connect_timeout=int(_PROBE_TIMEOUT), autocommit=True) as conn:
            return {str(target): int(count) for target, count in conn.execute(query).fetchall()}
    except psycopg.Error:
        return None


def report(home: Path, with_tokens: bool) -> dict[str, Any]:
    """What ``status`` prints, as data (the keys are documented in docs/operations.md)."""
    from hindsight.cli.credentials import public_view
    from hindsight.cli.layers import BY_NAME
    from hindsight.runtime.home import read_credentials, read_mesh

    info = read_mesh(home)
    credentials = read_credentials(home)
    state: dict[str, Any] = {"home": str(home), "running": info is not None}
    if info is not None:
        state["pid"] = info.pid
        state["mcp_url"] = info.mcp_url
        state["memory_address"] = info.memory_address
        state["startup_seconds"] = info.startup_seconds
        state["services"] = {
            name: {
                "address": address,
                "pid": pid,
                "alive": _alive(pid),
                "state": _health_state(address, BY_NAME[name].service if name in BY_NAME else ""),
                "restarts": info.restarts.get(name, 0),
                "supervisor": info.states.get(name, "running"),
                "metrics": info.metrics.get(name, ""),
            }
            for name, address in info.addresses.items()
            for pid in [info.children.get(name, 0)]
        }
        state["stores"] = {
            name: {
                "address": str(store.get("address", "")),
                "pid": int(store.get("pid", 0)),
                "alive": _alive(int(store.get("pid", 0))),
                "restarts": int(store.get("restarts", 0)),
                "supervisor": str(store.get("state", "running")),
            }
            for name, store in info.stores.items()
        }
        schema = info.schemas.get("episodic", "episodic")
        state["outbox_backlog"] = outbox_backlog(info.database_url, schema) if info.database_url else None
        state["dead_letters"] = (
            outbox_backlog(info.database_url, schema, "outbox_dead_letters") if info.database_url else None
        )
    state["store_bytes"] = store_sizes(home)
    if with_tokens:
        state["tokens"] = public_view(credentials) if credentials else {}
    return state


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def _print_text(state: dict[str, Any]) -> None:
    if not state["running"]:
        print(f"no mesh running on {state['home']}")
    else:
        print(f"mesh running on {state['home']} (supervisor pid {state['pid']})")
        print(f"MCP endpoint:       {state['mcp_url']}")
        print(f"gRPC MemoryService: {state['memory_address']}")
        print(
            f"  {'service':<9} {'address':<16} {'pid':<7} {'process':<7} {'health':<12} "
            f"{'supervisor':<11} restarts"
        )
        rows = [*state["services"].items(), *state["stores"].items()]
        for name, service in rows:
            alive = "up" if service["alive"] else "DOWN"
            health = service.get("state", "-")  # an embedded store has no gRPC health
            print(
                f"  {name:<9} {service['address']:<16} {service['pid']:<7} {alive:<7} "
                f"{health:<12} {service['supervisor']:<11} {service['restarts']}"
            )
        backlog = state["outbox_backlog"]
        if backlog is None:
            print("outbox backlog:     unknown (PostgreSQL did not answer)")
        else:
            waiting = ", ".join(f"{layer} {count}" for layer, count in backlog.items()) or "empty"
            print(f"outbox backlog:     {waiting}")
        print(f"dead letters:       {dead_letter_line(state.get('dead_letters'))}")
    sizes = ", ".join(f"{name} {_human(size)}" for name, size in state["store_bytes"].items())
    print(f"embedded stores:    {sizes}")
    if "tokens" in state:
        if not state["tokens"]:
            print("no tokens yet: `hindsight up` makes them on its first start")
        for name, token in state["tokens"].items():
            print(f"{name} token: {token}")


def dead_letter_line(counts: dict[str, int] | None) -> str:
    """What ``status`` says of the dead-letter list."""
    if counts is None:
        return "unknown (PostgreSQL did not answer)"
    if not any(counts.values()):
        return "none"
    listed = ", ".join(f"{layer} {count}" for layer, count in counts.items())
    return f"{listed} (refused for good; see `hindsight outbox dead-letters`)"


def run(args: argparse.Namespace) -> int:
    """Entry of ``hindsight status``: 0 when a mesh runs on the home, 1 when none does."""
    from hindsight.runtime.home import resolve_home

    state = report(resolve_home(args.home), args.tokens)
    if args.json:
        json.dump(state, sys.stdout)
        print()
    else:
        _print_text(state)
    return 0 if state["running"] else 1
