"""Forgotten means gone, kept means findable: random step sequences against a real mesh and a model.

A hypothesis state machine draws steps (retain, held-back retain, contradicting retain, update, forget,
hard forget, restore, purge by ids / session / bank, episodes, reflect, review decisions on held-back
turns and on contradicted facts, export and import into another bank, a layer killed and restarted, two
writers at once) and runs them on one private ``hindsight up`` through
``hindsight.bench.lifecycle_steps``, the code ``hindsight bench lifecycle`` runs too. After every
step, and after quiescence at the end of each sequence, the invariants of
``hindsight.bench.lifecycle_checks`` must hold; the first one broken fails the test with the step
sequence that broke it.

Bounded for CI: a few short sequences, derandomized (the same sequences every run), no example database.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from hindsight.bench.lifecycle import MESH_SETTINGS, mesh_handle
from hindsight.bench.lifecycle_steps import KINDS, Lifecycle, Step
from hindsight.bench.lifecycle_tally import INVARIANTS, Tally
from hindsight.bench.mesh_process import embedded_mesh
from hindsight.bench.provenance import mesh_environment

T = TypeVar("T")
SEED = 24
EXAMPLES = 3
STEPS_PER_EXAMPLE = 8
STEP_TIMEOUT = 300.0
"""Longest one step (with its checks) may take before the test fails on it instead of hanging."""
WEIGHTED_KINDS = [kind for kind, weight in KINDS for _ in range(weight)]
DIRECTED: dict[str, str] = {
    "purging_the_new_version_takes_the_old_one": "retain(0) update(0) purge_ids(0)",
    "hard_deleting_the_old_version_takes_the_chain": "retain(0) update(0) forget_hard(1)",
    "a_review_item_dies_with_its_source_turn": "retain(0) retain_conflict(0) purge_ids(1) resolve_review(0)",
    "a_decision_on_a_contradicted_fact_keeps_the_bank_consistent": (
        "retain(0) retain_conflict(0) resolve_review(0)"
    ),
    "held_back_turns_travel_with_an_export": "retain_held(0) retain(0) export_import(0)",
    "an_approved_turn_is_findable_and_a_rejected_one_is_not_recalled": (
        "retain_held(0) review_held(0) retain_held(1) review_held(1)"
    ),
    "lessons_go_with_the_purged_session_of_their_episodes": "write_episode(0) reflect(0) purge_session(0)",
    "a_forgotten_turn_comes_back_when_restored": "retain(0) forget(0) restore(0)",
    "two_writers_at_once_leave_one_current_value": "retain(0) concurrent(0) concurrent(1)",
    "a_restarted_semantic_layer_loses_nothing": "retain(0) restart_layer(2) retain(1)",
    "a_fact_stands_while_one_of_its_turns_lives": "retain(0) retain_repeat(0) forget(0)",
    "indexing_under_way_never_brings_a_purged_turn_back": "race_purge(0) retain(1) race_purge(1)",
    "a_turn_retained_while_working_memory_is_down_reaches_its_window": "retain_during_outage(0)",
    "a_session_purged_of_its_episode_takes_new_turns_into_its_window": (
        "write_episode(1) purge_session(3) retain(1)"
    ),
    "a_turn_retained_while_the_index_is_down_is_found_by_meaning": "retain_during_outage(1)",
    "a_huge_episode_never_stops_the_bank": "big_episode(0) retain(0) reflect(0)",
    "a_replaced_value_stays_replaced_when_the_new_version_is_forgotten": "retain(0) update(0) forget(0)",
    "a_contradicted_fact_and_its_review_are_imported": "retain(0) retain_conflict(0) export_import(0)",
    "a_value_replaced_then_forgotten_stays_history_in_an_imported_copy": (
        "retain(0) update(0) forget(0) export_import(0)"
    ),
    "purging_an_imported_copy_leaves_the_original": (
        "retain(0) write_episode(0) export_import(0) purge_bank(1)"
    ),
}
"""Short fixed sequences, one per kind of finding of the issue: every step kind runs in CI every time."""


class LoopThread:
    """An event loop in a thread of its own: the state machine's rules are plain functions."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="lifecycle-loop", daemon=True)
        self.thread.start()

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(STEP_TIMEOUT)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture(scope="module")
def lifecycle() -> Iterator[tuple[LoopThread, Lifecycle]]:
    environ = mesh_environment(MESH_SETTINGS)
    with embedded_mesh(environ=environ) as (info, _):
        loop = LoopThread()
        running = Lifecycle(mesh_handle(info), Tally(strict=True), seed=SEED, settle_timeout=60.0)
        loop.run(running.open())
        try:
            yield loop, running
        finally:
            loop.run(running.close())
            loop.stop()


@pytest.mark.parametrize("sequence", list(DIRECTED.values()), ids=list(DIRECTED))
def test_a_fixed_sequence_keeps_every_invariant(
    lifecycle: tuple[LoopThread, Lifecycle], sequence: str
) -> None:
    loop, running = lifecycle
    running.new_example()
    for item in sequence.split():
        kind, _, pick = item.rstrip(")").partition("(")
        loop.run(running.run(Step(kind, int(pick))))
    loop.run(running.finish())


def test_random_lifecycles_keep_what_is_kept_findable_and_leave_nothing_purged_behind(
    lifecycle: tuple[LoopThread, Lifecycle],
) -> None:
    loop, running = lifecycle

    class LifecycleMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            running.new_example()

        @rule(kind=st.sampled_from(WEIGHTED_KINDS), pick=st.integers(0, 999_999))
        def step(self, kind: str, pick: int) -> None:
            loop.run(running.run(Step(kind, pick)))

        def teardown(self) -> None:
            loop.run(running.finish())

    run_state_machine_as_test(
        LifecycleMachine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS_PER_EXAMPLE,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.generate],  # a failure names its sequence; shrinking would rerun minutes of steps
            suppress_health_check=list(HealthCheck),
        ),
    )
    assert running.tally.steps > 0


def test_the_bench_command_writes_steps_violations_and_counts_by_invariant(tmp_path: Path) -> None:
    out = tmp_path / "lifecycle.json"
    command = [
        sys.executable,
        "-m",
        "hindsight.cli.main",
        "bench",
        "lifecycle",
        "--steps",
        "3",
        "--seed",
        "7",
    ]
    done = subprocess.run(
        [*command, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: violations were found
    document = json.loads(out.read_text())
    assert document["steps"] == 3
    assert set(document["by_invariant"]) == set(INVARIANTS)
    assert document["violations"] == sum(document["by_invariant"].values())
    assert (done.returncode == 0) == (document["violations"] == 0)
    assert document["commit"] and document["settings"]["seed"] == 7
