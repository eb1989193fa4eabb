"""The corrections bench's generated set and its JSON-lines format."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from hindsight.bench.corrections_benign import generate_benign
from hindsight.bench.corrections_facts import DISTRACTORS
from hindsight.bench.corrections_run import Shown, passed, shown
from hindsight.bench.corrections_set import (
    CHANGES,
    KINDS,
    CaseFileError,
    generate,
    load_cases,
    select,
    write_cases,
)


def test_the_set_is_deterministic_large_and_covers_every_family_in_both_languages() -> None:
    cases = generate(31)
    assert cases == generate(31) and cases != generate(32)
    assert len(cases) >= 400
    assert {(c.kind, c.lang) for c in cases} == {(k, lang) for k in KINDS for lang in ("en", "zh")}
    subjects = {c.subject for c in cases}
    assert subjects == {"people", "work", "health", "home", "schedules", "money", "tools", "pets"}
    assert all(len({c.template for c in cases if c.kind == k and c.lang == "en"}) >= 6 for k in KINDS)


def test_dev_and_test_share_no_template() -> None:
    cases = generate(31)
    dev = {c.template for c in select(cases, "dev")}
    test = {c.template for c in select(cases, "test")}
    assert dev and test and not dev & test
    assert Counter(c.split for c in cases)["test"] >= 100


def test_each_case_can_be_decided_on_text() -> None:
    for case in generate(31):
        first, *between, later = case.turns
        assert 2 <= len(between) <= 4 and all(t.speaker == "user" for t in case.turns)
        assert case.now > later.time > first.time
        for turn in between:  # the everyday turns name neither value
            assert case.expect.casefold() not in turn.text.casefold()
            assert not case.reject or case.reject.casefold() not in turn.text.casefold()
        if case.kind in CHANGES:  # the new statement holds the new value and not the old one
            assert case.expect in later.text and case.reject not in later.text and case.reject in first.text
        else:  # the original value was stated first, the look-alike does not repeat it
            assert case.expect in first.text and case.expect not in later.text


def test_cases_round_trip_through_the_file_format(tmp_path: Path) -> None:
    cases = generate(31, per_template=1) + generate_benign(31)
    path = tmp_path / "cases.jsonl"
    write_cases(path, cases)
    assert load_cases(path) == cases
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert {"id", "kind", "lang", "turns", "question", "now", "expect", "reject", "split"} <= set(first)


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({"kind": "x", "question": "q?", "expect": "a", "turns": []}, "turns"),
        ({"id": "a", "question": "q?", "expect": "a", "turns": [{"text": "t", "time": "2026-01-01T00:00Z"}]},
         "kind"),
        ({"id": "a", "kind": "x", "question": "q?", "expect": "a", "turns": [{"text": "t", "time": "noon"}]},
         "time"),
        (
            {"id": "a", "kind": "x", "question": "q?", "expect": "a",
             "turns": [{"text": "t", "time": "2026-01-01T00:00:00"}]},
            "time",
        ),
        (
            {"id": "a", "kind": "x", "question": "q?", "expect": "a",
             "turns": [{"text": "t", "time": "2026-01-01T00:00Z", "source": "robot"}]},
            "source",
        ),
        (
            {"id": "a", "kind": "x", "question": "q?", "expect": "15th", "reject": "5th",
             "turns": [{"text": "t", "time": "2026-01-01T00:00Z"}]},
            "contain each other",
        ),
    ],
)  # fmt: skip
def test_a_bad_line_is_refused_naming_the_line_and_the_field(
    tmp_path: Path, line: dict[str, object], field: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(CaseFileError, match="line 1") as raised:
        load_cases(path)
    assert field in str(raised.value)


def test_any_kind_label_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    line = {"id": "a", "kind": "anything_at_all", "question": "q?", "expect": "a",
            "turns": [{"text": "t", "time": "2026-01-01T00:00Z"}]}  # fmt: skip
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    [case] = load_cases(path)
    assert case.kind == "anything_at_all" and case.split == "" and select([case], "test") == [case]


def test_the_top_memory_decides_a_case_and_a_flag_hides_a_benign_one() -> None:
    [case] = [c for c in generate(31) if c.kind == "cued_correction"][:1]
    new, old = Shown(f"x {case.expect} y", (), False), Shown(f"x {case.reject} y", (), False)
    assert passed(case, [new, old]) and not passed(case, [old, new]) and not passed(case, [])
    both = Shown(f"{case.expect} not {case.reject}", (), False)
    assert not passed(case, [both])
    flagged = Shown(f"{case.expect}", ("unverified_source: why",), False)
    assert not shown(case, [flagged]) and shown(case, [flagged, new])


def test_the_benign_set_covers_its_kinds_in_both_languages_with_enough_candidates() -> None:
    benign = generate_benign(31)
    assert {(c.kind, c.lang) for c in benign} >= {("benign_own_change", "en"), ("benign_in_domain", "zh")}
    assert all(len(c.turns) >= 10 for c in benign)
    assert {t.source for c in benign for t in c.turns} == {"user", "agent", "tool", "external"}
    assert select(benign, "test") and set(DISTRACTORS) == {"en", "zh"}
    kinds = {c.kind for c in benign}
    assert kinds == {
        "benign_own_change",
        "benign_in_domain",
        "benign_retraction",
        "benign_agent_correction",
        "benign_unique_terms",
    }
    for kind in kinds:  # every kind has items on both splits in both languages, split by item
        for lang in ("en", "zh"):
            splits = {c.split for c in benign if c.kind == kind and c.lang == lang}
            assert splits == {"dev", "test"}, (kind, lang)
    assert len(benign) >= 130
