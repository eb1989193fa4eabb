"""The review queue and the audit log (admin; the fronts check the caller): held-back turns are listed and
decided, and every decision is audited by episodic memory. A mixin of
:class:`~hindsight.mcp_edge.engine.MemoryEngine`.
"""

from __future__ import annotations

from collections.abc import Sequence

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.mcp_edge.engine_base import EngineBase, log
from hindsight.runtime.interceptors import acting_as, actor_var


class Review(EngineBase):
    """Read and decide the review queue; read the audit log."""

    async def list_quarantine(
        self, bank_id: str, status: str = "", limit: int = 50, page_token: str = ""
    ) -> episodic_pb2.ListQuarantinedResponse:
        """A page of the bank's review queue (turns held back by screening, with the reason)."""
        return await self.clients.episodic.call(
            "ListQuarantined",
            episodic_pb2.ListQuarantinedRequest(
                bank_id=bank_id, status=status, limit=limit, page_token=page_token
            ),
            self.settings.write_timeout,
        )

    async def review_quarantine(
        self,
        bank_id: str,
        turn_ids: Sequence[str],
        decision: common_pb2.ReviewDecision,
        reviewer: str,
        note: str = "",
    ) -> episodic_pb2.ReviewQuarantinedResponse:
        """Approve (release into memory, indexed) or reject held turns; episodic memory audits each, naming
        ``reviewer`` (the front's authenticated caller, sent as whom the mesh call acts for)."""
        with acting_as(reviewer or actor_var.get()):
            reply = await self.clients.episodic.call(
                "ReviewQuarantined",
                episodic_pb2.ReviewQuarantinedRequest(
                    bank_id=bank_id, turn_ids=list(turn_ids), decision=decision, reviewer=reviewer, note=note
                ),
                self.settings.write_timeout,
            )
        log.info(
            "review",
            extra={"bank": bank_id, "approved": reply.approved_count, "rejected": reply.rejected_count},
        )
        return reply

    async def list_audit(self, request: episodic_pb2.ListAuditRequest) -> episodic_pb2.ListAuditResponse:
        """A page of the audit log, newest first."""
        return await self.clients.episodic.call("ListAudit", request, self.settings.write_timeout)
