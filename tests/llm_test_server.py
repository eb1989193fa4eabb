"""A test server for the LLM client, written for the tests: OpenAI chat completions over real HTTP/1.1.

It listens on loopback, speaks the wire format of ``POST /v1/chat/completions`` (JSON body in, a
``chat.completion`` object out, ``usage`` and ``finish_reason`` included, error bodies shaped like
OpenAI's), and answers each request with the next scripted :class:`Reply`. It records every request
(headers and parsed body) so tests can check what the client sent. It is not an LLM: it never
generates text of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer."""

    content: Any = None
    """The assistant message text; a dict or list is sent as its JSON text."""
    finish_reason: str = "stop"
    status: int = 200
    raw_body: bytes | None = None
    """Sent as the body as it is (for malformed responses)."""
    hang: bool = False
    """Never answer (until the server stops): the client must time out."""
    delay: float = 0.0
    """Seconds to wait before answering (a slow model)."""
    headers: tuple[tuple[str, str], ...] = ()
    prompt_tokens: int = 50
    completion_tokens: int = 20


@dataclass
class Recorded:
    """One request as received."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class OpenAITestServer:
    """Scripted chat-completions server on 127.0.0.1; use :func:`openai_test_server`."""

    replies: list[Reply] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    port: int = 0
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while not reader.at_eof():
                request_line = await reader.readline()
                if not request_line.strip():
                    return
                method, path, _ = request_line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                self.requests.append(Recorded(method, path, headers, json.loads(body or b"{}")))
                await self._answer(writer, method, path)
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    async def _answer(self, writer: asyncio.StreamWriter, method: str, path: str) -> None:
        if method != "POST" or path != "/v1/chat/completions":
            await _send(writer, 404, _error("not found", "invalid_request_error"))
            return
        if not self.replies:
            await _send(writer, 500, _error("test server has no scripted reply left", "server_error"))
            return
        reply = self.replies.pop(0)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.hang:
            await self._stop.wait()
            return
        if reply.raw_body is not None:
            await _send(writer, reply.status, reply.raw_body, reply.headers)
            return
        if reply.status != 200:
            kind = "rate_limit_exceeded" if reply.status == 429 else "server_error"
            await _send(writer, reply.status, _error(f"scripted {reply.status}", kind), reply.headers)
            return
        content = reply.content if isinstance(reply.content, str) else json.dumps(reply.content)
        completion = {
            "id": f"chatcmpl-test-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": self.requests[-1].body.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            },
        }
        await _send(writer, 200, json.dumps(completion).encode(), reply.headers)


def _error(message: str, kind: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": kind}}).encode()


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests"}


async def _send(
    writer: asyncio.StreamWriter, status: int, body: bytes, headers: tuple[tuple[str, str], ...] = ()
) -> None:
    lines = [
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        *(f"{name}: {value}" for name, value in headers),
    ]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    await writer.drain()


@contextlib.asynccontextmanager
async def openai_test_server() -> AsyncIterator[OpenAITestServer]:
    """A running :class:`OpenAITestServer`; hanging requests are released when it stops."""
    state = OpenAITestServer()
    server = await asyncio.start_server(state._handle, "127.0.0.1", 0)
    state.port = server.sockets[0].getsockname()[1]
    try:
        yield state
    finally:
        state._stop.set()
        server.close()
        await server.wait_closed()
