"""Runs docker-compose.yml with podman, for machines with podman but no Docker engine and no registry.

Each compose service becomes one ``podman run`` with what the file says: image, command, environment (from
an env file, so secrets never show in a process list), ports, named volumes, the project's bridge network
with the service name as its DNS alias, restart policy, init, read-only root, tmpfs, dropped capabilities,
no-new-privileges, memory and CPU limits, labels and the health check. Services start in ``depends_on``
order, and a service whose dependency asks for ``service_healthy`` starts only once that dependency's own
health check passes. Podman runs health checks from systemd timers, which a machine without systemd lacks,
so this runner asks for them (``podman healthcheck run``: the compose test, inside the container).

Images the compose file names by variable (``HINDSIGHT_IMAGE``, ``POSTGRES_IMAGE``, ``REDIS_IMAGE``) are
built here on a local Debian base made by debootstrap (cached in podman's image store between runs).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BASE_IMAGE = "localhost/hindsight-base:bookworm"
LAYER_IMAGE = "localhost/hindsight-memory:0.1.0"
BUILD_STAGE_IMAGE = "localhost/hindsight-memory-build:cache"
POSTGRES_IMAGE = "localhost/hindsight-postgres:15-bookworm"
REDIS_IMAGE = "localhost/hindsight-redis:7.0-bookworm"
DEBIAN_MIRROR = os.environ.get("HINDSIGHT_DEBIAN_MIRROR", "http://deb.debian.org/debian")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""An imported file system has no image settings: PATH must be set, as a registry's Debian image sets it."""
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
BASE_PACKAGES = "python3,python3-venv,python-is-python3,ca-certificates"
CONTAINERS_CONF = """\
# Written by scripts/containers/stack.py. The default ulimits (nproc, nofile) can exceed a machine's hard
# limits, and crun refuses hybrid cgroup hierarchies where runc works.
[containers]
default_ulimits = []

[engine]
runtime = "runc"
"""


class StackError(RuntimeError):
    """A step of the container path failed; the message says which and why."""


def cache_dir() -> Path:
    """Where the runner keeps its podman settings between runs."""
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    path = base / "hindsight-containers"
    path.mkdir(parents=True, exist_ok=True)
    return path


def podman_env() -> dict[str, str]:
    """The environment for every podman call: the runner's containers.conf unless the caller set one."""
    env = dict(os.environ)
    if "CONTAINERS_CONF" not in env:
        conf = cache_dir() / "containers.conf"
        if not conf.exists() or conf.read_text() != CONTAINERS_CONF:
            conf.write_text(CONTAINERS_CONF)
        env["CONTAINERS_CONF"] = str(conf)
    return env


def podman(*args: str, check: bool = True, timeout: float = 120, quiet: bool = True) -> str:
    """Run ``podman args``; its stdout, or StackError with its stderr when it fails and ``check``."""
    try:
        done = subprocess.run(
            ["podman", *args],
            env=podman_env(),
            capture_output=quiet,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as error:
        raise StackError(f"podman {' '.join(args[:3])} ran past {timeout:.0f}s") from error
    if check and done.returncode != 0:
        tail = ((done.stdout or "")[-1500:] + (done.stderr or "")[-1500:]).strip()
        raise StackError(f"podman {' '.join(args[:3])} failed ({done.returncode}): {tail}")
    return done.stdout or ""


def tools_missing() -> list[str]:
    return [tool for tool in ("podman", "debootstrap") if shutil.which(tool) is None]


def image_exists(name: str) -> bool:
    done = subprocess.run(["podman", "image", "exists", name], env=podman_env(), capture_output=True)
    return done.returncode == 0


def exec_ok(container: str, *command: str, timeout: float = 60) -> bool:
    """Whether ``command`` exits 0 in the running ``container``."""
    try:
        done = subprocess.run(
            ["podman", "exec", container, *command],
            env=podman_env(),
            capture_output=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


def image_size_mib(name: str) -> float:
    return int(podman("image", "inspect", "--format", "{{.Size}}", name).strip()) / 2**20


def make_base_image(refresh: bool = False, log: Any = print) -> float:
    """Debian bookworm (minbase) with Python 3.11 and venv, imported as BASE_IMAGE; seconds taken (0: cached).

    Made once and then kept in podman's image store; ``refresh`` makes it anew (for security updates).
    """
    if not refresh and image_exists(BASE_IMAGE):
        return 0.0
    began = time.monotonic()
    log(f"making {BASE_IMAGE} with debootstrap (once; later runs reuse it)")
    with tempfile.TemporaryDirectory(prefix="hindsight-base-") as scratch:
        rootfs = Path(scratch) / "rootfs"
        done = subprocess.run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={BASE_PACKAGES}",
                "bookworm",
                str(rootfs),
                DEBIAN_MIRROR,
            ],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if done.returncode != 0:
            raise StackError(
                f"debootstrap failed ({done.returncode}): {done.stdout[-1500:]}{done.stderr[-500:]}"
            )
        # The point releases and security updates too, so the store images get current packages.
        (rootfs / "etc/apt/sources.list").write_text(
            f"deb {DEBIAN_MIRROR} bookworm main\n"
            f"deb {DEBIAN_MIRROR} bookworm-updates main\n"
            "deb http://deb.debian.org/debian-security bookworm-security main\n"
        )
        # Packages installed in a build must not try to start their services (no init runs there).
        policy = rootfs / "usr/sbin/policy-rc.d"
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man"):
            shutil.rmtree(rootfs / junk, ignore_errors=True)
            (rootfs / junk).mkdir(parents=True, exist_ok=True)
        for cached in (rootfs / "var/cache/apt").glob("*.bin"):
            cached.unlink()
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(
            [
                "podman",
                "import",
                "--change",
                f"ENV PATH={DEFAULT_PATH}",
                "--change",
                'CMD ["python3"]',
                "-",
                BASE_IMAGE,
            ],
            stdin=tar.stdout,
            env=podman_env(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert tar.stdout is not None
        tar.stdout.close()
        tar.wait()
        if imported.returncode != 0:
            raise StackError(f"podman import failed: {imported.stderr[-1500:]}")
    return time.monotonic() - began


def build(
    tag: str,
    context: Path,
    containerfile: Path,
    build_args: Mapping[str, str],
    timeout: float,
    target: str | None = None,
) -> float:
    """``podman build`` (layer cache on), of ``target`` when given; seconds taken."""
    began = time.monotonic()
    args = ["build", "--network", "host", "--layers", "-t", tag, "-f", str(containerfile)]
    if target:
        args += ["--target", target]
    for key, value in build_args.items():
        args += ["--build-arg", f"{key}={value}"]
    if HOST_CA_BUNDLE.is_file():
        # pip and apt in the build trust what this machine trusts (a proxy's CA, say); the bundle is
        # mounted for the build's RUN steps only and is not part of any image.
        args += ["--volume", f"{HOST_CA_BUNDLE}:{HOST_CA_BUNDLE}:ro"]
    podman(*args, str(context), timeout=timeout)
    return time.monotonic() - began


@dataclass
class Service:
    """One compose service as this runner starts it."""

    name: str
    spec: dict[str, Any]
    container: str

    @property
    def depends_on(self) -> dict[str, dict[str, Any]]:
        raw = self.spec.get("depends_on") or {}
        if isinstance(raw, list):
            return {name: {"condition": "service_started"} for name in raw}
        return dict(raw)

    @property
    def healthcheck(self) -> dict[str, Any]:
        return dict(self.spec.get("healthcheck") or {})


def _seconds(value: str | int | float) -> float:
    """Compose durations ("10s", "1m30s", "500ms") in seconds."""
    if isinstance(value, (int, float)):
        return float(value)
    total, number = 0.0, ""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6}
    text = value.strip()
    i = 0
    while i < len(text):
        char = text[i]
        if char.isdigit() or char == ".":
            number += char
            i += 1
            continue
        unit = text[i : i + 2] if text[i : i + 2] in units else char
        total += float(number) * units[unit]
        number = ""
        i += len(unit)
    return total + (float(number) if number else 0.0)


def _health_args(check: Mapping[str, Any]) -> list[str]:
    test = check.get("test")
    if not test:
        return []
    if isinstance(test, str):
        command = test
    elif test[0] == "CMD":
        command = json.dumps(test[1:])
    elif test[0] == "CMD-SHELL":
        command = test[1]
    else:
        return ["--no-healthcheck"]
    args = ["--health-cmd", command]
    for key, flag in (("interval", "--health-interval"), ("timeout", "--health-timeout")):
        if key in check:
            args += [flag, f"{_seconds(check[key]):g}s"]
    if "start_period" in check:
        args += ["--health-start-period", f"{_seconds(check['start_period']):g}s"]
    if "retries" in check:
        args += ["--health-retries", str(check["retries"])]
    return args


@dataclass
class Stack:
    """The compose file's services (interpolated) run by podman under ``project``."""

    project: str
    config: dict[str, Any]
    left_out: frozenset[str] = frozenset()
    """Services not started (compose's ``--scale NAME=0``); a dependency on one must say required: false."""
    services: dict[str, Service] = field(default_factory=dict)
    started_at: dict[str, float] = field(default_factory=dict)
    healthy_at: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, spec in self.config["services"].items():
            if name not in self.left_out:
                self.services[name] = Service(name, spec, f"{self.project}-{name}")

    @property
    def network(self) -> str:
        (name,) = self.config.get("networks", {"default": {}})
        return f"{self.project}_{name}"

    def volume(self, name: str) -> str:
        return f"{self.project}_{name}"

    def order(self) -> list[Service]:
        """Services so that each comes after everything it depends on."""
        done: list[Service] = []
        seen: set[str] = set()

        def visit(service: Service, path: tuple[str, ...]) -> None:
            if service.name in seen:
                return
            if service.name in path:
                raise StackError(f"depends_on cycle: {' -> '.join((*path, service.name))}")
            for dependency, rule in service.depends_on.items():
                if dependency in self.services:
                    visit(self.services[dependency], (*path, service.name))
                elif rule.get("required", True):
                    raise StackError(f"{service.name} needs {dependency}, which is not started")
            seen.add(service.name)
            done.append(service)

        for service in self.services.values():
            visit(service, ())
        return done

    def run_args(self, service: Service, env_file: Path) -> list[str]:
        """The ``podman run`` arguments for one service."""
        spec = service.spec
        args = ["run", "--detach", "--name", service.container, "--env-file", str(env_file)]
        args += ["--label", f"io.podman.compose.project={self.project}"]
        args += ["--label", f"com.docker.compose.service={service.name}"]
        for network in spec.get("networks", []):
            args += ["--network", f"{self.project}_{network}", "--network-alias", service.name]
        if restart := spec.get("restart"):
            args += ["--restart", restart]
        if spec.get("init"):
            args.append("--init")
        if spec.get("read_only"):
            args.append("--read-only")
        for path in spec.get("tmpfs", []):
            args += ["--tmpfs", path]
        for cap in spec.get("cap_drop", []):
            args += ["--cap-drop", cap]
        for option in spec.get("security_opt", []):
            args += ["--security-opt", option.removesuffix(":true")]
        if grace := spec.get("stop_grace_period"):
            args += ["--stop-timeout", str(int(_seconds(grace)))]
        for key, value in (spec.get("labels") or {}).items():
            args += ["--label", f"{key}={value}"]
        limits = (spec.get("deploy") or {}).get("resources", {}).get("limits", {})
        if "memory" in limits:
            args += ["--memory", str(limits["memory"])]
        if "cpus" in limits:
            args += ["--cpus", str(limits["cpus"])]
        for port in spec.get("ports", []):
            args += ["--publish", str(port)]
        for volume in spec.get("volumes", []):
            source, _, target = str(volume).partition(":")
            named = source in (self.config.get("volumes") or {})
            args += ["--volume", f"{self.volume(source) if named else source}:{target}"]
        args += _health_args(service.healthcheck)
        args.append(spec["image"])
        command = spec.get("command")
        if isinstance(command, str):
            args += ["sh", "-c", command]
        elif command:
            args += [str(part) for part in command]
        return args

    def environment(self, service: Service) -> dict[str, str]:
        raw = service.spec.get("environment") or {}
        if isinstance(raw, list):
            return dict(item.split("=", 1) for item in raw)
        return {key: "" if value is None else str(value) for key, value in raw.items()}

    def up(self, health_timeout: float, log: Any = print) -> None:
        """Create the network and volumes, then start every service once its dependencies are ready."""
        self.down()
        podman("network", "create", self.network)
        for volume in self.config.get("volumes") or {}:
            podman("volume", "create", self.volume(volume))
        with tempfile.TemporaryDirectory(prefix="hindsight-env-") as scratch:
            for service in self.order():
                for dependency, rule in service.depends_on.items():
                    if dependency not in self.services:
                        continue  # left out and not required (checked by order())
                    if rule.get("condition") == "service_healthy":
                        self.wait_healthy(self.services[dependency], health_timeout)
                env_file = Path(scratch) / f"{service.name}.env"
                env_file.write_text("".join(f"{k}={v}\n" for k, v in self.environment(service).items()))
                env_file.chmod(0o600)
                podman(*self.run_args(service, env_file), timeout=120)
                self.started_at[service.name] = time.monotonic()
                log(f"  started {service.name}")
        for service in self.services.values():
            self.wait_healthy(service, health_timeout)

    def healthy(self, service: Service) -> bool:
        """The service's compose health check, run now in its container (no check: running is enough)."""
        if not service.healthcheck.get("test"):
            return self.state(service)["Status"] == "running"
        done = subprocess.run(
            ["podman", "healthcheck", "run", service.container],
            env=podman_env(),
            capture_output=True,
            text=True,
            timeout=_seconds(service.healthcheck.get("timeout", "30s")) + 30,
        )
        return done.returncode == 0

    def wait_healthy(self, service: Service, timeout: float) -> float:
        """Seconds until the service's health check passed (its start_interval: every second)."""
        began = time.monotonic()
        while True:
            if self.healthy(service):
                self.healthy_at.setdefault(service.name, time.monotonic())
                return time.monotonic() - began
            if time.monotonic() - began > timeout:
                logs = podman("logs", "--tail", "30", service.container, check=False, quiet=True)
                raise StackError(f"{service.name} not healthy within {timeout:.0f}s; last log lines:\n{logs}")
            time.sleep(1.0)

    def state(self, service: Service) -> dict[str, Any]:
        out = podman("container", "inspect", "--format", "{{json .State}}", service.container)
        state: dict[str, Any] = json.loads(out)
        return state

    def restarts(self, service: Service) -> int:
        return int(podman("container", "inspect", "--format", "{{.RestartCount}}", service.container).strip())

    def crash(self, service: Service) -> int:
        """SIGKILL the container's first process from the host, as the kernel's OOM killer or a crash would
        end it (``podman kill`` counts as a stop by the user, which the restart policy respects); returns
        the restart count before."""
        before = self.restarts(service)
        pid = int(self.state(service)["Pid"])
        if pid <= 0:
            raise StackError(f"{service.name} has no running process to kill")
        os.kill(pid, 9)
        return before

    def wait_restarted(self, service: Service, before: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.restarts(service) > before and self.state(service)["Status"] == "running":
                return
            time.sleep(0.2)
        raise StackError(f"{service.name} was not restarted by its restart policy within {timeout:.0f}s")

    def logs(self, names: Iterable[str], tail: int = 40) -> str:
        parts = []
        for name in names:
            if name in self.services:
                text = podman("logs", "--tail", str(tail), self.services[name].container, check=False)
                parts.append(f"--- {name}\n{text}")
        return "\n".join(parts)

    def down(self) -> None:
        """Remove the project's containers, network and volumes (images stay)."""
        names = podman(
            "ps",
            "-a",
            "--filter",
            f"label=io.podman.compose.project={self.project}",
            "--format",
            "{{.Names}}",
            check=False,
        ).split()
        if names:
            podman("rm", "--force", "--time", "5", *names, check=False, timeout=180)
        podman("network", "rm", "--force", self.network, check=False)
        for volume in self.config.get("volumes") or {}:
            podman("volume", "rm", "--force", self.volume(volume), check=False)


def published(service: Service, container_port: int) -> int:
    """The host port a service publishes ``container_port`` on (compose's "HOST_IP:HOST:CONTAINER")."""
    for port in service.spec.get("ports", []):
        parts = str(port).split(":")
        if int(parts[-1].split("/")[0]) == container_port:
            return int(parts[-2])
    raise StackError(f"{service.name} does not publish {container_port}")


def build_images(log: Any = print, refresh_base: bool = False) -> dict[str, float]:
    """The base, the layer image and the two store images; seconds taken by each step."""
    times = {"base": make_base_image(refresh_base, log)}
    log(f"building {LAYER_IMAGE} (podman build of the Dockerfile on {BASE_IMAGE})")
    args = {"PYTHON_IMAGE": BASE_IMAGE}
    # The build stage gets a tag of its own, so that pruning below keeps it (and the hash-checked install
    # of the lock, the slow step) as the cache of the next build.
    times["layer"] = build(BUILD_STAGE_IMAGE, ROOT, ROOT / "Dockerfile", args, timeout=1500, target="build")
    times["layer"] += build(LAYER_IMAGE, ROOT, ROOT / "Dockerfile", args, timeout=900)
    for tag, name in ((POSTGRES_IMAGE, "postgres"), (REDIS_IMAGE, "redis")):
        log(f"building {tag}")
        times[name] = build(
            tag, HERE, HERE / f"{name}.Containerfile", {"BASE_IMAGE": BASE_IMAGE}, timeout=900
        )
    # Earlier builds' images, now untagged: without this every change to the code leaves ~750 MB behind.
    podman("image", "prune", "--force", timeout=300)
    return times


def main(argv: Sequence[str]) -> int:
    """``stack.py build``: only the images (the check script does the rest)."""
    if list(argv) != ["build"]:
        print(__doc__)
        return 2
    print(json.dumps({k: round(v, 1) for k, v in build_images().items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
