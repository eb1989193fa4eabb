"""Assembling a local model from chunk packages: the file is used only when its sha256 matches."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight.runtime.llm_local import MODELS, LocalLLMSettings, LocalModel, LocalModelError, assemble
from hindsight.runtime.settings import SettingsError

CHUNKS = [b"GGUF" + bytes(range(200)), b"second chunk" * 50, b"end"]


@pytest.fixture
def chunk_packages(tmp_path: Path, unique_name: str) -> Iterator[tuple[str, Path]]:
    """Three importable packages shaped like the model's chunk wheels (``<prefix>N/data/partNN.bin``)."""
    prefix = f"chunks_{unique_name}_part"
    site = tmp_path / "site"
    for index, data in enumerate(CHUNKS, 1):
        package = site / f"{prefix}{index}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{index:02d}.bin").write_bytes(data)
    sys.path.insert(0, str(site))
    try:
        yield prefix, tmp_path / "cache"
    finally:
        sys.path.remove(str(site))


def _model(prefix: str, sha256: str | None = None) -> LocalModel:
    whole = b"".join(CHUNKS)
    return LocalModel(
        "test", "test.gguf", len(whole), sha256 or hashlib.sha256(whole).hexdigest(), prefix, 3, "x.txt"
    )


def test_chunks_are_joined_in_order_and_verified(chunk_packages: tuple[str, Path]) -> None:
    prefix, cache = chunk_packages
    path = assemble(_model(prefix), cache)
    assert path.read_bytes() == b"".join(CHUNKS)


def test_a_wrong_checksum_is_refused_and_leaves_no_file(chunk_packages: tuple[str, Path]) -> None:
    prefix, cache = chunk_packages
    with pytest.raises(LocalModelError, match="sha256"):
        assemble(_model(prefix, sha256="0" * 64), cache)
    assert list(cache.iterdir()) == []


def test_a_corrupted_cached_file_is_rebuilt(chunk_packages: tuple[str, Path]) -> None:
    prefix, cache = chunk_packages
    path = assemble(_model(prefix), cache)
    path.write_bytes(b"X" * len(b"".join(CHUNKS)))  # same size, other bytes
    assert assemble(_model(prefix), cache).read_bytes() == b"".join(CHUNKS)


def test_the_shipped_models_carry_the_published_checksums() -> None:
    assert MODELS["qwen2.5-coder-0.5b"].sha256.startswith("1d9614638d18")
    assert MODELS["qwen2.5-coder-1.5b"].size == 1_117_320_768


def test_an_unknown_model_name_is_a_settings_error() -> None:
    with pytest.raises(SettingsError):
        LocalLLMSettings(model="gpt-5")
