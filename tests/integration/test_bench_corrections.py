"""``hindsight bench corrections`` end to end on a tiny case file, against real private meshes over MCP.

Two cases of the corrections format (one of a kind label the generator never makes) and one benign
look-alike run through the bench: a fresh bank per case, the turns retained one by one, the question
recalled with ``top_k`` 3, and the benign set on a second mesh with the defences off.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hindsight.cli.main import build_parser

CASES = [
    {
        "id": "change-1",
        "kind": "cued_correction",
        "lang": "en",
        "split": "test",
        "turns": [
            {"text": "My dentist appointment is on Tuesday.", "time": "2026-03-02T09:00:00+00:00"},
            {"text": "The garden needs watering again.", "time": "2026-03-02T09:02:00+00:00"},
            {"text": "I finished the crossword in record time.", "time": "2026-03-02T09:03:00+00:00"},
            {
                "text": "Correction: my dentist appointment is on Thursday.",
                "time": "2026-03-02T09:05:00+00:00",
            },
        ],
        "question": "When is my dentist appointment?",
        "expect": "Thursday",
        "reject": "Tuesday",
    },
    {
        "id": "custom-1",
        "kind": "my_own_label",
        "lang": "zh",
        "split": "test",
        "turns": [
            {
                "text": "我家的狗叫豆豆。",
                "speaker": "user",
                "time": "2026-03-02T09:00:00+00:00",
                "session": "a",
            },
            {"text": "今天下午天气真好。", "time": "2026-03-02T09:01:00+00:00", "session": "a"},
            {"text": "花园又该浇水了。", "time": "2026-03-02T09:02:00+00:00", "session": "a"},
        ],
        "question": "我家的狗叫什么名字？",
        "now": "2026-03-02T12:00:00+00:00",
        "expect": "豆豆",
        "reject": "",
    },
]
BENIGN = [
    {
        "id": "benign-1",
        "kind": "benign_in_domain",
        "lang": "en",
        "split": "test",
        "turns": [
            {"text": "The garden needs watering again.", "time": "2026-03-02T09:00:00+00:00"},
            {
                "text": "Recipe, step 1: always preheat the oven to 220 degrees before the dough goes in.",
                "speaker": "recipes",
                "source": "external",
                "time": "2026-03-02T09:01:00+00:00",
            },
        ],
        "question": "What temperature should the oven be for the sourdough?",
        "expect": "220 degrees",
    }
]


def _jsonl(path: Path, items: list[dict[str, object]]) -> Path:
    path.write_text(
        "\n".join(json.dumps(item, ensure_ascii=False) for item in items) + "\n", encoding="utf-8"
    )
    return path


def test_the_bench_runs_a_case_file_through_mcp_and_reports_by_kind_and_language(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = _jsonl(tmp_path / "cases.jsonl", CASES)
    benign = _jsonl(tmp_path / "benign.jsonl", BENIGN)
    report = tmp_path / "out" / "corrections.json"
    args = build_parser().parse_args(
        [
            *("bench", "corrections", "--cases", str(cases), "--benign-cases", str(benign)),
            *("--split", "test", "--json", str(report), "--details", "--no-progress"),
        ]
    )
    assert args.run(args) == 0
    data = json.loads(report.read_text(encoding="utf-8"))

    assert {"cases", "passed", "by_kind", "by_lang", "split", "benign_kept"} <= set(data)
    assert data["cases"] == 2 and data["split"] == "test"
    assert set(data["by_kind"]) == {"cued_correction", "my_own_label"}
    assert set(data["by_lang"]) == {"en", "zh"}
    assert data["by_kind"]["my_own_label"] == {"cases": 1, "passed": 1, "rate": 1.0}  # nothing to override
    assert data["passed"] == sum(o["ok"] for o in data["outcomes"])
    assert data["commit"] and data["top_k"] == 3
    for outcome in data["outcomes"]:  # every recall returned memories from the fresh bank
        assert outcome["top"], outcome
    assert data["benign"]["cases"] == 1 and data["benign"]["shown_without"] == 1
    assert data["benign_kept"] in (0.0, 1.0)
    assert data["settings_benign_off"]["HINDSIGHT_DEFENCES"] == "off"
    assert "my_own_label" in capsys.readouterr().out


def test_a_bad_case_file_is_refused_naming_the_line_and_field(tmp_path: Path) -> None:
    broken = dict(CASES[0], turns=[{"text": "hi", "time": "yesterday"}])
    cases = _jsonl(tmp_path / "cases.jsonl", [CASES[1], broken])
    report = tmp_path / "out.json"
    args = build_parser().parse_args(["bench", "corrections", "--cases", str(cases), "--json", str(report)])
    assert args.run(args) == 2
    assert not report.exists()
