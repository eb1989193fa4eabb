"""``hindsight export BANK`` and ``hindsight import FILE``: a bank as versioned JSON Lines.

The first line is a header (``format``, ``version``, ``bank``, ``exported_at``, ``counts``); every other
line is one record with a ``kind``:

- ``turn``: every turn, archived ones included (``archived``: true); a corrected turn's new version names
  the one it superseded first in ``meta.source_turn_ids``, so the supersede link travels with it.
- ``episode``: every live episode.
- ``fact``: the semantic layer's facts with their history (superseded values, ``superseded_by``), read
  from the entity pages; the record's own kind (fact, preference, ...) is ``record_kind``.
- ``lesson``: the reflect layer's current lessons, with confidence, hit count, last hit and weight.

Import talks to the layers the same way, with the admin token: turns are recorded by id (a stored id is
left as it is) and the archived ones archived again; episodes are written by id; lessons are written by
id with their statistics (``ImportLessons``). Facts are not written: the semantic layer derives them again
from the imported turns as it indexes (embeds) them, so they match the target's own model. Importing a
file twice changes nothing the second time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

FORMAT = "hindsight-export"
VERSION = 1
KINDS = ("turn", "episode", "fact", "lesson")
_PAGE = 500
_BATCH = 500
_LAYERS = ("episodic", "semantic", "reflect")


class ExportError(RuntimeError):
    """The file is not an export this version reads, or the mesh cannot be reached."""


def add_commands(commands: Any) -> None:
    """Register ``export`` and ``import`` on the ``hindsight`` sub-command parser."""
    export = commands.add_parser("export", help="write a bank's memories as versioned JSON Lines")
    export.add_argument("bank", help="the memory bank")
    export.add_argument("--out", type=Path, default=None, help="file to write (default: standard output)")
    _connection_arguments(export)
    export.set_defaults(run=run_export)

    load = commands.add_parser("import", help="load a file written by `hindsight export` (idempotent)")
    load.add_argument("file", type=Path, help="the export file ('-': standard input)")
    load.add_argument("--bank", default="", help="import into this bank (default: the exported bank)")
    _connection_arguments(load)
    load.set_defaults(run=run_import)


def _connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--home", type=Path, default=None, help="home of a running `hindsight up` (default: $HINDSIGHT_HOME)"
    )
    parser.add_argument(
        "--address",
        action="append",
        default=[],
        metavar="LAYER=HOST:PORT",
        help="address of episodic, semantic and reflect (repeat for each; default: from the running mesh)",
    )
    parser.add_argument("--token", default="", help="admin token (default: the admin token of --home)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds one call may take")


@dataclass
class Layers:
    """Clients of the three layers that hold a bank's memories."""

    episodic: Any
    semantic: Any
    reflect: Any
    clients: list[Any] = field(default_factory=list)

    async def close(self) -> None:
        for client in self.clients:
            await client.close()


def _targets(args: argparse.Namespace) -> tuple[dict[str, str], str]:
    from hindsight.cli.credentials import read_credentials
    from hindsight.cli.mesh import read_mesh, resolve_home

    given: dict[str, str] = {}
    for item in args.address:
        layer, _, address = str(item).partition("=")
        if layer not in _LAYERS or not address:
            raise ExportError(f"--address must be LAYER=HOST:PORT with LAYER one of {', '.join(_LAYERS)}")
        given[layer] = address
    token = str(args.token)
    missing = [layer for layer in _LAYERS if layer not in given]
    if missing or not token:
        home = resolve_home(args.home)
        info = read_mesh(home)
        if missing and info is None:
            raise ExportError(f"no mesh running on {home}; start `hindsight up` or give --address")
        if info is not None:
            given = {layer: info.addresses[layer] for layer in missing} | given
        if not token:
            credentials = read_credentials(home)
            token = credentials.admin if credentials else ""
    if not token:
        raise ExportError("no admin token: give --token or the --home of a mesh")
    return given, token


def _open_layers(args: argparse.Namespace) -> Layers:
    from hindsight.contracts.episodic.v1 import episodic_pb2_grpc
    from hindsight.contracts.reflect.v1 import reflect_pb2_grpc
    from hindsight.contracts.semantic.v1 import semantic_pb2_grpc
    from hindsight.runtime.channels import LayerClient

    addresses, token = _targets(args)
    stubs = {
        "episodic": episodic_pb2_grpc.EpisodicServiceStub,
        "semantic": semantic_pb2_grpc.SemanticServiceStub,
        "reflect": reflect_pb2_grpc.ReflectServiceStub,
    }
    clients = {
        name: LayerClient(addresses[name], stub, token=token, default_timeout=args.timeout)
        for name, stub in stubs.items()
    }
    return Layers(clients["episodic"], clients["semantic"], clients["reflect"], list(clients.values()))


def _to_dict(message: Any) -> dict[str, Any]:
    from google.protobuf import json_format

    return dict(json_format.MessageToDict(message, preserving_proto_field_name=True))


# ----- export -------------------------------------------------------------------------------------------
async def _turns(layers: Layers, bank: str, archived: bool) -> AsyncIterator[Any]:
    from hindsight.contracts.episodic.v1 import episodic_pb2

    token = ""
    while True:
        reply = await layers.episodic.call(
            "ListTurns",
            episodic_pb2.ListTurnsRequest(
                bank_id=bank,
                page_size=_PAGE,
                page_token=token,
                filter=episodic_pb2.TurnFilter(include_archived=archived),
            ),
        )
        for turn in reply.turns:
            yield turn
        token = reply.next_page_token
        if not token:
            return


async def _episodes(layers: Layers, bank: str) -> AsyncIterator[Any]:
    from hindsight.contracts.episodic.v1 import episodic_pb2

    token = ""
    while True:
        reply = await layers.episodic.call(
            "ListEpisodes", episodic_pb2.ListEpisodesRequest(bank_id=bank, page_size=_PAGE, page_token=token)
        )
        for episode in reply.episodes:
            yield episode
        token = reply.next_page_token
        if not token:
            return


async def _facts(layers: Layers, bank: str) -> list[Any]:
    """Every fact on an entity page, current and superseded, each once, by id."""
    from hindsight.contracts.semantic.v1 import semantic_pb2

    names: list[str] = []
    token = ""
    while True:
        reply = await layers.semantic.call(
            "ListEntities", semantic_pb2.ListEntitiesRequest(bank_id=bank, limit=100, page_token=token)
        )
        names.extend(entity.name for entity in reply.entities)
        token = reply.next_page_token
        if not token:
            break
    facts: dict[str, Any] = {}
    for name in names:
        page = await layers.semantic.call(
            "GetEntityPage", semantic_pb2.GetEntityPageRequest(bank_id=bank, entity=name, mention_limit=1)
        )
        for fact in page.facts:
            facts.setdefault(fact.id, fact)
    return [facts[key] for key in sorted(facts)]


async def _lessons(layers: Layers, bank: str) -> AsyncIterator[Any]:
    from hindsight.contracts.reflect.v1 import reflect_pb2

    token = ""
    while True:
        reply = await layers.reflect.call(
            "ListLessons", reflect_pb2.ListLessonsRequest(bank_id=bank, page_size=_PAGE, page_token=token)
        )
        for lesson in reply.lessons:
            yield lesson
        token = reply.next_page_token
        if not token:
            return


async def export_bank(layers: Layers, bank: str) -> list[dict[str, Any]]:
    """The export of ``bank``: the header, then turns (time order), episodes, facts and lessons (by id)."""
    live = {turn.id async for turn in _turns(layers, bank, archived=False)}
    records: list[dict[str, Any]] = []
    async for turn in _turns(layers, bank, archived=True):
        records.append({"kind": "turn", "archived": turn.id not in live, **_to_dict(turn)})
    episodes = [_to_dict(episode) async for episode in _episodes(layers, bank)]
    records.extend({"kind": "episode", **episode} for episode in sorted(episodes, key=lambda e: e["id"]))
    for fact in await _facts(layers, bank):
        body = _to_dict(fact)
        records.append({"kind": "fact", "record_kind": body.pop("kind", ""), **body})
    lessons = [_to_dict(lesson) async for lesson in _lessons(layers, bank)]
    records.extend({"kind": "lesson", **lesson} for lesson in sorted(lessons, key=lambda e: e["id"]))
    counts = {kind: sum(1 for r in records if r["kind"] == kind) for kind in KINDS}
    header = {
        "format": FORMAT,
        "version": VERSION,
        "bank": bank,
        "exported_at": datetime.now(UTC).isoformat(),
        "counts": counts,
    }
    return [header, *records]


def write_lines(lines: Iterable[dict[str, Any]], out: TextIO) -> None:
    for line in lines:
        out.write(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n")


# ----- import -------------------------------------------------------------------------------------------
@dataclass
class Imported:
    """What one import did."""

    bank: str
    turns_recorded: int = 0
    turns_already_present: int = 0
    turns_archived: int = 0
    episodes: int = 0
    lessons_written: int = 0
    lessons_already_present: int = 0
    facts_in_file: int = 0


def read_export(lines: Iterable[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the records of an export; ExportError names the first bad line."""
    iterator: Iterator[str] = iter(lines)
    try:
        header = json.loads(next(iterator))
    except StopIteration:
        raise ExportError("the file is empty") from None
    except ValueError as exc:
        raise ExportError(f"line 1 is not JSON: {exc}") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ExportError(f"line 1 is not a {FORMAT} header")
    if header.get("version") != VERSION:
        raise ExportError(f"version {header.get('version')!r} is not supported (this reads {VERSION})")
    if not isinstance(header.get("bank"), str) or not header["bank"]:
        raise ExportError("the header has no bank")
    records = []
    for number, text in enumerate(iterator, start=2):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except ValueError as exc:
            raise ExportError(f"line {number} is not JSON: {exc}") from None
        if not isinstance(record, dict) or record.get("kind") not in KINDS:
            raise ExportError(f"line {number}: kind must be one of {', '.join(KINDS)}")
        records.append(record)
    return header, records


def _parse(record: dict[str, Any], message: Any, number: int) -> Any:
    from google.protobuf import json_format

    body = {key: value for key, value in record.items() if key not in ("kind", "archived")}
    try:
        return json_format.ParseDict(body, message, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise ExportError(f"{record['kind']} record {number}: {exc}") from None


async def import_records(layers: Layers, bank: str, records: list[dict[str, Any]]) -> Imported:
    """Write ``records`` into ``bank``; every record is parsed before anything is written."""
    from hindsight.contracts.common.v1 import common_pb2
    from hindsight.contracts.episodic.v1 import episodic_pb2
    from hindsight.contracts.reflect.v1 import reflect_pb2

    turns, archived, episodes, lessons = [], [], [], []
    done = Imported(bank)
    for number, record in enumerate(records, start=1):
        kind = record["kind"]
        if kind == "turn":
            turn = _parse(record, common_pb2.Turn(), number)
            if not turn.id:
                raise ExportError(f"turn record {number}: id is empty")
            turns.append(turn)
            if record.get("archived") is True:
                archived.append(turn.id)
        elif kind == "episode":
            episodes.append(_parse(record, episodic_pb2.Episode(), number))
        elif kind == "lesson":
            lessons.append(_parse(record, reflect_pb2.Lesson(), number))
        else:
            done.facts_in_file += 1
    for start in range(0, len(turns), _BATCH):
        reply = await layers.episodic.call(
            "RecordTurns", episodic_pb2.RecordTurnsRequest(bank_id=bank, turns=turns[start : start + _BATCH])
        )
        done.turns_recorded += reply.recorded_count
        done.turns_already_present += reply.duplicate_count
    for start in range(0, len(archived), _BATCH):
        chunk = archived[start : start + _BATCH]
        reply = await layers.episodic.call(
            "ForgetTurns", episodic_pb2.ForgetTurnsRequest(bank_id=bank, turn_ids=chunk)
        )
        done.turns_archived += reply.forgotten_count
    for episode in episodes:
        request = episodic_pb2.WriteEpisodeRequest(bank_id=bank, episode=episode)
        await layers.episodic.call("WriteEpisode", request)
        done.episodes += 1
    for start in range(0, len(lessons), _BATCH):
        batch = reflect_pb2.ImportLessonsRequest(bank_id=bank, lessons=lessons[start : start + _BATCH])
        reply = await layers.reflect.call("ImportLessons", batch)
        done.lessons_written += reply.imported_count
        done.lessons_already_present += reply.duplicate_count
    return done


# ----- entry points -------------------------------------------------------------------------------------
async def _export(args: argparse.Namespace) -> int:
    layers = _open_layers(args)
    try:
        lines = await export_bank(layers, args.bank)
    finally:
        await layers.close()
    if args.out is None:
        write_lines(lines, sys.stdout)
    else:
        with args.out.open("w", encoding="utf-8") as out:
            write_lines(lines, out)
        counts = ", ".join(
            f"{count} {kind}{'' if count == 1 else 's'}" for kind, count in lines[0]["counts"].items()
        )
        print(f"exported bank {args.bank} to {args.out}: {counts}", file=sys.stderr)
    return 0


async def _import(args: argparse.Namespace) -> int:
    if str(args.file) == "-":
        header, records = read_export(sys.stdin)
    else:
        with args.file.open(encoding="utf-8") as handle:
            header, records = read_export(handle)
    bank = args.bank or header["bank"]
    layers = _open_layers(args)
    try:
        done = await import_records(layers, bank, records)
    finally:
        await layers.close()
    print(
        f"imported into bank {bank}: {done.turns_recorded} turns recorded "
        f"({done.turns_already_present} already present, {done.turns_archived} archived), "
        f"{done.episodes} episodes, {done.lessons_written} lessons "
        f"({done.lessons_already_present} already present); "
        f"{done.facts_in_file} facts are derived again from the turns"
    )
    return 0


def _run(main: Any, args: argparse.Namespace, name: str) -> int:
    try:
        return int(asyncio.run(main(args)))
    except (ExportError, OSError) as exc:
        print(f"hindsight {name}: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # a layer down or a refused token: one line, not a traceback
        print(f"hindsight {name}: {exc}", file=sys.stderr)
        return 1


def run_export(args: argparse.Namespace) -> int:
    """Entry of ``hindsight export``."""
    return _run(_export, args, "export")


def run_import(args: argparse.Namespace) -> int:
    """Entry of ``hindsight import``."""
    return _run(_import, args, "import")
