"""Ending a record's validity without deleting it: the semantic side of ``invalidate``.

A memory that stops being true (an office that closed, a plan given up, a value nobody restated) is no
mistake to erase: it held until then, and history, entity pages and a search ``valid_at`` an earlier
moment should still find it. Invalidating sets ``valid_to`` and leaves ``superseded_by`` empty (nothing
replaced it): a default search skips the record, ``include_history`` and ``valid_at`` still find it. A
current fact that stands only on invalidated turns ends with them, since nothing else says it.

The read-modify-write runs under the bank's write lock, as every write of the layer does, so it settles
against concurrent Upserts and Deletes as if one ran after the other.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

import grpc

from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.records import from_timestamp
from hindsight.semantic.lineage_store import SemanticStore
from hindsight.semantic.records import DISTILLED, RecordKind, lineage_of

if TYPE_CHECKING:
    from hindsight.semantic.engine import SemanticEngine

log = logging.getLogger(__name__)

MAX_IDS = 1000


@dataclass(frozen=True)
class Invalidation:
    """What an invalidation did, by id."""

    invalidated: tuple[str, ...]
    unchanged: tuple[str, ...]
    """Ended already (superseded or invalidated before): left as they were."""
    unknown: tuple[str, ...]
    derived: tuple[str, ...]
    """Current facts that stood only on the invalidated turns, ended with them."""


async def invalidate(
    store: SemanticStore,
    lock: Callable[[str], asyncio.Lock],
    bank_id: str,
    ids: Sequence[str],
    until: datetime,
) -> Invalidation:
    """End the validity of the records ``ids`` at ``until`` (see the module docstring). A record that began
    to hold after ``until`` is refused (INVALID_ARGUMENT naming ``valid_to``) before anything is written."""
    async with lock(bank_id):
        found = await store.get(bank_id, list(ids))
        for record_id in ids:
            held = found.get(record_id)
            began = held.record.valid_from or held.record.meta.time if held else None
            if held is not None and held.record.current and began is not None and began > until:
                raise InvalidArgument(
                    "valid_to", f"is before memory {record_id!r} began to hold ({began.isoformat()})"
                )
        unknown = tuple(i for i in ids if i not in found)
        ended = tuple(i for i in ids if i in found and found[i].record.current)
        unchanged = tuple(i for i in ids if i in found and not found[i].record.current)
        for record_id in ended:
            await store.supersede(bank_id, record_id, until, "")
        turns = {i for i in (*ended, *unchanged) if found[i].record.kind is RecordKind.TURN}
        derived: list[str] = []
        if turns:
            for record in await store.standing_on(bank_id, sorted(turns)):
                lineage = set(lineage_of(record))
                if (
                    record.kind in DISTILLED
                    and record.current
                    and record.id not in found
                    and lineage <= turns
                ):
                    await store.supersede(bank_id, record.id, until, "")
                    derived.append(record.id)
    log.info(
        "invalidated",
        extra={
            "records": len(ended),
            "unchanged": len(unchanged),
            "unknown": len(unknown),
            "derived": len(derived),
        },
    )
    return Invalidation(ended, unchanged, unknown, tuple(derived))


class ValidityServicer:
    """The Invalidate RPC of SemanticService (mixed into its servicer, which holds ``engine``)."""

    engine: SemanticEngine

    async def Invalidate(
        self, request: semantic_pb2.InvalidateRequest, context: grpc.aio.ServicerContext
    ) -> semantic_pb2.InvalidateResponse:
        if not request.ids:
            raise InvalidArgument("ids", "must not be empty")
        if len(request.ids) > MAX_IDS:
            raise InvalidArgument("ids", f"must list at most {MAX_IDS} ids")
        for index, value in enumerate(request.ids):
            if not value:
                raise InvalidArgument(f"ids[{index}]", "must not be empty")
        now = self.engine.clock()
        until = from_timestamp(request.valid_to, "valid_to") if request.HasField("valid_to") else None
        if until is not None and until > now:
            raise InvalidArgument("valid_to", "must not be in the future")
        done = await invalidate(
            self.engine.store,
            self.engine._lock,  # the bank's write lock, shared with Upsert and Delete
            request.bank_id,
            list(dict.fromkeys(request.ids)),
            until or now,
        )
        return semantic_pb2.InvalidateResponse(
            invalidated_ids=done.invalidated,
            unchanged_ids=done.unchanged,
            unknown_ids=done.unknown,
            derived_ids=done.derived,
        )
