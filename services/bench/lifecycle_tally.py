"""Violations of the lifecycle invariants, counted by invariant, each with the shortest sequence seen."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

PURGED_FINDABLE = "purged_text_findable"
"""A word only purged or hard-deleted records carried is found somewhere (the surface says where)."""
LIVE_MISSING_BY_ID = "live_turn_missing_by_id"
"""A live turn is not listed (ListRecent) or not readable by id."""
LIVE_MISSING_BY_MEANING = "live_turn_missing_by_meaning"
"""After quiescence, a recall with a live turn's own text does not return it in the top 10."""
LIVE_MISSING_FROM_ENTITY_PAGE = "live_turn_missing_from_entity_page"
"""After quiescence, a live turn about a person is not among the mentions on that person's entity page."""
SUPERSEDED_CURRENT = "superseded_value_current"
"""A value an update replaced is still current (a recalled memory or an entity page's current fact)."""
CURRENT_WITHOUT_SOURCE = "current_value_without_live_source"
"""A person's current value is one no live turn states (it came from a forgotten, purged or replaced one)."""
LIVE_FACT_MISSING = "live_fact_missing"
"""Every live turn about a person agrees where they live, yet that is not the current value."""
WINDOW_MISSING_TURN = "working_window_missing_turn"
"""A live turn retained through the edge is not in its session's working memory window."""
NOT_AUDITED = "decision_not_audited"
"""A destructive or security decision (purge, forget, update, restore, review, hold) left no audit entry."""
EXPORT_ROUND_TRIP = "export_round_trip_differs"
"""An export imported into another bank and exported again differs beyond the documented fields."""
TWO_CURRENT_VALUES = "two_current_values"
"""One person's attribute has two current values at once."""
COUNTS_DISAGREE = "counts_disagree"
"""Live, archived or held-back turn counts differ from the model (listing, review queue, console)."""
HELD_RECALLED = "held_text_recalled"
"""Text held back by screening (pending or rejected) came back as a recalled memory."""
NOT_QUIESCENT = "outbox_not_drained"
"""The outbox still had entries waiting after the settle bound."""
STEP_FAILED = "step_failed"
"""An operation the model expects to succeed was refused or failed."""
KEPT_REPRODUCTIONS = 5
INVARIANTS = (
    PURGED_FINDABLE,
    LIVE_MISSING_BY_ID,
    LIVE_MISSING_BY_MEANING,
    LIVE_MISSING_FROM_ENTITY_PAGE,
    SUPERSEDED_CURRENT,
    CURRENT_WITHOUT_SOURCE,
    LIVE_FACT_MISSING,
    TWO_CURRENT_VALUES,
    COUNTS_DISAGREE,
    WINDOW_MISSING_TURN,
    NOT_AUDITED,
    EXPORT_ROUND_TRIP,
    HELD_RECALLED,
    NOT_QUIESCENT,
    STEP_FAILED,
)


@dataclass(frozen=True)
class Violation:
    """One broken invariant: what, about which subject (a word, a turn id), and where it was seen."""

    invariant: str
    subject: str
    detail: str


class InvariantBroken(AssertionError):
    """Raised in strict mode (the CI test) with every violation one check found."""


@dataclass
class Tally:
    """Counts distinct violations (one invariant and subject count once, however often seen again).

    ``strict`` makes a check raise :class:`InvariantBroken` with what it found, as a test wants; the
    benchmark counts and goes on.
    """

    strict: bool = False
    steps: int = 0
    by_invariant: Counter[str] = field(default_factory=Counter)
    seen: set[tuple[str, str]] = field(default_factory=set)
    reproductions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """For each invariant, the shortest step sequences (from fresh banks) after which it was seen, shortest
    first, at most :data:`KEPT_REPRODUCTIONS` (one invariant can break for several reasons)."""
    pending: list[Violation] = field(default_factory=list)
    fresh: list[str] = field(default_factory=list)
    """A line per violation counted since the last :meth:`drain_fresh`: a long run prints them as it goes."""

    @property
    def violations(self) -> int:
        return sum(self.by_invariant.values())

    def add(self, violation: Violation, sequence: list[str]) -> None:
        key = (violation.invariant, violation.subject)
        if key in self.seen:
            if self.strict:  # a test re-running a shrunk sequence must fail again on it
                self.pending.append(violation)
            return
        self.seen.add(key)
        self.by_invariant[violation.invariant] += 1
        self.pending.append(violation)
        said = f"{violation.invariant}: {violation.subject}: {violation.detail[:600]}"
        self.fresh.append(f"{said}\n  after: {' '.join(sequence)}")
        known = self.reproductions.setdefault(violation.invariant, [])
        if any(item["steps"] == sequence for item in known):
            return
        known.append(
            {"steps": list(sequence), "subject": violation.subject, "detail": violation.detail[:2000]}
        )
        known.sort(key=lambda item: len(item["steps"]))
        del known[KEPT_REPRODUCTIONS:]

    def settle(self, sequence: list[str]) -> None:
        """End of one check: in strict mode, fail with what it found and the steps that led there."""
        found, self.pending = self.pending, []
        if self.strict and found:
            lines = [f"{v.invariant}: {v.subject}: {v.detail[:300]}" for v in found]
            raise InvariantBroken("after steps " + " ".join(sequence) + ":\n" + "\n".join(lines))

    def drain_fresh(self) -> list[str]:
        """The lines of the violations counted since the last call."""
        found, self.fresh = self.fresh, []
        return found

    def summary(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "violations": self.violations,
            "by_invariant": {name: self.by_invariant.get(name, 0) for name in INVARIANTS},
            "reproductions": self.reproductions,
        }
