"""Access notes: what a recall returned, told to episodic memory (hit counts) without waiting, bounded so a
slow or unreachable episodic layer never piles up tasks in the edge. A mixin of
:class:`~hindsight.mcp_edge.engine.MemoryEngine`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.mcp_edge.domain import RecalledMemory
from hindsight.mcp_edge.engine_base import EngineBase, describe, log
from hindsight.runtime.background import spawn

MAX_ACCESS_NOTES_IN_FLIGHT = 256
"""Access notes (hit counts, best effort) sent and not yet answered at most; further ones are dropped and
counted, so a slow or unreachable episodic layer never piles up tasks in the edge."""
ACCESS_DROP_LOG_SECONDS = 10.0
"""At most one warning about dropped access notes this often."""


class AccessNotes(EngineBase):
    """Best-effort hit counts, sent in the background."""

    _access_drops_logged_at: float
    """When dropped access notes were last logged (monotonic clock; set by the base)."""

    def _note_access(self, bank_id: str, memories: Sequence[RecalledMemory]) -> None:
        """Tell episodic memory what this recall returned (hit counts), without waiting for it."""
        if not self.settings.record_access or not memories:
            return
        request = episodic_pb2.RecordAccessRequest(
            bank_id=bank_id,
            records=[episodic_pb2.AccessedRecord(id=m.id, layer=m.layer.value) for m in memories],
        )

        async def send() -> None:
            try:
                await self.clients.episodic.call("RecordAccess", request, self.settings.write_timeout)
            except Exception as exc:  # counting hits is best effort; recall already answered
                log.debug("record access not noted", extra={"error": describe(exc)})

        if len(self._background) >= MAX_ACCESS_NOTES_IN_FLIGHT:
            self.access_notes_dropped += 1
            if time.monotonic() - self._access_drops_logged_at >= ACCESS_DROP_LOG_SECONDS:
                self._access_drops_logged_at = time.monotonic()
                log.warning(
                    "access notes dropped: too many in flight",
                    extra={"dropped_total": self.access_notes_dropped, "in_flight": len(self._background)},
                )
            return
        spawn(send(), name="record-access", timeout=self.settings.write_timeout, keep=self._background)
