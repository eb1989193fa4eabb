"""How ``hindsight bench fleet`` calls the edge as one credential: MCP over streamable HTTP (one session per
credential, held open, as an agent holds it) or the gRPC ``MemoryService`` (its token on every call).

Every call ends in an :class:`Outcome`: served, refused (PERMISSION_DENIED or UNAUTHENTICATED, or MCP
HTTP's 401/403 for a credential the transport itself turns away), or failed otherwise; with the text of the
answer or of the error, so a leak check can look for what must not be there.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import json_format

REFUSAL_CODES = frozenset({"PERMISSION_DENIED", "UNAUTHENTICATED"})
REFUSED_HTTP = frozenset({401, 403})
CALL_TIMEOUT = 60.0
MCP, GRPC = "mcp", "grpc"


@dataclass(frozen=True)
class Outcome:
    """What one call came to."""

    code: str
    """``OK``, a gRPC status name (an MCP tool error starts with one), or ``HTTP 401``."""
    text: str
    """The answer (JSON) or the error's text."""
    data: dict[str, Any]
    """A served MCP call's structured content (a gRPC reply as JSON); empty otherwise."""
    elapsed_ms: float

    @property
    def ok(self) -> bool:
        return self.code == "OK"

    @property
    def refused(self) -> bool:
        return self.code in REFUSAL_CODES or self.code.startswith("HTTP 40")


_STATUS = re.compile(r"\b([A-Z]{2,}(?:_[A-Z]+)*):")


def _status_name(text: str) -> str:
    """The gRPC status name an MCP tool error carries (``...: PERMISSION_DENIED: ...``), else ``ERROR``."""
    found = _STATUS.search(text)
    return found.group(1) if found else "ERROR"


class McpSession:
    """One MCP session held with one credential; an HTTP refusal of a request is seen by its status."""

    def __init__(self, client: Any, statuses: list[int]) -> None:
        self._client = client
        self._statuses = statuses

    async def call(self, tool: str, arguments: dict[str, Any]) -> Outcome:
        self._statuses.clear()
        started = time.perf_counter()
        try:
            result = await self._client.call_tool(tool, arguments)
        except Exception as exc:  # a request the transport answered with an HTTP error, or a JSON-RPC one
            elapsed = (time.perf_counter() - started) * 1000
            refused = [s for s in self._statuses if s in REFUSED_HTTP]
            code = f"HTTP {refused[0]}" if refused else _status_name(str(exc))
            return Outcome(code, repr(exc), {}, elapsed)
        elapsed = (time.perf_counter() - started) * 1000
        refused = [s for s in self._statuses if s in REFUSED_HTTP]
        texts = [str(getattr(item, "text", "")) for item in result.content or ()]
        if result.is_error:
            text = "\n".join(texts)
            return Outcome(f"HTTP {refused[0]}" if refused else _status_name(text), text, {}, elapsed)
        data = dict(result.structured_content or {})
        return Outcome("OK", json.dumps(data, default=str) if data else "\n".join(texts), data, elapsed)


@contextlib.asynccontextmanager
async def mcp_session(url: str, token: str) -> AsyncIterator[McpSession]:
    """An MCP session opened with ``token`` (the opening itself fails for a token the edge refuses)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    statuses: list[int] = []

    async def note(response: Any) -> None:
        statuses.append(response.status_code)

    headers = {"authorization": f"Bearer {token}"}
    timeout = httpx2.Timeout(30.0, read=300.0)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout, event_hooks={"response": [note]}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield McpSession(client, statuses)


class GrpcPort:
    """The gRPC ``MemoryService`` over one channel; each call presents the token it is given."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        from hindsight.contracts.memory.v1 import memory_pb2_grpc

        self._stub = memory_pb2_grpc.MemoryServiceStub(channel)

    def has(self, method: str) -> bool:
        return hasattr(self._stub, method)

    async def call(self, method: str, request: Any, token: str) -> Outcome:
        started = time.perf_counter()
        try:
            reply = await getattr(self._stub, method)(
                request, metadata=(("authorization", f"Bearer {token}"),), timeout=CALL_TIMEOUT
            )
        except grpc.aio.AioRpcError as exc:
            elapsed = (time.perf_counter() - started) * 1000
            return Outcome(exc.code().name, exc.details() or "", {}, elapsed)
        elapsed = (time.perf_counter() - started) * 1000
        data = json_format.MessageToDict(reply, preserving_proto_field_name=True)
        return Outcome("OK", json.dumps(data), data, elapsed)


@contextlib.asynccontextmanager
async def grpc_port(address: str) -> AsyncIterator[GrpcPort]:
    async with grpc.aio.insecure_channel(address) as channel:
        yield GrpcPort(channel)
