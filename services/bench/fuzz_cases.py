"""Generators of hostile requests for the edge: MCP tool arguments from each tool's JSON schema, MemoryService
messages from their protobuf descriptors, raw bytes for the gRPC wire, and malformed JSON-RPC bodies.

Each generator mixes what the schema admits (so the call reaches the code behind validation) with what it
does not: wrong types, huge and empty strings, NUL, lone surrogates, deep nesting, negative and huge
numbers, unknown fields. Hypothesis draws from them; ``hindsight bench fuzz`` and ``tests/fuzz`` use the same.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from google.protobuf import descriptor as pb_descriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass
from hypothesis import strategies as st

HUGE_TEXT = 200_000
"""Characters of the longest string drawn (past every length limit of the edge)."""
NESTING = 64
"""Depth of the deepest nested JSON drawn."""

NASTY_TEXTS = (
    "",
    " ",
    "\x00",
    "a\x00b",
    "\ud800",
    "\udfff tail",
    "\u202e\u0000\ufeff",
    "🙂" * 300,
    "../../etc/passwd",
    "' OR 1=1 --",
    "${jndi:ldap://x}",
    "\n\r\t",
    "%s%n%x",
    "null",
)
NASTY_NUMBERS = (-1, 0, -(2**31), 2**31, 2**53 + 1, -(2**63), 2**63, 2**64, 10**30, -1e308, 1e308, 0.5, -0.0)


@dataclass(frozen=True)
class Ids:
    """What the generators aim at: the bank being fuzzed and ids known to be in it."""

    bank: str
    turn_ids: tuple[str, ...]
    session: str


def _texts(max_size: int = 40) -> st.SearchStrategy[str]:
    return st.text(max_size=max_size)


def hostile_text() -> st.SearchStrategy[str]:
    """Strings a careful caller never sends (lone surrogates included: JSON can carry them)."""
    return st.one_of(
        st.sampled_from(NASTY_TEXTS),
        st.integers(1, 3).map(lambda n: "x" * (HUGE_TEXT // n)),
        st.text(st.characters(codec=None, categories=["Cs", "Cc", "Zl", "Zp", "Co"]), max_size=20),
    )


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def hostile_value() -> st.SearchStrategy[Any]:
    """Any JSON value of a kind an argument does not expect."""
    return st.one_of(
        hostile_text(),
        st.sampled_from(NASTY_NUMBERS),
        st.booleans(),
        st.none(),
        st.just([]),
        st.just({}),
        st.lists(st.integers(), max_size=3),
        st.dictionaries(_texts(8), _texts(8), max_size=3),
        st.integers(8, NESTING).map(_nested),
        st.integers(1001, 1500).map(lambda n: ["t"] * n),
    )


# ----- JSON schema (MCP tool arguments) ----------------------------------------------------------------
def from_schema(schema: Mapping[str, Any], defs: Mapping[str, Any], ids: Ids, name: str = "") -> Any:
    """Values ``schema`` admits (mostly short), with a hostile value one draw in four."""
    valid = _valid_for(schema, defs, ids, name)
    return st.one_of(valid, valid, valid, hostile_value())


def _valid_for(schema: Mapping[str, Any], defs: Mapping[str, Any], ids: Ids, name: str) -> Any:
    if "$ref" in schema:
        return from_schema(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, ids, name)
    if "anyOf" in schema:
        return st.one_of([_valid_for(part, defs, ids, name) for part in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(list(schema["enum"]))
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([_valid_for({**schema, "type": one}, defs, ids, name) for one in kind])
    if kind == "string":
        return _string(schema, ids, name)
    if kind == "integer":
        low, high = schema.get("minimum", -(2**40)), schema.get("maximum", 2**40)
        return st.one_of(st.integers(low, high), st.sampled_from([low, high, low - 1, high + 1]))
    if kind == "number":
        low, high = schema.get("minimum"), schema.get("maximum")
        return st.one_of(
            st.floats(low, high, allow_nan=False, allow_infinity=False),
            st.sampled_from([v for v in (low, high) if v is not None] or [0.0]),
        )
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        items = schema.get("items", {})
        longest = min(schema.get("maxItems", 4), 4)
        return st.lists(
            from_schema(items, defs, ids, name), min_size=schema.get("minItems", 0), max_size=longest
        )
    if kind == "object" or "properties" in schema:
        return arguments(schema, defs, ids)
    return hostile_value()


def _string(schema: Mapping[str, Any], ids: Ids, name: str) -> st.SearchStrategy[str]:
    shortest, longest = schema.get("minLength", 0), schema.get("maxLength")
    choices = [st.text(min_size=shortest, max_size=max(shortest, min(longest or 40, 40)))]
    if longest is not None:
        choices += [st.just("x" * longest), st.just("x" * (longest + 1))]
    if schema.get("format") == "date-time":
        choices.append(st.datetimes(timezones=st.just(UTC)).map(datetime.isoformat))
        choices.append(st.sampled_from(["2024-13-45T99:00:00Z", "yesterday", "0000-01-01T00:00:00"]))
    if name in ("id", "turn_id", "ids", "turn_ids", "record_id"):
        choices.append(st.sampled_from(ids.turn_ids))
    if name in ("session_id", "session"):
        choices.append(st.just(ids.session))
    return st.one_of(choices)


def arguments(
    schema: Mapping[str, Any], defs: Mapping[str, Any], ids: Ids
) -> st.SearchStrategy[dict[str, Any]]:
    """An arguments object: any subset of the properties, sometimes an unknown one, the bank mostly ours."""
    properties = schema.get("properties", {})
    optional = {key: from_schema(value, defs, ids, key) for key, value in properties.items()}
    base = st.fixed_dictionaries({}, optional=optional)
    extra = st.dictionaries(
        st.sampled_from(["unknown", "__proto__", "bank_id", ""]), hostile_value(), max_size=1
    )

    def aim(drawn: tuple[dict[str, Any], dict[str, Any], bool]) -> dict[str, Any]:
        values, unknown, ours = drawn
        if "bank" in properties and ours:
            values["bank"] = ids.bank
        return values | unknown if unknown and not ours else values

    return st.tuples(base, extra, st.integers(0, 9).map(lambda n: n < 8)).map(aim)


def tool_calls(tools: Sequence[Mapping[str, Any]], ids: Ids) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    """(tool name, arguments) over every listed tool (each a ``{"name", "inputSchema"}`` mapping)."""
    per_tool = [
        arguments(tool["inputSchema"], tool["inputSchema"].get("$defs", {}), ids).map(_called(tool["name"]))
        for tool in tools
    ]
    return st.one_of(per_tool)


def _called(name: str) -> Callable[[dict[str, Any]], tuple[str, dict[str, Any]]]:
    return lambda args: (name, args)


# ----- protobuf (MemoryService messages) ---------------------------------------------------------------
FD = pb_descriptor.FieldDescriptor
_INTS = {
    FD.TYPE_INT32: (-(2**31), 2**31 - 1),
    FD.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FD.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FD.TYPE_INT64: (-(2**63), 2**63 - 1),
    FD.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FD.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FD.TYPE_UINT32: (0, 2**32 - 1),
    FD.TYPE_FIXED32: (0, 2**32 - 1),
    FD.TYPE_UINT64: (0, 2**64 - 1),
    FD.TYPE_FIXED64: (0, 2**64 - 1),
}
MESSAGE_DEPTH = 3


def _proto_text(field: pb_descriptor.FieldDescriptor, ids: Ids) -> st.SearchStrategy[str]:
    # protobuf refuses lone surrogates in string fields: those travel only as raw bytes
    plain = st.text(st.characters(codec="utf-8"), max_size=40)
    choices = [
        plain,
        st.sampled_from([t for t in NASTY_TEXTS if not any(0xD800 <= ord(c) < 0xE000 for c in t)]),
    ]
    choices.append(st.integers(1, 3).map(lambda n: "y" * (HUGE_TEXT // n)))
    if field.name == "bank_id":
        return st.one_of(st.just(ids.bank), st.just(ids.bank), st.just(ids.bank), *choices)
    if field.name in ("id", "turn_id", "turn_ids", "ids", "record_id"):
        choices.append(st.sampled_from(ids.turn_ids))
    if field.name == "session_id":
        choices.append(st.just(ids.session))
    return st.one_of(choices)


def _scalar(field: pb_descriptor.FieldDescriptor, ids: Ids) -> st.SearchStrategy[Any]:
    if field.type in _INTS:
        low, high = _INTS[field.type]
        return st.one_of(st.integers(low, high), st.sampled_from([low, high, 0, 1, 5]))
    if field.type in (FD.TYPE_DOUBLE, FD.TYPE_FLOAT):
        return st.one_of(
            st.floats(width=32 if field.type == FD.TYPE_FLOAT else 64), st.sampled_from([math.nan, -1.0])
        )
    if field.type == FD.TYPE_BOOL:
        return st.booleans()
    if field.type == FD.TYPE_STRING:
        return _proto_text(field, ids)
    if field.type == FD.TYPE_BYTES:
        return st.binary(max_size=64)
    if field.type == FD.TYPE_ENUM:
        known = [value.number for value in field.enum_type.values]
        return st.one_of(st.sampled_from(known), st.integers(-3, 1000))
    raise TypeError(f"{field.full_name}: no strategy for type {field.type}")


def messages(descriptor: pb_descriptor.Descriptor, ids: Ids, depth: int = 0) -> st.SearchStrategy[Message]:
    """Messages of ``descriptor``'s type: any subset of its fields set, to values of any size and sign."""
    cls = GetMessageClass(descriptor)
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for field in descriptor.fields:
        if field.type == FD.TYPE_MESSAGE:
            if depth >= MESSAGE_DEPTH:
                continue
            entry = field.message_type
            if entry.GetOptions().map_entry:
                key, value = entry.fields_by_name["key"], entry.fields_by_name["value"]
                if value.type == FD.TYPE_MESSAGE:
                    continue
                fields[field.name] = st.dictionaries(_scalar(key, ids), _scalar(value, ids), max_size=3)
                continue
            inner = messages(entry, ids, depth + 1)
            fields[field.name] = st.lists(inner, max_size=3) if _repeated(field) else inner
        else:
            one = _scalar(field, ids)
            fields[field.name] = st.lists(one, max_size=4) if _repeated(field) else one
    # the bank is named (mostly ours) in most messages, so most cases get past the bank check
    required = {"bank_id": fields.pop("bank_id")} if depth == 0 and "bank_id" in fields else {}
    return st.fixed_dictionaries(required, optional=fields).map(lambda values: _build(cls, values))


def _repeated(field: pb_descriptor.FieldDescriptor) -> bool:
    return bool(field.is_repeated)


def _build(cls: type[Message], values: Mapping[str, Any]) -> Message:
    message = cls()
    for name, value in values.items():
        target = getattr(message, name)
        try:
            if isinstance(value, Message):
                target.CopyFrom(value)
            elif isinstance(value, dict):
                target.update(value)
            elif isinstance(value, list):
                if value and isinstance(value[0], Message):
                    for item in value:
                        target.add().CopyFrom(item)
                else:
                    target.extend(value)
            else:
                setattr(message, name, value)
        except (ValueError, TypeError):  # a value this field's type cannot hold: leave it unset
            continue
    return message


def wire_bytes() -> st.SearchStrategy[bytes]:
    """Bytes that are seldom a valid message: random, truncated varints, huge lengths, wrong wire types."""
    return st.one_of(
        st.binary(max_size=256),
        st.sampled_from(
            [
                b"\x0a\xff\xff\xff\xff\x0f",  # field 1, length 4 GiB
                b"\x0a\x05ab",  # length past the end
                b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",  # an 11-byte varint
                b"\x0f",  # wire type 7
                b"\x0a\x02\xc3\x28",  # bank_id that is not UTF-8
                b"\x12" + b"\x0a\x7f" * 2,
            ]
        ),
    )


# ----- JSON-RPC over MCP HTTP --------------------------------------------------------------------------
def _call(method: str, params: Any, request_id: Any = 1, version: Any = "2.0") -> dict[str, Any]:
    return {"jsonrpc": version, "id": request_id, "method": method, "params": params}


def jsonrpc_bodies(tool_names: Sequence[str], ids: Ids) -> st.SearchStrategy[bytes]:
    """Request bodies a JSON-RPC peer should refuse cleanly, and a few it should answer."""
    tool = st.sampled_from(list(tool_names))
    call = st.builds(
        lambda name, args, request_id, version: _call(
            "tools/call", {"name": name, "arguments": args}, request_id, version
        ),
        tool,
        st.one_of(st.just({"bank": ids.bank}), hostile_value()),
        st.one_of(st.integers(), st.sampled_from([10**100, -(10**100), "x" * 10_000, None, [], {}, 1.5])),
        st.sampled_from(["2.0", "2.0", "1.0", "3", 2.0, None]),
    )
    encoded = call.map(lambda body: json.dumps(body).encode())
    return st.one_of(
        encoded,
        st.tuples(encoded, st.integers(1, 200)).map(lambda pair: pair[0][: max(1, len(pair[0]) - pair[1])]),
        st.lists(call, min_size=0, max_size=5).map(lambda batch: json.dumps(batch).encode()),
        st.builds(
            lambda method, params: json.dumps(_call(method, params)).encode(),
            st.sampled_from(
                ["tools/list", "tools/call", "nope", "", "initialize", "resources/read", "rpc.x"]
            ),
            hostile_value(),
        ),
        st.sampled_from(
            [b"", b"{", b"[]", b"null", b"42", b'"x"', b"\xff\xfe", b'{"jsonrpc":"2.0"}', b"[" * 5000]
        ),
        st.binary(max_size=128),
    )
