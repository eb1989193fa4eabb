"""Bearer tokens that grant banks.

A token maps to a set of banks (or ``*`` for all). With no tokens configured the service is open,
which is the embedded default on loopback; any deployment that listens beyond loopback sets tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hindsight.runtime.errors import PermissionDenied, Unauthenticated
from hindsight.runtime.settings import SettingsError

ALL_BANKS = "*"


@dataclass(frozen=True)
class Grants:
    """Which banks each token may read and write."""

    by_token: dict[str, frozenset[str]] = field(default_factory=dict)

    @property
    def open(self) -> bool:
        """True when no tokens are configured: every caller may use every bank."""
        return not self.by_token

    @classmethod
    def parse(cls, spec: str) -> Grants:
        """Parse ``'tok1=bank-a,bank-b;tok2=*'``."""
        grants: dict[str, frozenset[str]] = {}
        for entry in filter(None, (part.strip() for part in spec.split(";"))):
            token, sep, banks = entry.partition("=")
            names = frozenset(b.strip() for b in banks.split(",") if b.strip())
            if not sep or not token.strip() or not names:
                raise SettingsError("HINDSIGHT_TOKENS: each entry must look like 'token=bank1,bank2'")
            grants[token.strip()] = names
        return cls(grants)

    def check(self, token: str | None, bank_id: str) -> None:
        """Raise unless ``token`` grants ``bank_id`` (or access is open)."""
        if self.open:
            return
        if not token:
            raise Unauthenticated("missing bearer token")
        banks = self.by_token.get(token)
        if banks is None:
            raise Unauthenticated("unknown bearer token")
        if ALL_BANKS not in banks and bank_id not in banks:
            raise PermissionDenied(f"token does not grant bank {bank_id!r}")

    def authenticate(self, token: str | None) -> frozenset[str]:
        """The banks ``token`` grants; raises when tokens are required and it grants none."""
        if self.open:
            return frozenset({ALL_BANKS})
        if not token or token not in self.by_token:
            raise Unauthenticated("missing or unknown bearer token")
        return self.by_token[token]


def bearer(metadata_value: str | None) -> str | None:
    """The token in an ``authorization: Bearer <token>`` value."""
    if not metadata_value:
        return None
    scheme, _, token = metadata_value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None
