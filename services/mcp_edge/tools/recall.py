"""The tool ``recall``: one query across working, episodic, semantic and reflective memory, over one bank or
several at once."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from hindsight.mcp_edge.agents import check_agent
from hindsight.mcp_edge.banks import MAX_BANK_WEIGHT, check_weights
from hindsight.mcp_edge.coerce import AS_BOOL, AS_FLOAT, AS_INT, SPLIT_COMMAS
from hindsight.mcp_edge.domain import ALL_LAYERS, LayerName, RecallQuery
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.mcp_edge.servicer import MAX_TOP_K
from hindsight.mcp_edge.tools.access import (
    BankArg,
    LayerChoice,
    OrderName,
    TagsArg,
    ToolContext,
    _hints,
    _tool_errors,
    _window,
)
from hindsight.mcp_edge.tools.recall_output import RecallOutput, recall_output
from hindsight.runtime.banks import MAX_BANKS
from hindsight.runtime.records import as_utc
from hindsight.runtime.timeexpr import checked_time_zone
from hindsight.runtime.validation import check_tags, check_text


def register(server: MCPServer, engine: MemoryEngine, access: ToolContext) -> None:
    """Add ``recall`` to ``server``."""

    @server.tool(annotations=_hints("Recall memories", read_only=True, idempotent=True))
    async def recall(
        ctx: Context[Any, Any],
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=10_000,
                description="What you need to remember; time words ('last Tuesday', '上周三') count.",
            ),
        ],
        top_k: Annotated[
            int, Field(strict=True, ge=1, le=MAX_TOP_K, description="How many memories to return."), AS_INT
        ] = 10,
        min_score: Annotated[
            float,
            Field(
                strict=True,
                ge=0,
                le=1,
                description="Drop memories less relevant than this (0 to 1); the default floor applies too.",
            ),
            AS_FLOAT,
        ] = 0.0,
        layers: Annotated[
            list[LayerChoice] | None,
            Field(max_length=4, description="Only these layers; default all."),
            SPLIT_COMMAS,
        ] = None,
        since: Annotated[datetime | None, Field(description="Only memories from this time on.")] = None,
        until: Annotated[datetime | None, Field(description="Only memories before this time.")] = None,
        tags: TagsArg = None,
        token_budget: Annotated[
            int,
            Field(
                strict=True,
                ge=0,
                le=200_000,
                description="Most tokens of `context`; 0: the server's default.",
            ),
            AS_INT,
        ] = 0,
        order: Annotated[
            OrderName | None,
            Field(
                description="Order inside each context section: score, importance, time_asc, time_desc, or "
                "mix (the most important, then in time order); default the server's."
            ),
        ] = None,
        session_id: Annotated[str | None, Field(max_length=256, description="Prefer this session.")] = None,
        now: Annotated[
            datetime | None,
            Field(description="'Now' for time words in the query and for recency; default the current time."),
        ] = None,
        time_zone: Annotated[
            str | None,
            Field(
                max_length=64,
                description="IANA time zone the query's time words are read in (e.g. 'Asia/Shanghai'); "
                "default the server's.",
            ),
        ] = None,
        as_of: Annotated[
            datetime | None,
            Field(
                description="ISO 8601 time: recall the state as it was then (only what was said by then, "
                "values as they held then); default now."
            ),
        ] = None,
        bank: BankArg = None,
        banks: Annotated[
            list[str] | None,
            Field(
                min_length=1,
                max_length=MAX_BANKS,
                description="Recall over several banks at once (e.g. your own and your team's) instead of "
                "`bank`: one ranking, each memory naming its bank. Every bank must be granted, or the call "
                "is refused.",
            ),
            SPLIT_COMMAS,
        ] = None,
        bank_weights: Annotated[
            dict[str, Annotated[float, Field(ge=0, le=MAX_BANK_WEIGHT)]] | None,
            Field(description="With `banks`: a factor (0 to 10, default 1) on each named bank's memories."),
        ] = None,
        group_by_bank: Annotated[
            bool, Field(strict=True, description="With `banks`: the context grouped by bank."), AS_BOOL
        ] = False,
        agent: Annotated[
            str | None, Field(max_length=256, description="Only memories this agent wrote.")
        ] = None,
    ) -> RecallOutput:
        """Find what is relevant now across working, episodic, semantic and reflective memory."""
        with _tool_errors():
            several = access.banks(bank, banks)
            bank_id = "" if several else access.bank(bank, ctx)
            chosen = tuple(dict.fromkeys(LayerName(name) for name in layers)) if layers else ALL_LAYERS
            result = await engine.recall(
                RecallQuery(
                    bank_id=bank_id,
                    bank_ids=several,
                    bank_weights=check_weights(bank_weights or {}, several or (bank_id,), "bank_weights"),
                    group_by_bank=group_by_bank,
                    agent=check_agent(agent or ""),
                    query=check_text(query, "query"),
                    top_k=top_k,
                    layers=chosen,
                    time_range=_window(since, until),
                    session_id=session_id or "",
                    min_score=min_score,
                    tags=check_tags(list(tags or ())),
                    token_budget=token_budget,
                    order=order or "",
                    reference_time=as_utc(now),
                    time_zone=checked_time_zone(time_zone or ""),
                    as_of=as_utc(as_of),
                )
            )
        return recall_output(result)
