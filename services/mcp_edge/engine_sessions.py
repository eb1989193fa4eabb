"""Episodes, reflection and sessions: writing an episode, drawing lessons from episodes, compressing and
closing a session's working memory (closing reflects). A mixin of
:class:`~hindsight.mcp_edge.engine.MemoryEngine`.
"""

from __future__ import annotations

import time

from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.reflect.v1 import reflect_pb2
from hindsight.contracts.working.v1 import working_pb2
from hindsight.mcp_edge.domain import CloseSessionResult
from hindsight.mcp_edge.engine_base import EngineBase, log
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.trust import check_written_tags


class Sessions(EngineBase):
    """Episodes and lessons, and the life of a session's working memory."""

    async def write_episode(self, bank_id: str, episode: episodic_pb2.Episode) -> episodic_pb2.Episode:
        """Record an episode for later reflection."""
        check_written_tags(list(episode.meta.tags), "episode.meta.tags")
        reply = await self.clients.episodic.call(
            "WriteEpisode",
            episodic_pb2.WriteEpisodeRequest(bank_id=bank_id, episode=episode),
            self.settings.write_timeout,
        )
        return reply.episode

    async def reflect(self, bank_id: str, session_id: str = "") -> reflect_pb2.ReflectResponse:
        """Draw lessons from the bank's (or one session's) episodes."""
        started = time.perf_counter()
        reply = await self.clients.reflect.call(
            "Reflect",
            reflect_pb2.ReflectRequest(bank_id=bank_id, session_id=session_id),
            self.settings.write_timeout,
        )
        log.info(
            "reflect",
            extra={
                "bank": bank_id,
                "session": session_id,
                "episodes_read": reply.episodes_read,
                "lessons": len(reply.lessons),
                "elapsed_ms": round((time.perf_counter() - started) * 1000, 1),
            },
        )
        return reply

    async def compress(self, bank_id: str, session_id: str) -> working_pb2.CompressResponse:
        """Summarise the oldest turns of a session's working memory (episodic memory keeps the turns)."""
        if not session_id:
            raise InvalidArgument("session_id", "is required")
        return await self.clients.working.call(
            "Compress",
            working_pb2.CompressRequest(bank_id=bank_id, session_id=session_id),
            self.settings.write_timeout,
        )

    async def close_session(self, bank_id: str, session_id: str) -> CloseSessionResult:
        """Drop the session's working memory, then reflect on the session (closing is a reflection trigger).

        A failed reflection does not undo the close: the session's episodes stay in episodic memory and
        Reflect can run on them later, so the result says what went wrong instead of failing.
        """
        if not session_id:
            raise InvalidArgument("session_id", "is required")
        closed = await self.clients.working.call(
            "CloseSession",
            working_pb2.CloseSessionRequest(bank_id=bank_id, session_id=session_id),
            self.settings.write_timeout,
        )
        try:
            reflection = await self.reflect(bank_id, session_id)
        except Exception as exc:
            log.warning("reflection after closing a session failed", extra={"error": repr(exc)})
            return CloseSessionResult(
                closed.closed,
                closed.turn_count,
                closed.summary_count,
                closed.token_count,
                reflected=False,
                reflect_error=str(exc) or type(exc).__name__,
            )
        return CloseSessionResult(
            closed.closed,
            closed.turn_count,
            closed.summary_count,
            closed.token_count,
            reflected=True,
            lessons=tuple(reflection.lessons),
            episodes_read=reflection.episodes_read,
        )
