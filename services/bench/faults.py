"""Faults under load: kill each layer, restart PostgreSQL and Valkey, freeze the semantic layer; nothing lost.

A private embedded mesh (its own PostgreSQL and Valkey, so a store restart is a real restart of the mesh's
own process) serves agents that retain and recall about once a second each. Each scenario, in turn:
load, the fault, recovery (the supervisor restarted the process; or SIGCONT after a freeze), more load.
Then every acknowledged retain is looked for by id (``ListRecent``) and by meaning (a recall of its text
from the semantic layer), recall errors and partial answers during the scenario are counted, and
``catch_up_s`` is the time from recovery until every turn acknowledged during the fault is searchable
by meaning.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hindsight.bench.faults_load import Ack, FaultLoad, LoadPlan, Tally
from hindsight.cli.layers import EDGE, LAYERS
from hindsight.cli.mesh import RUNNING, MeshInfo, read_mesh

STORES = ("postgres", "valkey")
EDGE_RECONNECT_GRACE_S = 2.5
"""After the edge is back, a client's channel may still wait out its reconnect back-off (at most 2 s in
``hindsight.client``) before it sees the edge: its errors until then still count as edge-down errors."""


@dataclass(frozen=True)
class Scenario:
    """One fault: ``kind`` is kill (SIGKILL, then the supervisor restarts it) or freeze (SIGSTOP, SIGCONT)."""

    name: str
    kind: str
    target: str
    """A layer name, or "postgres" / "valkey"."""


SCENARIOS: tuple[Scenario, ...] = (
    *(Scenario(f"kill_{layer.name}", "kill", layer.name) for layer in LAYERS),
    Scenario("restart_postgres", "kill", "postgres"),
    Scenario("restart_valkey", "kill", "valkey"),
    Scenario("freeze_semantic", "freeze", "semantic"),
)
BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}


@dataclass(frozen=True)
class FaultPlan:
    """How long each phase of a scenario lasts."""

    load: LoadPlan = field(default_factory=LoadPlan)
    before_s: float = 5.0
    """Load before the fault."""
    after_s: float = 20.0
    """Load after recovery."""
    freeze_s: float = 20.0
    """How long a frozen process stays stopped."""
    recovery_timeout_s: float = 180.0
    """Longest wait for the supervisor to have a killed process running again."""
    catch_up_timeout_s: float = 120.0
    """Longest wait, after recovery, for the fault's backlog to be searchable by meaning."""


@dataclass
class ScenarioResult:
    """One scenario's figures (the first six keys are the report's; the others explain them)."""

    name: str
    acknowledged: int = 0
    lost: int = 0
    recall_errors: int = 0
    recall_partial: int = 0
    catch_up_s: float | None = None
    """Seconds from recovery until the fault's backlog was searchable by meaning (None: never, in time)."""
    retain_errors: int = 0
    """Retains refused (not acknowledged) while a store or the layer holding the record was down."""
    edge_down_errors: int = 0
    """Calls that failed because the edge itself was down (only in ``kill_mcp_edge``)."""
    retains: int = 0
    recalls: int = 0
    backlog: int = 0
    """Retains acknowledged during the fault (the ones ``catch_up_s`` waits for)."""
    missing_by_id: list[str] = field(default_factory=list)
    missing_by_meaning: list[str] = field(default_factory=list)
    recovery_s: float = 0.0
    """Seconds from the fault until the process ran again (a freeze: its length)."""
    error_kinds: dict[str, int] = field(default_factory=dict)


class FaultError(RuntimeError):
    """A scenario could not be run (its process never came back)."""


def _pid_and_restarts(home: Path, target: str) -> tuple[int, int, str]:
    info = read_mesh(home)
    if info is None:
        raise FaultError(f"the mesh on {home} is gone")
    if target in STORES:
        store = info.stores.get(target)
        if store is None:
            raise FaultError(f"the mesh runs no embedded {target} (its stores come from the environment)")
        return int(store["pid"]), int(store["restarts"]), str(store["state"])
    return info.children[target], info.restarts.get(target, 0), info.states.get(target, RUNNING)


async def _until_restarted(home: Path, target: str, restarts: int, timeout: float) -> None:
    """Return once the supervisor restarted ``target`` (more than ``restarts``) and it runs again."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, now, state = await asyncio.to_thread(_pid_and_restarts, home, target)
        if now > restarts and state == RUNNING:
            return
        await asyncio.sleep(0.1)
    raise FaultError(f"{target} was not running again within {timeout:.0f}s of the fault")


async def inject(home: Path, scenario: Scenario, plan: FaultPlan) -> None:
    """Apply the fault and return once it is over (the process runs again)."""
    pid, restarts, _ = _pid_and_restarts(home, scenario.target)
    if scenario.kind == "kill":
        os.kill(pid, signal.SIGKILL)
        await _until_restarted(home, scenario.target, restarts, plan.recovery_timeout_s)
    elif scenario.kind == "freeze":
        os.kill(pid, signal.SIGSTOP)
        try:
            await asyncio.sleep(plan.freeze_s)
        finally:
            os.kill(pid, signal.SIGCONT)
    else:
        raise ValueError(f"scenario {scenario.name}: unknown kind {scenario.kind!r}")


async def _found_by_meaning(client: Any, ack: Ack) -> bool:
    from hindsight.client.errors import HindsightError

    try:
        reply = await client.recall(ack.bank, ack.text, top_k=5, layers=["semantic"])
    except HindsightError:
        return False
    return any(
        ack.turn_id == memory.id or ack.turn_id in memory.meta.source_turn_ids for memory in reply.memories
    )


async def _searchable(
    client: Any, acks: Callable[[], Sequence[Ack]], settled: Callable[[], bool], deadline: float
) -> dict[str, float]:
    """When each of ``acks()`` was first found by meaning (``time.monotonic()``), looking until every one
    is found and ``settled()`` says no more will come, or until ``deadline``; missing ones are absent."""
    found: dict[str, float] = {}
    while True:
        done = settled()  # before the look: an ack that arrives during it is looked for next round
        wanted = list(acks())
        for ack in wanted:
            if ack.turn_id not in found and await _found_by_meaning(client, ack):
                found[ack.turn_id] = time.monotonic()
        if (done and all(ack.turn_id in found for ack in wanted)) or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.2)


async def _stored_ids(client: Any, banks: Iterable[str]) -> set[str]:
    """Every turn id the system of record holds for ``banks`` (``ListRecent``, page by page)."""
    ids: set[str] = set()
    for bank in banks:
        token = ""
        while True:
            page = await client.list_recent(bank, limit=100, page_token=token)
            ids.update(turn.id for turn in page.turns)
            token = page.next_page_token
            if not token:
                break
    return ids


async def run_scenario(
    info: MeshInfo, token: str, scenario: Scenario, plan: FaultPlan, say: Callable[[str], None] = print
) -> ScenarioResult:
    """Load, fault, recovery, load; then look for every acknowledged retain."""
    from hindsight.client import AsyncMemoryClient

    home = Path(info.home)
    result = ScenarioResult(scenario.name)
    fault: dict[str, float] = {}

    def edge_down() -> bool:
        if scenario.target != EDGE or "start" not in fault:
            return False
        return "end" not in fault or time.monotonic() < fault["end"] + EDGE_RECONNECT_GRACE_S

    load = FaultLoad(
        info.memory_address, token, plan.load, f"{scenario.name}-{uuid.uuid4().hex[:6]}", edge_down
    )
    stop = asyncio.Event()
    running = asyncio.create_task(load.run(stop))
    async with AsyncMemoryClient(info.memory_address, token=token, timeout=30.0) as client:
        try:
            await asyncio.sleep(plan.before_s)
            say(f"  {scenario.name}: fault")
            fault["start"] = time.monotonic()
            await inject(home, scenario, plan)
            fault["end"] = time.monotonic()
            result.recovery_s = round(fault["end"] - fault["start"], 2)
            say(f"  {scenario.name}: recovered after {result.recovery_s:.1f}s")

            def backlog() -> list[Ack]:
                """The retains sent during the fault and acknowledged (some answer after it ended)."""
                window = fault["start"], fault["end"]
                return [ack for ack in load.tally.acknowledged if window[0] <= ack.asked < window[1]]

            catching_up = asyncio.create_task(
                _searchable(client, backlog, running.done, fault["end"] + plan.catch_up_timeout_s)
            )
            await asyncio.sleep(plan.after_s)
        finally:
            stop.set()
            tally: Tally = await running
        found = await catching_up
        result.backlog = len(backlog())
        if all(ack.turn_id in found for ack in backlog()):
            result.catch_up_s = round(max([0.0, *(found[a.turn_id] - fault["end"] for a in backlog())]), 2)
        acknowledged = tally.acknowledged
        stored = await _stored_ids(client, load.banks())
        result.missing_by_id = sorted(ack.turn_id for ack in acknowledged if ack.turn_id not in stored)
        rest = [ack for ack in acknowledged if ack.turn_id not in found]
        seen = await _searchable(
            client, lambda: rest, lambda: True, time.monotonic() + plan.catch_up_timeout_s
        )
        result.missing_by_meaning = sorted(ack.turn_id for ack in rest if ack.turn_id not in seen)
    result.acknowledged = len(acknowledged)
    result.lost = len(set(result.missing_by_id) | set(result.missing_by_meaning))
    result.recall_errors = tally.recall_errors
    result.recall_partial = tally.recall_partial
    result.retain_errors = tally.retain_errors
    result.edge_down_errors = tally.edge_down_errors
    result.retains = tally.retains
    result.recalls = tally.recalls
    result.error_kinds = dict(tally.error_kinds)
    return result


REPORT_KEYS = ("name", "acknowledged", "lost", "recall_errors", "recall_partial", "catch_up_s")


def table(results: Sequence[ScenarioResult]) -> str:
    """The printed table: the report's keys, then the refused retains and the edge-down errors."""
    header = f"{'scenario':<18} {'acked':>6} {'lost':>5} {'rec.err':>8} {'partial':>8} {'catch-up':>9} "
    header += f"{'ret.err':>8} {'edge.err':>9} {'recovery':>9}"
    lines = [header]
    for r in results:
        catch_up = "never" if r.catch_up_s is None else f"{r.catch_up_s:.1f}s"
        lines.append(
            f"{r.name:<18} {r.acknowledged:>6} {r.lost:>5} {r.recall_errors:>8} {r.recall_partial:>8} "
            f"{catch_up:>9} {r.retain_errors:>8} {r.edge_down_errors:>9} {r.recovery_s:>8.1f}s"
        )
    return "\n".join(lines)


def as_json(results: Sequence[ScenarioResult], commit: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The JSON document: ``scenarios`` (report keys first, then the explaining ones), commit, settings."""
    return {"scenarios": [asdict(result) for result in results], "commit": commit, "settings": settings}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agents", type=int, default=8, help="simulated agents, one bank each (default 8)")
    parser.add_argument(
        "--seconds", type=float, default=20.0, help="seconds of load after each recovery (default 20)"
    )
    parser.add_argument(
        "--freeze-seconds",
        type=float,
        default=20.0,
        help="how long the semantic layer is frozen (default 20)",
    )
    parser.add_argument(
        "--scenarios",
        default=",".join(BY_NAME),
        help="comma-separated scenarios to run, in order (default: all): " + ", ".join(BY_NAME),
    )
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="also write the JSON here")


def _scenarios(names: str) -> list[Scenario]:
    chosen = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in BY_NAME]
    if unknown or not chosen:
        raise ValueError(
            f"--scenarios: unknown {', '.join(unknown) or '(none given)'}; known: {', '.join(BY_NAME)}"
        )
    return [BY_NAME[name] for name in chosen]


def run(args: argparse.Namespace) -> int:
    """Entry of ``hindsight bench faults``."""
    from hindsight.bench.mesh_process import embedded_mesh
    from hindsight.bench.provenance import (
        checkout,
        commit_label,
        mesh_environment,
        recorded_settings,
        write_json,
    )
    from hindsight.cli.credentials import client_token

    try:
        scenarios = _scenarios(args.scenarios)
        if args.agents < 1 or args.seconds <= 0 or args.freeze_seconds <= 0:
            raise ValueError("--agents, --seconds and --freeze-seconds must be positive")
    except ValueError as exc:
        print(f"hindsight bench faults: {exc}", file=sys.stderr)
        return 2
    plan = FaultPlan(load=LoadPlan(agents=args.agents), after_s=args.seconds, freeze_s=args.freeze_seconds)
    env = mesh_environment({})
    results: list[ScenarioResult] = []
    print(
        f"hindsight bench faults: {len(scenarios)} scenarios, {args.agents} agents, starting a private mesh"
    )
    with embedded_mesh(environ=env) as (info, _):
        token = client_token(Path(info.home))
        for scenario in scenarios:
            print(f"{scenario.name} ...", flush=True)
            results.append(asyncio.run(run_scenario(info, token, scenario, plan)))
    settings = {
        "agents": args.agents,
        "seconds": args.seconds,
        "freeze_seconds": args.freeze_seconds,
        "before_seconds": plan.before_s,
        "rate_per_agent": plan.load.rate,
        "recall_share": plan.load.recall_share,
        "stores": "embedded PostgreSQL and Valkey, Qdrant Edge",
        "mesh": recorded_settings(env),
    }
    document = as_json(results, commit_label(checkout()), settings)
    print(table(results))
    if args.json is not None:
        write_json(args.json, document)
        print(f"wrote {args.json}")
    return 0 if all(r.lost == 0 and r.recall_errors == 0 for r in results) else 1
