"""Reads that pass through to one layer: the newest turns, one turn, the admin's listing of a bank, and the
semantic layer's entity pages. A mixin of :class:`~hindsight.mcp_edge.engine.MemoryEngine` (see
:mod:`~hindsight.mcp_edge.engine_base` for why mixins).
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Sequence

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.mcp_edge.engine_base import EngineBase, log
from hindsight.runtime.errors import InvalidArgument, PermissionDenied


class Reads(EngineBase):
    """Turns and entity pages as the layers hold them, unchanged."""

    async def list_recent(
        self,
        bank_id: str,
        limit: int = 20,
        session_id: str = "",
        tags: Sequence[str] = (),
        include_archived: bool = False,
        page_token: str = "",
        agent: str = "",
    ) -> episodic_pb2.ListTurnsResponse:
        """The newest turns of a bank (or one session, or one agent's), newest first, from episodic memory."""
        return await self.clients.episodic.call(
            "ListTurns",
            episodic_pb2.ListTurnsRequest(
                bank_id=bank_id,
                page_size=limit,
                page_token=page_token,
                newest_first=True,
                filter=episodic_pb2.TurnFilter(
                    session_id=session_id, tags=list(tags), include_archived=include_archived, agent=agent
                ),
            ),
            self.settings.write_timeout,
        )

    async def get_turn(self, bank_id: str, turn_id: str) -> common_pb2.Turn | None:
        """A stored turn by id (live or archived), or None when the bank has none with that id."""
        reply = await self.clients.episodic.call(
            "GetTurns",
            episodic_pb2.GetTurnsRequest(bank_id=bank_id, turn_ids=[turn_id]),
            self.settings.write_timeout,
        )
        return reply.turns[0] if reply.turns else None

    async def debug_list(
        self, bank_id: str, admin_token: str | None, limit: int = 100, page_token: str = ""
    ) -> tuple[list[common_pb2.Turn], list[episodic_pb2.Episode], str]:
        """Every turn (archived too, newest first) and episode of a bank; only with the admin token."""
        expected = self.settings.admin_token
        if not expected or not admin_token or not hmac.compare_digest(expected, admin_token):
            raise PermissionDenied("the debug listing needs the admin token")
        timeout = self.settings.write_timeout
        turns, episodes = await asyncio.gather(
            self.clients.episodic.call(
                "ListTurns",
                episodic_pb2.ListTurnsRequest(
                    bank_id=bank_id,
                    page_size=limit,
                    page_token=page_token,
                    newest_first=True,
                    filter=episodic_pb2.TurnFilter(include_archived=True),
                ),
                timeout,
            ),
            self.clients.episodic.call(
                "ListEpisodes", episodic_pb2.ListEpisodesRequest(bank_id=bank_id, page_size=limit), timeout
            ),
        )
        log.info("debug listing", extra={"bank": bank_id, "turns": len(turns.turns)})
        return list(turns.turns), list(episodes.episodes), turns.next_page_token

    # ----- entity pages -------------------------------------------------------------------------------
    async def list_entities(
        self, bank_id: str, entity_type: str = "", prefix: str = "", limit: int = 50, page_token: str = ""
    ) -> semantic_pb2.ListEntitiesResponse:
        """One page of the bank's entities by name, from the semantic layer's entity pages."""
        return await self.clients.semantic.call(
            "ListEntities",
            semantic_pb2.ListEntitiesRequest(
                bank_id=bank_id, type=entity_type, prefix=prefix, limit=limit, page_token=page_token
            ),
            self.settings.write_timeout,
        )

    async def entity_page(
        self, bank_id: str, entity: str, mention_limit: int = 20, page_token: str = ""
    ) -> semantic_pb2.GetEntityPageResponse:
        """What is known about one entity and the turns that mention it (NOT_FOUND for an unknown one)."""
        if not entity.strip():
            raise InvalidArgument("entity", "is required")
        return await self.clients.semantic.call(
            "GetEntityPage",
            semantic_pb2.GetEntityPageRequest(
                bank_id=bank_id, entity=entity, mention_limit=mention_limit, page_token=page_token
            ),
            self.settings.write_timeout,
        )
