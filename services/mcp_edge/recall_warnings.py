"""Recall warnings: the held-back turns of the banks' review queues that relate to the query, asked beside
the layers and never failing a recall. A mixin of :class:`~hindsight.mcp_edge.engine.MemoryEngine`, used by
:mod:`~hindsight.mcp_edge.engine_recall`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import grpc

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.mcp_edge.consensus import defang
from hindsight.mcp_edge.domain import RecallQuery, RecallWarning
from hindsight.mcp_edge.engine_base import EngineBase, describe, log
from hindsight.mcp_edge.screen_instructions import instruction_cues
from hindsight.runtime.records import RecordMeta, from_timestamp
from hindsight.runtime.rewrites import Phrasings


def _warning(turn: common_pb2.Turn) -> RecallWarning:
    """A held-back turn as a warning: what screening finds in it again, and a defanged excerpt."""
    meta = RecordMeta.from_pb(turn.meta)
    cues = instruction_cues(turn.text)
    kind, reason = (cues[0].kind, cues[0].reason) if cues else ("quarantined", "held back by screening")
    return RecallWarning(
        id=turn.id,
        kind=kind,
        reason=f"held back ({meta.source.value} content): {reason}",
        excerpt=defang(turn.text),
        time=from_timestamp(turn.meta.time) if turn.meta.HasField("time") else None,
    )


class RecallWarnings(EngineBase):
    """Warnings of held-back turns, known to be none without a call where a bank holds none."""

    def _warnings_task(
        self, q: RecallQuery, queries: Sequence[str], timeout: float
    ) -> asyncio.Task[list[RecallWarning]] | None:
        """Episodic memory's held-back turns related to the query, asked beside the layers (one call)."""
        if not self.settings.defences or self.settings.warnings_limit <= 0:
            return None
        phrasings = Phrasings.distinct(queries[0], queries[1:], self.settings.rewrite_weight)

        async def ask(bank_id: str) -> list[RecallWarning]:
            if not await self._may_hold(bank_id, timeout):
                return []
            request = episodic_pb2.SearchTurnsRequest(
                bank_id=bank_id,
                **phrasings.request_fields(),
                limit=self.settings.warnings_limit,
                quarantined_only=True,  # the review queue takes no filters: warnings are about its words
            )
            reply = await self.clients.episodic.call("SearchTurns", request, timeout)
            return [_warning(hit.turn) for hit in reply.hits][: self.settings.warnings_limit]

        async def ask_all() -> list[RecallWarning]:
            """Each bank's review queue (one at a time in episodic memory; most banks hold none, known
            without a call), the first warnings of the banks in order."""
            found = await asyncio.gather(*(ask(bank) for bank in q.banks))
            return [w for warnings in found for w in warnings][: self.settings.warnings_limit]

        return asyncio.create_task(ask(q.bank_id) if not q.bank_ids else ask_all())

    async def _may_hold(self, bank_id: str, timeout: float) -> bool:
        """Whether the bank's review queue has any turn (one page of one entry, when not known lately)."""
        known = self.held_banks.known(bank_id)
        if known is not None:
            return known
        page = await self.clients.episodic.call(
            "ListQuarantined",
            episodic_pb2.ListQuarantinedRequest(bank_id=bank_id, status="all", limit=1),
            timeout,
        )
        self.held_banks.note(bank_id, bool(page.items))
        return bool(page.items)

    @staticmethod
    def _warnings_of(
        task: asyncio.Task[list[RecallWarning]] | None, done: set[asyncio.Task[Any]]
    ) -> list[RecallWarning]:
        """The warnings, or none when the search failed or was late (warnings never fail a recall)."""
        if task is None or task not in done:
            return []
        exc = task.exception()
        if exc is not None:
            level = logging.DEBUG
            if not isinstance(exc, grpc.aio.AioRpcError) or exc.code() is not grpc.StatusCode.UNIMPLEMENTED:
                level = logging.WARNING
            log.log(level, "recall warnings skipped", extra={"error": describe(exc)})
            return []
        return task.result()
