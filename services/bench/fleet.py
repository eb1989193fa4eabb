"""A fleet of agents in teams: cross-agent recall, isolation between banks and operations, multi-bank latency.

``hindsight bench fleet --agents N --teams T`` starts a private mesh; the operator mints each agent a
scoped token through the API (its own bank read+write+forget, its team's bank read+write, the handbook
bank read). Agents retain facts in their own banks and share some into their team's bank; a teammate then
looks for each shared fact over the team bank and over its own and the team's banks in one recall
(``shared_found``: the share found in the top 5). Seeded random attempts across teams and operations
(see :mod:`.fleet_attempts`), expired and revoked tokens included, must all be refused (``leaks``: any
served, or any answer holding another bank's private note). A recall over three banks is timed against
one over the agent's own bank, in the same run (``recall_ms``). See ``docs/fleets.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

MESH_SETTINGS: dict[str, str] = {}
"""The private mesh runs on its defaults: what a fleet would get."""
TARGETS = {"leaks": 0, "shared_found": 0.95, "multi_vs_single_p50": 1.3, "dead_token_refused_ms": 1000.0}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agents", type=int, default=12, help="agents in the fleet (default 12)")
    parser.add_argument("--teams", type=int, default=3, help="teams the agents are dealt into (default 3)")
    parser.add_argument("--facts", type=int, default=8, help="facts each agent retains (default 8)")
    parser.add_argument("--shares", type=int, default=3, help="of which it shares with its team (default 3)")
    parser.add_argument(
        "--attempts",
        type=int,
        default=1000,
        help="random isolation attempts, all to be refused (default 1000)",
    )
    parser.add_argument(
        "--latency-queries",
        type=int,
        default=40,
        help="recalls per agent and mode (one bank, three banks) for the latency figures (default 40)",
    )
    parser.add_argument(
        "--expiry-seconds",
        type=int,
        default=5,
        help="lifetime of the tokens minted to expire during the run (default 5)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the fleet and of the attempts (default 0)"
    )
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="also write the JSON here")


def _dead_max(result: Any) -> float | None:
    """The slowest refusal of a dead token on any port (None: one was never refused)."""
    values = [
        ms for ports in (*result.revoked_ms.values(), *result.expired_ms.values()) for ms in ports.values()
    ]
    if not values or any(ms is None for ms in values):
        return None
    return max(float(ms) for ms in values)


def document(result: Any, settings: Any, fleet: Any) -> dict[str, Any]:
    """The JSON: the issue's keys first, the details after."""
    latency = result.latency()
    single, multi = latency["single"]["p50"], latency["multi"]["p50"]
    found = [c for c in result.checks if c.found]
    isolation = result.isolation.summary()
    return {
        "agents": settings.agents,
        "teams": settings.teams,
        "leaks": result.isolation.leaks,
        "refused": result.isolation.refused,
        "shared_found": round(result.shared_found, 4) if result.shared_found is not None else None,
        "recall_ms": latency,
        "details": {
            "attempts": result.isolation.attempts,
            "failed_attempts": result.isolation.failed,
            "multi_vs_single_p50": round(multi / single, 3) if single else None,
            "recall_layer_ms_p50": result.layer_p50(),
            "shared": result.shared,
            "shared_checks": len(result.checks),
            "shared_found_by_mode": result.found_by_mode(),
            "shared_found_written_by_sharer": (
                round(sum(c.agent == c.sharer for c in found) / len(found), 4) if found else None
            ),
            "share_error": result.share_error,
            "shared_missed": [
                {
                    "sharer": c.sharer,
                    "teammate": c.teammate,
                    "mode": c.mode,
                    "query": c.question,
                    "top": c.top,
                }
                for c in result.checks
                if not c.found
            ][:10],
            "dead_tokens": {
                "revoked_refused_ms": result.revoked_ms,
                "expired_refused_ms": result.expired_ms,
                "slowest_ms": _dead_max(result),
            },
            "isolation": {key: isolation[key] for key in ("by_port", "by_kind", "examples")},
            "banks": len(fleet.banks),
            "phase_seconds": result.phase_seconds,
            "targets": TARGETS,
        },
    }


def _print(data: dict[str, Any]) -> None:
    details = data["details"]
    latency = data["recall_ms"]
    found = data["shared_found"]
    print(f"agents {data['agents']} in {data['teams']} teams, {details['banks']} banks")
    print(
        f"shared_found (teammate's top 5)   {found if found is None else f'{found:.1%}'} of "
        f"{details['shared_checks']} checks on {details['shared']} shared memories "
        f"(by mode: {details['shared_found_by_mode']})"
    )
    if details["share_error"]:
        print(f"share failed: {details['share_error']}")
    print(
        f"isolation                         {details['attempts']} attempts: {data['refused']} refused, "
        f"{data['leaks']} leaks, {details['failed_attempts']} failed otherwise"
    )
    for kind, counts in details["isolation"]["by_kind"].items():
        print(f"  {kind:24} {counts}")
    dead = details["dead_tokens"]
    print(f"dead tokens refused after (ms)    slowest {dead['slowest_ms']}")
    for what in ("revoked_refused_ms", "expired_refused_ms"):
        for name, ports in dead[what].items():
            print(f"  {name:24} {ports}")
    print(
        f"recall p50 / p95 ms               one bank {latency['single']['p50']} / "
        f"{latency['single']['p95']}, "
        f"three banks {latency['multi']['p50']} / {latency['multi']['p95']} "
        f"(p50 ratio {details['multi_vs_single_p50']})"
    )
    for mode, layers in details["recall_layer_ms_p50"].items():
        print(f"  {mode:6} p50 ms inside the edge, by layer: {layers}")
    for example in details["isolation"]["examples"]:
        print(f"  {example['verdict']}: {example}")


def run(args: argparse.Namespace) -> int:
    """Entry of ``hindsight bench fleet``."""
    from hindsight.bench.fleet_data import plan_fleet
    from hindsight.bench.fleet_run import FleetRun, FleetSettings
    from hindsight.bench.mesh_process import embedded_mesh
    from hindsight.bench.provenance import (
        checkout,
        commit_label,
        mesh_environment,
        recorded_settings,
        write_json,
    )
    from hindsight.cli.credentials import read_credentials

    settings = FleetSettings(
        agents=args.agents,
        teams=args.teams,
        facts=args.facts,
        shares=args.shares,
        attempts=args.attempts,
        latency_queries=args.latency_queries,
        expiry_seconds=args.expiry_seconds,
        seed=args.seed,
    )
    if min(args.teams, args.facts, args.latency_queries, args.expiry_seconds) < 1 or args.attempts < 0:
        print("hindsight bench fleet: counts must be positive", file=sys.stderr)
        return 2
    try:
        fleet = plan_fleet(args.agents, args.teams, args.facts, args.shares, args.seed)
    except ValueError as exc:
        print(f"hindsight bench fleet: {exc}", file=sys.stderr)
        return 2
    env = mesh_environment(MESH_SETTINGS)
    print(
        f"hindsight bench fleet: {args.agents} agents in {args.teams} teams, seed {args.seed}, "
        "starting a private mesh"
    )
    with embedded_mesh(environ=env) as (info, _):
        credentials = read_credentials(Path(info.home))
        if credentials is None:
            raise RuntimeError(f"the mesh on {info.home} has no credentials file")
        runner = FleetRun(fleet, settings, info.mcp_url, info.memory_address, credentials.admin)
        result = asyncio.run(runner.run())
    data = document(result, settings, fleet) | {
        "commit": commit_label(checkout()),
        "settings": {
            "agents": args.agents,
            "teams": args.teams,
            "facts": args.facts,
            "shares": args.shares,
            "attempts": args.attempts,
            "latency_queries": args.latency_queries,
            "expiry_seconds": args.expiry_seconds,
            "seed": args.seed,
            "top_k": 5,
            "latency_port": "grpc",
            "stores": "embedded PostgreSQL and Valkey, Qdrant Edge",
            "mesh": recorded_settings(env),
        },
    }
    _print(data)
    if args.json is not None:
        write_json(args.json, data)
        print(f"wrote {args.json}")
    complete = result.isolation.refused == result.isolation.attempts and not result.share_error
    return 0 if data["leaks"] == 0 and complete else 1
