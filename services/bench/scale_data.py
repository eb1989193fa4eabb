"""Turns and queries for ``hindsight bench scale``: the dev files' real text, reused with fresh ids and times.

A bank of any size is drawn from one pool of every message of the given files, so vocabularies and
lengths stay real; a turn is computed from its index alone (no bank is ever held in memory), which keeps
a 100k-turn bank as cheap to produce as a 1k one. The pool interleaves the files' sessions by their
relative position, so every prefix of it (a 1k bank as much as a 100k one) has the same mix of files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hindsight.bench.datasets import Dataset, Message, load_dataset

SIZES = (1_000, 3_000, 10_000, 30_000, 100_000)
"""The big bank's growth steps."""
DEFAULT_DATA = tuple(
    Path("..") / "shared" / "bench" / "data" / f"{name}.json"
    for name in ("locomo-dev", "madial-en", "memdaily-dev")
)
START = datetime(2024, 1, 1, tzinfo=UTC)
TURN_GAP = timedelta(seconds=60)
"""Time between two turns of a bank: 100k turns span about ten weeks."""


def size_schedule(max_turns: int, sizes: Sequence[int] = SIZES) -> list[int]:
    """The growth steps up to ``max_turns``; ``max_turns`` itself is the last step when it is not one."""
    if max_turns <= 0:
        raise ValueError("--max-turns must be positive")
    steps = [size for size in sizes if size <= max_turns]
    if not steps or steps[-1] != max_turns:
        steps.append(max_turns)
    return steps


@dataclass(frozen=True)
class PoolMessage:
    """One message of the pool and the session chunk it came from (its fresh session id is drawn from it)."""

    text: str
    speaker: str
    chunk: int


def _chunks(dataset: Dataset) -> list[tuple[float, list[Message]]]:
    """The file's sessions (runs of one namespace and session), each with its relative position."""
    total = max(1, dataset.message_count)
    chunks: list[tuple[float, list[Message]]] = []
    seen = 0
    for namespace in dataset.namespaces:
        current: list[Message] = []
        for message in namespace.messages:
            if current and current[-1].session != message.session:
                chunks.append((seen / total, current))
                seen += len(current)
                current = []
            current.append(message)
        if current:
            chunks.append((seen / total, current))
            seen += len(current)
    return chunks


@dataclass(frozen=True)
class Corpus:
    """Every message and query of the files, interleaved by relative position."""

    messages: tuple[PoolMessage, ...]
    queries: tuple[str, ...]
    files: tuple[str, ...]

    @classmethod
    def from_datasets(cls, datasets: Sequence[Dataset]) -> Corpus:
        """Interleave the files' sessions (and queries) so that any prefix holds each file in its share."""
        ranked: list[tuple[float, int, list[Message]]] = []
        questions: list[tuple[float, int, str]] = []
        for order, dataset in enumerate(datasets):
            ranked += [(position, order, chunk) for position, chunk in _chunks(dataset)]
            asked = [query.text for namespace in dataset.namespaces for query in namespace.queries]
            questions += [(index / max(1, len(asked)), order, text) for index, text in enumerate(asked)]
        ranked.sort(key=lambda item: (item[0], item[1]))
        questions.sort(key=lambda item: (item[0], item[1]))
        pool = tuple(
            PoolMessage(message.text, message.speaker, chunk_index)
            for chunk_index, (_, _, chunk) in enumerate(ranked)
            for message in chunk
        )
        if not pool:
            raise ValueError("the benchmark files hold no messages")
        texts = tuple(text for _, _, text in questions) or tuple(m.text for m in pool[:1000])
        return cls(pool, texts, tuple(dataset.path for dataset in datasets))

    @classmethod
    def load(cls, paths: Sequence[Path]) -> Corpus:
        """Read the files (once: a run reuses the pool for every bank)."""
        return cls.from_datasets([load_dataset(path) for path in paths])

    def query_set(self, count: int) -> list[str]:
        """The first ``count`` queries (the same ones at every size, so sizes compare), cycling if short."""
        return [self.queries[index % len(self.queries)] for index in range(count)]


@dataclass(frozen=True)
class BankStream:
    """The turns of one bank: turn ``i`` is pool message ``offset + i`` (cycling), with fresh id and time."""

    corpus: Corpus
    bank_id: str
    offset: int = 0

    def turn(self, index: int) -> Message:
        """Turn ``index`` of the bank: a fresh id, a time one minute after the previous turn's."""
        position = self.offset + index
        cycle, at = divmod(position, len(self.corpus.messages))
        source = self.corpus.messages[at]
        return Message(
            id=f"t{index}",
            text=source.text,
            speaker=source.speaker,
            time=START + TURN_GAP * index,
            session=f"c{cycle}-s{source.chunk}",
        )

    def turns(self, start: int, stop: int) -> list[Message]:
        """Turns ``start`` to ``stop - 1``."""
        return [self.turn(index) for index in range(start, stop)]
