"""CPU-heavy work off the event loop, once it is heavy enough to pay for the hop to a thread.

While a coroutine computes, its service answers nothing else: not the next call, not a health check.
Pure-Python work on a worker thread (``asyncio.to_thread``) still holds the GIL, but Python hands it
over every few milliseconds (``sys.getswitchinterval``), so the loop keeps answering. The hop itself
costs about 0.1-0.2 ms (a round trip through the default executor on a laptop core), so small inputs
stay on the loop: each caller names its work's size and the size from which it moves, chosen where the
work takes about 2 ms (ten hops), so a hop never adds more than a tenth to what it moves and the loop
never stalls for longer than that on what stays.

Measured per unit on one core: rule extraction of facts ~1.5 us
per character, extractive summaries ~1 us per character, keyword terms ~0.2 us per character, query
understanding ~2.5 us per character, working-memory ranking ~5 us per candidate and phrasing, fusion
~13 us per candidate.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def off_loop(work: Callable[[], T], size: int, threshold: int) -> T:
    """``work()`` on a worker thread when ``size`` reaches ``threshold`` (in the caller's units), else here.

    The thread runs in a copy of the current context, so log fields (request id, bank) follow the work.
    """
    if size < threshold:
        return work()
    return await asyncio.to_thread(work)
