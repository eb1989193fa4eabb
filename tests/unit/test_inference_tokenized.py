"""Tokenizer models from a directory: pooling, truncation, prefixes, cross-encoder scores, on tiny graphs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hindsight.inference.loading import load_models, load_rerankers
from hindsight.inference.settings import DEFAULT_MODEL, InferenceSettings
from hindsight.inference.tokenized import load_cross_encoder_dir, load_model_dir, read_model_dir, relevance
from tests.onnx_graphs import VOCAB, embedding_table, write_bi_encoder, write_cross_encoder


def _ids(text: str) -> list[int]:
    return [VOCAB["[CLS]"], *(VOCAB.get(word, VOCAB["[UNK]"]) for word in text.split()), VOCAB["[SEP]"]]


def _unit(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


def test_mean_pooling_averages_the_token_vectors_of_real_tokens_only(tmp_path: Path) -> None:
    write_bi_encoder(tmp_path / "tiny")
    model = load_model_dir("tiny", tmp_path / "tiny", threads=1)
    table = embedding_table()
    result = model.embed(["cat", "the cat sleeps on the sofa"])  # the first is padded inside the batch
    for row, text in zip(result.vectors, ["cat", "the cat sleeps on the sofa"], strict=True):
        np.testing.assert_allclose(row, _unit(table[_ids(text)].mean(axis=0)), atol=1e-5)
    assert model.dimension == 4
    assert result.truncated.tolist() == [False, False]


def test_cls_pooling_takes_the_first_token(tmp_path: Path) -> None:
    write_bi_encoder(tmp_path / "tiny", pooling="cls")
    model = load_model_dir("tiny", tmp_path / "tiny", threads=1)
    np.testing.assert_allclose(
        model.embed(["rates rose"]).vectors[0], _unit(embedding_table()[VOCAB["[CLS]"]])
    )


def test_texts_longer_than_the_token_limit_are_cut_and_flagged(tmp_path: Path) -> None:
    write_bi_encoder(tmp_path / "tiny")  # max_length 8 in its hindsight.json
    model = load_model_dir("tiny", tmp_path / "tiny", threads=1)
    result = model.embed(["cat " * 20, "cat sofa"])
    assert model.max_length == 8
    assert result.truncated.tolist() == [True, False]
    np.testing.assert_allclose(
        result.vectors[0],
        _unit(embedding_table()[[VOCAB["[CLS]"], *[VOCAB["cat"]] * 6, VOCAB["[SEP]"]]].mean(0)),
    )


def test_query_and_passage_prefixes_come_from_the_directory(tmp_path: Path) -> None:
    write_bi_encoder(tmp_path / "multilingual-e5-small")
    e5 = read_model_dir(tmp_path / "multilingual-e5-small").config
    assert (e5.query_prefix, e5.passage_prefix) == ("query: ", "passage: ")
    write_bi_encoder(tmp_path / "bge", extra={"query_prefix": "Represent this: ", "passage_prefix": ""})
    bge = read_model_dir(tmp_path / "bge").config
    assert (bge.query_prefix, bge.passage_prefix) == ("Represent this: ", "")


def test_sentence_transformers_pooling_config_is_read_when_there_is_no_hindsight_json(tmp_path: Path) -> None:
    write_bi_encoder(tmp_path / "st")
    (tmp_path / "st" / "hindsight.json").unlink()
    (tmp_path / "st" / "1_Pooling").mkdir()
    (tmp_path / "st" / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    (tmp_path / "st" / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128}))
    config = read_model_dir(tmp_path / "st").config
    assert (config.pooling, config.max_length) == ("cls", 128)


def test_a_directory_without_a_tokenizer_or_a_graph_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"tokenizer\.json"):
        read_model_dir(tmp_path / "empty")
    write_bi_encoder(tmp_path / "nograph")
    (tmp_path / "nograph" / "model.onnx").unlink()
    with pytest.raises(FileNotFoundError, match=r"model\.onnx"):
        read_model_dir(tmp_path / "nograph")


def test_directory_models_load_beside_the_packaged_ones_under_their_names(tmp_path: Path) -> None:
    write_bi_encoder(tmp_path / "tiny")
    settings = InferenceSettings(packaged_models=(DEFAULT_MODEL,), model_dirs=(f"tiny={tmp_path / 'tiny'}",))
    registry = load_models(settings)
    assert sorted(registry.models) == ["tiny", DEFAULT_MODEL]
    assert registry.get("tiny").dimension == 4
    assert registry.get("").name == DEFAULT_MODEL


def test_the_cross_encoder_scores_each_pair_by_its_logit(tmp_path: Path) -> None:
    write_cross_encoder(tmp_path / "ce", {"sofa": 2.0, "sleeps": 1.0, "rates": -3.0})
    reranker = load_cross_encoder_dir("ce", tmp_path / "ce", threads=1)
    scored = reranker.score("where does the cat sleep", ["the cat sleeps on the sofa", "rates rose", "bank"])
    expected = 1 / (1 + np.exp(-np.array([3.0, -3.0, 0.0])))
    np.testing.assert_allclose(scored.scores, expected, atol=1e-6)
    assert scored.truncated.tolist() == [False, False, False]
    assert reranker.vectors_from("any query") == ""


def test_the_cross_encoder_cuts_long_pairs_and_scores_more_pairs_than_one_graph_run(tmp_path: Path) -> None:
    write_cross_encoder(tmp_path / "ce", {"sofa": 1.0})
    reranker = load_cross_encoder_dir("ce", tmp_path / "ce", threads=1)  # max_length 16
    documents = ["sofa"] * 40 + ["sofa " * 30]
    scored = reranker.score("cat", documents)
    assert len(scored.scores) == 41
    assert scored.truncated.tolist() == [False] * 40 + [True]


def test_cross_encoders_load_as_named_rerankers_beside_the_packaged_one(tmp_path: Path) -> None:
    write_cross_encoder(tmp_path / "ce", {"sofa": 1.0})
    settings = InferenceSettings(reranker_name="ce", reranker_dirs=(f"ce={tmp_path / 'ce'}",))
    rerankers = load_rerankers(settings)
    assert sorted(rerankers.rerankers) == ["bi-encoder", "ce"]
    assert rerankers.get("").name == "ce"


def test_two_class_logits_score_the_probability_of_the_last_class() -> None:
    np.testing.assert_allclose(relevance(np.array([[0.0, 0.0], [0.0, np.log(3.0)]])), [0.5, 0.75], atol=1e-6)
