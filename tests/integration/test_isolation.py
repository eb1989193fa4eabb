"""Cross-bank isolation of a real ``hindsight up``: 1,000 randomized attempts by one bank's token on another.

Bank ``bank-b`` is filled through its own token (MCP and gRPC: turns in two sessions, an update, episodes,
a reflection). Then bank-a's token makes 1,000 attempts, drawn by a seeded generator (the seed is printed;
``HINDSIGHT_ISOLATION_SEED`` replays a run), at every surface: each MemoryService RPC on the edge's gRPC port,
each MCP tool over streamable HTTP (the official client with the bearer header; arguments built from the
tool's input schema, so a tool added later is probed too), and each RPC of every layer on the layer's own
port. Each attempt has one of three shapes:

1. ``direct``: it names bank-b;
2. ``borrowed``: it names bank-a, with bank-b's ids, session ids and page tokens in the id-like fields it
   sets (found by walking the request descriptor or the input schema) and bank-b's search words in its
   text fields;
3. ``guessed``: it names a spelling of bank-b (case, whitespace, invisible and look-alike characters,
   lists, wildcards); over MCP also no bank at all, which is the edge's default bank, here bank-b.

A **leak** is a reply to an attempt (any status: the reply messages, an error's details, a tool's result)
that contains

- a *secret*: a word that only bank-b's content holds (every turn, speaker and episode field carries one,
  so the lessons and summaries drawn from them do too) and that the attacker never sends; or
- a *withheld id*: an id or session id of bank-b's (from every reply bank-b's own token got) that the
  attacker is never given: bank-b's ids are split at random into the ones shape 2 carries and these.

The ids the attacker is given are its own to send, so their coming back is an echo, not a leak (replies
name what was asked for, and bank-a keeps what the attacker wrote into it, bank-b's ids included). Strings
in replies that decode as URL-safe base64 (page tokens) are searched decoded too; case is ignored.

Also checked: shape 1, and shape 3 wherever the name passes the bank-id validator, is refused with
PERMISSION_DENIED (in-band for the messages of a stream), a name the validator refuses with
PERMISSION_DENIED or INVALID_ARGUMENT; a method that names no bank is PERMISSION_DENIED for a token of one
bank; every attempt on a layer's own port, of any shape, is PERMISSION_DENIED (those ports serve only the
mesh and the operator: bank-b's state is read there with the admin token); every MCP attempt of shapes 1 and
3 is a tool error. Shape 2 may succeed, but bank-b must not change:
its turns (texts, archived or not), episodes, lessons, working windows, semantic records, entities,
reviews, access counts and outbox counts are compared before and after the attack.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import os
import random
import re
import secrets
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import httpx2
from google.protobuf import message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from hindsight.cli.credentials import read_credentials
from hindsight.cli.layers import EDGE
from hindsight.cli.mesh import READY_LINE, MeshInfo, read_mesh
from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.contracts.reflect.v1 import reflect_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.contracts.working.v1 import working_pb2
from hindsight.mcp_edge.servicer import ADMIN_TOKEN_HEADER
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.validation import check_bank_id
from tests.integration.rpcs import Answer, Rpc, call_answered, every_rpc, strings_of
from tests.integration.test_mesh import (  # noqa: F401 (fixtures)
    environment,
    shared_stores,
    start_up,
    stop_for_sure,
)

SEED_VARIABLE = "HINDSIGHT_ISOLATION_SEED"
ATTEMPTS = 1000
CONCURRENCY = 8
CALL_TIMEOUT = 60.0
BANK_A, BANK_B = "bank-a", "bank-b"
GUESSES: tuple[str, ...] = (
    "bank-b ",
    " bank-b",
    "BANK-B",
    "Bank-b",
    "bank-b\u200b",
    "\u200bbank-b",
    "bank-b\n",
    "bank-b\x00",
    "bank-a,bank-b",
    "bank-a;bank-b",
    "bank-a bank-b",
    "bank-a\nbank-b",
    "*",
    "bank-*",
    "bank-?",
    "bank-%",
    "bank-.",
    "bank-b.",
    "bank-a:bank-b",
    "bank-a@bank-b",
    "{bank-b}",
    "bank-a}:{bank-b",
    "../bank-b",
    "bank-a/../bank-b",
    "ｂａｎｋ-ｂ",
    "bank\u2010b",
    "bank-\u0432",
    "",
)
"""Spellings of bank-b (and of lists or patterns that include it); ``None`` (no bank) is added for MCP."""
SEARCH_WORDS = ("quorvex", "brindlemoss", "velliquet", "orrumbra", "tansivel", "mirelock", "caddowin")
"""Made-up words that bank-b's content and the attacker's queries share (bank-a's has none of them)."""
GUESSED_IDS = ("*", "%", "_", ".*", "' OR '1'='1", "b-turn-%", "b-turn-*", "0", "1", "../", "\x00")
"""Ids an attacker might guess: wildcards of the query languages behind the stores, and injections."""
PUBLIC = {"bank_id", "bank"}
DIRECT, BORROWED, GUESSED = "direct", "borrowed", "guessed"
SHAPES = (DIRECT, BORROWED, GUESSED)
MEMORY, MCP, LAYER = "memory", "mcp", "layer"
_BASE64 = re.compile(r"^[A-Za-z0-9_-]{16,}={0,2}$")


# ----- what the attacker is after, and what it is handed ------------------------------------------


def is_id_like(name: str) -> bool:
    """A field that names records: ``id``, ``*_id``, ``*ids``, ``session*``, page tokens, supersede links."""
    if name in PUBLIC:
        return False
    return (
        name in {"id", "ids", "supersedes", "superseded_by", "merged_into"}
        or name.endswith(("_id", "_ids", "page_token"))
        or name.startswith("session")
    )


@dataclass
class Target:
    """Bank-b as the attack sees it."""

    secrets: list[str]
    """Words only bank-b's content holds; the attacker never sends them."""
    sessions: list[str]
    """Every session of bank-b."""
    seen_ids: set[str] = field(default_factory=set)
    """Every id bank-b's own replies named."""
    page_tokens: set[str] = field(default_factory=set)
    given_ids: list[str] = field(default_factory=list)
    given_sessions: list[str] = field(default_factory=list)
    given_page_tokens: list[str] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)
    """Ids and session ids of bank-b's that the attacker is never given."""

    def collect(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Note the ids among (field name, value) pairs of a reply bank-b's token got."""
        for name, value in pairs:
            if not is_id_like(name) or len(value) < 8:
                continue
            if name.endswith("page_token"):
                self.page_tokens.add(value)
            elif not name.startswith("session"):
                self.seen_ids.add(value)

    def split(self, rng: random.Random) -> None:
        """Hand the attacker about half of bank-b's ids and one of its two sessions; withhold the rest.

        An id that something handed over contains (a page token encodes its last row's id, a new version's
        id may extend the old one) counts as handed over.
        """
        ids = sorted(self.seen_ids - set(self.sessions))
        rng.shuffle(ids)
        given = set(ids[: len(ids) // 2])
        self.given_sessions = self.sessions[:1]
        self.given_page_tokens = sorted(self.page_tokens)
        handed = [*given, *self.given_sessions, *self.given_page_tokens]
        handed += [_decoded(token) or "" for token in self.given_page_tokens]
        withheld = [value for value in [*ids[len(ids) // 2 :], *self.sessions[1:]] if value not in given]
        self.withheld = sorted(value for value in withheld if not any(value in text for text in handed))
        self.given_ids = sorted(given | (set(withheld) - set(self.withheld)))
        assert self.given_ids and self.withheld and self.given_page_tokens, self


def _decoded(text: str) -> str | None:
    """The text a URL-safe base64 string encodes, when it does."""
    if not _BASE64.match(text):
        return None
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def haystack(texts: Iterable[str]) -> str:
    """Every text of a reply and what its base64 strings decode to, lower-cased, one string to search."""
    parts = []
    for text in texts:
        parts.append(text)
        for word in re.split(r"[\s\"'{}\[\],:]+", text):
            if (decoded := _decoded(word)) is not None:
                parts.append(decoded)
    return "\n".join(parts).lower()


def leaked(target: Target, text: str) -> list[str]:
    """The secrets and withheld ids of bank-b's that ``text`` (a haystack) contains."""
    return [value for value in (*target.secrets, *target.withheld) if value.lower() in text]


# ----- values for requests and tool arguments -----------------------------------------------------


@dataclass
class Values:
    """Draws the values of an attempt's fields from the seeded generator."""

    rng: random.Random
    target: Target

    def words(self, count: int = 0) -> str:
        chosen = self.rng.sample(SEARCH_WORDS, count or self.rng.randint(1, 3))
        return " ".join([*chosen, self.rng.choice(("vault code", "door combination", "meeting"))])

    def string(self, name: str) -> str:
        """A string for a field named ``name``: bank-b's ids where it names records (now and then a
        guessed one), else its words."""
        if is_id_like(name) and self.rng.random() < 0.15:
            return self.rng.choice(GUESSED_IDS)
        if name.endswith("page_token"):
            return self.rng.choice(self.target.given_page_tokens)
        if name.startswith("session"):
            return self.rng.choice(self.target.given_sessions)
        if is_id_like(name):
            return self.rng.choice(self.target.given_ids)
        if name == "model":
            return ""  # the default model: an unknown one would end the call before it reads any bank
        if "zone" in name:
            return "UTC"
        if name == "layer":
            return self.rng.choice(("working", "episodic", "semantic", "reflect"))
        if name in {"tags", "tools", "aliases", "all_tags"}:
            return self.rng.choice(SEARCH_WORDS)
        return self.words()

    def moment(self, name: str) -> datetime:
        """A time: later than now for the end of a range, else a while ago."""
        now = datetime.now(UTC)
        if any(word in name for word in ("end", "until", "valid_to")):
            return now + timedelta(days=1)
        return now - timedelta(days=self.rng.randint(0, 30))

    def integer(self, name: str, low: int = 1, high: int = 20) -> int:
        """A small count within ``low``..``high`` (a token budget: none, small or large)."""
        if "budget" in name or "tokens" in name:
            return self.rng.choice((0, 200, 2000))
        low = max(low, min(1, high))
        return self.rng.randint(low, max(min(high, 20), low))


def fill_request(message: Message, bank: str, values: Values, depth: int = 0) -> Message:
    """Set the fields of a request (and of the messages in it) as an attempt of ``bank`` does."""
    rng = values.rng
    for descriptor in message.DESCRIPTOR.fields:
        name = descriptor.name
        if name == "bank_id" and descriptor.type == FieldDescriptor.TYPE_STRING:
            setattr(message, name, bank)
            continue
        kind = descriptor.message_type
        if kind is not None and kind.GetOptions().map_entry:
            continue
        if kind is not None:
            if depth >= 3 or not (_carries_bank(kind) or rng.random() < 0.7):
                continue
            if kind.full_name == "google.protobuf.Timestamp":
                moments = [
                    values.moment(name) for _ in range(rng.randint(1, 2) if descriptor.is_repeated else 1)
                ]
                for moment in moments:
                    stamp = getattr(message, name).add() if descriptor.is_repeated else getattr(message, name)
                    stamp.FromDatetime(moment)
                continue
            if descriptor.is_repeated:
                for _ in range(rng.randint(1, 3)):
                    fill_request(getattr(message, name).add(), bank, values, depth + 1)
            else:
                fill_request(getattr(message, name), bank, values, depth + 1)
            continue
        if rng.random() > _chance(name, descriptor.type == FieldDescriptor.TYPE_STRING):
            continue
        draws = [
            _scalar(descriptor, values) for _ in range(rng.randint(1, 3) if descriptor.is_repeated else 1)
        ]
        draws = [draw for draw in draws if draw is not None]
        if descriptor.is_repeated:
            getattr(message, name).extend(draws)
        elif draws:
            setattr(message, name, draws[0])
    return message


def _chance(name: str, text: bool) -> float:
    """How often a field is set: ids and texts mostly (a call without them mostly ends at validation),
    page tokens half the time (one of another list is refused), other fields a little more than half."""
    if name.endswith("page_token"):
        return 0.5
    return 0.9 if text or is_id_like(name) else 0.55


def _carries_bank(kind: Any, depth: int = 0) -> bool:
    """Whether a message type has a ``bank_id`` (in it, or in a message inside it)."""
    if "bank_id" in kind.fields_by_name:
        return True
    return depth < 3 and any(
        _carries_bank(f.message_type, depth + 1) for f in kind.fields if f.message_type is not None
    )


def _scalar(descriptor: FieldDescriptor, values: Values) -> Any:
    rng, name = values.rng, descriptor.name
    match descriptor.type:
        case FieldDescriptor.TYPE_STRING:
            return values.string(name)
        case FieldDescriptor.TYPE_BOOL:
            return rng.random() < 0.35
        case FieldDescriptor.TYPE_ENUM:
            assert descriptor.enum_type is not None
            known = [value.number for value in descriptor.enum_type.values]
            return rng.choice([number for number in known if number] or known)  # 0 is "unspecified"
        case FieldDescriptor.TYPE_DOUBLE | FieldDescriptor.TYPE_FLOAT:
            return round(rng.random(), 3)
        case FieldDescriptor.TYPE_BYTES:
            return None
        case _:
            return values.integer(name)


def tool_arguments(
    schema: dict[str, Any], values: Values, defs: dict[str, Any] | None = None, depth: int = 0
) -> dict[str, Any]:
    """Arguments for an MCP tool (or an object inside them) from its JSON schema; the bank is left out."""
    defs = schema.get("$defs", {}) if defs is None else defs
    required = set(schema.get("required", ()))
    arguments = {}
    for name, prop in schema.get("properties", {}).items():
        if name in PUBLIC:
            continue
        chance = 0.4 if name.endswith("page_token") else 0.75 if is_id_like(name) else 0.45
        if name in required or (depth < 3 and values.rng.random() < chance):
            arguments[name] = _json_value(name, prop, values, defs, depth)
    return arguments


def _json_value(name: str, prop: dict[str, Any], values: Values, defs: dict[str, Any], depth: int) -> Any:
    rng = values.rng
    if ref := prop.get("$ref"):
        prop = defs[ref.rsplit("/", 1)[-1]]
    if options := prop.get("anyOf"):
        prop = next((option for option in options if option.get("type") != "null"), options[0])
        return _json_value(name, prop, values, defs, depth)
    if "enum" in prop:
        return rng.choice(prop["enum"])
    match prop.get("type"):
        case "string":
            if prop.get("format") == "date-time":
                return values.moment(name).isoformat()
            text = values.string(name)[: prop.get("maxLength", 10_000)]
            return text if len(text) >= prop.get("minLength", 0) else values.words(3)
        case "integer":
            return values.integer(name, prop.get("minimum", 1), prop.get("maximum", 20))
        case "number":
            return round(rng.uniform(prop.get("minimum", 0.0), min(prop.get("maximum", 1.0), 1.0)), 3)
        case "boolean":
            return rng.random() < 0.35
        case "array":
            count = min(rng.randint(1, 3), prop.get("maxItems", 3))
            item = prop.get("items", {"type": "string"})
            return [_json_value(name, item, values, defs, depth + 1) for _ in range(count)]
        case "object":
            return tool_arguments(prop, values, defs, depth + 1)
    return values.words()


# ----- attempts -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Attempt:
    """One try at bank-b, fixed before any is made (so the seed alone decides the run)."""

    number: int
    surface: str
    name: str
    """The RPC's path or the tool's name."""
    shape: str
    bank: str | None
    """The bank named (None: none, MCP's default bank)."""
    request: Message | None = None
    arguments: dict[str, Any] | None = None
    rpc: Rpc | None = None
    takes_bank: bool = True
    """False for a tool without a bank argument (it acts on the default bank, bank-b)."""

    @property
    def valid_bank(self) -> bool:
        try:
            check_bank_id(self.bank or "")
        except InvalidArgument:
            return False
        return True


@dataclass
class Outcome:
    """What an attempt got back."""

    attempt: Attempt
    status: str
    text: str
    """Everything in the reply, as :func:`haystack` makes it."""


def bank_for(shape: str, rng: random.Random, surface: str) -> str | None:
    if shape == DIRECT:
        return BANK_B
    if shape == BORROWED:
        return BANK_A
    guesses: list[str | None] = list(GUESSES)
    if surface == MCP:
        guesses.append(None)
    return rng.choice(guesses)


def plan(seed: int, target: Target, tools: Sequence[Any]) -> list[Attempt]:
    """Every RPC and tool once in each shape, the rest drawn at random: ``ATTEMPTS`` in all, shuffled.

    Which method, shape and bank each attempt has depends on the seed alone; its field values come from a
    generator of its own, so bank-b's ids (new on every run) change which ids it carries, not the rest.
    """
    rng = random.Random(seed)
    rpcs = list(every_rpc())
    items: list[tuple[str, Any]] = [(MEMORY, rpc) for rpc in rpcs if rpc.layer == EDGE]
    items += [(LAYER, rpc) for rpc in rpcs if rpc.layer != EDGE]
    items += [(MCP, tool) for tool in tools]
    by_surface = {surface: [item for s, item in items if s == surface] for surface in (MEMORY, MCP, LAYER)}
    draws = [(surface, item, shape) for surface, item in items for shape in SHAPES]
    while len(draws) < ATTEMPTS:
        surface = rng.choice((MEMORY, MCP, LAYER))
        draws.append((surface, rng.choice(by_surface[surface]), rng.choice(SHAPES)))
    rng.shuffle(draws)
    attempts = []
    for number, (surface, item, shape) in enumerate(draws[:ATTEMPTS]):
        bank = bank_for(shape, rng, surface)
        values = Values(random.Random(f"{seed}:{number}"), target)
        if surface == MCP:
            arguments = tool_arguments(item.input_schema, values)
            takes_bank = "bank" in item.input_schema.get("properties", {})
            if bank is not None and takes_bank:
                arguments["bank"] = bank
            attempts.append(
                Attempt(number, surface, item.name, shape, bank, arguments=arguments, takes_bank=takes_bank)
            )
        else:
            request = fill_request(item.request(), bank or "", values)
            attempts.append(Attempt(number, surface, item.path, shape, bank, request=request, rpc=item))
    return attempts


def _in_band_codes(message: Message) -> list[int]:
    """Status codes a stream answered inside its messages: every ``error`` set in them, by its ``code``."""
    codes = []
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        for item in value if descriptor.is_repeated else [value]:
            if descriptor.name == "error" and "code" in descriptor.message_type.fields_by_name:
                codes.append(int(item.code))
            elif isinstance(item, Message):
                codes += _in_band_codes(item)
    return codes


class Attacker:
    """Bank-a's token against every surface of the mesh."""

    def __init__(self, info: MeshInfo, token: str, mcp: Client) -> None:
        self.token = token
        self.mcp = mcp
        self.channels = {name: grpc.aio.insecure_channel(address) for name, address in info.addresses.items()}

    async def close(self) -> None:
        await asyncio.gather(*(channel.close() for channel in self.channels.values()))

    async def make(self, attempt: Attempt) -> Outcome:
        if attempt.surface == MCP:
            return await self._tool(attempt)
        assert attempt.rpc is not None and attempt.request is not None
        channel = self.channels[attempt.rpc.layer]
        answer = await call_answered(channel, attempt.rpc, attempt.request, self.token, CALL_TIMEOUT)
        return Outcome(attempt, _status(answer, attempt.rpc), _answer_text(answer, attempt.rpc))

    async def _tool(self, attempt: Attempt) -> Outcome:
        try:
            result = await self.mcp.call_tool(attempt.name, attempt.arguments or {})
        except Exception as exc:  # a protocol error is an answer too: its text is searched like any other
            return Outcome(attempt, f"protocol error {type(exc).__name__}", haystack([str(exc)]))
        dumped = json.dumps(result.model_dump(mode="json"), ensure_ascii=False)
        if not result.is_error:
            return Outcome(attempt, "OK", haystack([dumped]))
        first = result.content[0] if result.content else None
        text = getattr(first, "text", "") or ""
        named = re.search(r"\b([A-Z][A-Z_]{3,}): ", text)  # the gRPC status a tool error starts with
        code = named.group(1) if named else "other"
        return Outcome(attempt, f"tool error {code}", haystack([dumped]))


CODE_NAMES = {code.value[0]: code.name for code in grpc.StatusCode}


def _status(answer: Answer, rpc: Rpc) -> str:
    if answer.code != grpc.StatusCode.OK:
        return answer.code.name
    codes = sorted(
        {CODE_NAMES.get(code, str(code)) for m in answer.messages(rpc) for code in _in_band_codes(m)}
    )
    return "in-band " + "+".join(codes) if codes else "OK"


def _answer_text(answer: Answer, rpc: Rpc) -> str:
    texts = [answer.details, *(raw.decode("latin-1") for raw in answer.replies)]
    if answer.replies:
        texts += [value for message in answer.messages(rpc) for _, value in strings_of(message)]
    return haystack(texts)


def judge(outcome: Outcome, target: Target) -> list[str]:
    """What is wrong with an outcome: leaks, and answers that should have been refusals."""
    attempt, status = outcome.attempt, outcome.status
    problems = [f"leak of {value!r}" for value in leaked(target, outcome.text)]
    rpc = attempt.rpc
    if attempt.surface == LAYER:  # a layer's port serves the mesh and the operator, never a client token
        if status != "PERMISSION_DENIED":
            problems.append(f"a layer's port answered {status} to a client token")
        return problems
    if rpc is not None and not rpc.names_a_bank and not all(rpc.streaming):
        if status != "PERMISSION_DENIED":  # it spans banks: a token of one bank never gets it
            problems.append(f"answered {status} to a method that names no bank")
        return problems
    if attempt.shape == BORROWED or not attempt.takes_bank:
        return problems  # bank-a's own, or a tool that names no bank: only what it answers can be wrong
    if attempt.surface == MCP:
        if not status.startswith("tool error"):
            problems.append(f"answered {status} instead of a tool error")
        return problems
    assert rpc is not None
    allowed = {"PERMISSION_DENIED", "in-band PERMISSION_DENIED"}
    if not attempt.valid_bank:
        allowed |= {"INVALID_ARGUMENT", "in-band INVALID_ARGUMENT"}
    if status not in allowed:
        problems.append(f"answered {status}, expected one of {sorted(allowed)}")
    return problems


async def attack(attacker: Attacker, attempts: Sequence[Attempt]) -> list[Outcome]:
    """Make the attempts ``CONCURRENCY`` at a time, in order."""
    outcomes: list[Outcome] = []
    for start in range(0, len(attempts), CONCURRENCY):
        batch = attempts[start : start + CONCURRENCY]
        outcomes += await asyncio.gather(*(attacker.make(attempt) for attempt in batch))
    return outcomes


# ----- filling the banks, and bank-b's state ---------------------------------------------------------


@contextlib.asynccontextmanager
async def mcp_client(url: str, token: str) -> AsyncIterator[Client]:
    headers = {"authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=120.0)) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def _metadata(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


async def _tool(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, (name, result.content)
    return dict(result.structured_content or {})


def _json_strings(value: Any, name: str = "") -> Iterator[tuple[str, str]]:
    """(key, value) of every string in a JSON value; a list's items are named by the list's key."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _json_strings(item, key)
    elif isinstance(value, list):
        for item in value:
            yield from _json_strings(item, name)
    elif isinstance(value, str):
        yield name, value


async def fill_bank_b(info: MeshInfo, token: str, admin: str, rng: random.Random) -> Target:
    """Bank-b's content, through its own token: every reply's ids noted in the target (and those the layers
    list to the operator's token)."""
    secret = iter([f"zq{rng.getrandbits(40):010x}" for _ in range(200)])
    sessions = [f"b-session-{rng.getrandbits(48):012x}" for _ in range(2)]
    target = Target(secrets=[], sessions=sessions)

    def sentence(words: str) -> str:
        word = next(secret)
        target.secrets.append(word)
        return f"The {words} vault code is {word}, and the door combination is kept by {next_secret()}."

    def next_secret() -> str:
        word = next(secret)
        target.secrets.append(word)
        return f"Keeper{word}"

    async with mcp_client(info.mcp_url, token) as client:
        turns = [
            {
                "text": sentence(f"{SEARCH_WORDS[i]} {SEARCH_WORDS[i + 1]}"),
                "speaker": next_secret(),
                "id": f"b-turn-{rng.getrandbits(48):012x}",
                "tags": [SEARCH_WORDS[i]],
                "importance": 0.5,
            }
            for i in range(3)
        ]
        stored = await _tool(client, "retain", {"turns": turns, "session_id": sessions[0], "bank": BANK_B})
        single = await _tool(
            client,
            "retain",
            {"text": sentence("caddowin meeting"), "session_id": sessions[0], "bank": BANK_B},
        )
        updated = await _tool(
            client,
            "update",
            {"turn_id": turns[0]["id"], "text": sentence("quorvex mirelock"), "bank": BANK_B},
        )
        episode = await _tool(
            client,
            "write_episode",
            {
                "situation": sentence("orrumbra deploy"),
                "action": sentence("tansivel rollback"),
                "outcome": sentence("velliquet outage"),
                "lesson": sentence("brindlemoss backups"),
                "success": False,
                "task_type": next_secret(),
                "tools": [next_secret()],
                "tags": ["orrumbra"],
                "session_id": sessions[0],
                "bank": BANK_B,
            },
        )
        listed = await _tool(client, "list_recent", {"limit": 2, "bank": BANK_B, "include_archived": True})
        for reply in (stored, single, updated, episode, listed):
            target.collect(_json_strings(reply))

    metadata = _metadata(token)
    async with grpc.aio.insecure_channel(info.memory_address) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        meta = common_pb2.RecordMeta(source=common_pb2.SOURCE_USER, tags=["mirelock"])
        grpc_turns = [
            common_pb2.Turn(
                id=f"b-turn-{rng.getrandbits(48):012x}",
                session_id=sessions[1],
                role=common_pb2.ROLE_USER,
                speaker=next_secret(),
                text=sentence(f"{SEARCH_WORDS[i + 2]} {SEARCH_WORDS[i + 3]}"),
                meta=meta,
            )
            for i in range(3)
        ]
        replies: list[Message] = [
            await stub.Retain(
                memory_pb2.RetainRequest(bank_id=BANK_B, turns=grpc_turns),
                metadata=metadata,
                timeout=CALL_TIMEOUT,
            ),
            await stub.WriteEpisode(
                memory_pb2.WriteEpisodeRequest(
                    bank_id=BANK_B,
                    episode=episodic_pb2.Episode(
                        session_id=sessions[1],
                        situation=sentence("mirelock migration"),
                        action=sentence("caddowin restore"),
                        outcome=sentence("quorvex recovered"),
                        lesson=sentence("tansivel snapshots"),
                        task_type=next_secret(),
                        result=episodic_pb2.OUTCOME_SUCCESS,
                        meta=common_pb2.RecordMeta(source=common_pb2.SOURCE_AGENT, importance=0.6),
                    ),
                ),
                metadata=metadata,
                timeout=CALL_TIMEOUT,
            ),
            await stub.Reflect(
                memory_pb2.ReflectRequest(bank_id=BANK_B), metadata=metadata, timeout=CALL_TIMEOUT
            ),
            await stub.ListRecent(
                memory_pb2.ListRecentRequest(bank_id=BANK_B, limit=3), metadata=metadata, timeout=CALL_TIMEOUT
            ),
            await stub.Recall(
                memory_pb2.RecallRequest(bank_id=BANK_B, query="quorvex vault code", top_k=20),
                metadata=metadata,
                timeout=CALL_TIMEOUT,
            ),
        ]
    for reply in replies:
        target.collect(strings_of(reply))
    for reply in await _layer_listing(info, admin, page_size=1):
        target.collect(strings_of(reply))
    return target


async def fill_bank_a(info: MeshInfo, token: str) -> None:
    """A little of bank-a's own, so the attacker's reads have something to return."""
    async with mcp_client(info.mcp_url, token) as client:
        for text in (
            "Alpha team meets on Mondays about the vault audit.",
            "Alpha's door code is in the safe.",
        ):
            await _tool(client, "retain", {"text": text, "session_id": "a-session", "bank": BANK_A})
        await _tool(
            client,
            "write_episode",
            {
                "situation": "Alpha deploy",
                "action": "Alpha rollback",
                "lesson": "Alpha keeps backups",
                "bank": BANK_A,
            },
        )


async def _layer_listing(info: MeshInfo, token: str, page_size: int) -> list[Message]:
    """Bank-b as its layers list it through the operator's token, the only one besides the mesh's a layer's
    port serves (small pages: their tokens are collected too)."""
    metadata = _metadata(token)
    replies: list[Message] = []
    async with (
        grpc.aio.insecure_channel(info.addresses["episodic"]) as episodic,
        grpc.aio.insecure_channel(info.addresses["reflect"]) as reflect,
        grpc.aio.insecure_channel(info.addresses["semantic"]) as semantic,
    ):
        calls = [
            (
                episodic,
                "EpisodicService",
                "ListTurns",
                episodic_pb2.ListTurnsRequest(
                    bank_id=BANK_B, page_size=page_size, filter=episodic_pb2.TurnFilter(include_archived=True)
                ),
            ),
            (
                episodic,
                "EpisodicService",
                "ListEpisodes",
                episodic_pb2.ListEpisodesRequest(bank_id=BANK_B, page_size=page_size),
            ),
            (
                reflect,
                "ReflectService",
                "ListLessons",
                reflect_pb2.ListLessonsRequest(bank_id=BANK_B, page_size=page_size),
            ),
            *[
                (
                    semantic,
                    "SemanticService",
                    "Search",
                    semantic_pb2.SearchRequest(
                        bank_id=BANK_B, query=word, limit=100, include_history=True, include_cold=True
                    ),
                )
                for word in SEARCH_WORDS
            ],
        ]
        for channel, service, method, request in calls:
            replies.append(await _unary(channel, service, method, request, metadata))
    return replies


async def _unary(
    channel: grpc.aio.Channel, service: str, method: str, request: Message, metadata: Any
) -> Message:
    """One unary call of a layer's RPC, by its service and method name."""
    package = request.DESCRIPTOR.file.package
    rpc = next(r for r in every_rpc() if r.path == f"/{package}.{service}/{method}")
    reply_class = message_factory.GetMessageClass(rpc.method.output_type)
    call = channel.unary_unary(
        rpc.path,
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=reply_class.FromString,
    )
    return await call(request, metadata=metadata, timeout=CALL_TIMEOUT)


async def _all_pages(
    channel: grpc.aio.Channel, service: str, method: str, request: Message, metadata: Any, items: str
) -> list[Message]:
    """Every item of a paged listing, page after page."""
    found: list[Message] = []
    while True:
        reply = await _unary(channel, service, method, request, metadata)
        found += list(getattr(reply, items))
        if not reply.next_page_token:
            return found
        request.page_token = reply.next_page_token


async def snapshot(info: MeshInfo, token: str, admin: str, target: Target) -> dict[str, Any]:
    """Bank-b's state, as the operator sees it on the layers' ports (they serve no client token) and the
    edge's debug listing (nothing here counts as a use of it)."""
    metadata = _metadata(admin)
    state: dict[str, Any] = {}
    async with (
        grpc.aio.insecure_channel(info.addresses["episodic"]) as episodic,
        grpc.aio.insecure_channel(info.addresses["reflect"]) as reflect,
        grpc.aio.insecure_channel(info.addresses["semantic"]) as semantic,
        grpc.aio.insecure_channel(info.addresses["working"]) as working,
        grpc.aio.insecure_channel(info.memory_address) as edge,
    ):
        for archived in (True, False):
            turns = await _all_pages(
                episodic,
                "EpisodicService",
                "ListTurns",
                episodic_pb2.ListTurnsRequest(
                    bank_id=BANK_B, page_size=500, filter=episodic_pb2.TurnFilter(include_archived=archived)
                ),
                metadata,
                "turns",
            )
            state[f"turns (archived too: {archived})"] = sorted(
                (t.id, t.session_id, t.text, t.speaker, tuple(t.meta.tags), round(t.meta.importance, 4))
                for t in turns
            )
        episodes = await _all_pages(
            episodic,
            "EpisodicService",
            "ListEpisodes",
            episodic_pb2.ListEpisodesRequest(bank_id=BANK_B, page_size=500),
            metadata,
            "episodes",
        )
        state["episodes"] = sorted(
            (e.id, e.session_id, e.situation, e.action, e.outcome, e.lesson) for e in episodes
        )
        lessons = await _all_pages(
            reflect,
            "ReflectService",
            "ListLessons",
            reflect_pb2.ListLessonsRequest(bank_id=BANK_B, page_size=100),
            metadata,
            "lessons",
        )
        state["lessons"] = sorted(
            (
                item.id,
                item.situation,
                item.lesson,
                item.HasField("archived_at"),
                item.superseded_by,
                item.merged_into,
            )
            for item in lessons
        )
        for session in target.sessions:
            window = await _unary(
                working,
                "WorkingMemoryService",
                "GetWindow",
                working_pb2.GetWindowRequest(bank_id=BANK_B, session_id=session),
                metadata,
            )
            state[f"working window {session}"] = [(t.id, t.text) for t in window.turns]
        records = set()
        for word in (*SEARCH_WORDS, *target.secrets[:5]):
            found = await _unary(
                semantic,
                "SemanticService",
                "Search",
                semantic_pb2.SearchRequest(
                    bank_id=BANK_B, query=word, limit=100, include_history=True, include_cold=True
                ),
                metadata,
            )
            records |= {
                (h.record.id, h.record.kind, h.record.text, h.record.cold, h.record.superseded_by)
                for h in found.hits
            }
        state["semantic records"] = sorted(records)
        entities = await _unary(
            semantic,
            "SemanticService",
            "ListEntities",
            semantic_pb2.ListEntitiesRequest(bank_id=BANK_B, limit=500),
            metadata,
        )
        state["entities"] = sorted((e.name, e.type, tuple(sorted(e.aliases))) for e in entities.entities)
        reviews = await _unary(
            semantic,
            "SemanticService",
            "ListReviews",
            semantic_pb2.ListReviewsRequest(bank_id=BANK_B, limit=100),
            metadata,
        )
        state["reviews"] = sorted(item.id for item in reviews.items)
        ids = sorted(target.seen_ids)
        stats = await _unary(
            episodic,
            "EpisodicService",
            "GetAccessStats",
            episodic_pb2.GetAccessStatsRequest(bank_id=BANK_B, ids=ids),
            metadata,
        )
        state["access counts"] = sorted((s.id, s.layer, s.hit_count) for s in stats.stats)
        outbox = await _unary(
            episodic,
            "EpisodicService",
            "OutboxStatus",
            episodic_pb2.OutboxStatusRequest(bank_id=BANK_B),
            metadata,
        )
        state["outbox"] = (sorted(outbox.pending.items()), sorted(outbox.delivered.items()))
        listing = await memory_pb2_grpc.MemoryServiceStub(edge).DebugList(
            memory_pb2.DebugListRequest(bank_id=BANK_B, limit=500),
            metadata=(*_metadata(admin), (ADMIN_TOKEN_HEADER, admin)),
            timeout=CALL_TIMEOUT,
        )
        state["debug listing"] = (sorted(t.id for t in listing.turns), sorted(e.id for e in listing.episodes))
    return state


async def settled_snapshot(info: MeshInfo, token: str, admin: str, target: Target) -> dict[str, Any]:
    """A snapshot once bank-b is at rest: nothing pending in its outbox and two snapshots alike."""
    deadline = time.monotonic() + 60
    previous = await snapshot(info, token, admin, target)
    while True:
        await asyncio.sleep(1.0)
        current = await snapshot(info, token, admin, target)
        pending = any(count for _, count in current["outbox"][0])
        if current == previous and not pending:
            return current
        assert time.monotonic() < deadline, _differences(previous, current)
        previous = current


def _differences(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    return {
        key: {"before": before[key], "after": after.get(key)}
        for key in before
        if before[key] != after.get(key)
    }


# ----- the test -----------------------------------------------------------------------------------


def _summary(seed: int, outcomes: Sequence[Outcome], problems: list[tuple[Attempt, str]]) -> str:
    attempts = Counter((o.attempt.surface, o.attempt.shape) for o in outcomes)
    statuses = Counter((o.attempt.shape, o.status) for o in outcomes)
    names: dict[str, set[str]] = {o.attempt.surface: set() for o in outcomes}
    for o in outcomes:
        names[o.attempt.surface].add(o.attempt.name)
    lines = [f"isolation: seed {seed} ({SEED_VARIABLE}={seed} replays it), {len(outcomes)} attempts"]
    lines += [
        f"  {surface:<6} {len(names[surface]):>3} methods/tools: "
        + ", ".join(f"{shape} {attempts[surface, shape]}" for shape in SHAPES)
        for surface in sorted(names)
    ]
    for shape in SHAPES:
        counts = sorted(
            ((status, n) for (s, status), n in statuses.items() if s == shape), key=lambda x: -x[1]
        )
        lines.append(f"  {shape:<8} " + ", ".join(f"{status} {n}" for status, n in counts))
    leaks = sum(1 for _, problem in problems if problem.startswith("leak"))
    lines.append(f"  leaks: {leaks} of {len(outcomes)}; other problems: {len(problems) - leaks}")
    return "\n".join(lines)


def _seed() -> int:
    return int(os.environ.get(SEED_VARIABLE) or secrets.randbits(32))


async def _run(info: MeshInfo, home: Path, tokens: dict[str, str], seed: int) -> None:
    credentials = read_credentials(home)
    assert credentials is not None and credentials.admin
    target = await fill_bank_b(info, tokens[BANK_B], credentials.admin, random.Random(f"{seed}:fill"))
    await fill_bank_a(info, tokens[BANK_A])
    target.split(random.Random(f"{seed}:split"))

    # The detector finds bank-b's secrets and withheld ids where they belong: in bank-b's own replies.
    async with mcp_client(info.mcp_url, tokens[BANK_B]) as own:
        recalled = await own.call_tool("recall", {"query": "quorvex vault code", "bank": BANK_B})
        listed = await own.call_tool("list_recent", {"limit": 50, "include_archived": True, "bank": BANK_B})
    found = leaked(target, haystack([json.dumps(r.model_dump(mode="json")) for r in (recalled, listed)]))
    assert set(found) & set(target.secrets) and set(found) & set(target.withheld), found

    before = await settled_snapshot(info, tokens[BANK_B], credentials.admin, target)
    async with mcp_client(info.mcp_url, tokens[BANK_A]) as client:
        tools = (await client.list_tools()).tools
        attempts = plan(seed, target, tools)
        attacker = Attacker(info, tokens[BANK_A], client)
        try:
            outcomes = await attack(attacker, attempts)
        finally:
            await attacker.close()
    after = await settled_snapshot(info, tokens[BANK_B], credentials.admin, target)

    problems = [(o.attempt, problem) for o in outcomes for problem in judge(o, target)]
    print(_summary(seed, outcomes, problems))
    shown = [
        (a.number, a.surface, a.name, a.shape, a.bank, problem, str(a.request or a.arguments)[:300])
        for a, problem in problems[:20]
    ]
    assert problems == [], shown
    assert {o.attempt.name for o in outcomes if o.attempt.surface == MCP} == {t.name for t in tools}
    assert {o.attempt.name for o in outcomes if o.attempt.surface != MCP} == {r.path for r in every_rpc()}
    assert after == before, _differences(before, after)


def test_a_thousand_randomized_cross_bank_attempts_leak_nothing_and_change_nothing(
    shared_stores: dict[str, str],  # noqa: F811 (the fixture imported above)
) -> None:
    tokens = {BANK_A: "tok-a-" + secrets.token_urlsafe(24), BANK_B: "tok-b-" + secrets.token_urlsafe(24)}
    for key in [key for key in shared_stores if key.startswith("LLM_")]:
        del shared_stores[key]  # deterministic reflection and extraction: no LLM
    shared_stores |= {
        "HINDSIGHT_TOKENS": ";".join(f"{token}={bank}" for bank, token in tokens.items()),
        "HINDSIGHT_BANK": BANK_B,  # an MCP call that names no bank means bank-b
        "HINDSIGHT_REFLECT_SCAN_SECONDS": "0",  # no scheduled work changes bank-b while it is watched
        "HINDSIGHT_REFLECT_MAINTAIN_SECONDS": "0",
    }
    seed = _seed()
    print(f"isolation seed: {seed}")
    mesh = start_up(shared_stores)
    try:
        mesh.wait_for_line(READY_LINE)
        info = read_mesh(mesh.home)
        assert info is not None
        asyncio.run(_run(info, mesh.home, tokens, seed))
    finally:
        stop_for_sure(mesh)
