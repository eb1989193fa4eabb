"""Whose statements a bank holds: one person's, or several people's pooled.

A correction replaces only its own speaker's earlier statement. Which turns come from the same person
depends on the bank, so it is a per-bank setting (``HINDSIGHT_SEMANTIC_SPEAKERS``):

- ``person``: the bank holds one person's memories; every turn the user side says is theirs, named or not;
- ``auto`` (the default): named speakers are distinct people; unnamed ones ("user", empty) are one person;
- ``pooled``: several people share the bank and may all be unnamed: named speakers are distinct, and an
  unnamed speaker is the same person only inside one session.

Agents, tools and outside sources are never the user: each is its own owner (by name, else by source).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.records import Source
from hindsight.runtime.statements import anonymous
from hindsight.runtime.text import key_of
from hindsight.semantic.records import SemanticRecord


class BankSpeakers(enum.Enum):
    """How a bank's speakers map to people."""

    PERSON = "person"
    AUTO = "auto"
    POOLED = "pooled"


def _owner(record: SemanticRecord) -> str:
    if record.speaker.strip():
        return key_of(record.speaker)
    return "user" if record.meta.source is Source.USER else record.meta.source.value


@dataclass(frozen=True)
class SpeakerPolicy:
    """The mode of each bank: ``banks`` maps bank-id patterns (``fnmatch``) to a mode, first match wins;
    the others get ``default``."""

    default: BankSpeakers = BankSpeakers.AUTO
    banks: Mapping[str, BankSpeakers] = field(default_factory=dict)

    @classmethod
    def parse(cls, default: str, banks: str) -> SpeakerPolicy:
        """From the settings: a mode name, and ``"pattern=mode,pattern=mode"``."""
        try:
            chosen = BankSpeakers(default.strip().lower() or "auto")
        except ValueError:
            raise InvalidArgument(
                "HINDSIGHT_SEMANTIC_SPEAKERS", f"{default!r} is not one of person, auto, pooled"
            ) from None
        mapping: dict[str, BankSpeakers] = {}
        for part in (p.strip() for p in banks.split(",")):
            if not part:
                continue
            pattern, _, mode = part.partition("=")
            try:
                mapping[pattern.strip()] = BankSpeakers(mode.strip().lower())
            except ValueError:
                raise InvalidArgument(
                    "HINDSIGHT_SEMANTIC_BANK_SPEAKERS",
                    f"{part!r}: give pattern=mode with mode one of person, auto, pooled",
                ) from None
            if not pattern.strip():
                raise InvalidArgument("HINDSIGHT_SEMANTIC_BANK_SPEAKERS", f"{part!r} names no bank")
        return cls(chosen, mapping)

    def mode(self, bank_id: str) -> BankSpeakers:
        """The bank's mode."""
        for pattern, mode in self.banks.items():
            if fnmatchcase(bank_id, pattern):
                return mode
        return self.default

    def same_person(self, bank_id: str, new: SemanticRecord, old: SemanticRecord) -> bool:
        """Whether ``new`` and ``old`` were said by the same person (see the module docstring)."""
        mode = self.mode(bank_id)
        user_side = new.meta.source is Source.USER and old.meta.source is Source.USER
        if mode is BankSpeakers.PERSON and user_side:
            return True
        if _owner(new) != _owner(old):
            return False
        if mode is BankSpeakers.POOLED and anonymous(_owner(new)):
            return new.session_id == old.session_id
        return True
