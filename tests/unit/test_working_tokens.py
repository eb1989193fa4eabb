"""The fast token estimate against the exact tokenizer, on the development benchmark texts."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from hindsight.runtime.token_counts import ESTIMATE, MINILM, ExactTokenizer, ScriptEstimate, token_counter

BENCH_DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "bench" / "data"
"""The benchmark files, beside the clone (never copied into the repository)."""


@pytest.fixture(scope="module")
def exact() -> ExactTokenizer:
    counter = token_counter(MINILM)
    assert isinstance(counter, ExactTokenizer)
    return counter


@functools.cache
def _namespaces(name: str) -> list[list[str]]:
    data = json.loads((BENCH_DATA / name).read_text(encoding="utf-8"))
    return [[message["text"] for message in namespace["messages"]] for namespace in data["namespaces"]]


@functools.cache
def _exact_counts(name: str) -> list[list[int]]:
    """Exact counts per bank, per message (tokenised once for both tests)."""
    exact = token_counter(MINILM)
    assert isinstance(exact, ExactTokenizer)
    return [exact.count_many(texts) for texts in _namespaces(name)]


@pytest.mark.parametrize("name", ["locomo-dev.json", "madial-en.json", "memdaily-dev.json"])
def test_the_estimate_is_within_ten_percent_of_the_exact_count_for_every_bank(name: str) -> None:
    estimate = ScriptEstimate()
    for texts, counts in zip(_namespaces(name), _exact_counts(name), strict=True):
        exact_total = sum(counts)
        estimated = sum(estimate.count(text) for text in texts)
        assert abs(estimated - exact_total) <= 0.1 * exact_total, (name, estimated, exact_total)


@pytest.mark.parametrize("name", ["locomo-dev.json", "madial-en.json"])
def test_the_estimate_is_within_ten_percent_for_nearly_every_english_message(name: str) -> None:
    estimate = ScriptEstimate()
    texts = [text for namespace in _namespaces(name) for text in namespace]
    counts = [count for bank in _exact_counts(name) for count in bank]
    counted = [(estimate.count(text), count) for text, count in zip(texts, counts, strict=True)]
    long_enough = [(guess, count) for guess, count in counted if count >= 20]
    close = sum(1 for guess, count in long_enough if abs(guess - count) <= 0.1 * count)
    assert close >= 0.9 * len(long_enough)


def test_the_estimate_counts_by_script() -> None:
    estimate = ScriptEstimate()
    assert estimate.count("") == 0
    assert estimate.count("Hello, world!") == 4
    assert estimate.count("我昨天在北京") == 6
    assert ScriptEstimate(cjk_chars_per_token=2.0).count("我昨天在北京") == 3
    assert estimate.count("I met 王老师 at 5pm.") == 9  # 5, ##pm: as WordPiece splits it


def test_the_setting_picks_the_counter(tmp_path: Path, exact: ExactTokenizer) -> None:
    assert isinstance(token_counter(ESTIMATE), ScriptEstimate)
    copied = tmp_path / "tokenizer.json"
    copied.write_bytes(exact.path.read_bytes())
    by_path = token_counter(str(copied))
    assert by_path.count("Hello, world!") == exact.count("Hello, world!") == 4
    with pytest.raises(Exception, match=r"tokenizer\.json|No such file"):
        token_counter(str(tmp_path / "missing.json"))
