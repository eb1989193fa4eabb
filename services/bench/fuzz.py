"""Fuzz the edge: hostile MCP tool calls, MemoryService messages, raw gRPC bytes and malformed JSON-RPC.

Every case is one request to a real edge; after it the edge must still answer health, the request must
have been answered (not hung) without an internal error or an HTTP 5xx, and a refused request must have
left the bank as it was. ``hindsight bench fuzz --cases N`` runs N cases against a private mesh and
writes ``{"cases", "crashes", "hangs", "internal_errors", "partial_writes", "refusals_by_code", ...}``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from google.protobuf.message import Message
    from hypothesis import strategies as st

    from hindsight.bench.fuzz_cases import Ids

T = TypeVar("T")

CALL_TIMEOUT = 20.0
"""Seconds one fuzzed request may take; past it the case is a hang."""
REFUSALS = frozenset(
    {
        "INVALID_ARGUMENT",
        "RESOURCE_EXHAUSTED",
        "PERMISSION_DENIED",
        "NOT_FOUND",
        "FAILED_PRECONDITION",
        "OUT_OF_RANGE",
        "UNAUTHENTICATED",
        "ALREADY_EXISTS",
    }
)
"""gRPC codes that are a clean refusal of a bad request (anything else that is not OK is a failure)."""
INTERNAL_WORDS = ("internal error", "traceback", "exception deserializing")
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
FAMILIES = ("tools", "messages", "bytes", "jsonrpc")
SEED_TURNS = ("fz-1", "fz-2", "fz-3", "fz-4")
SESSION = "fuzz-session"
FIELD_CODES = frozenset({"INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "OUT_OF_RANGE"})
"""Refusals of a request's content: their message must lead with the field (``turns[0].text: ...``)."""
_FIELD = r'[A-Za-z_](?:[\w.]|\[\w*\]|\["(?:[^"\\]|\\.)*"\])*'
"""A field path: names, indexes (``turns[0]``) and JSON-quoted map keys (``bank_weights["a: b"]``)."""
FIELD_FIRST = re.compile(rf"^{_FIELD}(, {_FIELD})*: ")
CONNECTION_CLOSED = -32000
"""The official client's code for a connection that broke (it reconnects; the case is a failure)."""


@dataclass
class Outcome:
    """What one case came to: ``kind`` is ok, refused, unnamed (a refusal naming no field), internal,
    crash, hang or partial."""

    family: str
    kind: str
    code: str = "OK"
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.kind in ("internal", "crash", "hang", "partial", "unnamed")


@dataclass
class Tally:
    """Outcomes of a run, and the first failures with what was sent."""

    cases: int = 0
    crashes: int = 0
    hangs: int = 0
    internal_errors: int = 0
    partial_writes: int = 0
    unnamed_refusals: int = 0
    """Refusals whose message names no field (the caller cannot tell what to fix)."""
    refusals_by_code: Counter[str] = field(default_factory=Counter)
    by_family: Counter[str] = field(default_factory=Counter)
    failures: list[dict[str, str]] = field(default_factory=list)
    examples: dict[str, str] = field(default_factory=dict)
    """The first answer seen for each refusal code (what a caller is told)."""

    def add(self, outcome: Outcome, sent: str) -> None:
        self.cases += 1
        self.by_family[outcome.family] += 1
        if outcome.kind in ("refused", "unnamed"):
            self.refusals_by_code[outcome.code] += 1
            self.examples.setdefault(outcome.code, outcome.detail[:300])
        counters = {
            "crash": "crashes",
            "hang": "hangs",
            "internal": "internal_errors",
            "partial": "partial_writes",
            "unnamed": "unnamed_refusals",
        }
        if outcome.kind in counters:
            setattr(self, counters[outcome.kind], getattr(self, counters[outcome.kind]) + 1)
            if len(self.failures) < 20:
                self.failures.append(
                    {
                        "family": outcome.family,
                        "kind": outcome.kind,
                        "code": outcome.code,
                        "detail": outcome.detail[:500],
                        "sent": sent[:500],
                    }
                )

    def summary(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "crashes": self.crashes,
            "hangs": self.hangs,
            "internal_errors": self.internal_errors,
            "partial_writes": self.partial_writes,
            "unnamed_refusals": self.unnamed_refusals,
            "refusals_by_code": dict(sorted(self.refusals_by_code.items())),
            "cases_by_family": dict(sorted(self.by_family.items())),
            "failures": self.failures,
            "refusal_examples": dict(sorted(self.examples.items())),
        }


class Target:
    """Clients of one edge (gRPC MemoryService, MCP streamable HTTP through the official SDK, raw HTTP), on
    an event loop of their own in a thread, so synchronous Hypothesis tests can drive them."""

    def __init__(
        self,
        grpc_address: str,
        mcp_url: str,
        bank: str,
        token: str = "",
        admin_token: str = "",
        serve: Callable[[], contextlib.AbstractAsyncContextManager[tuple[str, str]]] | None = None,
    ) -> None:
        """``serve``, when given, starts the edge itself on the target's loop (tests) and yields its gRPC
        address and MCP URL, which then replace ``grpc_address`` and ``mcp_url``."""
        self.grpc_address, self.mcp_url, self.bank = grpc_address, mcp_url, bank
        self.token, self.admin_token = token, admin_token
        self._serve = serve
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fuzz-target", daemon=True)
        self._stack = contextlib.AsyncExitStack()
        self._mcp_stack = contextlib.AsyncExitStack()
        self.tools: list[dict[str, Any]] = []
        self.methods: list[tuple[str, Any]] = []

    # ----- life cycle ----------------------------------------------------------------------------------
    def __enter__(self) -> Target:
        self._thread.start()
        try:
            self.run(self._open(), timeout=600)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.run(self._stack.aclose(), timeout=120)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._loop.close()

    def run(self, work: Coroutine[Any, Any, T], timeout: float = CALL_TIMEOUT * 3) -> T:
        """Run ``work`` on the target's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(timeout)

    async def _open(self) -> None:
        import grpc
        import httpx2

        from hindsight.contracts.memory.v1 import memory_pb2

        if self._serve is not None:
            self.grpc_address, self.mcp_url = await self._stack.enter_async_context(self._serve())
        options = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
        self.channel = await self._stack.enter_async_context(
            grpc.aio.insecure_channel(self.grpc_address, options=options)
        )
        headers = {"authorization": f"Bearer {self.token}"} if self.token else {}
        self.http = await self._stack.enter_async_context(
            httpx2.AsyncClient(headers=headers, timeout=CALL_TIMEOUT)
        )
        self._stack.push_async_callback(self._mcp_stack.aclose)
        await self._connect_mcp()
        listed = await self.mcp.list_tools()
        self.tools = [{"name": tool.name, "inputSchema": tool.input_schema} for tool in listed.tools]
        service = memory_pb2.DESCRIPTOR.services_by_name["MemoryService"]
        self.methods = [(f"/{service.full_name}/{m.name}", m.input_type) for m in service.methods]
        await self._seed()

    async def _connect_mcp(self) -> None:
        """(Re)open the official MCP client: a case that broke its connection must not fail the next."""
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        await self._mcp_stack.aclose()
        self._mcp_stack = contextlib.AsyncExitStack()
        headers = {"authorization": f"Bearer {self.token}"} if self.token else {}
        sdk_http = await self._mcp_stack.enter_async_context(
            httpx2.AsyncClient(headers=headers, timeout=CALL_TIMEOUT)
        )
        transport = streamable_http_client(self.mcp_url, http_client=sdk_http)
        self.mcp = await self._mcp_stack.enter_async_context(
            Client(transport, read_timeout_seconds=CALL_TIMEOUT)
        )

    def _metadata(self) -> tuple[tuple[str, str], ...]:
        items = [("authorization", f"Bearer {self.token}")] if self.token else []
        if self.admin_token:
            items.append(("x-hindsight-admin-token", self.admin_token))
        return tuple(items)

    async def _seed(self) -> None:
        """A few turns and an episode in the bank, so updates, forgets and recalls have something to hit."""
        from hindsight.contracts.common.v1 import common_pb2
        from hindsight.contracts.episodic.v1 import episodic_pb2
        from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc

        stub = memory_pb2_grpc.MemoryServiceStub(self.channel)
        texts = (
            "The boiler was serviced by Northwind.",
            "Alice moved to Oslo.",
            "Deploys need --force.",
            "Tea.",
        )
        turns = [
            common_pb2.Turn(id=i, session_id=SESSION, text=t) for i, t in zip(SEED_TURNS, texts, strict=True)
        ]
        meta = self._metadata()
        await stub.Retain(memory_pb2.RetainRequest(bank_id=self.bank, turns=turns), timeout=60, metadata=meta)
        episode = episodic_pb2.Episode(
            situation="a deploy", action="used --force", outcome="it worked", lesson="force"
        )
        await stub.WriteEpisode(
            memory_pb2.WriteEpisodeRequest(bank_id=self.bank, episode=episode), timeout=60, metadata=meta
        )

    @property
    def ids(self) -> Ids:
        from hindsight.bench.fuzz_cases import Ids

        return Ids(self.bank, SEED_TURNS, SESSION)

    # ----- observations --------------------------------------------------------------------------------
    async def snapshot(self) -> str:
        """A digest of everything the bank holds in episodic memory (turns with their metadata, episodes)."""
        from hindsight.contracts.memory.v1 import memory_pb2

        method = "/hindsight.memory.v1.MemoryService/DebugList"
        call = self.channel.unary_unary(method, request_serializer=None, response_deserializer=None)
        request = memory_pb2.DebugListRequest(bank_id=self.bank, limit=500).SerializeToString()
        raw = await call(request, timeout=CALL_TIMEOUT, metadata=self._metadata())
        reply = memory_pb2.DebugListResponse.FromString(raw)
        digest = hashlib.sha256()
        for turn in reply.turns:
            digest.update(turn.SerializeToString(deterministic=True))
        for episode in reply.episodes:
            digest.update(episode.SerializeToString(deterministic=True))
        return digest.hexdigest()

    async def healthy(self) -> bool:
        """The edge answers gRPC health and MCP (its process survived the case)."""
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        try:
            reply = await health_pb2_grpc.HealthStub(self.channel).Check(
                health_pb2.HealthCheckRequest(), timeout=10
            )
            answer = await self.http.post(
                self.mcp_url, content=b'{"jsonrpc":"2.0","id":0,"method":"ping"}', headers=MCP_HEADERS
            )
        except Exception:
            return False
        return reply.status == health_pb2.HealthCheckResponse.SERVING and answer.status_code < 500

    # ----- one case ------------------------------------------------------------------------------------
    async def case(self, family: str, payload: Any) -> Outcome:
        """Send one case, then check health and (for a refusal) that the bank did not change."""
        before = await self.snapshot()
        try:
            async with asyncio.timeout(CALL_TIMEOUT):
                outcome = await self._send(family, payload)
        except TimeoutError:
            outcome = Outcome(family, "hang", "TIMEOUT", f"no answer within {CALL_TIMEOUT} s")
        if not await self.healthy():
            return Outcome(family, "crash", outcome.code, "the edge stopped answering health after this case")
        if outcome.kind in ("refused", "unnamed") and await self.snapshot() != before:
            return Outcome(
                family, "partial", outcome.code, f"refused ({outcome.detail}) yet the bank changed"
            )
        return outcome

    async def _send(self, family: str, payload: Any) -> Outcome:
        if family == "tools":
            return await self._tool(*payload)
        if family in ("messages", "bytes"):
            method, body = payload
            return await self._grpc(family, method, body)
        return await self._jsonrpc(payload)

    async def _grpc(self, family: str, method: str, body: bytes) -> Outcome:
        import grpc

        call = self.channel.unary_unary(method, request_serializer=None, response_deserializer=None)
        try:
            await call(body, timeout=CALL_TIMEOUT, metadata=self._metadata())
        except grpc.aio.AioRpcError as exc:
            code, detail = exc.code().name, exc.details() or ""
            if code == "DEADLINE_EXCEEDED":
                return Outcome(family, "hang", code, detail)
            if code in REFUSALS and not _internal(detail):
                named = code not in FIELD_CODES or FIELD_FIRST.match(detail) is not None
                return Outcome(family, "refused" if named else "unnamed", code, detail)
            return Outcome(family, "internal", code, detail)
        return Outcome(family, "ok")

    async def _tool(self, name: str, arguments: dict[str, Any]) -> Outcome:
        """One tool call through the official client; arguments it cannot encode (lone surrogates, which
        JSON carries escaped) go as the same ``tools/call`` request over plain HTTP."""
        from mcp.shared.exceptions import MCPError

        try:
            json.dumps(arguments, ensure_ascii=False).encode()
        except UnicodeEncodeError:
            return await self._raw_tool(name, arguments)
        try:
            result = await self.mcp.call_tool(name, arguments)
        except MCPError as exc:
            code = exc.error.code
            if code == CONNECTION_CLOSED:  # the client's connection broke under this case
                await self._connect_mcp()
                return Outcome("tools", "internal", f"jsonrpc:{code}", exc.error.message)
            kind = "internal" if code == -32603 or _internal(exc.error.message) else "refused"
            return Outcome("tools", kind, f"jsonrpc:{code}", exc.error.message)
        except Exception as exc:  # an HTTP 5xx, or an answer the SDK could not read
            await self._connect_mcp()
            return Outcome("tools", "internal", type(exc).__name__, str(exc))
        if not result.is_error:
            return Outcome("tools", "ok")
        text = " ".join(str(getattr(part, "text", "")) for part in result.content)
        return self._tool_error(name, text)

    def _tool_error(self, name: str, text: str) -> Outcome:
        """A tool's refusal: an internal error when it says so, unnamed when it names no argument."""
        if _internal(text):
            return Outcome("tools", "internal", "tool_error", text)
        schema: dict[str, Any] = next((t["inputSchema"] for t in self.tools if t["name"] == name), {})
        fields = [*schema.get("properties", {}), *_nested_fields(schema)]
        named = any(field in text for field in fields)
        return Outcome("tools", "refused" if named else "unnamed", "tool_error", text)

    async def _raw_tool(self, name: str, arguments: dict[str, Any]) -> Outcome:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        outcome = await self._jsonrpc(json.dumps(body).encode())
        answer = outcome.detail
        if outcome.kind == "ok":
            result = json.loads(answer).get("result", {}) if answer else {}
            if result.get("isError"):
                text = " ".join(str(part.get("text", "")) for part in result.get("content", []))
                return self._tool_error(name, text)
        return Outcome("tools", outcome.kind, outcome.code, outcome.detail)

    async def _jsonrpc(self, body: bytes) -> Outcome:
        response = await self.http.post(self.mcp_url, content=body, headers=MCP_HEADERS)
        if response.status_code >= 500:
            return Outcome("jsonrpc", "internal", f"http:{response.status_code}", response.text[:300])
        text = response.text
        try:
            answer = json.loads(text) if text else None
        except ValueError:
            answer = None
        errors = [
            a.get("error") for a in (answer if isinstance(answer, list) else [answer]) if isinstance(a, dict)
        ]
        codes = [e.get("code") for e in errors if isinstance(e, dict)]
        if -32603 in codes or _internal(text):
            return Outcome("jsonrpc", "internal", "jsonrpc:-32603", text[:300])
        if response.status_code >= 400 or codes:
            return Outcome("jsonrpc", "refused", f"http:{response.status_code}", text[:300])
        return Outcome("jsonrpc", "ok", f"http:{response.status_code}", text)


def _nested_fields(schema: dict[str, Any]) -> list[str]:
    """Property names of the schema's definitions (the fields of a turn, an episode...)."""
    return [
        name for definition in schema.get("$defs", {}).values() for name in definition.get("properties", {})
    ]


def _internal(text: str) -> bool:
    lowered = text.lower()
    return any(word in lowered for word in INTERNAL_WORDS)


def _serialized(method: str, message: Message) -> tuple[str, bytes]:
    return method, message.SerializeToString()


def strategies(target: Target) -> dict[str, st.SearchStrategy[Any]]:
    """The payload strategy of each family, aimed at ``target``'s bank and tools."""
    from hypothesis import strategies as st

    from hindsight.bench.fuzz_cases import jsonrpc_bodies, messages, tool_calls, wire_bytes

    ids = target.ids
    per_method = [
        messages(descriptor, ids).map(partial(_serialized, method)) for method, descriptor in target.methods
    ]
    raw = st.tuples(st.sampled_from([method for method, _ in target.methods]), wire_bytes())
    return {
        "tools": tool_calls(target.tools, ids),
        "messages": st.one_of(per_method),
        "bytes": raw,
        "jsonrpc": jsonrpc_bodies([tool["name"] for tool in target.tools], ids),
    }


def run_family(target: Target, family: str, examples: int, tally: Tally, strict: bool = False) -> None:
    """Draw ``examples`` cases of ``family`` and send each; ``strict`` fails (and shrinks) on the first
    failing case instead of only counting it (the tests)."""
    from hypothesis import HealthCheck, given, settings

    strategy = strategies(target)[family]

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(payload=strategy)
    def one(payload: Any) -> None:
        outcome = target.run(target.case(family, payload))
        tally.add(outcome, repr(payload))
        assert not (strict and outcome.failed), f"{outcome.kind} {outcome.code}: {outcome.detail}"

    one()


# ----- the bench ---------------------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``hindsight bench fuzz`` flags."""
    parser.add_argument(
        "--cases", type=int, default=1000, help="fuzzed requests in all, spread over the families"
    )
    parser.add_argument("--json", type=Path, help="write the result here as JSON")
    parser.add_argument("--bank", default="fuzz-bank", help="the bank the cases aim at")


def run(args: argparse.Namespace) -> int:
    """Start a private mesh, run the cases, print (and write) the result; 1 when any case failed."""
    from hindsight.bench.mesh_process import embedded_mesh
    from hindsight.bench.provenance import checkout, commit_label, mesh_environment, recorded_settings
    from hindsight.cli.credentials import read_credentials

    if args.cases < len(FAMILIES):
        print(f"error: --cases must be at least {len(FAMILIES)}", file=sys.stderr)
        return 2
    code = commit_label(checkout())
    environ = mesh_environment({})
    started = time.time()
    tally = Tally()
    print("starting an embedded mesh ...", file=sys.stderr, flush=True)
    with embedded_mesh(environ=environ) as (info, _):
        credentials = read_credentials(Path(info.home), environ)
        admin = credentials.admin if credentials is not None else ""
        with Target(info.memory_address, info.mcp_url, args.bank, token=admin, admin_token=admin) as target:
            for family, examples in zip(FAMILIES, _shares(args.cases), strict=True):
                print(f"fuzzing {family}: {examples} cases", file=sys.stderr, flush=True)
                run_family(target, family, examples, tally)
    result = tally.summary() | {
        "commit": code,
        "settings": recorded_settings(environ),
        "wall_seconds": round(time.time() - started, 1),
    }
    text = json.dumps(result, indent=2, ensure_ascii=False)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
        print(f"JSON: {args.json}", file=sys.stderr)
    failed = (
        tally.crashes + tally.hangs + tally.internal_errors + tally.partial_writes + tally.unnamed_refusals
    )
    return 1 if failed else 0


def _shares(cases: int) -> list[int]:
    """``cases`` spread over the families: tools and messages get the most, the wire and JSON-RPC less."""
    weights = (4, 4, 1, 1)
    shares = [max(1, cases * w // sum(weights)) for w in weights]
    shares[0] += cases - sum(shares)
    return shares
