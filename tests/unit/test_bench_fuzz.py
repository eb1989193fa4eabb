"""The fuzz bench's bookkeeping: what counts as a failure, the JSON it writes, how cases are spread."""

from __future__ import annotations

import argparse

import pytest

from hindsight.bench.fuzz import FAMILIES, FIELD_FIRST, Outcome, Tally, _shares, add_arguments
from hindsight.mcp_edge.banks import check_weights
from hindsight.runtime.errors import InvalidArgument


def test_the_summary_has_the_keys_the_bench_promises_and_counts_each_kind() -> None:
    tally = Tally()
    tally.add(Outcome("messages", "refused", "INVALID_ARGUMENT", "bank_id: is required"), "m1")
    tally.add(Outcome("tools", "unnamed", "tool_error", "Error executing tool retain"), "t1")
    tally.add(Outcome("bytes", "internal", "INTERNAL", "boom"), "b1")
    tally.add(Outcome("jsonrpc", "ok"), "j1")
    summary = tally.summary()
    assert {"cases", "crashes", "hangs", "internal_errors", "partial_writes", "refusals_by_code"} <= set(
        summary
    )
    assert summary["cases"] == 4 and summary["internal_errors"] == 1 and summary["unnamed_refusals"] == 1
    assert summary["refusals_by_code"] == {"INVALID_ARGUMENT": 1, "tool_error": 1}
    assert [f["sent"] for f in summary["failures"]] == ["t1", "b1"]
    assert not Outcome("tools", "refused").failed and Outcome("tools", "partial").failed


def test_a_refusal_names_its_field_first() -> None:
    assert FIELD_FIRST.match("turns[0].meta.time: not a valid time")
    assert FIELD_FIRST.match("bank_id: is required")
    assert not FIELD_FIRST.match("internal error (request id 1)")
    assert not FIELD_FIRST.match("Exception deserializing request!")


@pytest.mark.parametrize("bank", [":", "a: b", "x]: y", 'say "hi"', "银行", "plain-bank"])
def test_a_refused_bank_weight_names_its_key_quoted_whatever_the_key_holds(bank: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        check_weights({bank: 1.0}, ["own"])
    message = str(refused.value)
    assert FIELD_FIRST.match(message), message
    assert message.startswith("bank_weights[") and bank.replace('"', '\\"') in message


def test_cases_are_spread_over_every_family_and_add_up() -> None:
    for cases in (4, 10, 999, 10_000):
        shares = _shares(cases)
        assert len(shares) == len(FAMILIES) and sum(shares) == cases and min(shares) >= 1
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--cases", "50", "--json", "out.json"])
    assert args.cases == 50 and str(args.json) == "out.json"
