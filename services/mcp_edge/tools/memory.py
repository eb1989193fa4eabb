"""The tools that write turns and read them back by id: ``retain``, ``list_recent`` and ``update``."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from hindsight.contracts.common.v1 import common_pb2
from hindsight.mcp_edge.agents import check_agent, writing_agent
from hindsight.mcp_edge.coerce import AS_BOOL, AS_INT
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.mcp_edge.servicer import DEFAULT_SESSION, MAX_LIST
from hindsight.mcp_edge.tools.access import (
    BankArg,
    ImportanceArg,
    RoleName,
    SourceName,
    TagsArg,
    ToolContext,
    WriterArg,
    _hints,
    _tool_errors,
)
from hindsight.mcp_edge.tools.outputs import (
    ListRecentOutput,
    RetainOutput,
    UpdateOutput,
    _turn_output,
)
from hindsight.runtime.records import (
    DEFAULT_SOURCE,
    DEFAULT_TRUST,
    RecordMeta,
    Turn,
    as_utc,
    role_from_name,
    source_from_name,
    utcnow,
)
from hindsight.runtime.validation import check_tags, check_text


class TurnInput(BaseModel):
    """One turn to retain."""

    text: Annotated[str, Field(min_length=1, max_length=100_000, description="What was said or done.")]
    role: Annotated[RoleName, Field(description="Who spoke.")] = "user"
    speaker: Annotated[str, Field(max_length=200, description="Speaker's name, when known.")] = ""
    id: Annotated[
        str | None, Field(max_length=256, description="Stable id; retaining it again is a no-op.")
    ] = None
    time: Annotated[datetime | None, Field(description="When it happened (ISO 8601); default now.")] = None
    tags: TagsArg = None
    importance: ImportanceArg = None
    source: Annotated[SourceName | None, Field(description="Origin; default from the role.")] = None


def register(server: MCPServer, engine: MemoryEngine, access: ToolContext) -> None:
    """Add ``retain``, ``list_recent`` and ``update`` to ``server``."""

    @server.tool(annotations=_hints("Retain memories"))  # a retain without ids stores new turns each time
    async def retain(
        ctx: Context[Any, Any],
        text: Annotated[
            str | None, Field(max_length=100_000, description="One turn of free text (or use `turns`).")
        ] = None,
        turns: Annotated[
            list[TurnInput] | None, Field(max_length=1000, description="Several turns, in order.")
        ] = None,
        session_id: Annotated[
            str, Field(min_length=1, max_length=256, description="Conversation the turns belong to.")
        ] = DEFAULT_SESSION,
        role: Annotated[RoleName, Field(description="Role for `text`.")] = "user",
        speaker: Annotated[str, Field(max_length=200, description="Speaker of `text`.")] = "",
        time: Annotated[
            datetime | None, Field(description="When `text` happened (ISO 8601); default now.")
        ] = None,
        tags: TagsArg = None,
        importance: ImportanceArg = None,
        source: Annotated[SourceName | None, Field(description="Origin of `text`.")] = None,
        id: Annotated[
            str | None, Field(max_length=256, description="Stable id of `text`; a repeat is a no-op.")
        ] = None,
        bank: BankArg = None,
        agent: WriterArg = None,
    ) -> RetainOutput:
        """Store what was said or done, so later recalls can find it. Give `text` for one turn or `turns`."""
        with _tool_errors():
            bank_id = access.bank(bank, ctx)
            if (text is None) == (turns is None):
                raise ToolError("give exactly one of `text` or `turns`")
            inputs = (
                turns
                if turns is not None
                else [
                    TurnInput(
                        text=text or "",
                        role=role,
                        speaker=speaker,
                        id=id,
                        time=time,
                        tags=tags,
                        importance=importance,
                        source=source,
                    )
                ]
            )
            field = "turns[{}]" if turns is not None else "text"
            writer = writing_agent(access.caller(), agent or "")
            result = await engine.retain(
                bank_id,
                [_to_turn(i, session_id, field.format(n), writer) for n, i in enumerate(inputs)],
                front="mcp",
                actor=access.caller().name,
            )
        return RetainOutput.model_validate(result, from_attributes=True)

    @server.tool(annotations=_hints("List recent memories", read_only=True, idempotent=True))
    async def list_recent(
        ctx: Context[Any, Any],
        limit: Annotated[
            int, Field(strict=True, ge=1, le=MAX_LIST, description="How many turns."), AS_INT
        ] = 20,
        session_id: Annotated[str, Field(max_length=256, description="Only this session; default all.")] = "",
        tags: TagsArg = None,
        include_archived: Annotated[
            bool, Field(strict=True, description="Include forgotten and replaced turns."), AS_BOOL
        ] = False,
        page_token: Annotated[str, Field(max_length=1000, description="From the previous page.")] = "",
        bank: BankArg = None,
        agent: Annotated[str, Field(max_length=256, description="Only turns this agent wrote.")] = "",
    ) -> ListRecentOutput:
        """The newest stored turns, newest first (what was said lately, with ids to update or forget)."""
        with _tool_errors():
            reply = await engine.list_recent(
                access.bank(bank, ctx),
                limit=limit,
                session_id=session_id,
                tags=check_tags(list(tags or ())),
                include_archived=include_archived,
                page_token=page_token,
                agent=check_agent(agent),
            )
        return ListRecentOutput(
            turns=[_turn_output(t) for t in reply.turns], next_page_token=reply.next_page_token
        )

    @server.tool(annotations=_hints("Update a memory"))
    async def update(
        ctx: Context[Any, Any],
        turn_id: Annotated[str, Field(min_length=1, max_length=256, description="The turn to replace.")],
        text: Annotated[
            str | None, Field(min_length=1, max_length=100_000, description="New text; default unchanged.")
        ] = None,
        tags: TagsArg = None,
        importance: ImportanceArg = None,
        bank: BankArg = None,
        agent: WriterArg = None,
    ) -> UpdateOutput:
        """Correct a stored turn: the new version gets a new id and the old one is archived (recoverable)."""
        with _tool_errors():
            bank_id = access.bank(bank, ctx)
            if text is None and tags is None and importance is None:
                raise ToolError("give at least one of `text`, `tags` or `importance`")
            meta = None
            if tags is not None or importance is not None:
                old = await _current_turn(engine, bank_id, turn_id)
                current = RecordMeta.from_pb(old.meta)
                meta = RecordMeta(
                    source_turn_ids=current.source_turn_ids,
                    source=current.source,
                    trust=current.trust,
                    time=current.time,
                    tags=check_tags(list(tags)) if tags is not None else current.tags,
                    importance=importance if importance is not None else current.importance,
                ).to_pb()
            new, superseded, indexed = await engine.update(
                bank_id,
                turn_id,
                text=check_text(text, "text") if text else "",
                meta=meta,
                actor=access.caller().name,
                agent=writing_agent(access.caller(), agent or ""),
            )
        return UpdateOutput(turn=_turn_output(new), superseded_id=superseded, indexed=indexed)


async def _current_turn(engine: MemoryEngine, bank_id: str, turn_id: str) -> common_pb2.Turn:
    """The stored turn ``turn_id`` (to keep the metadata an update does not change)."""
    found = await engine.get_turn(bank_id, turn_id)
    if found is None:
        raise ToolError(f"turn_id: no turn {turn_id!r} in bank {bank_id!r}")
    return found


def _to_turn(item: TurnInput, session_id: str, field: str, agent: str = "") -> Turn:
    """A validated domain turn from a tool argument, written by ``agent``."""
    role = role_from_name(item.role, f"{field}.role")
    source = source_from_name(item.source, f"{field}.source") if item.source else DEFAULT_SOURCE[role]
    turn_id = item.id or uuid.uuid4().hex
    meta = RecordMeta(
        source_turn_ids=(turn_id,),
        source=source,
        trust=DEFAULT_TRUST[source],
        time=as_utc(item.time) or utcnow(),
        tags=check_tags(list(item.tags or ()), f"{field}.tags"),
        importance=item.importance or 0.0,
        agent=agent,
    )
    check_text(item.text, f"{field}.text")
    return Turn(id=turn_id, session_id=session_id, text=item.text, role=role, speaker=item.speaker, meta=meta)
