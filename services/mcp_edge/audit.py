"""The edge's side of the audit log: security decisions queued and written to episodic memory off the
request path (refused calls, rate limits, screening, and what forget, purge, update, restore and review
decisions did).

A decision (a rate-limit refusal, a redaction, a refused credential) must never slow or fail the request
it is about, nor let a flood of refused requests become a flood of writes. Entries go into a bounded
queue that one background task flushes in batches; when the queue is full, an entry is not kept but
counted per (bank, action), and the next flush writes one summary entry per count, so every decision
still reaches the log at least as a number.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence

from hindsight.contracts.common.v1 import common_pb2
from hindsight.runtime.background import spawn
from hindsight.runtime.interceptors import Refusal, RefusalSink

log = logging.getLogger(__name__)

Send = Callable[[Sequence[common_pb2.AuditEntry]], Awaitable[None]]

QUEUE_CAPACITY = 2_000
BATCH = 200
FLUSH_TIMEOUT = 10.0
MAX_REASON = 1_000


def entry(
    action: str, bank_id: str, actor: str, target: str, reason: str, **details: object
) -> common_pb2.AuditEntry:
    """An audit entry (id and time are filled by episodic memory)."""
    return common_pb2.AuditEntry(
        action=action,
        bank_id=bank_id,
        actor=actor,
        target=target,
        reason=reason[:MAX_REASON],
        details_json=json.dumps(details, ensure_ascii=False, sort_keys=True) if details else "",
    )


class AuditQueue:
    """Bounded, batched, best effort, never blocking the caller (see the module docstring)."""

    def __init__(self, send: Send, capacity: int = QUEUE_CAPACITY) -> None:
        self._send = send
        self._capacity = capacity
        self._queue: list[common_pb2.AuditEntry] = []
        self._overflow: Counter[tuple[str, str]] = Counter()
        self._task: asyncio.Task[None | None] | None = None
        self._tasks: set[asyncio.Task[object]] = set()
        self.written = 0
        self.lost = 0
        """Entries the log could not take (episodic memory failing): logged, counted."""

    def record(self, item: common_pb2.AuditEntry) -> None:
        """Queue one entry and make sure a flush is under way."""
        if len(self._queue) < self._capacity:
            self._queue.append(item)
        else:
            self._overflow[(item.bank_id, item.action)] += 1
        if self._task is None or self._task.done():
            self._task = spawn(self._flush_all(), name="audit flush", timeout=FLUSH_TIMEOUT, keep=self._tasks)

    def _take(self) -> list[common_pb2.AuditEntry]:
        batch, self._queue = self._queue[:BATCH], self._queue[BATCH:]
        if len(batch) < BATCH and self._overflow:
            for (bank_id, action), count in sorted(self._overflow.items()):
                batch.append(
                    entry(
                        action,
                        bank_id,
                        "edge",
                        "",
                        f"{count} more decisions not logged one by one (the audit queue was full)",
                        count=count,
                    )
                )
            self._overflow.clear()
        return batch

    async def _flush_all(self) -> None:
        while self._queue or self._overflow:
            batch = self._take()
            try:
                await self._send(batch)
                self.written += len(batch)
            except Exception as exc:  # the log is best effort: the request it is about has answered
                self.lost += len(batch)
                log.warning("audit entries not written", extra={"entries": len(batch), "error": repr(exc)})
                return

    async def drain(self) -> None:
        """Wait until what is queued has been written (or given up); for shutdown and tests."""
        while self._task is not None and not self._task.done():
            await asyncio.gather(self._task, return_exceptions=True)
        if self._queue or self._overflow:
            await self._flush_all()


MEMORY_SERVICE = "/hindsight.memory.v1.MemoryService/"


ANONYMOUS = "anonymous"
"""The actor of a refusal whose credential named no caller (none sent, or an unknown one)."""


def refusal_recorder(queue: AuditQueue) -> RefusalSink:
    """What the edge's gRPC server is told of each refused call (no credential, an unknown one, a bank or a
    role it lacks): one ``deny`` entry, queued. Handed the refusal by the interceptor itself, so the log
    level (which once decided whether a refusal was seen at all) has no say."""

    def record(refusal: Refusal) -> None:
        name = refusal.method.removeprefix(MEMORY_SERVICE).lstrip("/")
        code = refusal.code.name
        queue.record(
            entry(
                "deny",
                refusal.bank_id,
                refusal.who or ANONYMOUS,
                name,
                f"{name} refused: {code}",
                code=code,
                detail=refusal.reason[:MAX_REASON],
            )
        )

    return record
