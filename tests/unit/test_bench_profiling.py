"""The py-spy summary: waits counted apart, the rest sharing out the metered CPU, own code inclusive."""

from __future__ import annotations

from pathlib import Path

import hindsight
from hindsight.bench.profiling import read_collapsed, summarise

PACKAGE = Path(hindsight.__file__).resolve().parent
LOOP = "run (/usr/lib/python3.11/asyncio/runners.py)"
SELECT = "EpollSelector.select (/usr/lib/python3.11/selectors.py)"
RECALL = f"MemoryEngine.recall ({PACKAGE}/mcp_edge/engine.py)"
TERMS = f"terms ({PACKAGE}/runtime/text.py)"
PARSE = "parse (/venv/lib/python3.11/site-packages/google/protobuf/message.py)"


def test_summarise_counts_waits_apart_and_shares_the_metered_cpu(tmp_path: Path) -> None:
    raw = tmp_path / "mcp_edge.txt"
    stacks = [f"{LOOP};{SELECT} 50", f"{LOOP};{RECALL};{TERMS} 30", f"{LOOP};{RECALL};{PARSE} 10"]
    raw.write_text("\n".join([*stacks, f"{LOOP};{RECALL} 10", "broken"]) + "\n", encoding="utf-8")
    assert len(read_collapsed(raw)) == 4
    profile = summarise(raw, rate=100, operations=10, cpu_ms_per_op=5.0)
    assert (profile["samples"], profile["waiting_samples"]) == (100, 50)
    assert profile["sampled_cpu_ms_per_op"] == 50.0  # 50 samples of 10 ms over 10 operations
    assert profile["cpu_ms_per_op"] == 5.0
    assert profile["self"][0] == ["terms (hindsight/runtime/text.py)", 3.0]
    assert ["parse (google/protobuf/message.py)", 1.0] in profile["self"]
    inclusive = dict((name, ms) for name, ms in profile["inclusive"])
    assert inclusive == {
        "MemoryEngine.recall (hindsight/mcp_edge/engine.py)": 5.0,
        "terms (hindsight/runtime/text.py)": 3.0,
    }


def test_a_missing_profile_is_empty(tmp_path: Path) -> None:
    profile = summarise(tmp_path / "none.txt", rate=100, operations=1)
    assert profile["samples"] == 0 and profile["self"] == []
