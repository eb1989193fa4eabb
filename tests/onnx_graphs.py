"""Tiny model directories built inside the tests: a word-level tokenizer.json and hand-made ONNX graphs.

No model weights ship offline, so the tokenizer-model code paths (bi-encoder pooling, cross-encoder
logits) are exercised on graphs whose outputs the tests can compute by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, pre_tokenizers, processors

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
WORDS = ["cat", "sofa", "sleeps", "rates", "rose", "bank", "the", "on", "where", "does"]
VOCAB = {token: index for index, token in enumerate(SPECIALS + WORDS)}


def write_tokenizer(path: Path) -> None:
    """A whitespace word-level tokenizer with BERT's [CLS] a [SEP] b [SEP] template."""
    tokenizer = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", VOCAB["[CLS]"]), ("[SEP]", VOCAB["[SEP]"])],
    )
    tokenizer.save(str(path))


def _int_input(name: str) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])


def embedding_table(dimension: int = 4, seed: int = 7) -> np.ndarray:
    """The token vectors of the bi-encoder graph, so a test can pool them by hand."""
    return np.random.default_rng(seed).normal(size=(len(VOCAB), dimension)).astype(np.float32)


def write_bi_encoder(directory: Path, pooling: str = "mean", extra: dict[str, object] | None = None) -> None:
    """``last_hidden_state = table[input_ids]``: the simplest graph with BERT's inputs and output."""
    directory.mkdir(parents=True, exist_ok=True)
    write_tokenizer(directory / "tokenizer.json")
    table = embedding_table()
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["last_hidden_state"], axis=0)],
        "bi_encoder",
        [_int_input("input_ids"), _int_input("attention_mask"), _int_input("token_type_ids")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", 4])],
        [numpy_helper.from_array(table, "table")],
    )
    _save(graph, directory / "model.onnx")
    (directory / "hindsight.json").write_text(
        json.dumps({"pooling": pooling, "max_length": 8, **(extra or {})})
    )


def write_cross_encoder(directory: Path, weights: dict[str, float]) -> None:
    """``logits = sum over real tokens of weight[token]``, one logit per pair: relevance by hand."""
    directory.mkdir(parents=True, exist_ok=True)
    write_tokenizer(directory / "tokenizer.json")
    table = np.zeros((len(VOCAB), 1), dtype=np.float32)
    for word, weight in weights.items():
        table[VOCAB[word], 0] = weight
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["per_token"], axis=0),
        helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask", "last_axis"], ["mask3"]),
        helper.make_node("Mul", ["per_token", "mask3"], ["kept"]),
        helper.make_node("ReduceSum", ["kept", "sequence_axis"], ["logits"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "cross_encoder",
        [_int_input("input_ids"), _int_input("attention_mask"), _int_input("token_type_ids")],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
        [
            numpy_helper.from_array(table, "table"),
            numpy_helper.from_array(np.array([2], dtype=np.int64), "last_axis"),
            numpy_helper.from_array(np.array([1], dtype=np.int64), "sequence_axis"),
        ],
    )
    _save(graph, directory / "model.onnx")
    (directory / "hindsight.json").write_text(json.dumps({"max_length": 16}))


def _save(graph: onnx.GraphProto, path: Path) -> None:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
