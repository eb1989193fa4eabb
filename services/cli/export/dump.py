"""The export: every record of a bank, written line by line as the layers hand over their pages (a bank is
never held whole in memory), then the trailer with the counts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Protocol, TextIO

from hindsight.cli.export.fileformat import END, Counts, Header, line, to_dict

PAGE = 500
AUDIT_PAGE = 500
SEMANTIC_PAGE = 256


class LayerCaller(Protocol):
    """A layer's client: one unary call by method name."""

    def call(self, method: str, request: Any) -> Awaitable[Any]: ...


class Layers(Protocol):
    """The three layers that hold a bank's records."""

    episodic: LayerCaller
    semantic: LayerCaller
    reflect: LayerCaller


async def _pages(
    ask: Callable[[str], Awaitable[Any]], items: Callable[[Any], Any]
) -> AsyncIterator[tuple[Any, Any]]:
    """Every item of a paged list, with the reply it came in: ``ask(token)`` reads a page."""
    token = ""
    while True:
        reply = await ask(token)
        for item in items(reply):
            yield item, reply
        token = reply.next_page_token
        if not token:
            return


async def records(layers: Layers, bank: str) -> AsyncIterator[dict[str, Any]]:
    """The bank's records as export lines, in the file's order (:data:`.fileformat.KINDS`)."""
    from hindsight.contracts.episodic.v1 import episodic_pb2
    from hindsight.contracts.reflect.v1 import reflect_pb2
    from hindsight.contracts.semantic.v1 import semantic_pb2

    episodic, semantic, reflect = layers.episodic, layers.semantic, layers.reflect

    def turns(token: str) -> Awaitable[Any]:
        request = episodic_pb2.ExportTurnsRequest(bank_id=bank, page_size=PAGE, page_token=token)
        return episodic.call("ExportTurns", request)

    async for item, _ in _pages(turns, lambda reply: reply.turns):
        extra: dict[str, Any] = {"archived": item.HasField("archived_at")}
        if item.HasField("archived_at"):
            extra["archived_at"] = to_dict(item)["archived_at"]
        if item.superseded_by:
            extra["superseded_by"] = item.superseded_by
        yield {"kind": "turn", **to_dict(item.turn), **extra}

    def episodes(token: str) -> Awaitable[Any]:
        request = episodic_pb2.ExportEpisodesRequest(bank_id=bank, page_size=PAGE, page_token=token)
        return episodic.call("ExportEpisodes", request)

    async for item, _ in _pages(episodes, lambda reply: reply.episodes):
        body = to_dict(item)
        yield {"kind": "episode", **body.pop("episode"), **body}

    def held(token: str) -> Awaitable[Any]:
        request = episodic_pb2.ListQuarantinedRequest(
            bank_id=bank, status="all", limit=PAGE, page_token=token
        )
        return episodic.call("ListQuarantined", request)

    async for item, _ in _pages(held, lambda reply: reply.items):
        yield {"kind": "quarantined", **to_dict(item)}

    def audit(token: str) -> Awaitable[Any]:
        request = episodic_pb2.ListAuditRequest(bank_id=bank, limit=AUDIT_PAGE, page_token=token)
        return episodic.call("ListAudit", request)

    async for item, _ in _pages(audit, lambda reply: reply.entries):
        body = to_dict(item)
        body.pop("bank_id", None)  # the header's bank; an import writes its own
        yield {"kind": "audit", **body}

    def learned(token: str) -> Awaitable[Any]:
        request = semantic_pb2.ExportRecordsRequest(bank_id=bank, page_size=SEMANTIC_PAGE, page_token=token)
        return semantic.call("ExportRecords", request)

    last: Any = None
    async for item, reply in _pages(learned, lambda reply: [*reply.records, None]):
        last = reply
        if item is None:
            continue
        body = to_dict(item)
        yield {"kind": "fact", "record_kind": body.pop("kind", ""), **body}
    if last is not None:
        for entity in last.entities:
            yield {"kind": "entity", **to_dict(entity)}
        for review in last.reviews:
            yield {"kind": "review", **to_dict(review)}

    def lessons(token: str) -> Awaitable[Any]:
        request = reflect_pb2.ExportLessonsRequest(bank_id=bank, page_size=PAGE, page_token=token)
        return reflect.call("ExportLessons", request)

    async for item, _ in _pages(lessons, lambda reply: reply.lessons):
        yield {"kind": "lesson", **to_dict(item)}


async def export_bank(layers: Layers, bank: str, out: TextIO) -> Counts:
    """Write the export of ``bank`` to ``out`` as it is read; the counts by kind."""
    header = Header(bank, exported_at=datetime.now(UTC).isoformat())
    out.write(line(header.to_json()))
    counts = Counts()
    async for record in records(layers, bank):
        counts.add(record["kind"])
        out.write(line(record))
    out.write(line({"kind": END, "counts": counts.by_kind}))
    out.flush()
    return counts
