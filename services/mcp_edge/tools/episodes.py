"""The tools of learning from finished work: ``write_episode`` records a task, ``reflect`` draws lessons."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.mcp_edge.agents import writing_agent
from hindsight.mcp_edge.coerce import AS_BOOL, SPLIT_COMMAS
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.mcp_edge.tools.access import (
    BankArg,
    ImportanceArg,
    TagsArg,
    ToolContext,
    WriterArg,
    _hints,
    _tool_errors,
)
from hindsight.mcp_edge.tools.outputs import EpisodeOutput, ReflectOutput, _lesson_outputs
from hindsight.runtime.records import RecordMeta, Source, utcnow
from hindsight.runtime.validation import check_tags


def register(server: MCPServer, engine: MemoryEngine, access: ToolContext) -> None:
    """Add ``write_episode`` and ``reflect`` to ``server``."""

    @server.tool(annotations=_hints("Write an episode"))
    async def write_episode(
        ctx: Context[Any, Any],
        situation: Annotated[str, Field(min_length=1, max_length=10_000, description="The situation faced.")],
        action: Annotated[str, Field(min_length=1, max_length=10_000, description="What was done.")],
        outcome: Annotated[str, Field(max_length=10_000, description="What came of it.")] = "",
        lesson: Annotated[str, Field(max_length=10_000, description="A lesson already drawn, if any.")] = "",
        success: Annotated[
            bool | None, Field(strict=True, description="Whether the task succeeded."), AS_BOOL
        ] = None,
        task_type: Annotated[str, Field(max_length=200, description="Kind of task, e.g. 'deploy'.")] = "",
        tools: Annotated[
            list[str] | None, Field(max_length=64, description="Tools used."), SPLIT_COMMAS
        ] = None,
        tags: TagsArg = None,
        importance: ImportanceArg = None,
        session_id: Annotated[str, Field(max_length=256, description="Session it happened in.")] = "",
        bank: BankArg = None,
        agent: WriterArg = None,
    ) -> EpisodeOutput:
        """Record what happened in a finished task (situation, action, outcome, lesson) for reflection."""
        with _tool_errors():
            bank_id = access.bank(bank, ctx)
            result = {
                None: episodic_pb2.OUTCOME_UNSPECIFIED,
                True: episodic_pb2.OUTCOME_SUCCESS,
                False: episodic_pb2.OUTCOME_FAILURE,
            }[success]
            meta = RecordMeta(
                source=Source.AGENT,
                time=utcnow(),
                tags=check_tags(list(tags or ())),
                importance=importance or 0.0,
                agent=writing_agent(access.caller(), agent or ""),
            )
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
        return EpisodeOutput(episode_id=stored.id)

    @server.tool(annotations=_hints("Reflect on finished work", idempotent=True))
    async def reflect(
        ctx: Context[Any, Any],
        session_id: Annotated[
            str, Field(max_length=256, description="Only this task's session; default every episode.")
        ] = "",
        bank: BankArg = None,
    ) -> ReflectOutput:
        """Draw lessons from finished episodes, so the next similar task starts wiser."""
        with _tool_errors():
            reply = await engine.reflect(access.bank(bank, ctx), session_id)
        return ReflectOutput(lessons=_lesson_outputs(reply.lessons), episodes_read=reply.episodes_read)
