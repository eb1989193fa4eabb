"""The tools that read the bank's entity pages: ``list_entities`` and ``entity_page`` (their outputs are
:mod:`hindsight.mcp_edge.entity_output`'s, shared with the entities resource)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from hindsight.mcp_edge.coerce import AS_INT
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.mcp_edge.entity_output import (
    EntityPageOutput,
    ListEntitiesOutput,
    entity_page_output,
    list_entities_output,
)
from hindsight.mcp_edge.servicer import MAX_LIST
from hindsight.mcp_edge.tools.access import BankArg, ToolContext, _hints, _tool_errors


def register(server: MCPServer, engine: MemoryEngine, access: ToolContext) -> None:
    """Add ``list_entities`` and ``entity_page`` to ``server``."""

    @server.tool(annotations=_hints("List entities", read_only=True, idempotent=True))
    async def list_entities(
        ctx: Context[Any, Any],
        type: Annotated[
            str, Field(max_length=100, description="Only this type: person, place, organisation, other.")
        ] = "",
        prefix: Annotated[
            str, Field(max_length=200, description="Only names (or aliases) starting with this.")
        ] = "",
        limit: Annotated[
            int, Field(strict=True, ge=1, le=MAX_LIST, description="How many entities."), AS_INT
        ] = 50,
        page_token: Annotated[str, Field(max_length=1000, description="From the previous page.")] = "",
        bank: BankArg = None,
    ) -> ListEntitiesOutput:
        """The people, places and things the bank's memories are about, by name, with how often and when
        they were mentioned and who or what comes up with them (read one with `entity_page`)."""
        with _tool_errors():
            reply = await engine.list_entities(
                access.bank(bank, ctx), entity_type=type, prefix=prefix, limit=limit, page_token=page_token
            )
        return list_entities_output(reply)

    @server.tool(annotations=_hints("Read an entity page", read_only=True, idempotent=True))
    async def entity_page(
        ctx: Context[Any, Any],
        entity: Annotated[
            str, Field(min_length=1, max_length=200, description="The entity's name or an alias.")
        ],
        mention_limit: Annotated[
            int, Field(strict=True, ge=1, le=MAX_LIST, description="How many mentioning turns."), AS_INT
        ] = 20,
        page_token: Annotated[str, Field(max_length=1000, description="From the previous page.")] = "",
        bank: BankArg = None,
    ) -> EntityPageOutput:
        """Everything known about one person, place or thing: its facts with their history (earlier values
        kept), related entities, and the turns that mention it, newest first, each with its id to cite."""
        with _tool_errors():
            reply = await engine.entity_page(
                access.bank(bank, ctx), entity, mention_limit=mention_limit, page_token=page_token
            )
        return entity_page_output(reply)
