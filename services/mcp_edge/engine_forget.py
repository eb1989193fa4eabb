"""Forget and purge: episodic memory (the system of record) goes first, then the edge asks every other
layer to drop what it holds of the turns, directly, so they are gone when the call returns. Every step is
idempotent, so a failed call is safe to repeat. A mixin of :class:`~hindsight.mcp_edge.engine.MemoryEngine`.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.reflect.v1 import reflect_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.contracts.working.v1 import working_pb2
from hindsight.mcp_edge.domain import ForgetResult, PurgeResult
from hindsight.mcp_edge.engine_base import EngineBase, log
from hindsight.runtime.errors import InvalidArgument

MAX_FILTERED_TURNS = 10_000
"""Most turns one forget-by-filter archives (a larger selection is refused by episodic memory's own limit)."""
PURGE_IDS_PER_CALL = 1000
"""Purged ids per delete call to another layer (each layer's request limit is higher)."""


@dataclass(frozen=True)
class DerivedDeletes:
    """What the other layers deleted of purged records."""

    working_removed_count: int
    unindexed_count: int
    lesson_count: int


def _filters_something(turn_filter: episodic_pb2.TurnFilter) -> bool:
    """Whether a filter narrows the bank at all (forgetting everything by filter is refused)."""
    return bool(
        turn_filter.session_id
        or turn_filter.tags
        or turn_filter.sources
        or turn_filter.min_trust
        or turn_filter.HasField("time_range")
    )


class Forgetting(EngineBase):
    """Archive, delete and purge across the layers."""

    async def forget(
        self,
        bank_id: str,
        turn_ids: Sequence[str],
        hard: bool = False,
        turn_filter: episodic_pb2.TurnFilter | None = None,
    ) -> ForgetResult:
        """Archive (or hard-delete) turns in episodic memory, then drop them from working memory and index.

        Turns are named by id, by a filter (archive only), or both. Episodic memory goes first, as the
        system of record. Forgetting is idempotent, so when a later layer fails the whole call fails with
        UNAVAILABLE and is safe to repeat.
        """
        filtering = turn_filter is not None and _filters_something(turn_filter)
        if not turn_ids and not filtering:
            raise InvalidArgument("turn_ids", "name turns to forget, or give a filter that selects some")
        if hard and filtering:
            raise InvalidArgument(
                "hard", "hard deletion takes turn ids (or use purge); a filter only archives"
            )
        ids = list(dict.fromkeys(turn_ids))
        if filtering:
            ids = list(dict.fromkeys([*ids, *await self._filtered_ids(bank_id, turn_filter)]))  # type: ignore[arg-type]
        timeout = self.settings.write_timeout
        forgotten = await self.clients.episodic.call(
            "ForgetTurns",
            episodic_pb2.ForgetTurnsRequest(
                bank_id=bank_id, turn_ids=ids, hard=hard, filter=turn_filter if filtering else None
            ),
            timeout,
        )
        if not ids:
            return ForgetResult(forgotten.forgotten_count, 0, 0)
        if hard:  # a purge: every version of the turns and what died with them go in every layer
            derived = await self._purge_derived(bank_id, [*ids, *forgotten.purged_ids])
            await self._purge_copies_derived(forgotten.purged_copies)
            log.info(
                "forget", extra={"bank": bank_id, "ids": len(ids), "hard": hard} | dataclasses.asdict(derived)
            )
            return ForgetResult(
                forgotten.forgotten_count, derived.unindexed_count, derived.working_removed_count
            )
        working, removed = await asyncio.gather(
            self.clients.working.call(
                "ForgetTurns", working_pb2.ForgetTurnsRequest(bank_id=bank_id, turn_ids=ids), timeout
            ),
            self.clients.semantic.call(
                "Delete",
                # an archive is recoverable: a restore's re-index lifts the semantic layer's tombstones
                semantic_pb2.DeleteRequest(bank_id=bank_id, ids=ids, source_turn_ids=ids, archived=not hard),
                timeout,
            ),
        )
        log.info(
            "forget",
            extra={"bank": bank_id, "ids": len(ids), "hard": hard, "forgotten": forgotten.forgotten_count},
        )
        return ForgetResult(forgotten.forgotten_count, removed.deleted_count, working.removed_count)

    async def _turn_pages(
        self,
        bank_id: str,
        pages: int,
        turn_filter: episodic_pb2.TurnFilter | None = None,
    ) -> AsyncIterator[list[common_pb2.Turn]]:
        """Up to ``pages`` pages of 500 turns from episodic memory."""
        token = ""
        for _ in range(pages):
            page = await self.clients.episodic.call(
                "ListTurns",
                episodic_pb2.ListTurnsRequest(
                    bank_id=bank_id,
                    page_size=500,
                    page_token=token,
                    filter=turn_filter,
                ),
                self.settings.write_timeout,
            )
            yield list(page.turns)
            token = page.next_page_token
            if not token:
                return

    async def _filtered_ids(self, bank_id: str, turn_filter: episodic_pb2.TurnFilter) -> list[str]:
        """Ids of the live turns a filter selects (so working memory and the index can drop them too)."""
        live = episodic_pb2.TurnFilter()
        live.CopyFrom(turn_filter)
        live.include_archived = False
        ids: list[str] = []
        async for turns in self._turn_pages(bank_id, MAX_FILTERED_TURNS // 500, live):
            ids.extend(turn.id for turn in turns)
        return ids

    async def purge(
        self, bank_id: str, ids: Sequence[str] = (), session_id: str = "", whole_bank: bool = False
    ) -> PurgeResult:
        """Delete for good: turns and episodes by id, a whole session, or a whole bank, in every layer.

        Episodic memory (the system of record) goes first and queues the deletion of derived records in
        its outbox; the edge also asks each layer directly, so the memories are gone when the call returns.
        Every step is idempotent: a failed purge is safe to repeat.
        """
        chosen = sum([bool(ids), bool(session_id), whole_bank])
        if chosen != 1:
            raise InvalidArgument("ids", "give exactly one of ids, session_id or whole_bank")
        unique = list(dict.fromkeys(ids))
        timeout = self.settings.write_timeout
        purged = await self.clients.episodic.call(
            "Purge",
            episodic_pb2.PurgeRequest(
                bank_id=bank_id, ids=unique, session_id=session_id, whole_bank=whole_bank
            ),
            timeout,
        )
        # Every id episodic memory purged (each version of a turn, held-back turns, episodes that died with
        # their last source turn), so the other layers delete all they derived from them.
        derived = await self._purge_derived(
            bank_id, [] if whole_bank else [*unique, *purged.purged_ids], session_id, whole_bank
        )
        result = PurgeResult(
            turn_count=purged.turn_count,
            episode_count=purged.episode_count,
            unindexed_count=derived.unindexed_count,
            working_removed_count=derived.working_removed_count,
            lesson_count=derived.lesson_count,
            shared_copy_count=await self._purge_copies_derived(purged.purged_copies),
        )
        log.info(
            "purge",
            extra={"bank": bank_id, "ids": len(unique), "session": bool(session_id), "whole_bank": whole_bank}
            | dataclasses.asdict(result),
        )
        return result

    async def _purge_copies_derived(self, copies: Sequence[episodic_pb2.PurgedCopies]) -> int:
        """Delete what the other layers derived from the shared copies a purge took with their sources
        (episodic memory purged them and queued the same deletes); how many copies went."""
        for taken in copies:
            await self._purge_derived(taken.bank_id, list(taken.purged_ids))
        return sum(len(taken.purged_ids) for taken in copies)

    async def _purge_derived(
        self, bank_id: str, ids: Sequence[str], session_id: str = "", whole_bank: bool = False
    ) -> DerivedDeletes:
        """Delete what working memory, the semantic layer and reflection hold of purged records, directly,
        so it is gone when the call returns (episodic memory's outbox sends the same deletes, for a layer
        that is down now). Ids go a thousand a call; the session or bank goes with the first call."""
        timeout = self.settings.write_timeout
        unique = list(dict.fromkeys(ids))
        chunks = [unique[i : i + PURGE_IDS_PER_CALL] for i in range(0, len(unique), PURGE_IDS_PER_CALL)]
        working_removed = unindexed = lessons_deleted = 0
        for index, chunk in enumerate(chunks or [[]]):
            scope_session, scope_bank = (session_id, whole_bank) if index == 0 else ("", False)
            working, removed, lessons = await asyncio.gather(
                self.clients.working.call(
                    "ForgetTurns",
                    working_pb2.ForgetTurnsRequest(
                        bank_id=bank_id, turn_ids=chunk, session_id=scope_session, whole_bank=scope_bank
                    ),
                    timeout,
                ),
                self.clients.semantic.call(
                    "Delete",
                    semantic_pb2.DeleteRequest(
                        bank_id=bank_id,
                        ids=chunk,
                        source_turn_ids=chunk,
                        session_id=scope_session,
                        whole_bank=scope_bank,
                    ),
                    timeout,
                ),
                self.clients.reflect.call(
                    "PurgeLessons",
                    reflect_pb2.PurgeLessonsRequest(
                        bank_id=bank_id, source_ids=chunk, session_id=scope_session, whole_bank=scope_bank
                    ),
                    timeout,
                ),
            )
            working_removed += working.removed_count
            unindexed += removed.deleted_count
            lessons_deleted += lessons.deleted_count
        return DerivedDeletes(working_removed, unindexed, lessons_deleted)
