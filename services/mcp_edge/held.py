"""Which banks may hold back turns for review, so a recall searches the review queue only where it has some.

A recall's warnings come from a search of the bank's held-back turns: one more episodic call per recall,
though most banks never hold a turn back. The edge keeps, per bank, whether the queue had any entry when
it last looked (one cheap page of the queue), for :data:`RECHECK_SECONDS`; a turn this edge holds back
marks its bank at once. A turn held by another replica of the edge (or imported) is warned about once the
bank's entry here is older than that.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

RECHECK_SECONDS = 10.0
"""How long the edge trusts what it last learned of a bank's review queue."""
MAX_BANKS = 50_000
"""Banks remembered at most; the least recently asked are forgotten first (and looked up again)."""


@dataclass(frozen=True)
class _Seen:
    any_held: bool
    at: float


class HeldBanks:
    """Per bank: whether its review queue had any turn when last looked at, and when."""

    def __init__(
        self,
        recheck_seconds: float = RECHECK_SECONDS,
        max_banks: int = MAX_BANKS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.recheck_seconds = recheck_seconds
        self.max_banks = max_banks
        self._clock = clock
        self._seen: OrderedDict[str, _Seen] = OrderedDict()

    def known(self, bank_id: str) -> bool | None:
        """Whether the bank may have held turns; None when the edge does not know (or knew too long ago)."""
        seen = self._seen.get(bank_id)
        if seen is None or self._clock() - seen.at >= self.recheck_seconds:
            return None
        self._seen.move_to_end(bank_id)
        return seen.any_held

    def note(self, bank_id: str, any_held: bool) -> None:
        """What a look at the bank's queue found (or, ``True``, that this edge just held a turn back)."""
        self._seen[bank_id] = _Seen(any_held, self._clock())
        self._seen.move_to_end(bank_id)
        while len(self._seen) > self.max_banks:
            self._seen.popitem(last=False)
