"""A query and its rewrites searched in one call: the phrasings' lists merge into one, the query leading."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass

import pytest

from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.offload import off_loop
from hindsight.runtime.records import RecordMeta
from hindsight.runtime.rewrites import (
    DEFAULT_REWRITE_WEIGHT,
    MAX_REWRITES,
    Phrasings,
    check_phrasings,
    merge_rewrites,
    min_max_scaled,
)


@dataclass(frozen=True)
class Hit:
    id: str
    score: float


def _ids_and_scores(hits: list[Hit]) -> list[tuple[str, float]]:
    return [(hit.id, round(hit.score, 2)) for hit in hits]


def test_a_rewrites_hits_join_the_list_but_the_original_query_leads() -> None:
    original = [Hit("a", 9.0), Hit("b", 3.0)]
    rewrite = [Hit("c", 0.9), Hit("a", 0.1)]
    merged = merge_rewrites([original, rewrite], key=lambda hit: hit.id, rewrite_weight=0.8)
    assert _ids_and_scores(merged) == [("a", 1.0), ("c", 0.8), ("b", 0.0)]


def test_each_phrasing_is_scaled_on_its_own_so_raw_score_units_do_not_matter() -> None:
    cosines = [Hit("a", 0.31), Hit("b", 0.30)]
    ranks = [Hit("b", 40.0), Hit("c", 10.0)]
    merged = merge_rewrites([cosines, ranks], key=lambda hit: hit.id, rewrite_weight=1.0)
    assert _ids_and_scores(merged) == [("a", 1.0), ("b", 1.0), ("c", 0.0)]


def test_equal_scores_fall_back_to_the_order_the_layer_gave() -> None:
    assert min_max_scaled([("x", 2.0), ("y", 2.0), ("x", 9.0)]) == {"x": 1.0, "y": 0.5}
    assert min_max_scaled([]) == {}


def test_a_query_without_rewrites_keeps_the_layers_own_scores() -> None:
    hits = [Hit("a", 7.5), Hit("b", 2.5)]
    assert Phrasings("deploy").merge([hits], key=lambda hit: hit.id) == hits
    assert Phrasings.of("deploy") == Phrasings("deploy", (), DEFAULT_REWRITE_WEIGHT)


def test_rewrites_in_a_request_are_checked_and_repeats_dropped() -> None:
    phrasings = check_phrasings("Biscuit last week", ["Biscuit", "Biscuit", "Biscuit last week"], None, 100)
    assert phrasings == Phrasings("Biscuit last week", ("Biscuit",), DEFAULT_REWRITE_WEIGHT)
    assert phrasings.texts == ("Biscuit last week", "Biscuit")
    assert check_phrasings("q", [], 0.0, 100).rewrite_weight == 0.0
    with pytest.raises(InvalidArgument, match="rewrites\\[1\\]"):
        check_phrasings("q", ["fine", " "], None, 100)
    with pytest.raises(InvalidArgument, match="rewrites"):
        check_phrasings("q", [f"r{i}" for i in range(MAX_REWRITES + 1)], None, 100)
    with pytest.raises(InvalidArgument, match="rewrite_weight"):
        check_phrasings("q", ["r"], -0.1, 100)
    with pytest.raises(InvalidArgument, match="rewrite_weight"):
        check_phrasings("q", ["r"], float("nan"), 100)
    with pytest.raises(InvalidArgument, match="query"):
        check_phrasings("", ["r"], None, 100)


def test_tags_match_when_the_record_carries_every_one_whatever_the_case() -> None:
    meta = RecordMeta(tags=("Deploy", "staging"))
    assert meta.carries_tags(("deploy",)) and meta.carries_tags(("STAGING", "deploy"))
    assert not meta.carries_tags(("deploy", "prod"))
    assert meta.carries_tags(())


async def test_small_work_stays_on_the_loop_and_large_work_moves_to_a_thread() -> None:
    loop_thread = threading.get_ident()
    assert await off_loop(threading.get_ident, size=9, threshold=10) == loop_thread
    assert await off_loop(threading.get_ident, size=10, threshold=10) != loop_thread


async def test_the_loop_keeps_running_while_moved_work_computes() -> None:
    release = threading.Event()
    ticked = asyncio.Event()

    def work() -> str:
        assert release.wait(timeout=5), "the loop never ran while the work waited"
        return "done"

    async def tick() -> None:
        ticked.set()
        release.set()

    running = asyncio.ensure_future(off_loop(work, size=1, threshold=1))
    await asyncio.wait_for(tick(), timeout=5)
    assert ticked.is_set()
    assert await asyncio.wait_for(running, timeout=5) == "done"
