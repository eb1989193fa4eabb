"""Lifecycle integrity: random retain, update, forget, restore, purge, review, export/import, restarts.

A private mesh gets a seeded random sequence of steps (see ``lifecycle_steps``) while a reference model
follows along; after each step and after quiescence the invariants are checked on every surface (see
``lifecycle_checks``): nothing purged is findable, every live turn is findable by id and by meaning, no
replaced value is current, counts agree. Violations are counted by invariant, each distinct one once, with
the shortest step sequence that showed it. ``hindsight bench lifecycle --steps N --seed S --json PATH``
writes ``{"steps", "violations", "by_invariant", ...}``; the property test in
``tests/integration/test_lifecycle_model.py`` runs the same steps and checks, bounded, and fails on the
first violation.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from hindsight.bench.lifecycle_steps import KINDS, Lifecycle, MeshHandle, StepError, random_step
from hindsight.bench.lifecycle_tally import INVARIANTS, Tally

MESH_SETTINGS = {
    "HINDSIGHT_UP_RESTART_BACKOFF_SECONDS": "0.2",
    "HINDSIGHT_UP_CRASH_WINDOW_SECONDS": "1",
    "HINDSIGHT_UP_CRASH_LIMIT": "1000",
}
"""The private mesh restarts a killed layer at once and never gives up: the run kills layers on purpose."""
EXAMPLE_STEPS = 25
"""Steps in one sequence before the run starts again from fresh banks (a reproduction is no longer)."""


RESTART_TIMEOUT = 180.0
"""Longest wait for the supervisor to have a killed layer running again."""


async def kill_and_restart(home: Path, layer: str, during: Callable[[], Awaitable[None]] | None) -> None:
    """SIGKILL ``layer``'s process, run ``during`` while it is down, wait for the supervisor's restart."""
    from hindsight.cli.mesh import RUNNING, read_mesh

    info = read_mesh(home)
    if info is None:
        raise RuntimeError(f"the mesh on {home} is gone")
    restarts = info.restarts.get(layer, 0)
    os.kill(info.children[layer], signal.SIGKILL)
    if during is not None:
        await during()
    deadline = time.monotonic() + RESTART_TIMEOUT
    state = "unknown"
    while time.monotonic() < deadline:
        now = await asyncio.to_thread(read_mesh, home)
        state = now.states.get(layer, "unknown") if now is not None else "mesh gone"
        if now is not None and now.restarts.get(layer, 0) > restarts and state == RUNNING:
            return
        await asyncio.sleep(0.1)
    raise StepError(
        f"{layer} was not running again {RESTART_TIMEOUT:.0f}s after being killed (state: {state})"
    )


def mesh_handle(info: Any) -> MeshHandle:
    """The handle of a running ``hindsight up`` (its ``MeshInfo``): addresses, tokens and a layer restart."""
    from hindsight.cli.credentials import read_credentials

    home = Path(info.home)
    credentials = read_credentials(home)
    if credentials is None:
        raise RuntimeError(f"the mesh on {home} has no credentials file")

    async def restart(layer: str, during: Callable[[], Awaitable[None]] | None) -> None:
        await kill_and_restart(home, layer, during)

    return MeshHandle(
        home=home,
        addresses=dict(info.addresses),
        console=info.mcp_url.removesuffix("/mcp") + "/console/api",
        admin=credentials.admin,
        agent=credentials.agent or credentials.admin,
        internal=credentials.internal,
        restart=restart,
    )


async def run_steps(
    mesh: MeshHandle,
    steps: int,
    seed: int,
    example_steps: int = EXAMPLE_STEPS,
    settle_timeout: float = 30.0,
    say: Any = print,
    only: frozenset[int] = frozenset(),
    tally: Tally | None = None,
) -> Tally:
    """``steps`` random steps drawn from ``seed``, in sequences of ``example_steps`` from fresh banks.

    With ``only``, just those sequences (numbered from 1, as their banks' names say) run: the others'
    steps are still drawn, so a sequence that showed a violation in a long run is replayed alone. Each
    violation is said when its sequence ends (with the sequence's number, for ``--example``); ``tally``
    (else a new one) holds what was counted even when the run is interrupted."""
    tally = tally if tally is not None else Tally()
    rng = random.Random(seed)
    lifecycle = Lifecycle(mesh, tally, seed=seed, settle_timeout=settle_timeout)
    await lifecycle.open()
    started = time.monotonic()
    try:
        done = 0
        while done < steps:
            drawn = [random_step(rng) for _ in range(min(example_steps, steps - done))]
            done += len(drawn)
            if only and lifecycle.examples not in only:
                lifecycle.new_example()
                continue
            for step in drawn:
                await lifecycle.run(step)
            await lifecycle.finish()
            for line in tally.drain_fresh():
                say(f"violation in sequence {lifecycle.examples}: {line}")
            say(
                f"{done}/{steps} steps, {tally.violations} violations "
                f"({time.monotonic() - started:.0f}s): {dict(tally.by_invariant)}"
            )
            lifecycle.new_example()
    finally:
        await lifecycle.close()
    return tally


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--steps", type=int, default=300, help="random steps to run (default 300)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the step sequence (default 0)")
    parser.add_argument(
        "--example-steps",
        type=int,
        default=EXAMPLE_STEPS,
        help=f"steps per sequence before starting from fresh banks (default {EXAMPLE_STEPS})",
    )
    parser.add_argument(
        "--settle-seconds",
        type=float,
        default=30.0,
        help="longest wait for the outbox to drain after a step (default 30)",
    )
    parser.add_argument(
        "--example",
        type=int,
        action="append",
        default=[],
        metavar="N",
        help="run only sequence N of the seed's run (repeatable): replays what a long run showed",
    )
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="also write the JSON here")


def run(args: argparse.Namespace) -> int:
    """Entry of ``hindsight bench lifecycle``."""
    from hindsight.bench.mesh_process import embedded_mesh
    from hindsight.bench.provenance import (
        checkout,
        commit_label,
        mesh_environment,
        recorded_settings,
        write_json,
    )

    if (
        args.steps < 1
        or args.example_steps < 1
        or args.settle_seconds <= 0
        or min(args.example, default=1) < 1
    ):
        print(
            "hindsight bench lifecycle: --steps, --example-steps, --settle-seconds and --example "
            "must be positive",
            file=sys.stderr,
        )
        return 2
    env = mesh_environment(MESH_SETTINGS)
    print(f"hindsight bench lifecycle: {args.steps} steps, seed {args.seed}, starting a private mesh")
    tally = Tally()
    interrupted = False
    with embedded_mesh(environ=env) as (info, _):
        try:
            asyncio.run(
                run_steps(
                    mesh_handle(info),
                    args.steps,
                    args.seed,
                    args.example_steps,
                    args.settle_seconds,
                    only=frozenset(args.example),
                    tally=tally,
                )
            )
        except KeyboardInterrupt:  # a long run stopped by hand still reports what it counted
            interrupted = True
            print(f"interrupted after {tally.steps} steps")
    document = tally.summary() | {
        "interrupted": interrupted,
        "commit": commit_label(checkout()),
        "settings": {
            "steps": args.steps,
            "seed": args.seed,
            "example_steps": args.example_steps,
            "settle_seconds": args.settle_seconds,
            "examples": sorted(args.example),
            "step_weights": dict(KINDS),
            "stores": "embedded PostgreSQL and Valkey, Qdrant Edge",
            "mesh": recorded_settings(env),
        },
    }
    for name in INVARIANTS:
        print(f"{name:32} {document['by_invariant'][name]}")
    for name, found in tally.reproductions.items():
        for item in found:
            print(f"{name}: {' '.join(item['steps'])}  [{item['subject']}]")
    if args.json is not None:
        write_json(args.json, document)
        print(f"wrote {args.json}")
    if interrupted:
        return 130  # as a shell reports a command stopped with Ctrl-C: the run did not finish
    return 0 if tally.violations == 0 else 1
