"""The arithmetic of ``hindsight bench inference``: per-round ratios, percentiles, encodings."""

from __future__ import annotations

from hindsight.bench.inference import ENCODINGS, Round, make_texts, percentile
from hindsight.contracts.inference.v1 import inference_pb2


def test_the_encoding_names_are_the_contract_values() -> None:
    assert ENCODINGS == {
        "repeated": inference_pb2.VECTOR_ENCODING_UNSPECIFIED,
        "float32": inference_pb2.VECTOR_ENCODING_FLOAT32,
        "float16": inference_pb2.VECTOR_ENCODING_FLOAT16,
    }


def test_the_overhead_is_taken_against_the_faster_raw_mode_of_the_round() -> None:
    one_plan = Round(raw_per_s=1000.0, service_batch_per_s=900.0, service_concurrent_per_s=630.0)
    assert round(one_plan.overhead, 6) == 0.1
    assert round(one_plan.coalescing, 6) == 0.7
    two_plans = Round(raw_per_s=800.0, raw_one_run_per_s=1200.0, service_batch_per_s=900.0)
    assert round(two_plans.overhead, 6) == 0.25


def test_percentiles_are_nearest_rank_and_texts_are_repeatable() -> None:
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert (percentile(values, 0.5), percentile(values, 0.95), percentile(values, 0.25)) == (3.0, 5.0, 2.0)
    assert percentile([], 0.5) == 0.0
    texts = make_texts(50)
    assert texts == make_texts(50)
    assert all(4 <= len(text.split()) <= 40 for text in texts)
