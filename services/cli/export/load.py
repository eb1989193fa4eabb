"""The import: records read one line at a time and written in batches that each fit in one request
(``HINDSIGHT_MAX_REQUEST_BYTES``), so neither the file nor a batch over the limit is ever built.

Everything is checked before anything is written: :func:`check` reads the whole file once (a bad line
writes nothing), :func:`load` reads it again and writes. Turns, episodes and the review queue go to the
episodic layer as they were (ids, archive times, supersede links, review decisions), the audit log to it as
it was, lessons to the reflect layer with their statistics. Facts, entities and review items are not
written with them: once the imported turns are indexed (and the archived ones archived), the export's
learned records and review items replace what the semantic layer derived from the turns, as the export
holds them (:func:`_write_learned`); entity pages are derived again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hindsight.cli.export.dump import Layers
from hindsight.cli.export.fileformat import EXTRA_KEYS, ExportError, Header, Numbered

MAX_RECORDS_PER_REQUEST = 1000
"""The layers' own cap on the records of one import request."""
ITEM_OVERHEAD = 6
"""Bytes a repeated message field adds to an item: its tag and its length (a varint of up to 5 bytes)."""
POLL_SECONDS = 0.5
"""How often the import asks whether the other layers have taken its turns."""
DERIVED = ("fact", "entity", "review")
"""Kinds the semantic layer holds: not sent with the turns; facts and review items are written once the
turns are indexed (:func:`_write_learned`), entity pages are derived again from turns and facts."""


@dataclass
class Imported:
    """What one import did, by kind: records newly written and records already there."""

    bank: str
    written: dict[str, int] = field(default_factory=dict)
    present: dict[str, int] = field(default_factory=dict)
    archived: int = 0
    derived: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DERIVED, 0))
    requests: int = 0
    largest_request: int = 0

    def note(self, kind: str, written: int, present: int) -> None:
        self.written[kind] = self.written.get(kind, 0) + written
        self.present[kind] = self.present.get(kind, 0) + present

    def describe(self) -> str:
        def of(kind: str, noun: str) -> str:
            return f"{self.written.get(kind, 0)} {noun} ({self.present.get(kind, 0)} already present"

        return (
            f"imported into bank {self.bank}: {of('turn', 'turns recorded')}, {self.archived} archived), "
            f"{of('episode', 'episodes')}), {of('quarantined', 'held-back turns')}), "
            f"{of('audit', 'audit entries')}), {of('lesson', 'lessons')}); "
            f"as exported: {self.written.get('fact', 0)} learned records, "
            f"{self.written.get('review', 0)} review items; "
            f"entity pages derived again: {self.derived['entity']}; "
            f"{self.requests} requests of at most {self.largest_request} bytes"
        )


def _parse(numbered: Numbered, message: Any, body: dict[str, Any]) -> Any:
    from google.protobuf import json_format

    try:
        return json_format.ParseDict(body, message, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise ExportError(f"line {numbered.number} ({numbered.record['kind']}): {exc}") from None


def _split(record: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The record's protobuf fields and its extra keys."""
    extra_keys = (*EXTRA_KEYS.get(record["kind"], ()), "kind")
    body = {k: v for k, v in record.items() if k not in extra_keys}
    return body, {k: v for k, v in record.items() if k in extra_keys}


@dataclass
class Converter:
    """Turns a file's records into the import requests' items, for one target bank."""

    header: Header
    bank: str
    live_turns: bool = False
    """Give turns without their archive time and supersede link (the import's first pass)."""

    def item(self, numbered: Numbered) -> Any:
        """The protobuf item ``numbered`` becomes (for a derived kind, the parsed record, not sent)."""
        from hindsight.contracts.common.v1 import common_pb2
        from hindsight.contracts.episodic.v1 import episodic_pb2
        from hindsight.contracts.reflect.v1 import reflect_pb2
        from hindsight.contracts.semantic.v1 import semantic_pb2

        kind = numbered.record["kind"]
        body, extra = _split(numbered.record)
        if kind == "turn":
            turn = _parse(numbered, common_pb2.Turn(), body)
            if not turn.id:
                raise ExportError(f"line {numbered.number} (turn): id is empty")
            archived_at = extra.get("archived_at") or (self._exported_at() if extra.get("archived") else None)
            wrapped = {"archived_at": archived_at} if archived_at else {}
            exported = _parse(numbered, episodic_pb2.ExportedTurn(), wrapped)
            exported.turn.CopyFrom(turn)
            exported.superseded_by = str(extra.get("superseded_by") or "")
            if self.live_turns:
                exported.ClearField("archived_at")
                exported.superseded_by = ""
            return exported
        if kind == "episode":
            life = {key: value for key, value in extra.items() if key != "kind"}
            exported = _parse(numbered, episodic_pb2.ExportedEpisode(), life)
            exported.episode.CopyFrom(_parse(numbered, episodic_pb2.Episode(), body))
            return exported
        if kind == "quarantined":
            return _parse(numbered, common_pb2.QuarantinedTurn(), body)
        if kind == "audit":
            entry = _parse(numbered, common_pb2.AuditEntry(), body)
            entry.bank_id = self.bank
            if self.bank != self.header.bank and entry.id:  # audit ids are unique across banks
                from hindsight.runtime.records import content_id

                entry.id = content_id(self.bank, entry.id)
            return entry
        if kind == "lesson":
            return _parse(numbered, reflect_pb2.Lesson(), body)
        if kind == "fact":  # the record's own kind travels as ``record_kind``
            return _parse(numbered, semantic_pb2.SemanticRecord(), {**body, "kind": extra.get("record_kind")})
        if kind == "entity":
            return _parse(numbered, semantic_pb2.Entity(), body)
        return _parse(numbered, semantic_pb2.ReviewItem(), body)

    def _exported_at(self) -> str:
        """When a version 1 file's archived turn was archived, as near as it says: its export time."""
        return self.header.exported_at or datetime.now(UTC).isoformat()


def check(header: Header, records: Iterable[Numbered], bank: str) -> dict[str, int]:
    """Read every record as the import would, writing nothing; the records by kind."""
    converter = Converter(header, bank)
    counts: dict[str, int] = {}
    for numbered in records:
        converter.item(numbered)
        counts[numbered.record["kind"]] = counts.get(numbered.record["kind"], 0) + 1
    return counts


def _archived(numbered: Numbered) -> bool:
    record = numbered.record
    return record["kind"] == "turn" and bool(record.get("archived_at") or record.get("archived"))


async def wait_for_indexing(episodic: Any, bank: str, timeout: float) -> None:
    """Until the bank's outbox is empty: every imported turn has reached the other layers."""
    from hindsight.contracts.episodic.v1 import episodic_pb2

    deadline = time.monotonic() + timeout
    while True:
        reply = await episodic.call("OutboxStatus", episodic_pb2.OutboxStatusRequest(bank_id=bank))
        if not any(reply.pending.values()):
            return
        if time.monotonic() > deadline:
            raise ExportError(
                f"the other layers did not take the imported turns within {timeout:g} s "
                f"(waiting: {dict(reply.pending)}); run the import again to finish it"
            )
        await asyncio.sleep(POLL_SECONDS)


Send = Callable[[list[Any]], Awaitable[tuple[int, int]]]


@dataclass
class Batch:
    """Items of one kind waiting to be sent, kept under the byte budget of one request."""

    kind: str
    send: Send
    budget: int
    items: list[Any] = field(default_factory=list)
    size: int = 0

    def fits(self, cost: int) -> bool:
        return not self.items or (
            self.size + cost <= self.budget and len(self.items) < MAX_RECORDS_PER_REQUEST
        )


class Loader:
    """Writes items kind by kind, each kind in byte-sized batches (one request each)."""

    def __init__(
        self, layers: Layers, bank: str, limit: int, archive_only: bool = False, learned: bool = False
    ) -> None:
        """``learned``: write facts and review items only, through ``ImportRecords``, the first request
        replacing what the bank learned from its turns (:func:`_write_learned`)."""
        from hindsight.contracts.episodic.v1 import episodic_pb2
        from hindsight.contracts.reflect.v1 import reflect_pb2
        from hindsight.contracts.semantic.v1 import semantic_pb2

        self.done = Imported(bank)
        self._replace_next = learned
        self._limit = limit
        overhead = len(bank.encode()) + 16
        budget = limit - overhead
        if budget < 1:
            raise ExportError(f"a request limit of {limit} bytes holds no record")

        def sender(
            layer: Any,
            method: str,
            request: Callable[[list[Any]], Any],
            counts: Callable[[Any], tuple[int, int]],
        ) -> Send:
            async def send(items: list[Any]) -> tuple[int, int]:
                message = request(items)
                size = message.ByteSize()
                if size > limit:  # never: the batch is sized below it
                    raise ExportError(f"a {method} request of {size} bytes is over the limit of {limit}")
                self.done.requests += 1
                self.done.largest_request = max(self.done.largest_request, size)
                return counts(await layer.call(method, message))

            return send

        def pair(reply: Any) -> tuple[int, int]:
            return int(reply.imported_count), int(reply.duplicate_count)

        def learned_request(records: list[Any], reviews: list[Any]) -> Any:
            request = semantic_pb2.ImportRecordsRequest(
                bank_id=bank, records=records, reviews=reviews, replace=self._replace_next
            )
            self._replace_next = False
            return request

        episodic, reflect, semantic = layers.episodic, layers.reflect, layers.semantic
        routes: dict[str, tuple[Any, str, Callable[[list[Any]], Any]]] = {
            "turn": (
                episodic,
                "ImportTurns",
                lambda items: episodic_pb2.ImportTurnsRequest(
                    bank_id=bank, turns=items, archive_only=archive_only
                ),
            ),
            "episode": (
                episodic,
                "ImportEpisodes",
                lambda items: episodic_pb2.ImportEpisodesRequest(bank_id=bank, episodes=items),
            ),
            "quarantined": (
                episodic,
                "ImportQuarantined",
                lambda items: episodic_pb2.ImportQuarantinedRequest(bank_id=bank, items=items),
            ),
            "audit": (episodic, "AppendAudit", lambda items: episodic_pb2.AppendAuditRequest(entries=items)),
            "lesson": (
                reflect,
                "ImportLessons",
                lambda items: reflect_pb2.ImportLessonsRequest(bank_id=bank, lessons=items),
            ),
        }
        if learned:
            routes = {
                "fact": (semantic, "ImportRecords", lambda items: learned_request(items, [])),
                "review": (semantic, "ImportRecords", lambda items: learned_request([], items)),
            }
        counts = {"audit": _audit_counts, "fact": _learned_counts, "review": _review_counts}
        self._batches = {
            kind: Batch(kind, sender(layer, method, build, counts.get(kind, pair)), budget)
            for kind, (layer, method, build) in routes.items()
        }

    async def add(self, kind: str, item: Any, number: int) -> None:
        """Queue one item; its kind's batch is sent first when the item would not fit in it."""
        if kind in DERIVED and kind not in self._batches:
            self.done.derived[kind] += 1
            return
        batch = self._batches[kind]
        cost = item.ByteSize() + ITEM_OVERHEAD
        if cost > batch.budget:
            raise ExportError(
                f"line {number} ({kind}) is {cost} bytes, over the request limit of {self._limit} bytes "
                "(HINDSIGHT_MAX_REQUEST_BYTES); raise the limit on the target to import it"
            )
        if not batch.fits(cost):
            await self._flush(batch)
        batch.items.append(item)
        batch.size += cost

    async def _flush(self, batch: Batch) -> None:
        if not batch.items:
            return
        written, present = await batch.send(batch.items)
        self.done.note(batch.kind, written, len(batch.items) - written if batch.kind == "audit" else present)
        batch.items, batch.size = [], 0

    async def finish(self) -> Imported:
        """Send what is left (learned: one request at least, so the bank holds exactly the export's learned
        records even when it has none); what the import did."""
        for batch in self._batches.values():
            await self._flush(batch)
        if self._replace_next:
            await self._batches["fact"].send([])
        return self.done


def _learned_counts(reply: Any) -> tuple[int, int]:
    """ImportRecords writes every record it is given (again, on a second import): none is "present"."""
    return int(reply.imported_count), 0


def _review_counts(reply: Any) -> tuple[int, int]:
    return int(reply.review_count), 0


def _audit_counts(reply: Any) -> tuple[int, int]:
    """AppendAudit says how many it stored; an entry it skipped (its id is stored) was present."""
    return int(reply.appended_count), 0


async def load(
    layers: Layers,
    header: Header,
    read: Callable[[], Iterable[Numbered]],
    bank: str,
    limit: int,
    settle_timeout: float,
) -> Imported:
    """Write the records ``read()`` gives (already :func:`check`-ed) into ``bank`` in batches of at most
    ``limit`` bytes. Turns go in live first; once the other layers have taken them (as the source's did
    before it archived some), a second reading archives the archived ones with their times and links; once
    those have reached the other layers too, the learned records and review items are written as the
    export holds them, in place of what the target derived from the turns (:func:`_write_learned`)."""
    converter = Converter(header, bank, live_turns=True)
    loader = Loader(layers, bank, limit)
    archived_in_file = 0
    for numbered in read():
        archived_in_file += _archived(numbered)
        await loader.add(numbered.record["kind"], converter.item(numbered), numbered.number)
    done = await loader.finish()
    if archived_in_file:
        await wait_for_indexing(layers.episodic, bank, settle_timeout)
        archiver = Loader(layers, bank, limit, archive_only=True)
        full = Converter(header, bank)
        for numbered in read():
            if _archived(numbered):
                await archiver.add("turn", full.item(numbered), numbered.number)
        archiving = await archiver.finish()
        done.archived = archiving.written.get("turn", 0)
        done.requests += archiving.requests
        done.largest_request = max(done.largest_request, archiving.largest_request)
        await _unindex_forgotten(layers, bank, read, limit, done)
    await wait_for_indexing(layers.episodic, bank, settle_timeout)
    await _write_learned(layers, Converter(header, bank), read, bank, limit, done)
    return done


async def _write_learned(
    layers: Layers,
    converter: Converter,
    read: Callable[[], Iterable[Numbered]],
    bank: str,
    limit: int,
    done: Imported,
) -> None:
    """The export's facts and review items in byte-sized ``ImportRecords`` requests; the first one replaces
    what the bank learned from the imported turns (so the bank holds exactly the export's, even when it
    has none)."""
    loader = Loader(layers, bank, limit, learned=True)
    for numbered in read():
        if numbered.record["kind"] in ("fact", "review"):
            await loader.add(numbered.record["kind"], converter.item(numbered), numbered.number)
    wrote = await loader.finish()
    for kind in ("fact", "review"):
        done.note(kind, wrote.written.get(kind, 0), 0)
    done.requests += wrote.requests
    done.largest_request = max(done.largest_request, wrote.largest_request)


async def _unindex_forgotten(
    layers: Layers, bank: str, read: Callable[[], Iterable[Numbered]], limit: int, done: Imported
) -> None:
    """What a forget does beside archiving, for the archived turns no update superseded: their records in
    the semantic layer go as an archive (recoverable), as the source's forget made them go."""
    from hindsight.contracts.semantic.v1 import semantic_pb2

    async def send(ids: list[str]) -> None:
        request = semantic_pb2.DeleteRequest(bank_id=bank, ids=ids, source_turn_ids=ids, archived=True)
        done.requests += 1
        done.largest_request = max(done.largest_request, request.ByteSize())
        await layers.semantic.call("Delete", request)

    chunk: list[str] = []
    size = len(bank.encode()) + 16
    for numbered in read():
        if not _archived(numbered) or numbered.record.get("superseded_by"):
            continue
        turn_id = str(numbered.record["id"])
        cost = 2 * (len(turn_id.encode()) + ITEM_OVERHEAD)  # named twice: as a record and as a source
        if chunk and (size + cost > limit or len(chunk) >= MAX_RECORDS_PER_REQUEST):
            await send(chunk)
            chunk, size = [], len(bank.encode()) + 16
        chunk.append(turn_id)
        size += cost
    if chunk:
        await send(chunk)
