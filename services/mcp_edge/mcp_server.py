"""The MCP server agents talk to: tools over the same engine as the gRPC MemoryService.

Tool arguments are typed, so the SDK publishes strict JSON schemas with limits and descriptions.
Errors the caller can fix come back as tool errors naming the field; the server never crashes on
bad input. Over HTTP, a bearer token must grant the bank a call names.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.reflect.v1 import reflect_pb2
from hindsight.mcp_edge.domain import ALL_LAYERS, LayerName, RecallQuery
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.mcp_edge.servicer import DEFAULT_SESSION, MAX_TOP_K
from hindsight.runtime.auth import Grants, bearer
from hindsight.runtime.errors import HindsightError
from hindsight.runtime.records import (
    DEFAULT_SOURCE,
    DEFAULT_TRUST,
    RecordMeta,
    Source,
    TimeRange,
    Turn,
    as_utc,
    role_from_name,
    source_from_name,
    utcnow,
)
from hindsight.runtime.validation import check_bank_id, check_text

log = logging.getLogger(__name__)

RoleName = Literal["user", "assistant", "tool", "system"]
SourceName = Literal["user", "agent", "tool", "external"]
LayerChoice = Literal["working", "episodic", "semantic", "reflect"]
BankArg = Annotated[
    str | None, Field(description="Memory bank; omitted means the server's default bank.", max_length=128)
]


class TurnInput(BaseModel):
    """One turn to retain."""

    text: Annotated[str, Field(min_length=1, max_length=100_000, description="What was said or done.")]
    role: Annotated[RoleName, Field(description="Who spoke.")] = "user"
    speaker: Annotated[str, Field(max_length=200, description="Speaker's name, when known.")] = ""
    id: Annotated[
        str | None, Field(max_length=256, description="Stable id; retaining it again is a no-op.")
    ] = None
    time: Annotated[datetime | None, Field(description="When it happened (ISO 8601); default now.")] = None
    tags: Annotated[list[str] | None, Field(max_length=32, description="Labels for filtering.")] = None
    importance: Annotated[float | None, Field(ge=0, le=1, description="0 to 1; default by rule.")] = None
    source: Annotated[SourceName | None, Field(description="Origin; default from the role.")] = None


class RetainOutput(BaseModel):
    """What was stored."""

    turn_ids: list[str]
    duplicate_count: int
    indexed: bool = Field(description="False when recall by meaning will see these turns only later.")


class MemoryOutput(BaseModel):
    """One recalled memory."""

    id: str
    text: str
    speaker: str
    score: float
    layers: list[LayerChoice]
    kind: str
    time: datetime | None
    source: SourceName
    source_turn_ids: list[str]
    tags: list[str]


class LayerReportOutput(BaseModel):
    """How one layer answered."""

    layer: LayerChoice
    ok: bool
    elapsed_ms: float
    candidates: int
    error: str = ""


class RecallOutput(BaseModel):
    """Fused memories, best first."""

    memories: list[MemoryOutput]
    partial: bool = Field(description="True when a layer failed or was late; the named layers are missing.")
    layers: list[LayerReportOutput]


class LessonOutput(BaseModel):
    """A lesson drawn from finished work."""

    id: str
    situation: str
    lesson: str
    confidence: float
    source_episode_ids: list[str]


class ReflectOutput(BaseModel):
    """Lessons written by a reflection."""

    lessons: list[LessonOutput]
    episodes_read: int


class ForgetOutput(BaseModel):
    """What a forget removed."""

    forgotten_count: int
    unindexed_count: int
    working_removed_count: int


class CompressOutput(BaseModel):
    """What a compression of working memory did."""

    group_count: int = Field(description="Summaries written (each replaces 5 to 8 of the oldest turns).")
    summarised_turn_count: int
    tokens_before: int
    tokens_after: int
    summariser: str


class CloseSessionOutput(BaseModel):
    """What closing a session did."""

    closed: bool = Field(description="False when working memory held nothing for the session.")
    turn_count: int
    summary_count: int
    token_count: int
    reflected: bool = Field(description="Whether the reflection that closing triggers succeeded.")
    reflect_error: str = ""
    lessons: list[LessonOutput]
    episodes_read: int


class ToolContext:
    """Resolves the bank of a tool call and checks that the caller may use it."""

    def __init__(self, grants: Grants, default_bank: str) -> None:
        self.grants = grants
        self.default_bank = default_bank

    def bank(self, requested: str | None, ctx: Context[Any, Any] | None) -> str:
        """The bank to use, after checking the HTTP bearer token (stdio is the local user's own)."""
        bank_id = check_bank_id(requested or self.default_bank, "bank")
        headers = ctx.headers if ctx is not None else None
        if headers is not None:
            self.grants.check(bearer(headers.get("authorization")), bank_id)
        return bank_id


def _hints(
    title: str, *, read_only: bool = False, destructive: bool = False, idempotent: bool = False
) -> ToolAnnotations:
    """A tool's annotations; every tool stays inside the memory service, so none is open-world."""
    return ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


def _lesson_outputs(lessons: Iterable[reflect_pb2.Lesson]) -> list[LessonOutput]:
    """Lessons as tools return them."""
    return [
        LessonOutput(
            id=item.id,
            situation=item.situation,
            lesson=item.lesson,
            confidence=round(item.confidence, 3),
            source_episode_ids=list(item.source_episode_ids),
        )
        for item in lessons
    ]


def _tool_error(exc: HindsightError) -> ToolError:
    return ToolError(str(exc))


def build_mcp_server(engine: MemoryEngine, grants: Grants, default_bank: str) -> MCPServer:
    """An MCP server whose tools run on ``engine``. The caller owns the engine's lifetime."""
    server: MCPServer = MCPServer(
        "hindsight",
        title="Hindsight memory",
        instructions=(
            "Layered memory. Call `recall` before answering anything that may depend on earlier "
            "conversations, corrections or past work; call `retain` with what the user said and what "
            "you did; call `write_episode` when a task ends and `reflect` to learn from it."
        ),
    )
    access = ToolContext(grants, default_bank)

    @server.tool(annotations=_hints("Retain memories", idempotent=True))
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
        tags: Annotated[list[str] | None, Field(max_length=32, description="Labels for `text`.")] = None,
        importance: Annotated[float | None, Field(ge=0, le=1, description="0 to 1 for `text`.")] = None,
        source: Annotated[SourceName | None, Field(description="Origin of `text`.")] = None,
        bank: BankArg = None,
    ) -> RetainOutput:
        """Store what was said or done, so later recalls can find it. Give `text` for one turn or `turns`."""
        try:
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
                        tags=tags,
                        importance=importance,
                        source=source,
                    )
                ]
            )
            result = await engine.retain(
                bank_id, [_to_turn(i, session_id, f"turns[{n}]") for n, i in enumerate(inputs)]
            )
        except HindsightError as exc:
            raise _tool_error(exc) from exc
        return RetainOutput(
            turn_ids=list(result.turn_ids), duplicate_count=result.duplicate_count, indexed=result.indexed
        )

    @server.tool(annotations=_hints("Recall memories", read_only=True, idempotent=True))
    async def recall(
        ctx: Context[Any, Any],
        query: Annotated[
            str, Field(min_length=1, max_length=10_000, description="What you need to remember.")
        ],
        top_k: Annotated[int, Field(ge=1, le=MAX_TOP_K, description="How many memories to return.")] = 10,
        layers: Annotated[
            list[LayerChoice] | None, Field(description="Only these layers; default all.")
        ] = None,
        since: Annotated[datetime | None, Field(description="Only memories from this time on.")] = None,
        until: Annotated[datetime | None, Field(description="Only memories before this time.")] = None,
        session_id: Annotated[str | None, Field(max_length=256, description="Prefer this session.")] = None,
        bank: BankArg = None,
    ) -> RecallOutput:
        """Find what is relevant now across working, episodic, semantic and reflective memory."""
        try:
            bank_id = access.bank(bank, ctx)
            window = TimeRange(as_utc(since), as_utc(until))
            if since and until and since >= until:
                raise ToolError("`since` must be before `until`")
            chosen = tuple(dict.fromkeys(LayerName(name) for name in layers)) if layers else ALL_LAYERS
            result = await engine.recall(
                RecallQuery(
                    bank_id=bank_id,
                    query=check_text(query, "query"),
                    top_k=top_k,
                    layers=chosen,
                    time_range=window,
                    session_id=session_id or "",
                )
            )
        except HindsightError as exc:
            raise _tool_error(exc) from exc
        return RecallOutput(
            memories=[
                MemoryOutput(
                    id=m.id,
                    text=m.text,
                    speaker=m.speaker,
                    score=round(m.score, 6),
                    layers=[layer.value for layer in m.layers],
                    kind=m.kind,
                    time=m.meta.time,
                    source=m.meta.source.value,
                    source_turn_ids=list(m.meta.source_turn_ids),
                    tags=list(m.meta.tags),
                )
                for m in result.memories
            ],
            partial=result.partial,
            layers=[
                LayerReportOutput(
                    layer=o.layer.value,
                    ok=o.ok,
                    elapsed_ms=round(o.elapsed_ms, 2),
                    candidates=len(o.candidates),
                    error=o.error,
                )
                for o in result.outcomes
            ],
        )

    @server.tool(annotations=_hints("Write an episode"))
    async def write_episode(
        ctx: Context[Any, Any],
        situation: Annotated[str, Field(min_length=1, max_length=10_000, description="The situation faced.")],
        action: Annotated[str, Field(min_length=1, max_length=10_000, description="What was done.")],
        outcome: Annotated[str, Field(max_length=10_000, description="What came of it.")] = "",
        lesson: Annotated[str, Field(max_length=10_000, description="A lesson already drawn, if any.")] = "",
        success: Annotated[bool | None, Field(description="Whether the task succeeded.")] = None,
        task_type: Annotated[str, Field(max_length=200, description="Kind of task, e.g. 'deploy'.")] = "",
        tools: Annotated[list[str] | None, Field(max_length=64, description="Tools used.")] = None,
        tags: Annotated[list[str] | None, Field(max_length=32, description="Labels.")] = None,
        session_id: Annotated[str, Field(max_length=256, description="Session it happened in.")] = "",
        bank: BankArg = None,
    ) -> dict[str, str]:
        """Record what happened in a finished task (situation, action, outcome, lesson) for reflection."""
        try:
            bank_id = access.bank(bank, ctx)
            result = {
                None: episodic_pb2.OUTCOME_UNSPECIFIED,
                True: episodic_pb2.OUTCOME_SUCCESS,
                False: episodic_pb2.OUTCOME_FAILURE,
            }[success]
            meta = RecordMeta(source=Source.AGENT, time=utcnow(), tags=tuple(tags or ()))
            stored = await engine.write_episode(
                bank_id,
                episodic_pb2.Episode(
                    session_id=session_id,
                    situation=situation,
                    action=action,
                    outcome=outcome,
                    lesson=lesson,
                    task_type=task_type,
                    tools=tools or [],
                    result=result,
                    meta=meta.to_pb(),
                ),
            )
        except HindsightError as exc:
            raise _tool_error(exc) from exc
        return {"episode_id": stored.id}

    @server.tool(annotations=_hints("Reflect on finished work", idempotent=True))
    async def reflect(
        ctx: Context[Any, Any],
        session_id: Annotated[str, Field(max_length=256, description="Only this session; default all.")] = "",
        bank: BankArg = None,
    ) -> ReflectOutput:
        """Draw lessons from finished episodes, so the next similar task starts wiser."""
        try:
            reply = await engine.reflect(access.bank(bank, ctx), session_id)
        except HindsightError as exc:
            raise _tool_error(exc) from exc
        return ReflectOutput(
            lessons=_lesson_outputs(reply.lessons),
            episodes_read=reply.episodes_read,
        )

    @server.tool(annotations=_hints("Forget turns", destructive=True, idempotent=True))
    async def forget(
        ctx: Context[Any, Any],
        turn_ids: Annotated[list[str], Field(min_length=1, max_length=1000, description="Turns to forget.")],
        hard: Annotated[bool, Field(description="Delete for good (privacy) instead of archiving.")] = False,
        bank: BankArg = None,
    ) -> ForgetOutput:
        """Archive turns (recoverable) or, with `hard`, delete them and everything indexed from them."""
        try:
            result = await engine.forget(access.bank(bank, ctx), turn_ids, hard=hard)
        except HindsightError as exc:
            raise _tool_error(exc) from exc
        return ForgetOutput(
            forgotten_count=result.forgotten_count,
            unindexed_count=result.unindexed_count,
            working_removed_count=result.working_removed_count,
        )

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
        try:
            reply = await engine.compress(access.bank(bank, ctx), session_id)
        except HindsightError as exc:
            raise _tool_error(exc) from exc
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
        try:
            result = await engine.close_session(access.bank(bank, ctx), session_id)
        except HindsightError as exc:
            raise _tool_error(exc) from exc
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

    return server


def _to_turn(item: TurnInput, session_id: str, field: str) -> Turn:
    """A validated domain turn from a tool argument."""
    role = role_from_name(item.role, f"{field}.role")
    source = source_from_name(item.source, f"{field}.source") if item.source else DEFAULT_SOURCE[role]
    turn_id = item.id or uuid.uuid4().hex
    meta = RecordMeta(
        source_turn_ids=(turn_id,),
        source=source,
        trust=DEFAULT_TRUST[source],
        time=as_utc(item.time) or utcnow(),
        tags=tuple(dict.fromkeys(t.strip() for t in item.tags or () if t.strip())),
        importance=item.importance or 0.0,
    )
    check_text(item.text, f"{field}.text")
    return Turn(id=turn_id, session_id=session_id, text=item.text, role=role, speaker=item.speaker, meta=meta)
