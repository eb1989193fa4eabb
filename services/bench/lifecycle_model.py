"""The reference model of ``hindsight bench lifecycle``: what a bank should hold after each step.

Every text the lifecycle run writes is made of invented words (``zorblax``, ``Vantrel``) that no other
text shares, so "is this text still findable" is an exact substring test. The model keeps, per bank,
every turn version and episode written, and what happened to it: live, archived (forgotten, restorable),
superseded (replaced by an update), held (waiting in the review queue), rejected, or gone (purged or
hard-deleted). From that it answers which words must be findable and which must be found nowhere.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

LIVE = "live"
ARCHIVED = "archived"
SUPERSEDED = "superseded"
HELD = "held"
REJECTED = "rejected"
GONE = "gone"
KEPT = frozenset({LIVE, ARCHIVED, SUPERSEDED})
"""States of turns the bank keeps in its record (listed with ``include_archived``)."""
SESSIONS = ("s0", "s1", "s2")

_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "kl", "pl", "tr")
_VOWELS = ("a", "e", "i", "o", "u")
_CODAS = ("", "", "x", "n", "m", "rk", "lt", "sp")


class Words:
    """Invented words, never the same twice in one run (a seeded generator makes a run repeatable)."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self._used: set[str] = set()

    def word(self) -> str:
        while True:
            syllables = self._rng.randint(3, 4)
            text = "".join(
                self._rng.choice(_ONSETS) + self._rng.choice(_VOWELS) + self._rng.choice(_CODAS)
                for _ in range(syllables)
            )
            if text not in self._used:
                self._used.add(text)
                return text

    def name(self) -> str:
        return self.word().capitalize()


@dataclass(frozen=True)
class TurnRecord:
    """One version of a turn as the model expects it."""

    id: str
    bank: str
    session: str
    text: str
    words: tuple[str, ...]
    """The invented words of this text (lower case), the name included."""
    name: str = ""
    """The person the text is about (shared by every version of one turn); empty for held-back text."""
    place: str = ""
    """Where the person lives, in this version."""
    state: str = LIVE
    previous: str = ""
    """Id of the version this one replaced (empty for a first version)."""
    replaced_by: str = ""
    """Id of the version that replaced this one."""
    claim: bool = True
    """The person says it of themselves (trusted); False for an outside source's contradicting report."""
    windowed: bool = False
    """Retained through the edge and untouched since: its session's working window must hold it."""


@dataclass(frozen=True)
class EpisodeRecord:
    """An episode written through the edge."""

    id: str
    bank: str
    session: str
    text: str
    words: tuple[str, ...]
    state: str = LIVE


@dataclass
class BankModel:
    """Everything one bank should hold."""

    bank: str
    turns: dict[str, TurnRecord] = field(default_factory=dict)
    episodes: dict[str, EpisodeRecord] = field(default_factory=dict)

    def in_state(self, *states: str) -> list[TurnRecord]:
        return [turn for turn in self.turns.values() if turn.state in states]

    def chain(self, turn_id: str) -> Iterator[TurnRecord]:
        """The version ``turn_id`` and every earlier version it replaced, newest first."""
        seen: set[str] = set()
        current = self.turns.get(turn_id)
        while current is not None and current.id not in seen:
            seen.add(current.id)
            yield current
            current = self.turns.get(current.previous) if current.previous else None

    def versions(self, turn_id: str) -> list[TurnRecord]:
        """Every version of the turn ``turn_id`` is a version of: earlier ones and later ones."""
        newest = self.turns.get(turn_id)
        seen: set[str] = set()
        while newest is not None and newest.replaced_by and newest.replaced_by not in seen:
            seen.add(newest.id)
            newest = self.turns.get(newest.replaced_by)
        return list(self.chain(newest.id)) if newest is not None else []

    def set_state(self, turn_id: str, state: str) -> None:
        self.turns[turn_id] = replace(self.turns[turn_id], state=state, windowed=False)

    def forbidden_words(self) -> set[str]:
        """Words that only gone records carried: found anywhere in this bank, a purge leaked."""
        kept: set[str] = set()
        gone: set[str] = set()
        records: list[TurnRecord | EpisodeRecord] = [*self.turns.values(), *self.episodes.values()]
        for record in records:
            (gone if record.state == GONE else kept).update(record.words)
        return gone - kept

    def held_words(self) -> set[str]:
        """Words of held or rejected turns only: recall must never return them as memories."""
        held = {w for t in self.in_state(HELD, REJECTED) for w in t.words}
        return held - {w for t in self.turns.values() if t.state not in (HELD, REJECTED) for w in t.words}

    def live_places(self) -> dict[str, set[str]]:
        """For each person a live turn is about: the places live turns say they live in (a current value
        must be one of them)."""
        result: dict[str, set[str]] = {}
        for turn in self.in_state(LIVE):
            if turn.name:
                result.setdefault(turn.name.lower(), set()).add(turn.place.lower())
        return result

    def agreed_places(self) -> dict[str, str]:
        """Persons whose live turns all say one place, with no outside report among them: that place must
        be the current value."""
        places = self.live_places()
        doubted = {t.name.lower() for t in self.turns.values() if t.name and not t.claim}
        return {
            name: next(iter(found))
            for name, found in places.items()
            if len(found) == 1 and name not in doubted
        }

    def superseded_places(self) -> dict[str, set[str]]:
        """For each person of a live turn: the places earlier versions named (no longer current)."""
        result: dict[str, set[str]] = {}
        for turn in self.in_state(LIVE):
            if turn.name and turn.claim:
                old = {t.place for t in self.chain(turn.id) if t.id != turn.id and t.place != turn.place}
                if old:
                    result[turn.name.lower()] = old
        return result


@dataclass
class Model:
    """Every bank of one run of steps (an example), by bank id."""

    banks: dict[str, BankModel] = field(default_factory=dict)

    def bank(self, bank_id: str) -> BankModel:
        return self.banks.setdefault(bank_id, BankModel(bank_id))

    def turns(self, *states: str) -> list[TurnRecord]:
        return [t for bank in self.banks.values() for t in bank.in_state(*states)]

    def add_turn(self, record: TurnRecord) -> None:
        self.bank(record.bank).turns[record.id] = record

    def add_episode(self, record: EpisodeRecord) -> None:
        self.bank(record.bank).episodes[record.id] = record

    def update(self, bank_id: str, old_id: str, new: TurnRecord) -> None:
        bank = self.bank(bank_id)
        bank.turns[old_id] = replace(bank.turns[old_id], state=SUPERSEDED, replaced_by=new.id, windowed=False)
        bank.turns[new.id] = replace(new, previous=old_id, windowed=False)

    def purge_ids(self, bank_id: str, ids: Iterable[str]) -> None:
        """Purge follows version chains: every version of a purged turn goes with it."""
        bank = self.bank(bank_id)
        for turn_id in ids:
            for version in bank.versions(turn_id):
                bank.set_state(version.id, GONE)
            if turn_id in bank.episodes:
                bank.episodes[turn_id] = replace(bank.episodes[turn_id], state=GONE)

    def purge_session(self, bank_id: str, session: str) -> None:
        bank = self.bank(bank_id)
        for turn in list(bank.turns.values()):
            if turn.session == session:
                bank.set_state(turn.id, GONE)
        for episode in list(bank.episodes.values()):
            if episode.session == session:
                bank.episodes[episode.id] = replace(episode, state=GONE)

    def purge_bank(self, bank_id: str) -> None:
        bank = self.bank(bank_id)
        for turn_id in list(bank.turns):
            bank.set_state(turn_id, GONE)
        for episode_id, episode in list(bank.episodes.items()):
            bank.episodes[episode_id] = replace(episode, state=GONE)

    def copy_bank(self, source: str, target: str) -> None:
        """An export of ``source`` imported into ``target``: every kept record, the review queue and the
        version links, under the same ids."""
        old = self.bank(source)
        new = self.bank(target)
        for turn in old.turns.values():
            if turn.state != GONE:
                new.turns[turn.id] = replace(turn, bank=target, windowed=False)
        for episode in old.episodes.values():
            if episode.state != GONE:
                new.episodes[episode.id] = replace(episode, bank=target)
