"""MCP resources and prompts: what a client can show or attach without a tool call.

Resources are read-only views of one bank (``hindsight://banks/{bank}/recent``, ``.../lessons``,
``.../entities``); the prompt ``recall_context`` runs a recall and places its context before the user's
question. Each checks, like every tool, that the caller grants the bank it names.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Annotated, Any

import grpc
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.mcpserver.prompts.base import Message, UserMessage
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS
from pydantic import Field

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.reflect.v1 import reflect_pb2
from hindsight.mcp_edge.domain import ALL_LAYERS, RecallQuery
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.mcp_edge.entity_output import list_entities_output
from hindsight.runtime.errors import HindsightError
from hindsight.runtime.records import RecordMeta
from hindsight.runtime.validation import check_text

if TYPE_CHECKING:
    from hindsight.mcp_edge.tools.access import ToolContext

log = logging.getLogger(__name__)

RECENT_URI = "hindsight://banks/{bank}/recent"
LESSONS_URI = "hindsight://banks/{bank}/lessons"
ENTITIES_URI = "hindsight://banks/{bank}/entities"
RECENT_LIMIT = 20
LESSON_LIMIT = 50
ENTITY_LIMIT = 100
PROMPT_TOP_K = 10

_ROLES = {
    common_pb2.ROLE_USER: "user",
    common_pb2.ROLE_ASSISTANT: "assistant",
    common_pb2.ROLE_TOOL: "tool",
    common_pb2.ROLE_SYSTEM: "system",
}


def _message(exc: HindsightError | grpc.aio.AioRpcError) -> str:
    """The status name and detail, as the tools word their errors."""
    if isinstance(exc, grpc.aio.AioRpcError):
        return f"{exc.code().name}: {exc.details() or 'a memory layer failed'}"
    return f"{exc.code.name}: {exc}"


@contextlib.contextmanager
def _resource_errors() -> Iterator[None]:
    """A refused bank or a failed layer reaches the client as a resource error with its reason."""
    try:
        yield
    except (HindsightError, grpc.aio.AioRpcError) as exc:
        raise ResourceError(_message(exc)) from exc


@contextlib.contextmanager
def _prompt_errors() -> Iterator[None]:
    """A prompt's refusal as a protocol error with its reason (the SDK would hide any other exception's):
    bad or refused arguments are invalid params, a failed layer an internal error."""
    try:
        yield
    except HindsightError as exc:
        raise MCPError(INVALID_PARAMS, _message(exc)) from exc
    except grpc.aio.AioRpcError as exc:
        raise MCPError(INTERNAL_ERROR, _message(exc)) from exc


def recent_markdown(bank_id: str, turns: Iterable[common_pb2.Turn]) -> str:
    """The newest turns as a Markdown list, newest first, each with its id to cite or correct."""
    lines = [f"# Recent turns in bank `{bank_id}`", ""]
    for turn in turns:
        meta = RecordMeta.from_pb(turn.meta)
        when = meta.time.isoformat(timespec="seconds") if meta.time else "unknown time"
        who = _ROLES.get(turn.role, "unknown") + (f" ({turn.speaker})" if turn.speaker else "")
        text = " ".join(turn.text.split())
        lines.append(f"- {when} **{who}** [session `{turn.session_id}`, id `{turn.id}`]: {text}")
    if len(lines) == 2:
        lines.append("No turns yet.")
    return "\n".join(lines) + "\n"


def lessons_markdown(bank_id: str, lessons: Iterable[reflect_pb2.Lesson]) -> str:
    """Current lessons, most confident first, with confidence and how often recall used them."""
    lines = [f"# Lessons in bank `{bank_id}`", ""]
    for item in lessons:
        lines.append(
            f"- **{' '.join(item.lesson.split())}** (confidence {item.confidence:.2f}, "
            f"used {item.hit_count} times, id `{item.id}`)"
        )
        if item.situation:
            lines.append(f"  - when: {' '.join(item.situation.split())}")
    if len(lines) == 2:
        lines.append("No lessons yet: record finished tasks with `write_episode`, then `reflect`.")
    return "\n".join(lines) + "\n"


def context_messages(query: str, context: str) -> list[Message]:
    """The recalled context first, then the question, so the model reads memory before it answers."""
    memory = (
        "Here is what memory holds that may bear on my next question (cite ids where you use them):\n\n"
        f"{context}"
        if context.strip()
        else "Memory holds nothing that bears on my next question."
    )
    return [UserMessage(memory), UserMessage(query)]


def register_resources(server: MCPServer, engine: MemoryEngine, access: ToolContext) -> None:
    """Add the bank resources and the ``recall_context`` prompt to ``server``."""

    @server.resource(
        RECENT_URI,
        name="recent_turns",
        title="Recent turns",
        description=f"The {RECENT_LIMIT} newest turns of a bank, newest first, with ids.",
        mime_type="text/markdown",
    )
    async def recent_turns(bank: str, ctx: Context[Any, Any]) -> str:
        with _resource_errors():
            bank_id = access.bank(bank, ctx)
            reply = await engine.list_recent(bank_id, limit=RECENT_LIMIT)
        return recent_markdown(bank_id, reply.turns)

    @server.resource(
        LESSONS_URI,
        name="lessons",
        title="Lessons",
        description="A bank's current lessons, most confident first, with confidence and use counts.",
        mime_type="text/markdown",
    )
    async def lessons(bank: str, ctx: Context[Any, Any]) -> str:
        with _resource_errors():
            bank_id = access.bank(bank, ctx)
            reply = await engine.clients.reflect.call(
                "ListLessons",
                reflect_pb2.ListLessonsRequest(bank_id=bank_id, page_size=LESSON_LIMIT),
                engine.settings.write_timeout,
            )
        return lessons_markdown(bank_id, reply.lessons)

    @server.resource(
        ENTITIES_URI,
        name="entities",
        title="Entities",
        description=f"Up to {ENTITY_LIMIT} people, places and things a bank's memories are about (JSON).",
        mime_type="application/json",
    )
    async def entities(bank: str, ctx: Context[Any, Any]) -> str:
        with _resource_errors():
            reply = await engine.list_entities(access.bank(bank, ctx), limit=ENTITY_LIMIT)
        return list_entities_output(reply).model_dump_json(indent=2)

    @server.prompt(
        name="recall_context",
        title="Answer with memory",
        description="Recalls what memory holds about a question and places it before the question.",
    )
    async def recall_context(
        query: Annotated[str, Field(description="The question to answer.")],
        ctx: Context[Any, Any],
        bank: Annotated[
            str | None, Field(description="Memory bank; omitted means the server's default bank.")
        ] = None,
    ) -> list[Message]:
        with _prompt_errors():
            bank_id = access.bank(bank, ctx)
            result = await engine.recall(
                RecallQuery(
                    bank_id=bank_id, query=check_text(query, "query"), top_k=PROMPT_TOP_K, layers=ALL_LAYERS
                )
            )
        log.info("recall_context prompt", extra={"bank": bank_id, "memories": len(result.memories)})
        return context_messages(query, result.context.text)
