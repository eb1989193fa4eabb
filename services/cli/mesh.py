"""The supervisor behind ``hindsight up``: every layer as its own process on loopback, one data directory.

``HINDSIGHT_HOME`` (default ``~/.hindsight``) holds everything: the embedded stores (``postgres/``,
``valkey/``, ``qdrant/``), each service's log (``logs/<service>.log``) and, while the mesh is ready,
``mesh.json`` with its addresses. Stores given by the environment (``DATABASE_URL``, ``REDIS_URL``,
``QDRANT_URL``) are used as they are; the missing ones are embedded.

The mesh is closed: every service needs a token (``hindsight.cli.credentials``: an admin and an agent token
made on the first start, a mesh credential the layers share), so no other local user, and no web page
through the browser, reaches the memories through a loopback port.

Start-up is parallel: the inference service (no store, slowest to warm) starts at once, the stores start
side by side, then the five other services start together; readiness is watched through each service's
gRPC health stream. Every child leads its own process group, so a Ctrl-C reaches only the supervisor,
which stops the edge first, then the layers, then the stores.

Once ready, the mesh heals: a service or an embedded store that exits is started again on the same
address (the others' channels reconnect by themselves) with the same settings, after an exponentially
growing wait, with a loud log line and a restart count in ``mesh.json`` (``hindsight status`` shows it).
Only repeated fast crashes (``HINDSIGHT_UP_CRASH_LIMIT`` exits within ``HINDSIGHT_UP_CRASH_WINDOW_SECONDS``)
make it give up: it stops everything and exits 1 saying why, never leaving a silent half-mesh.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import psutil
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hindsight.cli.credentials import Credentials, ensure_credentials, write_tokens_file
from hindsight.cli.layers import EDGE, LAYERS, Layer
from hindsight.runtime.embedded import (
    EmbeddedServer,
    EmbeddedServerError,
    free_ports,
    log_tail,
    restart_server,
    start_postgres,
    start_valkey,
    wait_until_gone,
)
from hindsight.runtime.home import MESH_FILE, MeshInfo, read_mesh, resolve_home, same_process, started_at
from hindsight.runtime.settings import SettingsError, env, load

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
READY_LINE = "hindsight ready"
"""Start of the last line ``hindsight up`` prints once every service is ready."""
LOCK_FILE = "mesh.lock"
_HEALTH_CHANNEL_OPTIONS = (
    # A service is probed before it listens; retry the connection every ~100 ms instead of gRPC's
    # default back-off (1 s, growing), which would add seconds to the start-up.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 250),
)


_STORE_POLL_SECONDS = 0.2
"""How often the supervisor looks whether an embedded store still runs (it is not an asyncio child)."""
RUNNING, STARTING, RESTARTING, GAVE_UP = "running", "starting", "restarting", "gave_up"
"""The supervisor's view of a process, as ``mesh.json`` and ``hindsight status`` show it."""


class MeshError(RuntimeError):
    """The mesh could not be started or reached."""


@dataclass(frozen=True)
class SupervisorSettings:
    """How ``hindsight up`` heals: when it restarts a process that exited, and when it gives up."""

    backoff: float = env(
        "HINDSIGHT_UP_RESTART_BACKOFF_SECONDS",
        0.5,
        "Wait before restarting a service or embedded store that exited; doubles with each recent crash.",
    )
    max_backoff: float = env(
        "HINDSIGHT_UP_RESTART_MAX_BACKOFF_SECONDS", 30.0, "Longest wait before a restart."
    )
    crash_limit: int = env(
        "HINDSIGHT_UP_CRASH_LIMIT",
        5,
        "Exits of one process within the crash window after which the mesh gives up and stops (exit 1).",
    )
    crash_window: float = env(
        "HINDSIGHT_UP_CRASH_WINDOW_SECONDS",
        60.0,
        "Seconds over which exits are counted for the crash limit and the growing back-off.",
    )

    def __post_init__(self) -> None:
        if not 0 < self.backoff <= self.max_backoff:
            raise SettingsError(
                "HINDSIGHT_UP_RESTART_BACKOFF_SECONDS must be positive and at most "
                "HINDSIGHT_UP_RESTART_MAX_BACKOFF_SECONDS"
            )
        if self.crash_limit < 1:
            raise SettingsError("HINDSIGHT_UP_CRASH_LIMIT must be at least 1")
        if self.crash_window <= 0:
            raise SettingsError("HINDSIGHT_UP_CRASH_WINDOW_SECONDS must be positive")


@dataclass
class CrashHistory:
    """The recent exits of one supervised process: they pace its restarts and say when to give up."""

    settings: SupervisorSettings
    times: list[float] = field(default_factory=list)

    def record(self, now: float) -> float | None:
        """Count an exit at ``now``; the wait before the restart, or None when the limit is reached."""
        window = self.settings.crash_window
        self.times = [moment for moment in self.times if now - moment < window] + [now]
        if len(self.times) >= self.settings.crash_limit:
            return None
        return min(self.settings.max_backoff, self.settings.backoff * 2 ** (len(self.times) - 1))


@dataclass(frozen=True)
class MeshOptions:
    """How ``hindsight up`` runs."""

    home: Path
    mcp_port: int = 8765
    """Port of the MCP endpoint; a free one is used if it is taken; 0 picks a free one."""
    timeout: float = 180.0
    """Seconds from the start until every service must be ready."""
    grace: float = 10.0
    """Seconds each service gets to stop on SIGTERM before it is killed."""
    llm: str = ""
    """"local": serve a GGUF model on loopback (``hindsight.runtime.llm_local``); every layer uses it."""
    supervisor: SupervisorSettings | None = None
    """When to restart and when to give up; None: from the environment (``HINDSIGHT_UP_*``)."""


def _lock_is_held(home: Path) -> bool:
    """Whether a supervisor holds ``home``'s lock (it is starting or running)."""
    try:
        fd = os.open(home / LOCK_FILE, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def ensure_mesh(home: Path | str | None = None, timeout: float = 180.0) -> MeshInfo:
    """The running mesh on ``home``, or a new one: ``hindsight up`` detached in the background (its output in
    ``logs/up.log``), waited for until ready. Used by the MCP stdio entry, which needs a mesh to talk to."""
    folder: Path = resolve_home(home)
    if info := read_mesh(folder):
        return info
    logs = folder / "logs"
    logs.mkdir(mode=0o700, parents=True, exist_ok=True)
    up_log = logs / "up.log"
    command = [sys.executable, "-m", "hindsight.cli.main", "up", "--home", str(folder)]
    command += ["--timeout", str(timeout)]
    with up_log.open("ab") as output:
        offset = output.tell()
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    # The mesh outlives this process by design; while we live, reap it when it ends.
    threading.Thread(target=process.wait, name="hindsight-up-reaper", daemon=True).start()
    deadline = time.monotonic() + timeout + 30.0
    while time.monotonic() < deadline:
        if info := read_mesh(folder):
            return info
        # It may have exited because another caller's mesh is starting on the same home: wait for that one.
        if process.poll() is not None and not _lock_is_held(folder):
            raise MeshError(
                f"hindsight up exited with code {process.returncode}; "
                f"last lines of {up_log}:\n{log_tail(up_log, offset=offset)}"
            )
        time.sleep(0.1)
    raise MeshError(f"the mesh in {folder} was not ready within {timeout:.0f}s; see {up_log}")


class _HomeLock:
    """An exclusive ``flock`` on ``HOME/mesh.lock`` for the life of the supervisor.

    The kernel drops it when the process dies, so a crash never leaves a stale lock. The file also
    records the children's pids, so the next supervisor can stop services a crashed one left behind.
    """

    def __init__(self, home: Path) -> None:
        self.path = home / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def previous_children(self) -> list[tuple[int, float]]:
        """(pid, start time) of the services the last supervisor recorded."""
        try:
            data = json.loads(self.path.read_text() or "{}")
            return [(int(pid), float(started)) for pid, started in data.get("children", {}).values()]
        except (OSError, ValueError, TypeError):
            return []

    def record(self, children: dict[str, tuple[int, float]]) -> None:
        assert self._fd is not None
        data = json.dumps({"pid": os.getpid(), "children": children}).encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)

    def release(self) -> None:
        if self._fd is None:
            return
        os.ftruncate(self._fd, 0)
        os.close(self._fd)  # closing the descriptor drops the lock
        self._fd = None


def _stop_leftover_services(lock: _HomeLock) -> None:
    """Stop services a crashed supervisor left running (only processes whose start time matches)."""
    leftovers = []
    for pid, started in lock.previous_children():
        if same_process(pid, started):
            with contextlib.suppress(psutil.Error):
                process = psutil.Process(pid)
                process.terminate()
                leftovers.append(process)
    if leftovers:
        pids = [process.pid for process in leftovers]
        log.warning("stopping services a previous mesh left running", extra={"pids": pids})
        deadline = time.monotonic() + 10.0
        for process in leftovers:
            if not wait_until_gone(process, max(0.0, deadline - time.monotonic())):
                with contextlib.suppress(psutil.Error):
                    process.kill()
                wait_until_gone(process, 5.0)


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the HTTP server will
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


@dataclass
class _Stores:
    """Where the services find their stores."""

    env: dict[str, str]
    database_url: str
    redis_url: str
    qdrant: str
    summary: str


@dataclass
class _Child:
    """One service process."""

    layer: Layer
    address: str
    process: asyncio.subprocess.Process
    log_path: Path
    log_offset: int
    exited: asyncio.Task[int]
    started: float
    env: dict[str, str]
    """What it was started with (without the stores' settings a gated start reads on stdin)."""

    def tail(self) -> str:
        return log_tail(self.log_path, offset=self.log_offset)


async def _until_serving(address: str, service: str) -> None:
    """Return once ``service`` at ``address`` reports SERVING on its health stream."""
    async with grpc.aio.insecure_channel(address, options=_HEALTH_CHANNEL_OPTIONS) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        request = health_pb2.HealthCheckRequest(service=service)
        while True:
            with contextlib.suppress(grpc.aio.AioRpcError):
                async for reply in stub.Watch(request, wait_for_ready=True):
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        return
            await asyncio.sleep(0.1)  # the stream ended (the server is restarting its health): watch again


def _say(message: str = "", error: bool = False) -> None:
    print(message, file=sys.stderr if error else sys.stdout, flush=True)


class _Mesh:
    """One run of ``hindsight up``."""

    def __init__(self, options: MeshOptions, lock: _HomeLock) -> None:
        self.options = options
        self.home = options.home
        self.lock = lock
        self.children: dict[str, _Child] = {}
        self.stores: list[EmbeddedServer] = []
        self.stop_requested = asyncio.Event()
        self.llm: asyncio.subprocess.Process | None = None
        self.llm_exited: asyncio.Task[int] | None = None
        self.postgres_port = 0
        self.valkey_port = 0
        self.force = asyncio.Event()
        self.mesh_file = self.home / MESH_FILE
        self.info: MeshInfo | None = None
        self.store_env: dict[str, str] = {}
        """The stores' settings the gated services got on stdin; a restarted service gets them in its env."""
        self.halt = asyncio.Event()
        """Set when supervision ends (a stop was asked, or the supervisor gave up)."""
        self.give_up_reason = ""
        self.restarts: dict[str, int] = {}
        self.states: dict[str, str] = {}
        self.crashes: dict[str, CrashHistory] = {}
        self.supervisor = options.supervisor or load(SupervisorSettings)
        self.started = time.monotonic()
        self.pid_started = started_at(os.getpid()) or time.time()
        """Start of this process: start-up times include the interpreter's, as the user waited for it."""

    def _elapsed(self) -> float:
        return time.time() - self.pid_started

    def _on_signal(self) -> None:
        if self.stop_requested.is_set():
            self.force.set()  # a second Ctrl-C: stop waiting for graceful shutdowns
        self.stop_requested.set()

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(signum, self._on_signal)
        try:
            return await self._start_and_supervise()
        finally:
            await self._shutdown()
            self.mesh_file.unlink(missing_ok=True)

    async def _start_and_supervise(self) -> int:
        _say(f"hindsight: starting {len(LAYERS)} services in {self.home}")
        *ports, mcp_port, llm_port, self.postgres_port, self.valkey_port = free_ports(len(LAYERS) + 4)
        llm_env = await self._start_llm(llm_port) if self.options.llm == "local" else {}
        mcp_port = self._mcp_port(mcp_port)
        addresses = {layer.name: f"{LOOPBACK}:{port}" for layer, port in zip(LAYERS, ports, strict=True)}
        credentials = self._credentials()
        env = self._base_env(addresses) | self._auth_env(credentials)
        edge_env = {
            "HINDSIGHT_MCP_HOST": LOOPBACK,
            "HINDSIGHT_MCP_PORT": str(mcp_port),
            "HINDSIGHT_ADMIN_TOKEN": credentials.admin,
        }
        # Everything starts now. Inference holds no store: it loads and warms its models at once. The
        # others import their code (seconds of CPU) while the stores start, then wait for the stores'
        # addresses on stdin.
        # Each service's Prometheus endpoint, on loopback like its gRPC port (listed in mesh.json).
        taken = {*ports, mcp_port, llm_port, self.postgres_port, self.valkey_port}
        spare = [port for port in free_ports(2 * len(LAYERS) + 5) if port not in taken]
        metrics = {layer.name: f"{LOOPBACK}:{port}" for layer, port in zip(LAYERS, spare, strict=False)}
        for layer in LAYERS:
            gated = layer.name != "inference"
            metrics_env = {"HINDSIGHT_METRICS_PORT": metrics[layer.name].rsplit(":", 1)[1]}
            await self._spawn(
                layer,
                addresses[layer.name],
                env | metrics_env | (edge_env if layer.name == EDGE else {}),
                gated,
            )
        try:
            stores = await self._open_stores()
        except EmbeddedServerError as exc:
            _say(f"hindsight: {exc}", error=True)
            await self._release(None)
            return 1
        if self.stop_requested.is_set():
            await self._release(None)
            return 0
        _say(f"  stores: {stores.summary}")
        self.store_env = stores.env | llm_env
        await self._release(self.store_env)
        outcome = await self._wait_until_ready()
        if outcome is None and llm_env:
            outcome = await self._wait_for_llm(llm_env["LLM_API_BASE"].removesuffix("/v1"))
        if outcome is not None:
            return outcome
        startup = self._elapsed()
        info = MeshInfo(
            pid=os.getpid(),
            pid_started=self.pid_started,
            home=str(self.home),
            addresses=addresses,
            mcp_url=f"http://{LOOPBACK}:{mcp_port}/mcp",
            database_url=stores.database_url,
            redis_url=stores.redis_url,
            qdrant=stores.qdrant,
            children={name: child.process.pid for name, child in self.children.items()},
            startup_seconds=round(startup, 3),
            metrics=metrics,
            schemas={
                "episodic": os.environ.get("HINDSIGHT_EPISODIC_SCHEMA") or "episodic",
                "reflect": os.environ.get("HINDSIGHT_REFLECT_SCHEMA") or "reflect",
            },
        )
        self.info = info
        for child in self.children.values():  # every layer answered readiness: say so before "ready"
            self.states[child.layer.name] = RUNNING
        self._publish()
        _say(f"MCP endpoint:       {info.mcp_url}")
        _say(f"gRPC MemoryService: {info.memory_address}")
        _say(f"home:               {self.home}")
        _say(f"{READY_LINE} in {startup:.1f}s (Ctrl-C to stop)")
        log.info("mesh ready", extra={"startup_seconds": info.startup_seconds, "mcp_url": info.mcp_url})
        return await self._supervise()

    async def _start_llm(self, port: int) -> dict[str, str]:
        """Start the local LLM server (its log in ``logs/llm.log``); the layers get its address at once."""
        log_path = self.home / "logs" / "llm.log"
        with log_path.open("ab") as log_file:
            self.llm = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "hindsight.runtime.llm_local",
                "--port",
                str(port),
                "--home",
                str(self.home),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=log_file,
                process_group=0,
            )
        self.llm_exited = asyncio.create_task(self.llm.wait())
        model = os.environ.get("HINDSIGHT_LLM_LOCAL_MODEL", "") or "local"
        return {
            "LLM_API_BASE": f"http://{LOOPBACK}:{port}/v1",
            "LLM_MODEL": model,
            "LLM_API_KEY": "",  # a cloud key configured for another endpoint never goes to this one
            # A CPU model writes a few tokens a second: allow a long answer unless told otherwise.
            "LLM_TIMEOUT_SECONDS": os.environ.get("LLM_TIMEOUT_SECONDS", "300"),
        }

    async def _wait_for_llm(self, base_url: str) -> int | None:
        """None once the local LLM answers its health check; else 1 (it exited or was too slow)."""
        from hindsight.runtime.llm_local import wait_until_healthy

        remaining = max(1.0, self.started + self.options.timeout - time.monotonic())
        exited = self.llm_exited
        if await wait_until_healthy(base_url, remaining, lambda: exited is not None and not exited.done()):
            _say(f"  {'llm':<9} {base_url.removeprefix('http://'):<16} ready in {self._elapsed():.1f}s")
            return None
        log_path = self.home / "logs" / "llm.log"
        _say(
            f"hindsight: the local LLM did not start; last lines of {log_path}:\n{log_tail(log_path)}",
            error=True,
        )
        return 1

    def _credentials(self) -> Credentials:
        """The mesh's tokens, generated on the first start (then printed, once) and kept in the home."""
        credentials, created = ensure_credentials(self.home)
        if created:
            _say("  new tokens (in credentials.json, mode 0600; `hindsight status --tokens` shows them):")
            _say(f"    admin token: {credentials.admin}")
            if credentials.agent:
                _say(f"    agent token: {credentials.agent}   (clients send 'Authorization: Bearer <token>')")
        return credentials

    def _auth_env(self, credentials: Credentials) -> dict[str, str]:
        """Closed whatever the environment says: every service needs a token, the layers share the mesh's."""
        return {
            "HINDSIGHT_AUTH": "required",
            "HINDSIGHT_TOKENS_FILE": str(write_tokens_file(self.home, credentials)),
            "HINDSIGHT_INTERNAL_TOKEN": credentials.internal,
        }

    def _mcp_port(self, spare: int) -> int:
        wanted = self.options.mcp_port
        if wanted == 0:
            return spare
        if _port_is_free(wanted):
            return wanted
        log.warning("MCP port is taken; using a free one", extra={"wanted": wanted, "port": spare})
        _say(f"hindsight: port {wanted} is taken; the MCP endpoint uses port {spare}", error=True)
        return spare

    def _base_env(self, addresses: dict[str, str]) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("HINDSIGHT_PORT_FILE", None)  # one file for six services would be wrong for five
        env.pop("HINDSIGHT_ADMIN_TOKEN", None)  # the edge alone gets it
        env["HINDSIGHT_HOST"] = LOOPBACK
        for layer in LAYERS:
            if layer.address_env:
                env[layer.address_env] = addresses[layer.name]
        return env

    async def _open_stores(self) -> _Stores:
        """The stores from the environment, the missing ones embedded (PostgreSQL and Valkey in parallel)."""
        environ = os.environ
        database_url = environ.get("DATABASE_URL", "")
        redis_url = environ.get("REDIS_URL", "")
        starts = {}
        if not database_url:
            starts["postgres"] = asyncio.to_thread(
                start_postgres, self.home / "postgres", port=self.postgres_port
            )
        if not redis_url:
            starts["valkey"] = asyncio.to_thread(start_valkey, self.home / "valkey", port=self.valkey_port)
        # Never cancelled: a server that started must be known, so the shutdown can stop it.
        results = await asyncio.gather(*starts.values(), return_exceptions=True)
        failures = []
        for name, result in zip(starts, results, strict=True):
            if isinstance(result, EmbeddedServer):
                self.stores.append(result)
                if name == "postgres":
                    database_url = result.url
                else:
                    redis_url = result.url
            elif isinstance(result, BaseException):
                failures.append(result)
        if failures:
            if isinstance(failures[0], EmbeddedServerError):
                raise failures[0]
            raise EmbeddedServerError(f"an embedded store failed to start: {failures[0]!r}") from failures[0]
        env = {"DATABASE_URL": database_url, "REDIS_URL": redis_url}
        if qdrant := environ.get("QDRANT_URL", ""):
            qdrant_summary = "Qdrant from QDRANT_URL"
        else:
            qdrant = environ.get("HINDSIGHT_QDRANT_PATH", "") or str(self.home / "qdrant")
            env["HINDSIGHT_QDRANT_PATH"] = qdrant
            local = environ.get("HINDSIGHT_QDRANT_BACKEND", "edge") == "local"
            engine = "Qdrant local mode" if local else "Qdrant Edge"
            qdrant_summary = f"{engine} ({qdrant})"
        summary = ", ".join(
            [
                "PostgreSQL " + ("embedded" if "postgres" in starts else "from DATABASE_URL"),
                "Valkey embedded" if "valkey" in starts else "Redis from REDIS_URL",
                qdrant_summary,
            ]
        )
        return _Stores(env, database_url, redis_url, qdrant, summary)

    async def _spawn(self, layer: Layer, address: str, env: dict[str, str], gated: bool) -> None:
        """Start ``hindsight serve <layer>``; a gated one waits for the stores' settings on stdin."""
        logs = self.home / "logs"
        log_path = logs / f"{layer.name}.log"
        env = env | {"HINDSIGHT_PORT": address.rsplit(":", 1)[1]}
        self.states[layer.name] = STARTING
        gate = ["--env-from-stdin"] if gated else []
        with log_path.open("ab") as log_file:
            offset = log_file.tell()
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "hindsight.cli.main",
                "serve",
                layer.name,
                *gate,
                stdin=subprocess.PIPE if gated else subprocess.DEVNULL,
                stdout=log_file,
                stderr=log_file,
                env=env,
                process_group=0,
            )  # its own group: a terminal's Ctrl-C reaches only the supervisor
        self.children[layer.name] = _Child(
            layer,
            address,
            process,
            log_path,
            offset,
            asyncio.create_task(process.wait()),
            time.monotonic(),
            env,
        )
        self.lock.record(
            {
                name: (child.process.pid, started_at(child.process.pid) or 0.0)
                for name, child in self.children.items()
            }
        )

    async def _release(self, store_env: dict[str, str] | None) -> None:
        """Hand the gated services the stores' settings (None: close their stdin, so they exit)."""
        line = (json.dumps(store_env) + "\n").encode() if store_env is not None else b""
        for child in self.children.values():
            stdin = child.process.stdin
            if stdin is None:
                continue
            with contextlib.suppress(ConnectionError):  # it died already: the readiness wait reports it
                stdin.write(line)
                await stdin.drain()
            stdin.close()

    async def _wait_until_ready(self) -> int | None:
        """None once every service is SERVING; else the exit code (stop requested, a child died, timeout)."""
        waits: dict[asyncio.Future[Any], _Child] = {
            asyncio.create_task(_until_serving(child.address, child.layer.service)): child
            for child in self.children.values()
        }
        exits: dict[asyncio.Future[Any], _Child] = {child.exited: child for child in self.children.values()}
        stop: asyncio.Future[Any] = asyncio.create_task(self.stop_requested.wait())
        pending = set(waits)
        try:
            while pending:
                remaining = self.started + self.options.timeout - time.monotonic()
                if remaining <= 0:
                    return self._report_timeout([waits[task] for task in pending])
                done, _ = await asyncio.wait(
                    pending | exits.keys() | {stop}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
                )
                if stop in done:
                    return 0
                for task in done & exits.keys():
                    self._report_exit(exits[task], "during start-up")
                    return 1
                for task in done & pending:
                    pending.discard(task)
                    child = waits[task]
                    _say(f"  {child.layer.name:<9} {child.address:<16} ready in {self._elapsed():.1f}s")
            return None
        finally:
            for task in (*waits, stop):
                task.cancel()
            await asyncio.gather(*waits, stop, return_exceptions=True)

    def _report_exit(self, child: _Child, when: str) -> None:
        code = child.process.returncode
        log.error("service exited", extra={"layer": child.layer.name, "code": code, "when": when})
        _say(
            f"hindsight: {child.layer.name} exited with code {code} {when}; "
            f"last lines of {child.log_path}:\n{child.tail()}",
            error=True,
        )

    def _report_timeout(self, late: list[_Child]) -> int:
        names = ", ".join(child.layer.name for child in late)
        _say(f"hindsight: not ready within {self.options.timeout:.0f}s: {names}", error=True)
        for child in late:
            _say(f"--- last lines of {child.log_path}:\n{child.tail()}", error=True)
        return 1

    def _write_mesh_file(self, info: MeshInfo) -> None:
        temporary = self.mesh_file.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it holds store passwords
        with os.fdopen(fd, "w") as handle:
            handle.write(info.to_json())
        os.replace(temporary, self.mesh_file)

    def _publish(self) -> None:
        """Write what the mesh is now (pids, restarts, states) to ``mesh.json`` and the lock file."""
        if self.info is None:
            return
        self.info.children = {name: child.process.pid for name, child in self.children.items()}
        self.info.restarts = {name: self.restarts.get(name, 0) for name in self.children}
        self.info.states = {name: self.states.get(name, RUNNING) for name in self.children}
        self.info.stores = {
            store.name: {
                "address": f"{LOOPBACK}:{store.port}",
                "pid": store.pid,
                "restarts": self.restarts.get(store.name, 0),
                "state": self.states.get(store.name, RUNNING),
            }
            for store in self.stores
        }
        self._write_mesh_file(self.info)
        self.lock.record(
            {
                name: (child.process.pid, started_at(child.process.pid) or 0.0)
                for name, child in self.children.items()
            }
        )

    async def _supervise(self) -> int:
        """Serve until a stop is requested (exit 0), restarting what exits; exit 1 when the supervisor
        gives up on a process that keeps crashing (or the local LLM exits): no silent half-mesh."""
        watchers = [asyncio.create_task(self._watch_service(name)) for name in self.children]
        watchers += [asyncio.create_task(self._watch_store(index)) for index in range(len(self.stores))]
        for watcher in watchers:
            watcher.add_done_callback(self._watcher_ended)
        self._publish()
        stop: asyncio.Future[Any] = asyncio.create_task(self.stop_requested.wait())
        halt: asyncio.Future[Any] = asyncio.create_task(self.halt.wait())
        llm = {self.llm_exited} if self.llm_exited is not None else set()
        try:
            done, _ = await asyncio.wait(llm | {stop, halt}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.halt.set()
            await asyncio.gather(*watchers, return_exceptions=True)
            for task in (stop, halt):
                task.cancel()
        if self.give_up_reason:
            _say(f"hindsight: {self.give_up_reason}; stopping the mesh", error=True)
            return 1
        if stop in done:
            _say("hindsight: stopping")
            return 0
        _say("hindsight: the local LLM exited while serving; stopping the mesh", error=True)
        return 1

    def _watcher_ended(self, task: asyncio.Task[None]) -> None:
        """A watcher that failed leaves its process unwatched: stop the mesh rather than run half-watched."""
        if task.cancelled() or task.exception() is None:
            return
        log.error("a supervisor watcher failed", exc_info=task.exception())
        if not self.halt.is_set():
            self.give_up_reason = f"the supervisor failed: {task.exception()!r}"
            self.halt.set()

    async def _halted_within(self, seconds: float) -> bool:
        """Wait ``seconds``; True (at once) when supervision ends meanwhile."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.halt.wait(), seconds)
        return self.halt.is_set()

    def _crashed(self, name: str, code: int | None, tail: str, log_path: Path) -> float | None:
        """Count an exit of ``name`` and say so loudly; the wait before its restart, or None: give up."""
        settings = self.supervisor
        crashes = self.crashes.setdefault(name, CrashHistory(settings))
        delay = crashes.record(time.monotonic())
        restarts = self.restarts.get(name, 0)
        fields_ = {"target": name, "code": code, "restarts": restarts, "log": str(log_path), "tail": tail}
        if delay is None:
            self.states[name] = GAVE_UP
            self.give_up_reason = (
                f"{name} exited {len(crashes.times)} times within {settings.crash_window:g}s "
                f"(last exit code {code}); giving up on it (HINDSIGHT_UP_CRASH_LIMIT="
                f"{settings.crash_limit}); last lines of {log_path}:\n{tail}"
            )
            log.error("process keeps crashing; giving up", extra=fields_)
            self.halt.set()
        else:
            self.states[name] = RESTARTING
            log.error("process exited; restarting it", extra=fields_ | {"restart_in_s": round(delay, 3)})
            _say(
                f"hindsight: {name} exited with code {code}; restarting it in {delay:.1f}s "
                f"(restart {restarts + 1}); last lines of {log_path}:\n{tail}",
                error=True,
            )
        self._publish()
        return delay

    async def _watch_service(self, name: str) -> None:
        """Restart the service ``name`` each time it exits, on its address and with its settings."""
        while not self.halt.is_set():
            child = self.children[name]
            halt = asyncio.create_task(self.halt.wait())
            await asyncio.wait({child.exited, halt}, return_when=asyncio.FIRST_COMPLETED)
            halt.cancel()
            if self.halt.is_set():
                return
            delay = self._crashed(name, child.process.returncode, child.tail(), child.log_path)
            if delay is None or await self._halted_within(delay):
                return
            # Not gated: the stores' settings are known now and go in the environment.
            await asyncio.shield(self._spawn(child.layer, child.address, child.env | self.store_env, False))
            self.restarts[name] = self.restarts.get(name, 0) + 1
            self._publish()
            restarted = self.children[name]
            log.warning(
                "service restarted",
                extra={"layer": name, "pid": restarted.process.pid, "restarts": self.restarts[name]},
            )
            await self._until_serving_or_exit(restarted)

    async def _until_serving_or_exit(self, child: _Child) -> None:
        """Mark a restarted service running once it serves (or return when it exits or supervision ends)."""
        serving = asyncio.create_task(_until_serving(child.address, child.layer.service))
        halt = asyncio.create_task(self.halt.wait())
        try:
            await asyncio.wait({serving, child.exited, halt}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            serving.cancel()
            halt.cancel()
            await asyncio.gather(serving, halt, return_exceptions=True)
        if child.process.returncode is None and not self.halt.is_set():
            self.states[child.layer.name] = RUNNING
            self._publish()
            _say(f"hindsight: {child.layer.name} is serving again (pid {child.process.pid})", error=True)

    async def _watch_store(self, index: int) -> None:
        """Restart an embedded store each time it exits: same port, same data directory."""
        while not self.halt.is_set():
            server = self.stores[index]
            while server.running():
                if await self._halted_within(_STORE_POLL_SECONDS):
                    return
            code, tail = server.process.returncode, server.log_tail()
            while True:  # until it starts again (each failed start counts as a crash)
                delay = self._crashed(server.name, code, tail, server.log_path)
                if delay is None or await self._halted_within(delay):
                    return
                try:
                    # Shielded: a server that started must be known, so the shutdown can stop it.
                    restarted = await asyncio.shield(asyncio.to_thread(restart_server, server))
                except EmbeddedServerError as exc:
                    log.error(
                        "embedded store did not start again", extra={"store": server.name, "error": str(exc)}
                    )
                    code, tail = None, str(exc)  # the message carries the failed start's log
                    continue
                break
            self.stores[index] = restarted
            self.restarts[server.name] = self.restarts.get(server.name, 0) + 1
            self.states[server.name] = RUNNING
            log.warning(
                "embedded store restarted",
                extra={"store": server.name, "pid": restarted.pid, "restarts": self.restarts[server.name]},
            )
            _say(f"hindsight: embedded {server.name} is running again (pid {restarted.pid})", error=True)
            self._publish()

    async def _shutdown(self) -> None:
        """The edge first (no new requests reach the layers), then the layers, then the stores."""
        edge = [child for name, child in self.children.items() if name == EDGE]
        await self._terminate(edge)
        await self._terminate([child for name, child in self.children.items() if name != EDGE])
        if self.llm is not None and self.llm.returncode is None:
            self.llm.terminate()
            try:
                await asyncio.wait_for(asyncio.shield(self.llm.wait()), self.options.grace)
            except TimeoutError:
                self.llm.kill()
                await self.llm.wait()
        if self.children:
            log.info(
                "services stopped",
                extra={"codes": {n: c.process.returncode for n, c in self.children.items()}},
            )
        await asyncio.gather(*(asyncio.to_thread(store.stop) for store in self.stores))
        if self.stores:
            log.info("stores stopped", extra={"stores": [store.name for store in self.stores]})

    async def _terminate(self, children: list[_Child]) -> None:
        """SIGTERM, up to ``grace`` seconds (less after a second Ctrl-C) to exit, then SIGKILL."""
        alive = [child for child in children if child.process.returncode is None]
        if not alive:
            return
        for child in alive:
            with contextlib.suppress(ProcessLookupError):
                child.process.terminate()
        pending: set[asyncio.Future[Any]] = {child.exited for child in alive}
        force = asyncio.create_task(self.force.wait())
        deadline = time.monotonic() + self.options.grace
        while pending and not force.done() and (remaining := deadline - time.monotonic()) > 0:
            _, pending = await asyncio.wait(
                pending | {force}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
            )
            pending.discard(force)
        force.cancel()
        for child in alive:
            if child.process.returncode is None:
                log.warning("service did not stop in time; killing it", extra={"layer": child.layer.name})
                with contextlib.suppress(ProcessLookupError):
                    child.process.kill()
        await asyncio.gather(*(child.exited for child in alive), return_exceptions=True)


def run_mesh(options: MeshOptions) -> int:
    """``hindsight up``: start the mesh, serve until Ctrl-C/SIGTERM (0) or until it gives up on a process
    that keeps crashing (1)."""
    try:
        supervisor = options.supervisor or load(SupervisorSettings)
    except SettingsError as exc:
        _say(f"hindsight: {exc}", error=True)
        return 2
    options = dataclasses.replace(options, supervisor=supervisor)
    home = options.home
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "logs").mkdir(mode=0o700, exist_ok=True)
    lock = _HomeLock(home)
    if not lock.acquire():
        running = read_mesh(home)
        where = f" (pid {running.pid}, MCP endpoint {running.mcp_url})" if running else ""
        _say(f"hindsight: a mesh is already running on {home}{where}; not starting another", error=True)
        return 1
    try:
        _stop_leftover_services(lock)
        (home / MESH_FILE).unlink(missing_ok=True)  # a crashed run's file; its supervisor is gone
        return asyncio.run(_Mesh(options, lock).run())
    finally:
        lock.release()
