"""What the console's views read from the layers, as JSON-ready dicts (protobuf stays at this boundary)."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.reflect.v1 import reflect_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.mcp_edge.agents import check_agent
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.runtime.auth import Caller
from hindsight.runtime.errors import InvalidArgument

COUNT_PAGES = 2
"""Pages of 500 read to count a bank's turns or episodes; beyond that the count reads ``1000+``."""
PAGE = 500
FACT_KINDS = [
    semantic_pb2.RECORD_KIND_FACT,
    semantic_pb2.RECORD_KIND_PREFERENCE,
    semantic_pb2.RECORD_KIND_RULE,
]
SOURCES = {"user": 1, "agent": 2, "tool": 3, "external": 4}


def as_dict(message: Message) -> dict[str, Any]:
    """A protobuf message as JSON-ready data, with the proto's field names."""
    return MessageToDict(message, preserving_proto_field_name=True)


async def list_banks(engine: MemoryEngine, caller: Caller) -> list[str]:
    """The banks the caller may see: its own, or (for a token of every bank) those reflect knows."""
    if not caller.all_banks:
        return sorted(caller.banks)
    reply = await engine.clients.reflect.call(
        "ListBanks", reflect_pb2.ListBanksRequest(), engine.settings.write_timeout
    )
    return list(reply.bank_ids)


async def _count_pages(engine: MemoryEngine, method: str, make: Any) -> str:
    total, token = 0, ""
    for _ in range(COUNT_PAGES):
        page = await engine.clients.episodic.call(method, make(token), engine.settings.write_timeout)
        total += len(page.turns if method == "ListTurns" else page.episodes)
        token = page.next_page_token
        if not token:
            return str(total)
    return f"{total}+"


async def bank_counts(engine: MemoryEngine, bank_id: str) -> dict[str, Any]:
    """How much each layer holds for the bank (episodic turns and episodes, semantic entities and open
    reviews, reflect lessons), and its outbox: entries waiting for delivery and dead letters (refused for
    good by a layer, listed and handled with ``hindsight outbox``)."""
    timeout = engine.settings.write_timeout
    turns, archived, episodes, entities, reviews, lessons, outbox = await asyncio.gather(
        _count_pages(
            engine,
            "ListTurns",
            lambda token: episodic_pb2.ListTurnsRequest(bank_id=bank_id, page_size=PAGE, page_token=token),
        ),
        _count_pages(
            engine,
            "ListTurns",
            lambda token: episodic_pb2.ListTurnsRequest(
                bank_id=bank_id,
                page_size=PAGE,
                page_token=token,
                filter=episodic_pb2.TurnFilter(include_archived=True),
            ),
        ),
        _count_pages(
            engine,
            "ListEpisodes",
            lambda token: episodic_pb2.ListEpisodesRequest(bank_id=bank_id, page_size=PAGE, page_token=token),
        ),
        engine.clients.semantic.call(
            "ListEntities", semantic_pb2.ListEntitiesRequest(bank_id=bank_id, limit=PAGE), timeout
        ),
        engine.clients.semantic.call(
            "ListReviews", semantic_pb2.ListReviewsRequest(bank_id=bank_id, limit=PAGE), timeout
        ),
        engine.clients.reflect.call(
            "ListLessons", reflect_pb2.ListLessonsRequest(bank_id=bank_id, page_size=PAGE), timeout
        ),
        engine.clients.episodic.call(
            "OutboxStatus", episodic_pb2.OutboxStatusRequest(bank_id=bank_id), timeout
        ),
    )
    return {
        "bank": bank_id,
        "episodic": {"turns": turns, "turns_with_archived": archived, "episodes": episodes},
        "semantic": {
            "entities": f"{len(entities.entities)}{'+' if entities.next_page_token else ''}",
            "open_reviews": str(len(reviews.items)),
        },
        "reflect": {"lessons": f"{len(lessons.lessons)}{'+' if lessons.next_page_token else ''}"},
        "outbox": {
            "waiting": str(sum(outbox.pending.values())),
            "dead_letters": str(sum(outbox.dead_letters.values())),
        },
    }


def _time(value: str, field: str) -> datetime | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidArgument(field, f"{value!r} is not an ISO date or time") from None
    return moment if moment.tzinfo else moment.astimezone()


def turn_filter(params: dict[str, str]) -> episodic_pb2.TurnFilter:
    """The timeline's filters (session, tag, source, agent, from, to, archived) as episodic memory's
    filter."""
    selected = episodic_pb2.TurnFilter(
        session_id=params.get("session", ""),
        tags=[tag for tag in [params.get("tag", "").strip()] if tag],
        include_archived=params.get("archived", "") in {"1", "true"},
        agent=check_agent(params.get("agent", "")),
    )
    source = params.get("source", "")
    if source:
        if source not in SOURCES:
            raise InvalidArgument("source", f"must be one of {', '.join(SOURCES)}")
        selected.sources.append(SOURCES[source])  # type: ignore[arg-type]
    start, end = _time(params.get("from", ""), "from"), _time(params.get("to", ""), "to")
    if start is not None or end is not None:
        window = common_pb2.TimeRange()
        if start is not None:
            window.start.FromDatetime(start)
        if end is not None:
            window.end.FromDatetime(end)
        selected.time_range.CopyFrom(window)
    return selected


async def timeline(engine: MemoryEngine, bank_id: str, params: dict[str, str]) -> dict[str, Any]:
    """The bank's turns, newest first, or those matching the search text, under the filters."""
    selected = turn_filter(params)
    query = params.get("q", "").strip()
    timeout = engine.settings.write_timeout
    if query:
        hits = await engine.clients.episodic.call(
            "SearchTurns",
            episodic_pb2.SearchTurnsRequest(bank_id=bank_id, query=query, limit=100, filter=selected),
            timeout,
        )
        return {"turns": [as_dict(hit.turn) | {"score": hit.score} for hit in hits.hits]}
    page = await engine.clients.episodic.call(
        "ListTurns",
        episodic_pb2.ListTurnsRequest(
            bank_id=bank_id,
            page_size=100,
            page_token=params.get("page", ""),
            newest_first=True,
            filter=selected,
        ),
        timeout,
    )
    listed = [as_dict(turn) for turn in page.turns]
    if selected.include_archived:  # the turn itself does not say: it is archived when no live listing has it
        live_filter = episodic_pb2.TurnFilter()
        live_filter.CopyFrom(selected)
        live_filter.include_archived = False
        live = await engine.clients.episodic.call(
            "ListTurns",
            episodic_pb2.ListTurnsRequest(
                bank_id=bank_id, page_size=PAGE, newest_first=True, filter=live_filter
            ),
            timeout,
        )
        live_ids = {turn.id for turn in live.turns}
        for turn in listed:
            turn["archived"] = turn["id"] not in live_ids
    return {"turns": listed, "next_page": page.next_page_token}


async def episodes(engine: MemoryEngine, bank_id: str, params: dict[str, str]) -> dict[str, Any]:
    page = await engine.clients.episodic.call(
        "ListEpisodes",
        episodic_pb2.ListEpisodesRequest(
            bank_id=bank_id,
            session_id=params.get("session", ""),
            page_size=100,
            page_token=params.get("page", ""),
        ),
        engine.settings.write_timeout,
    )
    return {"episodes": [as_dict(item) for item in page.episodes], "next_page": page.next_page_token}


async def facts(engine: MemoryEngine, bank_id: str, params: dict[str, str]) -> dict[str, Any]:
    """Facts, preferences and rules nearest the search text (history included), each with its chain."""
    query = params.get("q", "").strip() or "facts about the user"
    hits = await engine.clients.semantic.call(
        "Search",
        semantic_pb2.SearchRequest(
            bank_id=bank_id, query=query, limit=50, kinds=FACT_KINDS, include_history=True
        ),
        engine.settings.write_timeout,
    )
    return {"facts": [as_dict(hit.record) | {"score": hit.score} for hit in hits.hits]}


async def history(engine: MemoryEngine, bank_id: str, record_id: str) -> dict[str, Any]:
    if not record_id:
        raise InvalidArgument("record", "is required")
    reply = await engine.clients.semantic.call(
        "History",
        semantic_pb2.HistoryRequest(bank_id=bank_id, record_id=record_id),
        engine.settings.write_timeout,
    )
    return {"records": [as_dict(record) for record in reply.records]}


async def entities(engine: MemoryEngine, bank_id: str, params: dict[str, str]) -> dict[str, Any]:
    reply = await engine.list_entities(bank_id, prefix=params.get("prefix", ""), limit=100)
    return {"entities": [as_dict(item) for item in reply.entities]}


async def entity(engine: MemoryEngine, bank_id: str, name: str) -> dict[str, Any]:
    return as_dict(await engine.entity_page(bank_id, name))


async def lessons(engine: MemoryEngine, bank_id: str) -> dict[str, Any]:
    reply = await engine.clients.reflect.call(
        "ListLessons",
        reflect_pb2.ListLessonsRequest(bank_id=bank_id, page_size=100),
        engine.settings.write_timeout,
    )
    return {"lessons": [as_dict(item) for item in reply.lessons]}


async def reviews(engine: MemoryEngine, bank_id: str) -> dict[str, Any]:
    reply = await engine.clients.semantic.call(
        "ListReviews", semantic_pb2.ListReviewsRequest(bank_id=bank_id), engine.settings.write_timeout
    )
    return {"reviews": [as_dict(item) for item in reply.items]}


async def quarantined(engine: MemoryEngine, bank_id: str, caller: Caller) -> dict[str, Any]:
    """Turns write-time screening held back, with the reason: the operator's (admin) part of the queue."""
    if not caller.admin:
        return {"quarantined": [], "quarantine_visible": False}
    reply = await engine.list_quarantine(bank_id, status="pending", limit=100)
    return {
        "quarantined": [as_dict(item) for item in reply.items],
        "quarantine_pending": reply.pending_count,
        "quarantine_visible": True,
    }
