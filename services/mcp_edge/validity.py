"""Validity in time at the edge: recall resolves what held at the moment it asks about, and invalidate ends
a memory's validity without deleting it.

The semantic layer keeps when each record held (``valid_from``, ``valid_to``) and what replaced it
(``superseded_by``); episodic and working memory keep what was said. A recall asks the semantic layer for
history too, so an outdated record comes back with its validity instead of vanishing behind a keyword hit
of the same turn that says nothing about it. Then, for the moment the recall is about:

- **now** (the default): memories that stopped holding rank below the ones that hold, marked
  ``outdated since DATE, now: <what replaced it>``; one whose replacement ranks above it stays right below
  that replacement (the answer's history comes with the answer), the others go last;
- **a time the query names** ("where did I live in March?", "去年住哪"): what held then ranks first; a
  value that ended before then, or one that only began after it, goes below and is marked;
- **as_of** (an explicit moment): only what was said by then is searched, the semantic layer answers with
  what was valid then (a value superseded later is current again), and "now" for time words is as_of.

Only memories with a known validity or chain move: a memory nothing says ended or replaced something
holds as far as the edge knows. A memory is known outdated when the semantic layer returned it (or the
statement that replaced it) in this recall.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.mcp_edge.audit import entry
from hindsight.mcp_edge.domain import LayerName, LayerOutcome, RecalledMemory, RecallQuery
from hindsight.runtime.errors import InvalidArgument, NotFound
from hindsight.runtime.interceptors import acting_name
from hindsight.runtime.records import TimeRange, as_utc, from_timestamp, to_timestamp, utcnow
from hindsight.runtime.results import InvalidateResult

if TYPE_CHECKING:
    from hindsight.mcp_edge.engine import MemoryEngine

log = logging.getLogger(__name__)

MAX_INVALIDATE_IDS = 1000
MAX_REASON = 1000
NOTE_TEXT_CHARS = 80
"""Characters of the replacing statement quoted in an outdated memory's note."""


# ----- recall ---------------------------------------------------------------------------------------------
def at_moment(q: RecallQuery) -> RecallQuery:
    """``q`` scoped to its ``as_of``: nothing said after it is searched, and it is "now" for time words and
    recency; INVALID_ARGUMENT naming ``as_of`` when it lies after the recall's "now"."""
    if q.as_of is None:
        return q
    moment = as_utc(q.as_of) or q.as_of
    now = q.reference_time or utcnow()
    if moment > now:
        raise InvalidArgument("as_of", "must not be later than now (or reference_time)")
    if q.time_range.start is not None and q.time_range.start >= moment:
        raise InvalidArgument("as_of", "must be after the start of time_range")
    end = moment if q.time_range.end is None else min(q.time_range.end, moment)
    return dataclasses.replace(
        q,
        as_of=moment,
        time_range=TimeRange(q.time_range.start, end),
        reference_time=q.reference_time if q.reference_time is not None else moment,
    )


def search_fields(q: RecallQuery, on: bool = True) -> dict[str, Any]:
    """What a recall's semantic search adds: the records valid at ``as_of``, else (``on``:
    HINDSIGHT_RECALL_VALIDITY) history too, marked and ranked below what holds by :func:`resolve`."""
    if q.as_of is not None:
        return {"valid_at": to_timestamp(q.as_of)}
    return {"include_history": True} if on else {}


def record_validity(record: semantic_pb2.SemanticRecord) -> dict[str, Any]:
    """A semantic record's validity as :class:`~hindsight.mcp_edge.domain.Candidate` fields."""
    return {
        "valid_from": from_timestamp(record.valid_from) if record.HasField("valid_from") else None,
        "valid_to": from_timestamp(record.valid_to) if record.HasField("valid_to") else None,
        "successor": record.superseded_by,
    }


@dataclass(frozen=True)
class _Moment:
    """What a recall asks about: one instant (now, as_of), or a span the query names."""

    start: datetime | None = None
    """None: now, the latest state known (every end known has come, whatever the clocks say)."""
    end: datetime | None = None
    label: str = "now"

    def ended_before(self, valid_to: datetime) -> bool:
        return self.start is None or valid_to <= self.start

    def began_after(self, valid_from: datetime) -> bool:
        if self.start is None:
            return False
        return valid_from >= self.end if self.end is not None else valid_from > self.start


def _moment(q: RecallQuery, asked: TimeRange | None) -> _Moment:
    if q.as_of is not None:
        return _Moment(q.as_of, label=f"as of {_day(q.as_of)}")
    if asked is not None and asked.start is not None and asked.end is not None:
        return _Moment(asked.start, asked.end, label="then")
    return _Moment()


def _day(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d")


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= NOTE_TEXT_CHARS else flat[: NOTE_TEXT_CHARS - 3] + "..."


def resolve(
    memories: Sequence[RecalledMemory],
    outcomes: Sequence[LayerOutcome],
    q: RecallQuery,
    asked: TimeRange | None,
    on: bool = True,
) -> list[RecalledMemory]:
    """The memories with their validity, those that held at the moment asked about first (in their
    order, each followed by what it replaced), then the other outdated ones, marked (see the module
    docstring). ``asked``: the range the query's time expression stands for, if any. Without ``as_of``
    or ``asked``, the question is about the latest state known: a memory whose end is known is outdated,
    whenever that end was stamped. Off (``on`` false, HINDSIGHT_RECALL_VALIDITY) and without ``as_of``,
    the memories are returned as they came."""
    if not on and q.as_of is None:
        return list(memories)
    known = {
        c.id: c
        for o in outcomes
        if o.layer is LayerName.SEMANTIC
        for c in o.candidates
        if c.valid_from or c.valid_to or c.successor
    }
    by_id = {m.id: m for m in memories}
    moment = _moment(q, asked)
    holding: list[RecalledMemory] = []
    outdated: list[RecalledMemory] = []
    for memory in memories:
        found = known.get(memory.id)
        chained = found is not None or bool(memory.supersedes or memory.superseded_by)
        if not chained:
            holding.append(memory)
            continue
        successor = (found.successor if found else "") or memory.superseded_by
        valid_to = found.valid_to if found else None
        if valid_to is None and memory.superseded_by in by_id:  # replaced by a statement of this recall
            valid_to = by_id[memory.superseded_by].meta.time
        valid_from = (found.valid_from if found else None) or memory.meta.time
        note = ""
        if valid_to is not None and moment.ended_before(valid_to):
            replaced = by_id.get(successor)
            if replaced is not None:
                note = f"outdated since {_day(valid_to)}, {moment.label}: {_quote(replaced.text)}"
            else:
                how = "superseded" if successor else "invalidated"
                note = f"outdated since {_day(valid_to)} ({how})"
        elif valid_from is not None and memory.supersedes and moment.began_after(valid_from):
            note = f"not yet valid {moment.label}: holds since {_day(valid_from)}"
        marked = dataclasses.replace(
            memory,
            valid_from=valid_from,
            valid_to=valid_to,
            superseded_by=successor if note or memory.superseded_by else "",
            outdated=note,
        )
        (outdated if note else holding).append(marked)
    return _with_history(holding, outdated)


def _with_history(holding: list[RecalledMemory], outdated: list[RecalledMemory]) -> list[RecalledMemory]:
    """``holding`` with each outdated memory whose replacement is among them right after that replacement
    and the turns it was drawn from (a new fact and its turn), the other outdated memories last. Other
    facts of those turns do not hold it back: a turn may say many things, and one ranked far down would
    take the replaced value, which the query may have matched best, down with it."""
    place = {memory.id: index for index, memory in enumerate(holding)}
    after: dict[int, list[RecalledMemory]] = {}
    rest: list[RecalledMemory] = []
    for memory in outdated:
        if memory.superseded_by not in place:
            rest.append(memory)
            continue
        replacement = holding[place[memory.superseded_by]]
        drawn = {replacement.id, *replacement.meta.source_turn_ids}
        last = max(place[rid] for rid in drawn if rid in place)
        after.setdefault(last, []).append(memory)
    ordered: list[RecalledMemory] = []
    for index, memory in enumerate(holding):
        ordered += [memory, *after.get(index, ())]
    return ordered + rest


# ----- invalidate -----------------------------------------------------------------------------------------
def check_invalidate(ids: Sequence[str], reason: str, valid_to: datetime | None) -> list[str]:
    """The ids, deduplicated, or INVALID_ARGUMENT naming the field at fault."""
    if not ids:
        raise InvalidArgument("ids", "name at least one memory to invalidate")
    if len(ids) > MAX_INVALIDATE_IDS:
        raise InvalidArgument("ids", f"must list at most {MAX_INVALIDATE_IDS} ids")
    for index, value in enumerate(ids):
        if not value or len(value) > 256:
            raise InvalidArgument(f"ids[{index}]", "must be a memory id (1 to 256 characters)")
    if len(reason) > MAX_REASON:
        raise InvalidArgument("reason", f"must be at most {MAX_REASON} characters")
    moment = as_utc(valid_to)
    if moment is not None and moment > utcnow():
        raise InvalidArgument("valid_to", "must not be in the future")
    return list(dict.fromkeys(ids))


async def invalidate(
    engine: MemoryEngine,
    bank_id: str,
    ids: Sequence[str],
    reason: str = "",
    valid_to: datetime | None = None,
) -> InvalidateResult:
    """End the validity of memories (semantic records: turns and facts) without deleting anything, then
    write the decision to the audit log before answering, as forget and purge are. Idempotent: a memory
    that had ended already is reported unchanged."""
    wanted = check_invalidate(ids, reason, valid_to)
    moment = as_utc(valid_to)
    request = semantic_pb2.InvalidateRequest(bank_id=bank_id, ids=wanted)
    if moment is not None:
        request.valid_to.CopyFrom(to_timestamp(moment))
    timeout = engine.settings.write_timeout
    reply = await engine.clients.semantic.call("Invalidate", request, timeout)
    result = InvalidateResult(
        tuple(reply.invalidated_ids),
        tuple(reply.unchanged_ids),
        tuple(reply.unknown_ids),
        tuple(reply.derived_ids),
    )
    if not result.invalidated_ids and not result.unchanged_ids:
        raise NotFound(f"ids: bank {bank_id!r} holds none of these memories (turn or fact ids from a recall)")
    decided = entry(
        "invalidate",
        bank_id,
        acting_name(),
        wanted[0] if len(wanted) == 1 else "",
        reason.strip() or "no reason given",
        ids=wanted[:100],
        id_count=len(wanted),
        invalidated=list(result.invalidated_ids[:100]),
        derived=list(result.derived_ids[:100]),
        unknown=list(result.unknown_ids[:100]),
        valid_to=moment.isoformat() if moment else "now",
    )
    audit = episodic_pb2.AppendAuditRequest(entries=[decided])
    await engine.clients.episodic.call("AppendAudit", audit, timeout)
    log.info(
        "invalidate",
        extra={
            "bank": bank_id,
            "ids": len(wanted),
            "invalidated": len(result.invalidated_ids),
            "derived": len(result.derived_ids),
            "unknown": len(result.unknown_ids),
        },
    )
    return result
