#!/usr/bin/env python3
"""The container path, run for real with podman: build the image, start docker-compose.yml, retain and
recall through the edge container, crash containers, play the Kubernetes manifests.

    .venv/bin/python scripts/containers_check.py             # everything; one summary line on stdout
    .venv/bin/python scripts/containers_check.py --keep      # leave the stack running afterwards

1. Images: a Debian bookworm base made by debootstrap (kept in podman's image store, so made once per
   machine), the Dockerfile built on it (``PYTHON_IMAGE``; the lock installed with hashes), and PostgreSQL
   and Redis images from Debian's packages (scripts/containers/).
2. The compose file, interpolated as compose does, with the local images chosen by its image variables,
   semantic on its in-process engine on a volume (``QDRANT_URL=``, the Qdrant server left out), generated
   secrets: every service started by podman in health-gated order (scripts/containers/stack.py).
3. A round trip through the edge container's published ports: retained over MCP (bearer token), recalled
   over gRPC, and the other way round; another bank and a missing token are refused.
4. Faults: a layer container, then PostgreSQL, then Redis are killed (SIGKILL from the host, as a crash
   would end them) under a light load; the restart policy must bring each back, every acknowledged retain
   must be found by id and by meaning afterwards, and recall must answer while the target is down.
5. ``podman kube play`` of the rendered dev overlay's ConfigMap, Secret and the inference, working and
   episodic Deployments on the compose network (its stores); each pod's startup, liveness and readiness
   probe is run in its container, and its settings, user and read-only root are checked.

The last line is the summary: ``containers: build ok, N services healthy, round trip ok, faults ok, kube
ok`` (or what failed). Exit status: 0 all passed, 1 a check failed, 2 podman or debootstrap is missing, 3
the images could not be built (the build needs the Debian mirror and the package index), 124 stopped by
SIGTERM (a timeout).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts" / "containers")]

import stack  # noqa: E402  (scripts/containers/stack.py)
from stack import Stack, StackError, podman  # noqa: E402

from tests.deploy.compose import ENV_EXAMPLE, compose, read_env_file  # noqa: E402
from tests.deploy.kustomize import build as render_overlay  # noqa: E402

PROJECT = "hindsight-check"
BANK = "check"
LAYER_FAULT = "semantic"
"""The layer crashed: its vectors live on its own volume (the in-process engine) and the episodic outbox
must redeliver what it missed while down."""
FAULT_TARGETS = (LAYER_FAULT, "postgres", "redis")
KUBE_LAYERS = ("inference", "working", "episodic")
"""Deployments played by podman: ones whose stores the compose network provides (episodic's outbox retries
the layers it delivers to, which are not played, so it serves without them)."""
HEALTH_TIMEOUT = 240.0
BUILD_FAILED = 3
STOPPED = 124
"""Exit status after SIGTERM, as ``timeout`` reports a command it ended."""
"""Exit status when the images could not be made: that needs the Debian mirror and the package index."""


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Figures:
    """What was measured, for docs/deployment.md."""

    build_s: dict[str, float] = field(default_factory=dict)
    image_mib: float = 0.0
    first_run_s: float = 0.0
    """``podman run`` of the image until its process printed (one command, no server)."""
    stack_start_s: float = 0.0
    """From the first ``podman run`` until every service passed its health check."""
    ready_s: dict[str, float] = field(default_factory=dict)
    faults: list[dict[str, Any]] = field(default_factory=list)
    kube_ready_s: dict[str, float] = field(default_factory=dict)


# ---------------------------------------------------------------- images


def check_image(figures: Figures) -> None:
    """The built image: numeric non-root user, the ``hindsight`` entrypoint, and how long a run takes."""
    config = json.loads(podman("image", "inspect", "--format", "{{json .Config}}", stack.LAYER_IMAGE))
    if config.get("User") != "10001:10001" or config.get("Entrypoint") != ["hindsight"]:
        raise StackError(f"image user/entrypoint: {config.get('User')} {config.get('Entrypoint')}")
    began = time.monotonic()
    out = podman("run", "--rm", "--read-only", "--tmpfs", "/tmp", stack.LAYER_IMAGE, "--help", timeout=120)
    figures.first_run_s = time.monotonic() - began
    if "serve" not in out:
        raise StackError(f"`hindsight --help` in the image printed no `serve`: {out[:300]}")
    figures.image_mib = stack.image_size_mib(stack.LAYER_IMAGE)


# ---------------------------------------------------------------- the stack


@dataclass(frozen=True)
class Secrets:
    """The run's secrets, generated fresh each time (they reach the containers through env files only)."""

    password: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    internal: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    agent: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    """The round trip's agent: one bank."""
    loader: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    """The fault load's agents: a bank each, made up per run."""


def compose_variables(keys: Secrets, mcp_port: int, grpc_port: int) -> dict[str, str]:
    """.env as an operator without a registry fills it in: secrets, the local images, the in-process
    vector engine, the published ports."""
    return read_env_file(ENV_EXAMPLE) | {
        "POSTGRES_PASSWORD": keys.password,
        "HINDSIGHT_INTERNAL_TOKEN": keys.internal,
        "HINDSIGHT_TOKENS": f"{keys.agent}={BANK};{keys.loader}=*",
        "HINDSIGHT_IMAGE": stack.LAYER_IMAGE,
        "POSTGRES_IMAGE": stack.POSTGRES_IMAGE,
        "REDIS_IMAGE": stack.REDIS_IMAGE,
        "QDRANT_URL": "",
        "HINDSIGHT_MCP_PUBLISH_PORT": str(mcp_port),
        "HINDSIGHT_GRPC_PUBLISH_PORT": str(grpc_port),
        "HINDSIGHT_LOG_LEVEL": "WARNING",
    }


def check_hardening(running: Stack) -> None:
    """Every layer container runs as 10001 on a read-only root with /tmp writable."""
    for name, service in running.services.items():
        if name in ("postgres", "redis"):
            continue
        probe = (
            "import os; open('/tmp/probe', 'w').close()\n"
            "try:\n    open('/opt/probe', 'w')\nexcept OSError:\n    print(os.getuid(), 'ro')\n"
            "else:\n    print(os.getuid(), 'rw')"
        )
        out = podman("exec", service.container, "python", "-c", probe).split()
        if out != ["10001", "ro"]:
            raise StackError(f"{name}: expected uid 10001 on a read-only root, got {out}")


# ---------------------------------------------------------------- round trip


async def round_trip(mcp_port: int, grpc_port: int, keys: Secrets) -> None:
    """Retain over MCP, recall over gRPC; retain over gRPC, recall over MCP; refusals."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from hindsight.client import AsyncMemoryClient, PermissionDenied, Turn, Unauthenticated

    url = f"http://127.0.0.1:{mcp_port}/mcp"
    mark = uuid.uuid4().hex[:8]
    by_mcp = f"The staging database password rotates every Thursday at noon (ticket {mark})."
    by_grpc = f"Our release train leaves on the first Monday of each month (ticket {mark})."
    http = httpx2.AsyncClient(headers={"authorization": f"Bearer {keys.agent}"}, timeout=60)
    async with Client(streamable_http_client(url, http_client=http)) as mcp:
        stored = await mcp.call_tool("retain", {"text": by_mcp, "bank": BANK, "id": f"mcp-{mark}"})
        if stored.is_error:
            raise StackError(f"MCP retain failed: {stored.content}")
        async with AsyncMemoryClient(f"127.0.0.1:{grpc_port}", token=keys.agent, timeout=30) as client:
            await client.retain(BANK, Turn(by_grpc, session_id="check", id=f"grpc-{mark}"))
            await _until(lambda: _grpc_finds(client, "when does the staging password rotate", mark), 90)
            await _until(lambda: _mcp_finds(mcp, "when does the release train leave", mark), 90)
            try:
                await client.recall("a-bank-the-token-does-not-grant", "x")
            except PermissionDenied:
                pass
            else:
                raise StackError("the edge answered a recall in a bank the token does not grant")
        async with AsyncMemoryClient(f"127.0.0.1:{grpc_port}", token="not-a-token", timeout=30) as stranger:
            try:
                await stranger.recall(BANK, "release train")
            except Unauthenticated:
                pass
            else:
                raise StackError("the edge answered a recall with an unknown token")
    async with httpx2.AsyncClient(timeout=30) as bare:
        reply = await bare.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        if reply.status_code != 401:
            raise StackError(f"MCP without a token answered {reply.status_code}, not 401")


async def _grpc_finds(client: Any, query: str, mark: str) -> bool:
    reply = await client.recall(BANK, query, top_k=5)
    return any(mark in memory.text for memory in reply.memories)


async def _mcp_finds(mcp: Any, query: str, mark: str) -> bool:
    result = await mcp.call_tool("recall", {"query": query, "bank": BANK, "top_k": 5})
    if result.is_error or result.structured_content is None:
        return False
    return any(mark in memory["text"] for memory in result.structured_content["memories"])


async def _until(found: Callable[[], Any], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not await found():
        if time.monotonic() > deadline:
            raise StackError(f"not recalled within {timeout:.0f}s")
        await asyncio.sleep(1.0)


# ---------------------------------------------------------------- faults


async def fault(running: Stack, target: str, grpc_port: int, token: str) -> dict[str, Any]:
    """Load, crash ``target``, wait for the restart policy and the health check, load, then look for every
    acknowledged retain by id and by meaning (the embedded fault bench's measures)."""
    from hindsight.bench.faults import _searchable, _stored_ids
    from hindsight.bench.faults_load import FaultLoad, LoadPlan
    from hindsight.client import AsyncMemoryClient, HindsightError

    service = running.services[target]
    address = f"127.0.0.1:{grpc_port}"
    load = FaultLoad(address, token, LoadPlan(agents=3, rate=1.0), f"{target}-{uuid.uuid4().hex[:6]}")
    stop = asyncio.Event()
    loading = asyncio.create_task(load.run(stop))
    result: dict[str, Any] = {"target": target}
    async with AsyncMemoryClient(address, token=token, timeout=30) as client:
        try:
            await asyncio.sleep(5)
            before = await asyncio.to_thread(running.crash, service)
            began = time.monotonic()
            # Recall while the target is down (or just restarting): it must answer, partial at worst.
            probe_text = load.tally.acknowledged[-1].text if load.tally.acknowledged else "bicycle"
            try:
                probe = await client.recall(load.banks()[0], probe_text, top_k=5, timeout=20)
                result["recall_while_down"] = "partial" if probe.partial else "complete"
            except HindsightError as error:
                result["recall_while_down"] = f"error {type(error).__name__}"
            await asyncio.to_thread(running.wait_restarted, service, before, 120)
            result["restarted_s"] = round(time.monotonic() - began, 1)
            await asyncio.to_thread(running.wait_healthy, service, HEALTH_TIMEOUT)
            result["healthy_s"] = round(time.monotonic() - began, 1)
            await asyncio.sleep(10)
        finally:
            stop.set()
            tally = await loading
        acknowledged = list(tally.acknowledged)
        stored = await _stored_ids(client, load.banks())
        missing_by_id = [ack.turn_id for ack in acknowledged if ack.turn_id not in stored]
        found = await _searchable(client, lambda: acknowledged, lambda: True, time.monotonic() + 120)
        missing_by_meaning = [ack.turn_id for ack in acknowledged if ack.turn_id not in found]
        last = acknowledged[-1] if acknowledged else None
        after = await client.recall(last.bank, last.text, top_k=5) if last else None
    result |= {
        "acknowledged": len(acknowledged),
        "lost": len(set(missing_by_id) | set(missing_by_meaning)),
        "retain_errors": tally.retain_errors,
        "recall_errors": tally.recall_errors,
        "recall_partial": tally.recall_partial,
        "recalls": tally.recalls,
        "complete_after": bool(after is not None and not after.partial),
    }
    return result


def fault_failures(result: dict[str, Any]) -> list[str]:
    problems = []
    if result["acknowledged"] == 0:
        problems.append("nothing was acknowledged")
    if result["lost"]:
        problems.append(f"{result['lost']} acknowledged lost")
    if str(result.get("recall_while_down", "")).startswith("error"):
        problems.append(f"recall while down: {result['recall_while_down']}")
    if not result["complete_after"]:
        problems.append("recall still partial after recovery")
    return [f"{result['target']}: {problem}" for problem in problems]


# ---------------------------------------------------------------- kubernetes


def rendered_dev_overlay(internal_token: str, agent_token: str) -> list[dict[str, Any]]:
    """The dev overlay as a developer renders it, from a copy of k8s/ with a generated tokens.env."""
    with tempfile.TemporaryDirectory(prefix="hindsight-k8s-") as scratch:
        tree = Path(scratch) / "k8s"
        shutil.copytree(ROOT / "k8s", tree)
        tokens = f"HINDSIGHT_TOKENS={agent_token}=dev\nHINDSIGHT_INTERNAL_TOKEN={internal_token}\n"
        (tree / "overlays" / "dev" / "tokens.env").write_text(tokens)
        return render_overlay(tree / "overlays" / "dev")


def kube_documents(
    manifests: list[dict[str, Any]], store_urls: dict[str, str]
) -> tuple[list[Any], dict[str, str]]:
    """What podman plays (the ConfigMap and the chosen Deployments) and the Secret's data (base64), with the
    store URLs pointed at the compose network's stores as an operator's Secret would point them."""
    names = {f"hindsight-{layer.replace('_', '-')}" for layer in KUBE_LAYERS}
    played = [
        m for m in manifests if m["kind"] == "ConfigMap" and m["metadata"]["name"] == "hindsight-config"
    ]
    played += [m for m in manifests if m["kind"] == "Deployment" and m["metadata"]["name"] in names]
    for deployment in played[1:]:
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            for port in container.get("ports", []):
                # podman 4.3 publishes every containerPort on the host (as its hostPort when none is
                # given): each gets a free loopback port, so two pods' 50051 and 9090 do not collide.
                port |= {"hostPort": free_port(), "hostIP": "127.0.0.1"}
    (secret,) = [
        m for m in manifests if m["kind"] == "Secret" and m["metadata"]["name"] == "hindsight-secrets"
    ]
    data = dict(secret.get("data", {}))
    data |= {key: base64.b64encode(value.encode()).decode() for key, value in store_urls.items()}
    return played, data


def probe_command(probe: dict[str, Any]) -> list[str]:
    grpc = probe["grpc"]
    command = ["hindsight", "healthcheck", "--address", f"127.0.0.1:{grpc['port']}"]
    return command + (["--service", grpc["service"]] if grpc.get("service") else [])


def kube_play(network: str, keys: Secrets, figures: Figures, keep: bool) -> int:
    """Play the subset on ``network``, run every probe of every container in it, check its settings, user
    and read-only root; the number of Deployments that passed."""
    manifests = rendered_dev_overlay(keys.internal, keys.agent)
    stores = {
        "REDIS_URL": "redis://redis:6379/0",
        "DATABASE_URL": f"postgresql://hindsight:{keys.password}@postgres:5432/hindsight",
    }
    played, secret_data = kube_documents(manifests, stores)
    secret_name = "hindsight-secrets"
    config = next(m["data"] for m in played if m["kind"] == "ConfigMap")
    deployments = [m for m in played if m["kind"] == "Deployment"]
    with tempfile.TemporaryDirectory(prefix="hindsight-kube-") as scratch:
        plays = Path(scratch) / "play.yaml"
        plays.write_text(yaml.safe_dump_all(played))
        data_file = Path(scratch) / "secret.json"
        data_file.write_text(json.dumps(secret_data))
        data_file.chmod(0o600)
        podman("kube", "down", str(plays), check=False, timeout=180)
        podman("secret", "rm", secret_name, check=False)
        # podman 4.3 reads a secretKeyRef from a podman secret that holds the Secret's data as JSON (a
        # Secret in the played file is stored in a form its own secretKeyRef cannot read).
        podman("secret", "create", secret_name, str(data_file))
        try:
            began = time.monotonic()
            podman("kube", "play", "--network", network, str(plays), timeout=300)
            for deployment in deployments:
                pod = f"{deployment['metadata']['name']}-pod-0"
                for container in deployment["spec"]["template"]["spec"]["containers"]:
                    name = f"{pod}-{container['name']}"
                    for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
                        _until_probe(name, probe_command(container[kind]), HEALTH_TIMEOUT)
                    figures.kube_ready_s[container["name"]] = round(time.monotonic() - began, 1)
                    _check_pod_container(name, container, config, secret_data)
            return len(deployments)
        finally:
            if not keep:
                podman("kube", "down", str(plays), check=False, timeout=180)
                podman("secret", "rm", secret_name, check=False)


def _until_probe(container: str, command: list[str], timeout: float) -> None:
    """The probe's check, run in the container every second until it passes (podman 4.3 turns no gRPC
    probe into a health check of its own)."""
    deadline = time.monotonic() + timeout
    while not stack.exec_ok(container, *command):
        if time.monotonic() > deadline:
            logs = podman("logs", "--tail", "30", container, check=False)
            raise StackError(f"kube {container}: `{' '.join(command)}` never passed:\n{logs}")
        time.sleep(1.0)


def _check_pod_container(
    name: str, container: dict[str, Any], config: dict[str, str], data: dict[str, str]
) -> None:
    """The container got the ConfigMap, its Secret keys and values, and runs as its user on a read-only
    root."""
    printed = podman("exec", name, "printenv").splitlines()
    env = dict(line.split("=", 1) for line in printed if "=" in line)
    for key, value in config.items():
        if env.get(key) != value:
            raise StackError(f"kube {name}: ConfigMap {key} is {env.get(key)!r}, not {value!r}")
    for item in container.get("env", []):
        ref = item.get("valueFrom", {}).get("secretKeyRef")
        if ref and ref["key"] in data:
            if env.get(item["name"]) != base64.b64decode(data[ref["key"]]).decode():
                raise StackError(f"kube {name}: {item['name']} does not hold the Secret's {ref['key']}")
        elif ref is None and env.get(item["name"]) != str(item["value"]):
            raise StackError(f"kube {name}: {item['name']} is not {item['value']!r}")
    probe = "import os\ntry:\n    open('/opt/probe', 'w')\nexcept OSError:\n    print(os.getuid(), 'ro')"
    out = podman("exec", name, "python", "-c", probe).split()
    if out != ["10001", "ro"]:
        raise StackError(f"kube {name}: expected uid 10001 on a read-only root, got {out}")


# ---------------------------------------------------------------- the whole check


class Stopped(StackError):
    """SIGTERM (a timeout) arrived: the run unwinds like a failed step, so the stack is still removed."""


def _stop(signum: int, frame: object) -> None:
    raise Stopped("stopped by SIGTERM (time ran out)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keep", action="store_true", help="leave the stack and the pods running")
    parser.add_argument("--refresh-base", action="store_true", help="make the debootstrap base anew")
    parser.add_argument("--no-faults", action="store_true", help="skip the fault scenarios")
    parser.add_argument("--no-kube", action="store_true", help="skip podman kube play")
    parser.add_argument("--figures", type=Path, help="write the measured figures here (JSON)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop)
    if missing := stack.tools_missing():
        print(f"containers: not run ({', '.join(missing)} missing)")
        return 2
    figures = Figures()
    parts: list[str] = []
    failed = stopped = False
    keys = Secrets()
    mcp_port, grpc_port = free_port(), free_port()
    variables = compose_variables(keys, mcp_port, grpc_port)
    running = Stack(PROJECT, compose(variables), left_out=frozenset({"qdrant"}))
    step = "build"
    try:
        figures.build_s = {k: round(v, 1) for k, v in stack.build_images(say, args.refresh_base).items()}
        check_image(figures)
        parts.append("build ok")
        step = "services"
        say("starting the compose services")
        began = time.monotonic()
        running.up(HEALTH_TIMEOUT, say)
        figures.stack_start_s = round(time.monotonic() - began, 1)
        figures.ready_s = {
            name: round(running.healthy_at[name] - running.started_at[name], 1) for name in running.services
        }
        check_hardening(running)
        parts.append(f"{len(running.services)} services healthy")
        step = "round trip"
        say("round trip through the edge container")
        asyncio.run(round_trip(mcp_port, grpc_port, keys))
        parts.append("round trip ok")
        if not args.no_faults:
            step = "faults"
            problems = []
            for target in FAULT_TARGETS:
                say(f"fault: crash {target}")
                result = asyncio.run(fault(running, target, grpc_port, keys.loader))
                say(f"  {json.dumps(result)}")
                figures.faults.append(result)
                problems += fault_failures(result)
            if problems:
                failed = True
                parts.append("faults FAILED (" + "; ".join(problems) + ")")
            else:
                parts.append("faults ok")
        if not args.no_kube:
            step = "kube"
            say("podman kube play of the dev overlay's " + " and ".join(KUBE_LAYERS))
            played = kube_play(running.network, keys, figures, args.keep)
            parts.append(f"kube play ok ({played} deployments)")
    except StackError as error:
        failed = True
        stopped = isinstance(error, Stopped)
        say(f"{step} failed: {error}")
        if step not in ("build",):
            say(running.logs(running.services))
        parts.append(f"{step} FAILED ({str(error).splitlines()[0][:200]})")
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a late SIGTERM must not cut the clean-up short
        if not args.keep:
            running.down()
    say(json.dumps(figures.__dict__, indent=1))
    if args.figures:
        args.figures.write_text(json.dumps(figures.__dict__, indent=1) + "\n")
    print("containers: " + ", ".join(parts))
    if failed:
        if stopped:
            return STOPPED
        return BUILD_FAILED if step == "build" else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
