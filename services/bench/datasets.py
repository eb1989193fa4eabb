"""The uniform retrieval-benchmark format (``shared/bench/README.md``): namespaces of messages and queries.

Benchmark files are read at run time from wherever the caller keeps them; they are never part of the
package (two of the licences forbid it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Message:
    """One stored message: retained as one turn whose id is the message id."""

    id: str
    text: str
    speaker: str = ""
    time: datetime | None = None
    session: str = ""


@dataclass(frozen=True)
class Query:
    """One question with the ids of the messages that hold its evidence."""

    id: str
    text: str
    category: str
    gold: tuple[str, ...]
    time: datetime | None = None


@dataclass(frozen=True)
class Namespace:
    """One memory bank: store its messages, then ask its queries."""

    id: str
    messages: tuple[Message, ...]
    queries: tuple[Query, ...]

    @property
    def last_time(self) -> datetime | None:
        """When its last message was said (the latest time of any; None when none is dated)."""
        return max((m.time for m in self.messages if m.time is not None), default=None)


QUERY_TIME_FROM_QUERY = "query"
QUERY_TIME_FROM_LAST_MESSAGE = "last_message"
QUERY_TIME_FROM_CLOCK = "clock"


def asked_at(query: Query, namespace: Namespace) -> tuple[datetime | None, str]:
    """When a query is asked, and where that time came from.

    An agent asks in the present of its conversation, not on the day a benchmark runs: the dataset's
    time of the question when it gives one, else the time of the namespace's last message, else
    (nothing dated) the recall's own clock (None).
    """
    if query.time is not None:
        return query.time, QUERY_TIME_FROM_QUERY
    if namespace.last_time is not None:
        return namespace.last_time, QUERY_TIME_FROM_LAST_MESSAGE
    return None, QUERY_TIME_FROM_CLOCK


@dataclass(frozen=True)
class Dataset:
    """One benchmark file."""

    name: str
    namespaces: tuple[Namespace, ...]
    path: str = ""

    @property
    def message_count(self) -> int:
        return sum(len(ns.messages) for ns in self.namespaces)

    @property
    def query_count(self) -> int:
        return sum(len(ns.queries) for ns in self.namespaces)


def parse_time(value: str | None) -> datetime | None:
    """An ISO 8601 time; the files give local times without a zone, which are read as UTC."""
    if not value:
        return None
    moment = datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _message(raw: dict[str, Any]) -> Message:
    return Message(
        id=str(raw["id"]),
        text=str(raw["text"]),
        speaker=str(raw.get("speaker") or ""),
        time=parse_time(raw.get("time")),
        session=str(raw.get("session") or ""),
    )


def _query(raw: dict[str, Any]) -> Query:
    return Query(
        id=str(raw["id"]),
        text=str(raw["text"]),
        category=str(raw.get("category") or "all"),
        gold=tuple(str(g) for g in raw.get("gold") or ()),
        time=parse_time(raw.get("time")),
    )


def parse_dataset(data: dict[str, Any], path: str = "", limit: int | None = None) -> Dataset:
    """A dataset from its JSON object; ``limit`` keeps only the first namespaces."""
    raw_namespaces = data["namespaces"][:limit] if limit else data["namespaces"]
    namespaces = tuple(
        Namespace(
            id=str(ns["id"]),
            messages=tuple(_message(m) for m in ns["messages"]),
            queries=tuple(_query(q) for q in ns["queries"]),
        )
        for ns in raw_namespaces
    )
    name = str(data.get("name") or Path(path).stem)
    return Dataset(name=name, namespaces=namespaces, path=path)


def load_dataset(path: Path, limit: int | None = None) -> Dataset:
    """Read one benchmark file."""
    return parse_dataset(json.loads(path.read_text(encoding="utf-8")), str(path), limit)
