"""One recall over several banks: records keyed by bank while they are fused, and per-bank weights.

Ids are unique within a bank, not across banks (a caller may retain turn ``t1`` in two banks), while
fusion, validity, consensus and the cut all key memories by id. Inside a multi-bank recall every candidate's
id (and the ids it links: ``supersedes``, ``successor``) is therefore keyed as ``bank/id`` (``/`` never
occurs in a bank id), so the same id in two banks stays two memories and a correction links only within
its bank; the answer splits the keys again (:func:`unkeyed`) and names each memory's bank.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence

from hindsight.mcp_edge.domain import Candidate, RecalledMemory
from hindsight.runtime.errors import InvalidArgument

MAX_BANK_WEIGHT = 10.0
"""Largest factor a bank's memories may get (a weight of 0 keeps a bank's memories only as a last resort)."""
_SEP = "/"


def _key(bank: str, record_id: str) -> str:
    return f"{bank}{_SEP}{record_id}" if record_id else ""


def _split(key: str) -> str:
    return key.partition(_SEP)[2] if _SEP in key else key


def keyed(candidate: Candidate) -> Candidate:
    """The candidate keyed by its bank (``bank/id``), with the ids it links keyed alike."""
    bank = candidate.bank_id
    return dataclasses.replace(
        candidate,
        id=_key(bank, candidate.id),
        supersedes=tuple(_key(bank, old) for old in candidate.supersedes),
        successor=_key(bank, candidate.successor),
        replies_to=_key(bank, candidate.replies_to),
    )


def source_keys(memory: RecalledMemory, keyed_by_bank: bool) -> set[str]:
    """The turns ``memory`` was drawn from, keyed as the recall keys ids (``bank/id`` across banks)."""
    sources = memory.meta.source_turn_ids
    return {_key(memory.bank_id, turn) for turn in sources} if keyed_by_bank else set(sources)


def unkeyed(memory: RecalledMemory) -> RecalledMemory:
    """A fused memory with its ids as its bank knows them (the inverse of :func:`keyed`)."""
    return dataclasses.replace(
        memory,
        id=_split(memory.id),
        supersedes=tuple(_split(old) for old in memory.supersedes),
        superseded_by=_split(memory.superseded_by),
    )


def check_weights(
    weights: Mapping[str, float], banks: Sequence[str], field: str = "bank_weights"
) -> dict[str, float]:
    """Per-bank weights: each names a bank of the recall and lies in 0..:data:`MAX_BANK_WEIGHT`."""
    checked: dict[str, float] = {}
    for bank, weight in weights.items():
        # the key quoted: a bank id may hold ": " or "]", which must not end the field's name early
        entry = f"{field}[{json.dumps(bank, ensure_ascii=False)}]"
        if bank not in banks:
            raise InvalidArgument(entry, "names a bank the recall does not read")
        if not 0.0 <= weight <= MAX_BANK_WEIGHT:  # also refuses NaN
            raise InvalidArgument(entry, f"must be between 0 and {MAX_BANK_WEIGHT:g}")
        checked[bank] = float(weight)
    return checked


def weighted(memories: Sequence[RecalledMemory], weights: Mapping[str, float]) -> list[RecalledMemory]:
    """Fused memories with each bank's weight applied to their scores, best first (stable)."""
    if not weights:
        return list(memories)
    scaled = [dataclasses.replace(m, score=m.score * weights.get(m.bank_id, 1.0)) for m in memories]
    return sorted(scaled, key=lambda m: -m.score)


def weight_ceiling(weights: Mapping[str, float]) -> float:
    """How far weights can lift a fused score (so normalising keeps weighted scores apart, not clipped)."""
    return max(1.0, *weights.values()) if weights else 1.0
