"""The packaged rerankers: the bi-encoder second opinion, and the pair network with its character hashing."""

from __future__ import annotations

import numpy as np
import pytest

from hindsight.inference.loading import load_models, load_rerankers
from hindsight.inference.models import Embedder, ModelRegistry
from hindsight.inference.rerank import Reranker, char_ngram_hash, mostly_latin, murmur3_32
from hindsight.inference.settings import (
    DEFAULT_MODEL,
    DEFAULT_RERANKER,
    MINILM_MODEL,
    PAIR_NETWORK_RERANKER,
    InferenceSettings,
)
from hindsight.runtime.errors import InvalidArgument


def _murmur(key: str) -> int:
    raw = key.encode("utf-8")
    return int(murmur3_32(np.frombuffer(raw, dtype=np.uint8).reshape(1, len(raw)))[0])


@pytest.fixture(scope="module")
def models() -> ModelRegistry:
    return load_models(InferenceSettings())


@pytest.fixture(scope="module")
def use(models: ModelRegistry) -> Embedder:
    return models.get(DEFAULT_MODEL)


@pytest.fixture(scope="module")
def reranker() -> Reranker:
    settings = InferenceSettings(
        packaged_rerankers=(PAIR_NETWORK_RERANKER,), reranker_name=PAIR_NETWORK_RERANKER
    )
    return load_rerankers(settings).get()


QUERY = "Where does the cat sleep?"
DOCUMENTS = [
    "Interest rates rose sharply last quarter.",
    "The cat is sleeping on the sofa.",
    "猫在沙发上睡觉。",
]


def test_the_default_reranker_reads_english_with_minilm_and_other_scripts_with_use(
    models: ModelRegistry,
) -> None:
    default = load_rerankers(InferenceSettings()).get()
    assert default.name == DEFAULT_RERANKER
    assert default.vectors_from(QUERY) == MINILM_MODEL
    assert default.vectors_from("猫在哪里睡觉？") == DEFAULT_MODEL
    assert (mostly_latin("Café crème, s'il vous plaît"), mostly_latin("猫 cat 在沙发上")) == (True, False)
    vectors = models.get(MINILM_MODEL).embed([QUERY, *DOCUMENTS[:2]]).vectors
    scored = default.score(QUERY, DOCUMENTS[:2], vectors)
    np.testing.assert_allclose(scored.scores, vectors[1:] @ vectors[0], atol=1e-6)
    assert scored.scores[1] > scored.scores[0]


def test_without_the_english_model_the_default_reranker_reads_everything_with_use() -> None:
    rerankers = load_rerankers(InferenceSettings(packaged_models=(DEFAULT_MODEL,)))
    assert rerankers.get().vectors_from(QUERY) == DEFAULT_MODEL


def test_murmur3_matches_the_published_reference_values() -> None:
    assert _murmur("") == 0
    assert _murmur("foo") == -156908512
    assert _murmur("hello") == 613153351
    assert _murmur("猫😀") == -1522293114


def test_char_hashing_is_unit_length_case_blind_and_collapses_runs_of_space() -> None:
    vector = char_ngram_hash("The Cat  sat")
    assert vector.shape == (64,)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-6
    np.testing.assert_allclose(vector, char_ngram_hash("the cat sat"))
    assert not np.allclose(vector, char_ngram_hash("the dog sat"))
    assert not char_ngram_hash("").any()


def test_the_pair_network_ranks_the_relevant_document_first(reranker: Reranker, use: Embedder) -> None:
    assert reranker.name == PAIR_NETWORK_RERANKER
    assert reranker.vectors_from("any query") == DEFAULT_MODEL
    scored = reranker.score(QUERY, DOCUMENTS, use.embed([QUERY, *DOCUMENTS]).vectors)
    assert scored.scores.shape == (3,)
    assert np.all((scored.scores > 0) & (scored.scores < 1))
    assert scored.scores[1] > scored.scores[0] and scored.scores[2] > scored.scores[0]


def test_the_pair_network_refuses_to_score_without_the_vectors_it_reads(reranker: Reranker) -> None:
    with pytest.raises(ValueError, match="USE vector"):
        reranker.score("q", ["d"], None)


def test_an_unknown_reranker_or_a_missing_default_is_an_invalid_argument_naming_model() -> None:
    rerankers = load_rerankers(InferenceSettings(reranker_name=""))
    with pytest.raises(InvalidArgument, match="no default reranker"):
        rerankers.get("")
    with pytest.raises(InvalidArgument, match=f"available: {DEFAULT_RERANKER}") as error:
        rerankers.get("bge-reranker")
    assert error.value.field == "model"
