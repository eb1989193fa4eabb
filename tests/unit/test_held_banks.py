"""What the edge remembers of each bank's review queue: for a while, for a bounded number of banks."""

from __future__ import annotations

from hindsight.mcp_edge.held import HeldBanks


class _Clock:
    """A fake clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_what_was_learned_is_trusted_for_the_recheck_time_only() -> None:
    clock = _Clock()
    banks = HeldBanks(recheck_seconds=10.0, clock=clock)
    assert banks.known("a") is None
    banks.note("a", False)
    banks.note("b", True)
    clock.now += 9.9
    assert (banks.known("a"), banks.known("b")) == (False, True)
    clock.now += 0.1
    assert (banks.known("a"), banks.known("b")) == (None, None)


def test_a_held_turn_overrides_what_was_learned_before() -> None:
    banks = HeldBanks(clock=_Clock())
    banks.note("a", False)
    banks.note("a", True)
    assert banks.known("a") is True


def test_the_least_recently_asked_bank_is_forgotten_first() -> None:
    banks = HeldBanks(max_banks=2, clock=_Clock())
    banks.note("a", False)
    banks.note("b", False)
    assert banks.known("a") is False  # now the most recently asked
    banks.note("c", True)
    assert (banks.known("a"), banks.known("b"), banks.known("c")) == (False, None, True)
