"""What a bank holds, as ids, to compare before and after a refused call (nothing may have been written)."""

from __future__ import annotations

from dataclasses import dataclass

from hindsight.contracts.working.v1 import working_pb2
from hindsight.mcp_edge.engine import MemoryEngine


@dataclass(frozen=True)
class BankSnapshot:
    """Every turn (archived too) and episode in episodic memory, and the turns of some working sessions."""

    turns: tuple[str, ...]
    episodes: tuple[str, ...]
    windows: tuple[tuple[str, tuple[str, ...]], ...]


async def snapshot(
    engine: MemoryEngine, bank_id: str, admin_token: str, sessions: tuple[str, ...] = ("default",)
) -> BankSnapshot:
    """The bank's contents through the edge's own clients (the debug listing needs the admin token)."""
    turns, episodes, _ = await engine.debug_list(bank_id, admin_token, limit=500)
    windows = []
    for session in sessions:
        reply = await engine.clients.working.call(
            "GetWindow", working_pb2.GetWindowRequest(bank_id=bank_id, session_id=session, max_turns=200), 10
        )
        windows.append((session, tuple(turn.id for turn in reply.turns)))
    return BankSnapshot(
        tuple(turn.id for turn in turns), tuple(episode.id for episode in episodes), tuple(windows)
    )
