"""Managed tokens as the edge and the episodic layer both see them: the record, its name rule, and its
grants in and out of protobuf (protobuf stays at the boundaries; the rest works on these dataclasses)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.permissions import (
    ALL_BANKS,
    DEFAULT_OPERATIONS,
    BankGrant,
    Operation,
    Scope,
    merge,
)
from hindsight.runtime.records import from_timestamp, to_timestamp
from hindsight.runtime.validation import check_bank_id

_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
RESERVED_NAMES = frozenset({"admin", "agent", "internal", "open", "stdio", "edge", "anonymous"})
"""Names the service's own credentials and audit entries already use."""
MAX_GRANTS = 64

_TO_PB = {
    Operation.READ: episodic_pb2.OPERATION_READ,
    Operation.WRITE: episodic_pb2.OPERATION_WRITE,
    Operation.FORGET: episodic_pb2.OPERATION_FORGET,
    Operation.ADMIN: episodic_pb2.OPERATION_ADMIN,
}
_FROM_PB = {number: operation for operation, number in _TO_PB.items()}


def check_token_name(name: str, field: str = "name") -> str:
    """1-64 characters of lower-case letters, digits and ``._-``, starting with a letter or digit, and not
    a name the service's own credentials use."""
    if not name:
        raise InvalidArgument(field, "is required")
    if not _NAME.fullmatch(name):
        raise InvalidArgument(
            field,
            "must be 1-64 characters of lower-case letters, digits and ._- starting with a letter or digit",
        )
    if name in RESERVED_NAMES:
        raise InvalidArgument(field, f"{name!r} is reserved")
    return name


def grants_from_pb(
    messages: Iterable[episodic_pb2.TokenGrant], field: str = "grants"
) -> tuple[BankGrant, ...]:
    """Checked grants (an empty operation list means read and write), repeated banks joined; each problem
    names its field (``grants[2].operations[0]``)."""
    grants = []
    for index, message in enumerate(messages):
        at = f"{field}[{index}]"
        if index >= MAX_GRANTS:
            raise InvalidArgument(field, f"at most {MAX_GRANTS} grants")
        if message.bank_id != ALL_BANKS:
            check_bank_id(message.bank_id, f"{at}.bank_id")
        operations = set()
        for position, number in enumerate(message.operations):
            if number not in _FROM_PB:
                raise InvalidArgument(
                    f"{at}.operations[{position}]", f"unknown operation {number} (read, write, forget, admin)"
                )
            operations.add(_FROM_PB[number])
        grants.append(BankGrant(message.bank_id, frozenset(operations) or DEFAULT_OPERATIONS))
    return merge(grants)


def grants_to_pb(grants: Iterable[BankGrant]) -> list[episodic_pb2.TokenGrant]:
    """Grants as the contracts carry them, operations in their canonical order."""
    return [
        episodic_pb2.TokenGrant(
            bank_id=grant.bank, operations=[_TO_PB[op] for op in Operation if op in grant.operations]
        )
        for grant in grants
    ]


@dataclass(frozen=True)
class ManagedToken:
    """A managed token as stored (never its secret; the digest only where the edge's cache needs it)."""

    name: str
    grants: tuple[BankGrant, ...]
    admin: bool = False
    expires_at: datetime | None = None
    created_at: datetime | None = None
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None
    parent: str = ""
    created_by: str = ""

    @property
    def scope(self) -> Scope:
        return Scope(self.grants, self.admin, self.expires_at)

    def within(self, banks: Sequence[str]) -> bool:
        """Whether every grant names one of ``banks`` (``*`` among them: any grant) and it is no operator
        token: what a token with ``admin`` on ``banks`` may list and revoke."""
        if self.admin:
            return False
        return ALL_BANKS in banks or all(grant.bank in banks for grant in self.grants)

    def to_pb(self) -> episodic_pb2.ManagedToken:
        return episodic_pb2.ManagedToken(
            name=self.name,
            grants=grants_to_pb(self.grants),
            admin=self.admin,
            expires_at=to_timestamp(self.expires_at),
            created_at=to_timestamp(self.created_at),
            last_used_at=to_timestamp(self.last_used_at),
            revoked_at=to_timestamp(self.revoked_at),
            parent=self.parent,
            created_by=self.created_by,
        )

    @classmethod
    def from_pb(cls, message: episodic_pb2.ManagedToken) -> ManagedToken:
        def moment(name: str) -> datetime | None:
            return from_timestamp(getattr(message, name), name) if message.HasField(name) else None

        return cls(
            name=message.name,
            grants=grants_from_pb(message.grants),
            admin=message.admin,
            expires_at=moment("expires_at"),
            created_at=moment("created_at"),
            last_used_at=moment("last_used_at"),
            revoked_at=moment("revoked_at"),
            parent=message.parent,
            created_by=message.created_by,
        )
