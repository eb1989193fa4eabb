"""The MCP tool ``share``: copy memories into a team bank (see :mod:`.share`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

from hindsight.mcp_edge.coerce import SPLIT_COMMAS
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.mcp_edge.share import MAX_SHARE_IDS, check_share, share_memories
from hindsight.mcp_edge.tools.access import BankArg, ToolContext, _hints, _tool_errors
from hindsight.mcp_edge.tools.derived import output_model
from hindsight.runtime.errors import PermissionDenied
from hindsight.runtime.results import SharedMemory

if TYPE_CHECKING:  # derived from the record at import time (see .tools.derived)
    SharedOutput = BaseModel
else:
    SharedOutput = output_model(SharedMemory, "SharedOutput")


class ShareOutput(BaseModel):
    to_bank: str
    shared: list[SharedOutput]
    indexed: bool = Field(description="Whether the copies were searchable by meaning when the call returned.")


def register_share_tool(server: MCPServer, engine: MemoryEngine, access: ToolContext) -> None:
    """Add ``share`` to ``server``."""

    @server.tool(annotations=_hints("Share memories with a team", idempotent=True))
    async def share(
        ctx: Context[Any, Any],
        to_bank: Annotated[
            str, Field(min_length=1, max_length=128, description="The team bank to copy them into.")
        ],
        ids: Annotated[
            list[str],
            Field(
                min_length=1,
                max_length=MAX_SHARE_IDS,
                description="Ids as `recall` or `list_recent` return them: turns, episodes, facts, lessons.",
            ),
            SPLIT_COMMAS,
        ],
        bank: BankArg = None,
    ) -> ShareOutput:
        """Copy chosen memories from your bank into a team bank you may write, where teammates' recalls
        find them. Each copy records where it came from and who shared it; purging the original removes
        the copy unless the team bank has since updated it."""
        with _tool_errors():
            bank_id = access.bank(bank, ctx)  # `read` on the source bank
            caller = access.caller()
            try:
                target, wanted = check_share(caller, bank_id, to_bank, ids, "to_bank")
            except PermissionDenied as exc:
                access.deny(to_bank, "share", exc)
                raise
            result = await share_memories(engine, bank_id, target, wanted, caller.name, caller.name)
        shared = [SharedOutput.model_validate(m, from_attributes=True) for m in result.shared]
        return ShareOutput(to_bank=result.target_bank_id, shared=shared, indexed=result.indexed)
