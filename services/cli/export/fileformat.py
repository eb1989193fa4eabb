"""The export file: versioned JSON Lines, one record a line, read and written one line at a time.

Line 1 is the header (``format``, ``version``, ``bank``, ``exported_at``); every other line is one record
with a ``kind``; version 2 ends with a trailer (``{"kind": "end", "counts": {...}}``) so that a reader
knows the file is whole. A record's other keys are its layer's protobuf message in protobuf's JSON mapping
with the ``.proto`` field names, plus the few keys named in :data:`EXTRA_KEYS`. Turns, episodes and held-back
turns name the agent that wrote them in ``meta.agent`` (an import restores it; files written before agents
were recorded have none, and import with none).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

FORMAT = "hindsight-export"
VERSION = 2
READABLE_VERSIONS = (1, 2)
KINDS = ("turn", "episode", "quarantined", "audit", "fact", "entity", "review", "lesson")
"""Every kind of record, in the order an export writes them."""
VERSION_1_KINDS = ("turn", "episode", "fact", "lesson")
END = "end"
EXTRA_KEYS: dict[str, tuple[str, ...]] = {
    "turn": ("archived", "archived_at", "superseded_by"),
    "episode": ("archived_at", "method", "started_at", "ended_at", "merged_count"),
    "fact": ("record_kind",),
}
"""Keys of a record beside its protobuf message's fields."""


class ExportError(RuntimeError):
    """The file is not an export this version reads, or the mesh cannot be reached."""


@dataclass
class Header:
    """Line 1 of an export."""

    bank: str
    version: int = VERSION
    exported_at: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": self.version, "bank": self.bank, "exported_at": self.exported_at}


@dataclass
class Counts:
    """Records by kind, as a trailer states them or a reader counts them."""

    by_kind: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))

    def add(self, kind: str) -> None:
        self.by_kind[kind] = self.by_kind.get(kind, 0) + 1

    def describe(self) -> str:
        return ", ".join(f"{count} {kind}" for kind, count in self.by_kind.items())


def line(record: dict[str, Any]) -> str:
    """One record as a line of the file (keys sorted, UTF-8 kept)."""
    return json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"


def to_dict(message: Any) -> dict[str, Any]:
    """A protobuf message in protobuf's JSON mapping, with the ``.proto`` field names."""
    from google.protobuf import json_format

    return dict(json_format.MessageToDict(message, preserving_proto_field_name=True))


def read_header(text: str | None) -> Header:
    """The header of line 1; ExportError says what is wrong."""
    if text is None:
        raise ExportError("the file is empty")
    try:
        header = json.loads(text)
    except ValueError as exc:
        raise ExportError(f"line 1 is not JSON: {exc}") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ExportError(f"line 1 is not a {FORMAT} header")
    if header.get("version") not in READABLE_VERSIONS:
        readable = " and ".join(map(str, READABLE_VERSIONS))
        raise ExportError(f"version {header.get('version')!r} is not supported (this reads {readable})")
    if not isinstance(header.get("bank"), str) or not header["bank"]:
        raise ExportError("the header has no bank")
    return Header(header["bank"], header["version"], str(header.get("exported_at") or ""))


@dataclass(frozen=True)
class Numbered:
    """A record and the line it was read from (for messages)."""

    number: int
    record: dict[str, Any]


def read_records(lines: Iterable[str], header: Header) -> Iterator[Numbered]:
    """The records after the header, one at a time; the trailer of a version 2 file is checked against
    what was read (a truncated file is an error), blank lines are skipped."""
    kinds = KINDS if header.version >= 2 else VERSION_1_KINDS
    counts = Counts()
    trailer: dict[str, Any] | None = None
    for number, text in enumerate(lines, start=2):
        if not text.strip():
            continue
        if trailer is not None:
            raise ExportError(f"line {number}: a record after the end line")
        try:
            record = json.loads(text)
        except ValueError as exc:
            raise ExportError(f"line {number} is not JSON: {exc}") from None
        if isinstance(record, dict) and record.get("kind") == END and header.version >= 2:
            trailer = record
            continue
        if not isinstance(record, dict) or record.get("kind") not in kinds:
            raise ExportError(f"line {number}: kind must be one of {', '.join(kinds)}")
        counts.add(record["kind"])
        yield Numbered(number, record)
    if header.version < 2:
        return
    if trailer is None:
        raise ExportError("the file ends before its end line: it is incomplete")
    stated = trailer.get("counts")
    if not isinstance(stated, dict) or {k: v for k, v in stated.items() if v} != {
        k: v for k, v in counts.by_kind.items() if v
    }:
        raise ExportError(f"the end line counts {stated!r}, the file holds {counts.by_kind!r}")


def read_export(lines: Iterable[str]) -> tuple[Header, Iterator[Numbered]]:
    """The header and a stream of the records of an export; ExportError names the first bad line (the
    stream raises when it reaches it)."""
    iterator = iter(lines)
    header = read_header(next(iterator, None))
    return header, read_records(iterator, header)
