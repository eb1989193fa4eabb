"""The tools that end memories or shrink a session: ``forget`` (archive), ``invalidate`` (no longer true),
``purge`` (delete for good), ``compress`` and ``close_session`` (working memory)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.mcp_edge.coerce import AS_BOOL, SPLIT_COMMAS
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.mcp_edge.servicer import DEFAULT_SESSION
from hindsight.mcp_edge.tools.access import BankArg, TagsArg, ToolContext, _hints, _tool_errors, _window
from hindsight.mcp_edge.tools.outputs import (
    CloseSessionOutput,
    CompressOutput,
    ForgetOutput,
    InvalidateOutput,
    PurgeOutput,
    _lesson_outputs,
)
from hindsight.mcp_edge.validity import invalidate as invalidate_memories
from hindsight.runtime.records import as_utc
from hindsight.runtime.validation import check_tags


def register(server: MCPServer, engine: MemoryEngine, access: ToolContext) -> None:
    """Add ``forget``, ``invalidate``, ``purge``, ``compress`` and ``close_session`` to ``server``."""

    @server.tool(annotations=_hints("Forget memories", destructive=True, idempotent=True))
    async def forget(
        ctx: Context[Any, Any],
        turn_ids: Annotated[
            list[str] | None,
            Field(max_length=1000, description="Turns to forget (or use the filters)."),
            SPLIT_COMMAS,
        ] = None,
        session_id: Annotated[str, Field(max_length=256, description="Every turn of this session.")] = "",
        tags: TagsArg = None,
        since: Annotated[datetime | None, Field(description="Turns from this time on.")] = None,
        until: Annotated[datetime | None, Field(description="Turns before this time.")] = None,
        hard: Annotated[
            bool,
            Field(
                strict=True, description="Delete the named turns for good instead of archiving (see `purge`)."
            ),
            AS_BOOL,
        ] = False,
        bank: BankArg = None,
    ) -> ForgetOutput:
        """Archive turns (recoverable), named by id or selected by session, tags and time; every filter
        given must match. With `hard`, the named turns are deleted for good instead."""
        with _tool_errors():
            window = _window(since, until)
            turn_filter = episodic_pb2.TurnFilter(
                session_id=session_id, tags=list(check_tags(list(tags or ())))
            )
            if window.start or window.end:
                turn_filter.time_range.CopyFrom(window.to_pb())
            result = await engine.forget(
                access.bank(bank, ctx), list(turn_ids or ()), hard=hard, turn_filter=turn_filter
            )
        return ForgetOutput.model_validate(result, from_attributes=True)

    @server.tool(annotations=_hints("Invalidate memories", destructive=True, idempotent=True))
    async def invalidate(
        ctx: Context[Any, Any],
        ids: Annotated[
            list[str],
            Field(min_length=1, max_length=1000, description="Memories that no longer hold (recall ids)."),
            SPLIT_COMMAS,
        ],
        reason: Annotated[str, Field(max_length=1000, description="Why, for the audit log.")] = "",
        valid_to: Annotated[
            datetime | None, Field(description="ISO 8601 time they stopped holding; default now.")
        ] = None,
        bank: BankArg = None,
    ) -> InvalidateOutput:
        """Mark memories as no longer true, without deleting them: recall stops returning them as current
        (they come back marked outdated, below what holds), history and `as_of` still show them."""
        with _tool_errors():
            result = await invalidate_memories(engine, access.bank(bank, ctx), ids, reason, as_utc(valid_to))
        return InvalidateOutput.model_validate(result, from_attributes=True)

    @server.tool(annotations=_hints("Purge memories for good", destructive=True, idempotent=True))
    async def purge(
        ctx: Context[Any, Any],
        ids: Annotated[
            list[str] | None,
            Field(max_length=1000, description="Turn or episode ids to delete."),
            SPLIT_COMMAS,
        ] = None,
        session_id: Annotated[str, Field(max_length=256, description="Delete this whole session.")] = "",
        whole_bank: Annotated[
            bool, Field(strict=True, description="Delete everything in the bank."), AS_BOOL
        ] = False,
        bank: BankArg = None,
    ) -> PurgeOutput:
        """Delete for good (privacy): turns and episodes by id, a whole session, or the whole bank, with
        everything derived from them in every layer. Give exactly one of `ids`, `session_id`, `whole_bank`.
        This cannot be undone."""
        with _tool_errors():
            result = await engine.purge(access.bank(bank, ctx), list(ids or ()), session_id, whole_bank)
        return PurgeOutput.model_validate(result, from_attributes=True)

    @server.tool(annotations=_hints("Compress working memory"))
    async def compress(
        ctx: Context[Any, Any],
        session_id: Annotated[
            str, Field(min_length=1, max_length=256, description="Session whose oldest turns to summarise.")
        ] = DEFAULT_SESSION,
        bank: BankArg = None,
    ) -> CompressOutput:
        """Replace the oldest turns of a session's working memory by summaries that keep decisions, numbers,
        names and open tasks; the turns themselves stay in episodic memory."""
        with _tool_errors():
            reply = await engine.compress(access.bank(bank, ctx), session_id)
        return CompressOutput(
            group_count=reply.group_count,
            summarised_turn_count=reply.summarised_turn_count,
            tokens_before=reply.tokens_before,
            tokens_after=reply.tokens_after,
            summariser=reply.summariser,
        )

    @server.tool(annotations=_hints("Close a session", idempotent=True))
    async def close_session(
        ctx: Context[Any, Any],
        session_id: Annotated[
            str, Field(min_length=1, max_length=256, description="Session that has ended.")
        ] = DEFAULT_SESSION,
        bank: BankArg = None,
    ) -> CloseSessionOutput:
        """End a session: drop its working memory (episodic memory keeps every turn) and reflect on it."""
        with _tool_errors():
            result = await engine.close_session(access.bank(bank, ctx), session_id)
        return CloseSessionOutput(
            closed=result.closed,
            turn_count=result.turn_count,
            summary_count=result.summary_count,
            token_count=result.token_count,
            reflected=result.reflected,
            reflect_error=result.reflect_error,
            lessons=_lesson_outputs(result.lessons),
            episodes_read=result.episodes_read,
        )
