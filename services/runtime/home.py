"""What a local mesh leaves in its home directory, read by whoever talks to it.

``hindsight up`` (the supervisor, ``hindsight.cli.mesh``) writes ``mesh.json`` while the mesh is ready and
``credentials.json`` on its first start; the client library, the command's other verbs and the benchmarks
only read them. The readers live here so that a reader never has to import the supervisor.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import psutil

MESH_FILE = "mesh.json"
"""The running mesh's addresses, in the home directory."""
CREDENTIALS_FILE = "credentials.json"
"""The generated secrets of the mesh (mode 0600), in the home directory."""
EDGE = "mcp_edge"
"""The layer that serves the ``MemoryService`` and MCP."""


def resolve_home(home: Path | str | None = None) -> Path:
    """The data directory: ``home``, else ``$HINDSIGHT_HOME``, else ``~/.hindsight``."""
    raw = home or os.environ.get("HINDSIGHT_HOME") or "~/.hindsight"
    return Path(raw).expanduser().resolve()


@dataclass
class MeshInfo:
    """A running mesh, as written to ``mesh.json``."""

    pid: int
    """Process id of the supervisor."""
    pid_started: float
    """Its start time, so that a reused pid is never mistaken for the mesh."""
    home: str
    addresses: dict[str, str]
    """gRPC address (host:port) of every service, by layer name."""
    mcp_url: str
    """MCP streamable HTTP endpoint."""
    database_url: str
    redis_url: str
    qdrant: str
    """URL of the Qdrant server, or the directory of the in-process engine (Qdrant Edge by default)."""
    children: dict[str, int] = field(default_factory=dict)
    """Process id of every service, by layer name (the current one: rewritten after each restart)."""
    startup_seconds: float = 0.0
    restarts: dict[str, int] = field(default_factory=dict)
    """Times each service was restarted by the supervisor after it exited."""
    schemas: dict[str, str] = field(default_factory=dict)
    """PostgreSQL schema of each layer that keeps tables there (episodic, reflect)."""
    states: dict[str, str] = field(default_factory=dict)
    """The supervisor's view of each service: running, starting (restarted, not serving yet),
    restarting (exited, waiting for its restart) or gave_up."""
    stores: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each embedded store (postgres, valkey): its address, pid, restarts and supervisor state."""
    metrics: dict[str, str] = field(default_factory=dict)
    """Prometheus endpoint (host:port, path /metrics) of every service, by layer name."""

    @property
    def memory_address(self) -> str:
        """Address of the gRPC ``MemoryService`` (the edge)."""
        return self.addresses[EDGE]

    def to_json(self) -> str:
        """The ``mesh.json`` text."""
        return json.dumps(asdict(self), indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> MeshInfo:
        """Parse ``mesh.json``; raises ValueError or KeyError when it is not one."""
        data = json.loads(text)
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


def started_at(pid: int) -> float | None:
    """When process ``pid`` started (None when there is none)."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def same_process(pid: int, started: float) -> bool:
    """Whether ``pid`` is still the process that started at ``started`` (pids are reused)."""
    created = started_at(pid)
    return created is not None and abs(created - started) < 1.0


def read_mesh(home: Path | str | None = None) -> MeshInfo | None:
    """The mesh running on ``home``, or None when there is none (no file, or its supervisor is gone)."""
    path = resolve_home(home) / MESH_FILE
    try:
        info = MeshInfo.from_json(path.read_text())
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return info if same_process(info.pid, info.pid_started) else None


@dataclass(frozen=True)
class Credentials:
    """The secrets a mesh runs with (generated, or from the environment)."""

    admin: str
    """The operator's token: every bank and the admin-only operations."""
    agent: str
    """The generated client token granting every bank; empty when ``HINDSIGHT_TOKENS`` replaces it."""
    internal: str
    """The mesh credential, presented by every layer to the others."""

    @property
    def for_client(self) -> str:
        """The token a local client presents: the agent token, else the admin token."""
        return self.agent or self.admin


def stored_credentials(home: Path) -> dict[str, str]:
    """The secrets ``credentials.json`` holds (empty when it is missing or damaged)."""
    try:
        data = json.loads((home / CREDENTIALS_FILE).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {key: value for key, value in data.items() if isinstance(value, str)}


def read_credentials(home: Path, environ: Mapping[str, str] | None = None) -> Credentials | None:
    """The credentials of the mesh on ``home`` (environment first), or None before the first start."""
    source = os.environ if environ is None else environ
    stored = stored_credentials(home)
    if not stored and not source.get("HINDSIGHT_ADMIN_TOKEN"):
        return None
    return Credentials(
        admin=source.get("HINDSIGHT_ADMIN_TOKEN") or stored.get("admin", ""),
        agent="" if source.get("HINDSIGHT_TOKENS") else stored.get("agent", ""),
        internal=source.get("HINDSIGHT_INTERNAL_TOKEN") or stored.get("internal", ""),
    )
