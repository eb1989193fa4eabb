"""A bounded least-recently-used cache of vectors by text, one per model.

Recall reranks the same stored texts again and again (a bank's memories come back for many queries),
so their vectors are kept: the model then runs only for the query and the texts it has not seen.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class CachedRow:
    """One text's vector and whether the model cut the text."""

    vector: np.ndarray
    truncated: bool


class VectorCache:
    """At most ``capacity`` rows; the least recently used goes first. ``capacity`` 0 keeps nothing."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._rows: OrderedDict[str, CachedRow] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, text: str) -> CachedRow | None:
        """The row for ``text``, now the most recently used, or None."""
        row = self._rows.get(text)
        if row is None:
            self.misses += 1
            return None
        self._rows.move_to_end(text)
        self.hits += 1
        return row

    def put(self, text: str, row: CachedRow) -> None:
        """Keep ``row`` for ``text``, dropping the least recently used rows beyond the capacity."""
        if self.capacity <= 0:
            return
        self._rows[text] = row
        self._rows.move_to_end(text)
        while len(self._rows) > self.capacity:
            self._rows.popitem(last=False)
