"""What a credential may do on a bank: operations per bank grant, their text syntax, expiry, and the rule that
a token minted by another is never wider than it.

A grant names a bank (or ``*``) and operations: ``read`` (recall, lists, entity pages, resources, prompts),
``write`` (retain, update, episodes, reflect, compress, close a session, invalidate), ``forget`` (forget,
purge) and ``admin`` (mint, list and revoke tokens for the bank). Written ``bank-a`` (read and write, what
a grant without operations has always allowed), ``bank-a:read``, ``bank-a:read+write+forget``, ``*:read``.
The part after a bank id's last ``:`` names operations when it is lower-case words joined by ``+``; a bank
id that itself ends in such a part (``team:alpha``) is written with its operations
(``team:alpha:read+write``).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.validation import check_bank_id

ALL_BANKS = "*"


class Operation(enum.StrEnum):
    """What a grant allows on its bank."""

    READ = "read"
    WRITE = "write"
    FORGET = "forget"
    ADMIN = "admin"


DEFAULT_OPERATIONS = frozenset({Operation.READ, Operation.WRITE})
"""What a grant that names no operation allows (what every grant allowed before operations existed)."""
ALL_OPERATIONS = frozenset(Operation)
_ORDER = tuple(Operation)
_OPERATIONS_PART = re.compile(r"[a-z]+(?:\+[a-z]+)*")
_DURATION = re.compile(r"(\d{1,6})([smhdw])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


def operations_text(operations: Iterable[Operation]) -> str:
    """``read+write``: the operations in their canonical order."""
    chosen = set(operations)
    return "+".join(op.value for op in _ORDER if op in chosen)


def parse_operations(text: str, field: str) -> frozenset[Operation]:
    """``read+write`` as operations; INVALID_ARGUMENT naming ``field`` and the unknown word."""
    found: set[Operation] = set()
    for word in text.split("+"):
        try:
            found.add(Operation(word.strip()))
        except ValueError:
            known = ", ".join(op.value for op in _ORDER)
            raise InvalidArgument(field, f"unknown operation {word.strip()!r} (known: {known})") from None
    return frozenset(found)


@dataclass(frozen=True)
class BankGrant:
    """One bank (or ``*``, every bank) and the operations allowed on it."""

    bank: str
    operations: frozenset[Operation] = DEFAULT_OPERATIONS

    def __str__(self) -> str:
        return f"{self.bank}:{operations_text(self.operations)}"

    @classmethod
    def parse(cls, text: str, field: str = "grant") -> BankGrant:
        """``bank``, ``bank:read+write`` or ``*:read``; INVALID_ARGUMENT naming ``field`` when malformed."""
        text = text.strip()
        bank, colon, tail = text.rpartition(":")
        if colon and _OPERATIONS_PART.fullmatch(tail):
            operations = parse_operations(tail, field)
        else:
            bank, operations = text, DEFAULT_OPERATIONS
        if bank != ALL_BANKS:
            check_bank_id(bank, field)
        return cls(bank, operations)


def merge(grants: Iterable[BankGrant]) -> tuple[BankGrant, ...]:
    """One grant per bank (operations of repeated banks joined), in bank order."""
    by_bank: dict[str, frozenset[Operation]] = {}
    for grant in grants:
        by_bank[grant.bank] = by_bank.get(grant.bank, frozenset()) | grant.operations
    return tuple(BankGrant(bank, ops) for bank, ops in sorted(by_bank.items()))


def operations_on(grants: Mapping[str, frozenset[Operation]], bank: str) -> frozenset[Operation]:
    """What ``grants`` (operations by bank, ``*`` included) allow on ``bank``."""
    return grants.get(bank, frozenset()) | grants.get(ALL_BANKS, frozenset())


def parse_time(text: str, field: str) -> datetime:
    """An ISO 8601 time (UTC when it names no zone); INVALID_ARGUMENT naming ``field`` otherwise."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgument(field, f"{text!r} is not an ISO 8601 time") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def parse_expiry(text: str, now: datetime, field: str = "expires") -> datetime:
    """``7d``, ``12h``, ``30m``, ``2w``, ``90s`` from ``now``, or an ISO 8601 time (UTC when it names no
    zone); INVALID_ARGUMENT naming ``field`` unless it is in the future."""
    text = text.strip()
    if match := _DURATION.fullmatch(text):
        amount = int(match.group(1)) * _UNITS[match.group(2)]
        if amount <= 0:
            raise InvalidArgument(field, "must be a positive duration")
        return now + timedelta(seconds=amount)
    try:
        moment = parse_time(text, field)
    except InvalidArgument:
        raise InvalidArgument(
            field, f"{text!r} is neither a duration (7d, 12h, 30m, 2w) nor an ISO 8601 time"
        ) from None
    if moment <= now:
        raise InvalidArgument(field, f"{moment.isoformat()} is not in the future")
    return moment


@dataclass(frozen=True)
class Scope:
    """What a token may do (:class:`~hindsight.runtime.auth.Caller` and stored tokens share it)."""

    grants: tuple[BankGrant, ...]
    admin: bool = False
    """An operator: every bank, every operation."""
    expires_at: datetime | None = None

    def operations(self, bank: str) -> frozenset[Operation]:
        if self.admin:
            return ALL_OPERATIONS
        return operations_on({g.bank: g.operations for g in self.grants}, bank)


def wider_than(child: Scope, parent: Scope, parent_name: str) -> str:
    """Why ``child`` would be wider than ``parent`` (naming the bank and the operation, or the expiry), or
    empty when it is not: an operator token needs an operator parent; each grant's bank needs ``admin`` in the
    parent and its operations among the parent's there; the expiry is no later than the parent's."""
    if child.admin and not parent.admin:
        return f"admin: only an operator may mint an operator token, and {parent_name!r} is not one"
    if not parent.admin:
        for grant in child.grants:
            held = parent.operations(grant.bank)
            if Operation.ADMIN not in held:
                return f"bank {grant.bank!r}: {parent_name!r} lacks operation 'admin' there"
            if wider := grant.operations - held:
                return (
                    f"bank {grant.bank!r}: {parent_name!r} lacks operation {operations_text(wider)!r} there"
                )
    limit = parent.expires_at
    if limit is not None and (child.expires_at is None or child.expires_at > limit):
        return f"expires: must be no later than {parent_name!r}'s own expiry, {limit.isoformat()}"
    return ""
