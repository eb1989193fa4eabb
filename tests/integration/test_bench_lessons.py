"""``hindsight bench lessons`` end to end against a real private mesh, and the set it generates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hindsight.bench.lessons_set import (
    DEV_DOMAINS,
    EPISODES,
    FACT_QUESTIONS,
    REQUEST_TEMPLATES,
    UNRELATED_TASKS,
    generate,
)
from hindsight.cli.main import build_parser


def test_the_set_is_the_same_for_a_seed_and_splits_by_domain_and_template() -> None:
    banks = generate(30)
    assert banks == generate(30) and banks != generate(31)
    for bank in banks:
        domains = {EPISODES[i].domain for i in bank.episodes}
        assert domains <= DEV_DOMAINS if bank.split == "dev" else not domains & DEV_DOMAINS
        assert {EPISODES[i].lang for i in bank.episodes} == {bank.lang}
        templates = REQUEST_TEMPLATES[bank.split][bank.lang]
        for request in bank.similar:  # asked with the split's own templates, about another entity
            episode = EPISODES[request.episode]
            assert request.template < len(templates) and episode.entity not in request.text
        for request in bank.unrelated:  # everyday questions, and everyday tasks asked like similar ones
            assert request.episode == -1 and request.template < len(templates)
        tasks = UNRELATED_TASKS[bank.split][bank.lang]
        assert sum(any(task in r.text for task in tasks) for r in bank.unrelated) == len(tasks)
        assert bank.facts and all(r.fact in bank.distractors for r in bank.facts)  # asked only when held
        assert {r.text for r in bank.facts} <= set(FACT_QUESTIONS[bank.split][bank.lang])
    assert not set(REQUEST_TEMPLATES["dev"]["en"]) & set(REQUEST_TEMPLATES["test"]["en"])
    assert not set(UNRELATED_TASKS["dev"]["zh"]) & set(UNRELATED_TASKS["test"]["zh"])
    assert not set(FACT_QUESTIONS["dev"]["en"]) & set(FACT_QUESTIONS["test"]["en"])
    assert {b.name for b in banks} == {"dev-en", "dev-zh", "test-en", "test-zh"}


def test_the_bench_writes_the_figures_of_both_splits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "out" / "lessons.json"
    args = build_parser().parse_args(
        ["bench", "lessons", "--per-episode", "1", "--no-progress", "--json", str(report), "--details"]
    )
    assert args.run(args) == 0
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["split"] == "test" and set(data["by_split"]) == {"dev", "test"}
    assert (
        data["similar"]["cases"] == 12 and data["unrelated"]["cases"] == 32 and data["facts"]["cases"] == 30
    )
    assert (
        0.0 <= data["similar"]["hit_at_3"] <= 1.0
        and 0.0 <= data["unrelated"]["clean_at_3"] <= 1.0
        and 0.0 <= data["first_in_context"] <= 1.0
        and 0.0 <= data["facts"]["hit_at_3"] <= 1.0
    )
    assert data["counts"]["lessons"] >= data["counts"]["episodes"] == len(EPISODES)
    assert data["commit"] and "settings" in data
    assert data["layers"] == ["working", "episodic", "semantic", "reflect"]  # what every recall asked
    # lessons do reach the top 3 for similar tasks: the bench measures something
    assert data["by_split"]["dev"]["similar"]["hit_at_3"] > 0.5
    assert data["by_split"]["dev"]["facts"]["hit_at_3"] > 0.5  # and the floor lets real questions through
    assert "hit@3" in capsys.readouterr().out
