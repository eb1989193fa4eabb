"""Work that goes on after the request that started it has answered (LLM passes, access notes, compression).

A task made with ``asyncio.create_task`` copies the caller's context, and with it the incoming call's deadline
(:data:`~hindsight.runtime.logs.deadline_var`): every layer call it makes later is capped by a deadline that
has already passed. :func:`spawn` starts the task without that deadline and gives it a timeout of its own,
keeps the request id and bank for its log lines, holds a strong reference until it ends (the event loop keeps
only weak ones) and logs a failure instead of leaving it unretrieved.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

from hindsight.runtime.logs import deadline_var

log = logging.getLogger(__name__)

T = TypeVar("T")

_running: set[asyncio.Task[Any]] = set()
"""Every task :func:`spawn` started that has not ended: the strong references."""


def spawn(
    work: Coroutine[Any, Any, T],
    *,
    name: str,
    timeout: float | None,
    keep: set[asyncio.Task[Any]] | None = None,
) -> asyncio.Task[T | None]:
    """Run ``work`` in the background, outside the current call's deadline, for at most ``timeout`` seconds.

    The task answers ``work``'s result, or None when it failed or timed out (both logged with ``name``);
    a cancel still cancels it. ``keep`` is the caller's own set of its tasks (for a drain on shutdown): the
    task is in it until it ends.
    """
    context = contextvars.copy_context()
    context.run(deadline_var.set, None)

    async def guarded() -> T | None:
        try:
            async with asyncio.timeout(timeout):
                return await work
        except TimeoutError:
            log.warning("background task timed out", extra={"task": name, "timeout_s": timeout})
        except Exception:
            log.exception("background task failed", extra={"task": name})
        return None

    task = asyncio.get_running_loop().create_task(guarded(), name=name, context=context)
    for tasks in (_running, keep):
        if tasks is not None:
            tasks.add(task)
            task.add_done_callback(tasks.discard)
    return task
