"""Retain and update: every write is screened, goes to episodic memory first (the system of record) and
then to working memory, whose misses episodic memory's outbox heals. A mixin of
:class:`~hindsight.mcp_edge.engine.MemoryEngine`; on :class:`~hindsight.mcp_edge.engine_reads.Reads`, since
an update reads the stored turn's source.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.working.v1 import working_pb2
from hindsight.mcp_edge.domain import RetainResult
from hindsight.mcp_edge.engine_base import describe, log
from hindsight.mcp_edge.engine_reads import Reads
from hindsight.runtime.channels import message_limits
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.interceptors import acting_as, actor_var
from hindsight.runtime.offload import off_loop
from hindsight.runtime.records import RecordMeta, Source, Turn
from hindsight.runtime.trust import check_written_tags

MAX_TURNS_PER_RETAIN = 1000
SCREEN_OFF_LOOP_CHARS = 2_000
"""Characters of a retain from which screening (regular expressions, ~10 us per character) runs on a
worker thread."""


class Writes(Reads):
    """Screened writes of turns, and the window of working memory kept in step."""

    async def retain(
        self, bank_id: str, turns: Sequence[Turn], front: str = "", actor: str = ""
    ) -> RetainResult:
        """Store turns: episodic first (durable, and indexed for meaning through its outbox), then working
        memory; logged with bank, sizes and latency (``front`` names the caller: "mcp" or "grpc").

        Episodic memory commits the turns with their outbox entries and, asked with ``index_now``, hands
        them to the semantic layer before answering; a semantic layer that is down or slow leaves them in
        the outbox, which delivers them once it is back, so a retain never loses a write. ``indexed`` says
        whether they were searchable by meaning when the call returned.

        Before anything is written the write guard takes the retain's rate-limit tokens and screens every
        turn (``actor``, the caller's credential label, goes into the audit log): a secret is redacted
        (or the retain refused, by the bank's policy), an instruction aimed at the agent is held back for
        review in episodic memory and never reaches working memory.
        """
        if not turns:
            raise InvalidArgument("turns", "must not be empty")
        if len(turns) > MAX_TURNS_PER_RETAIN:
            raise InvalidArgument("turns", f"at most {MAX_TURNS_PER_RETAIN} per call")
        ids = [turn.id for turn in turns]
        if len(set(ids)) != len(ids):
            raise InvalidArgument("turns", "turn ids must be unique within one call")
        for index, turn in enumerate(turns):  # a review mark is earned in the review queue, never claimed
            check_written_tags(turn.meta.tags, f"turns[{index}].meta.tags")
        timeout = self.settings.write_timeout
        started = time.perf_counter()
        self.guard.admit(bank_id, turns, actor)
        chars = sum(len(turn.text) for turn in turns)
        guarded = await off_loop(
            lambda: self.guard.screen(bank_id, turns, actor), chars, SCREEN_OFF_LOOP_CHARS
        )
        for decision in guarded.audit:
            self.audit.record(decision)
        if guarded.refused is not None:
            raise guarded.refused
        if guarded.held:
            self.held_banks.note(bank_id, True)
        pb_turns = [turn.to_pb() for turn in guarded.turns]
        record = episodic_pb2.RecordTurnsRequest(
            bank_id=bank_id, turns=pb_turns, index_now=True, quarantine=guarded.held, actor=actor
        )
        message_limits().check_request(record, "turns")  # refused whole, before any layer writes
        with acting_as(actor or actor_var.get()):  # episodic records who retained (trusted from the mesh)
            recorded = await self.clients.episodic.call("RecordTurns", record, timeout)
        working_turns = [turn for turn in pb_turns if turn.id not in guarded.held]
        try:
            if working_turns:
                await self.clients.working.call(
                    "AppendTurns",
                    working_pb2.AppendTurnsRequest(bank_id=bank_id, turns=working_turns),
                    timeout,
                )
        except Exception as exc:
            # The turns are safe in episodic memory: its outbox fills the windows that missed them.
            log.warning(
                "layer write failed after the durable write", extra={"layer": "working", "error": repr(exc)}
            )
            await self._heal_working(bank_id, [turn.id for turn in working_turns], timeout)
        log.info(
            "retain",
            extra={
                "bank": bank_id,
                "front": front,
                "turns": len(turns),
                "chars": sum(len(t.text) for t in turns),
                "duplicates": recorded.duplicate_count,
                "indexed": recorded.indexed,
                "held": len(guarded.held),
                "screened": len(guarded.screened),
                "elapsed_ms": round((time.perf_counter() - started) * 1000, 1),
            },
        )
        return RetainResult(
            turn_ids=tuple(ids),
            duplicate_count=recorded.duplicate_count,
            indexed=recorded.indexed,
            screened=guarded.screened,
        )

    async def _heal_working(self, bank_id: str, turn_ids: Sequence[str], timeout: float) -> None:
        """Ask episodic memory to deliver turns working memory missed (through its outbox, retried until
        working memory answers). Best effort: should this fail too, the window lacks them until it expires."""
        try:
            await self.clients.episodic.call(
                "HealWorkingWindows",
                episodic_pb2.HealWorkingWindowsRequest(bank_id=bank_id, turn_ids=list(turn_ids)),
                timeout,
            )
        except Exception as exc:
            log.warning("working window not queued for healing", extra={"bank": bank_id, "error": repr(exc)})

    async def update(
        self,
        bank_id: str,
        turn_id: str,
        text: str = "",
        meta: common_pb2.RecordMeta | None = None,
        actor: str = "",
        agent: str = "",
    ) -> tuple[common_pb2.Turn, str, bool]:
        """Replace a turn by a new version (new id; the old one archived) and move the other layers with it.

        Returns the new turn, the superseded id and whether the new version was indexed for meaning. A new
        text is screened as a retain's is (by the new metadata's source, else the stored turn's). ``agent``
        (the front's stamp, :mod:`.agents`) is recorded as the new version's writer.
        """
        if not turn_id:
            raise InvalidArgument("turn_id", "is required")
        if not text.strip() and meta is None:
            raise InvalidArgument("text", "give a new text or new metadata")
        timeout = self.settings.write_timeout
        if text and self.settings.defences:
            text = await self._screen_update(bank_id, turn_id, text, meta, actor)
        reply = await self.clients.episodic.call(
            "UpdateTurn",
            episodic_pb2.UpdateTurnRequest(
                bank_id=bank_id, turn_id=turn_id, text=text, meta=meta, index_now=True, agent=agent
            ),
            timeout,
        )
        # Episodic's outbox moves the semantic index (new version in, old out) before it answers; working
        # memory is no outbox target for updates, so the old version leaves the session window here.
        try:
            await self.clients.working.call(
                "ForgetTurns",
                working_pb2.ForgetTurnsRequest(bank_id=bank_id, turn_ids=[reply.superseded_id]),
                timeout,
            )
        except Exception as exc:  # episodic holds the truth; a stale window entry ages out
            log.warning("layer update failed after the durable write", extra={"error": describe(exc)})
        log.info("update", extra={"bank": bank_id, "superseded": reply.superseded_id, "new": reply.turn.id})
        return reply.turn, reply.superseded_id, reply.indexed

    async def _screen_update(
        self, bank_id: str, turn_id: str, text: str, meta: common_pb2.RecordMeta | None, actor: str
    ) -> str:
        """The update's text as screening lets it be stored (redacted), or the refusal."""
        source = RecordMeta.from_pb(meta).source if meta is not None and meta.source else None
        if source is None:
            stored = await self.get_turn(bank_id, turn_id)
            source = RecordMeta.from_pb(stored.meta).source if stored is not None else Source.USER
        guarded = await off_loop(
            lambda: self.guard.screen_update(bank_id, turn_id, text, source, actor),
            len(text),
            SCREEN_OFF_LOOP_CHARS,
        )
        for decision in guarded.audit:
            self.audit.record(decision)
        if guarded.refused is not None:
            raise guarded.refused
        return guarded.turns[0].text if guarded.turns else text
