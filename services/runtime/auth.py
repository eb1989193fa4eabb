"""Credentials and the banks each grants: closed unless a deployment says otherwise.

Every service knows three kinds of credential:

- client tokens (``HINDSIGHT_TOKENS``, and ``HINDSIGHT_TOKENS_FILE``, reloaded when it changes), each granting
  a list of banks or ``*`` with operations (:mod:`.permissions`); written ``token=bank-a,bank-b`` (read and
  write), ``token=bank-a:read,bank-b:read+write+forget expires=2026-01-01T00:00:00Z``, ``admin:token=*`` for
  an operator, and with ``sha256:<hex>`` in place of the token so a deployment's config need not hold the
  secret itself;
- managed tokens (``hindsight token create``), kept by the episodic layer and looked up, after the static
  ones, in a :class:`TokenSource` the edge refreshes (revocation and expiry hold within a second);
- the mesh credential (``HINDSIGHT_INTERNAL_TOKEN``), which every layer presents when it calls another and
  accepts from the others, whatever the client tokens say, so no setting of those can break the mesh;
- the operator's token (``HINDSIGHT_ADMIN_TOKEN``), every bank plus the admin-only operations.

Which of them a method serves is its role (:mod:`hindsight.runtime.roles`): the layers' ports serve only
the mesh credential and the admin token; client tokens are for the edge.

Tokens are looked up by their SHA-256 digest, so a lookup's timing says nothing about the secret, and the
secret is never kept in memory longer than a request. With no credential at all a service refuses to start
(see :func:`grants_for`); ``HINDSIGHT_AUTH=off`` opens a service on loopback only, for tests and development.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from hindsight.runtime.errors import HindsightError, PermissionDenied, Unauthenticated
from hindsight.runtime.permissions import (
    ALL_BANKS,
    ALL_OPERATIONS,
    DEFAULT_OPERATIONS,
    BankGrant,
    Operation,
    Scope,
    merge,
    operations_on,
    parse_time,
)
from hindsight.runtime.settings import ServerSettings, SettingsError

log = logging.getLogger(__name__)

INTERNAL = "internal"
"""Name of the mesh credential's caller."""
_DIGEST = re.compile(r"sha256:([0-9a-fA-F]{64})")
_ROLES = ("admin", "agent")
_EXPIRES = re.compile(r"\s+expires=(\S+)$")
_RELOAD_CHECK_SECONDS = 1.0
"""How often a tokens file is looked at for changes (one ``stat`` per interval, on the calling thread)."""


def token_digest(token: str) -> str:
    """The hex SHA-256 of a token: how tokens are stored and compared."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class Caller:
    """Who a credential belongs to, and what it may do on which bank."""

    name: str
    """A label of the credential for logs and audit (never the secret)."""
    banks: frozenset[str] = frozenset()
    """Bank ids it grants with the default operations (read and write), or ``{"*"}``; after construction,
    every bank id it grants anything on."""
    admin: bool = False
    """Operator: every bank, every operation, and the admin-only methods."""
    mesh: bool = False
    """The mesh credential: what the layers and the edge present to each other (see :mod:`.roles`)."""
    grants: tuple[BankGrant, ...] = ()
    """Banks with their operations (joined with ``banks``; after construction, one per bank)."""
    expires_at: datetime | None = None
    """When the credential stops working; None: never."""
    managed: bool = False
    """A managed token (the episodic layer's registry), not one of the service's settings."""
    revoked: bool = False
    """A managed token that was revoked (kept, so that its refusal can say so)."""
    _operations: dict[str, frozenset[Operation]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        every = ALL_OPERATIONS if self.admin or self.mesh else None
        joined = merge([*(BankGrant(b, every or DEFAULT_OPERATIONS) for b in self.banks), *self.grants])
        if every is not None:
            joined = merge([*joined, BankGrant(ALL_BANKS, every)])
        object.__setattr__(self, "grants", joined)
        object.__setattr__(self, "banks", frozenset(g.bank for g in joined))
        object.__setattr__(self, "_operations", {g.bank: g.operations for g in joined})

    @property
    def all_banks(self) -> bool:
        return ALL_BANKS in self.banks

    @property
    def scope(self) -> Scope:
        """What this credential may do, as a token it mints is bounded by."""
        return Scope(self.grants, self.admin or self.mesh, self.expires_at)

    def operations(self, bank_id: str) -> frozenset[Operation]:
        """What this caller may do on ``bank_id``."""
        return operations_on(self._operations, bank_id)

    def may(self, bank_id: str, operation: Operation) -> bool:
        """Whether this caller may do ``operation`` on ``bank_id``."""
        return operation in self.operations(bank_id)

    def may_use(self, bank_id: str) -> bool:
        """Whether this caller may do anything at all on ``bank_id``."""
        return bool(self.operations(bank_id))

    def require(self, bank_id: str, operation: Operation) -> None:
        """Raise PERMISSION_DENIED, naming the bank and the operation, unless this caller may do it."""
        if not self.may(bank_id, operation):
            raise PermissionDenied(
                f"credential {self.name!r} does not grant operation {operation.value!r} on bank {bank_id!r}"
            )

    def require_all_banks(self, what: str, operation: Operation = Operation.ADMIN) -> None:
        """Raise PERMISSION_DENIED unless this caller may do ``operation`` on every bank (``what`` spans
        banks)."""
        if operation not in self.operations(ALL_BANKS) or not self.all_banks:
            raise PermissionDenied(
                f"{what} needs a credential that grants operation {operation.value!r} on every bank"
            )

    def require_admin(self, what: str) -> None:
        """Raise PERMISSION_DENIED unless this caller is an operator."""
        if not self.admin:
            raise PermissionDenied(f"{what} needs the admin token")

    def expired(self, now: float) -> bool:
        """Whether the credential has stopped working at ``now`` (seconds since the epoch)."""
        return self.expires_at is not None and self.expires_at.timestamp() <= now


OPEN_CALLER = Caller(name="open", admin=True, mesh=True)
"""Every caller of a service whose authentication is off."""


def parse_entries(spec: str, source: str = "HINDSIGHT_TOKENS") -> dict[str, Caller]:
    """Parse ``'tok1=bank-a,bank-b:read;admin:tok2=*;sha256:<hex>=bank-c expires=2026-01-01T00:00:00Z'``
    (``;`` or newlines between entries, ``#`` starts a comment) into callers keyed by token digest."""
    callers: dict[str, Caller] = {}
    lines = (line.split("#", 1)[0] for line in spec.splitlines())
    for entry in filter(None, (part.strip() for line in lines for part in line.split(";"))):
        expires_at = None
        if match := _EXPIRES.search(entry):
            entry = entry[: match.start()]
            try:
                expires_at = parse_time(match.group(1), "expires")
            except HindsightError as exc:
                raise SettingsError(f"{source}: {exc}") from None
        credential, sep, banks = entry.rpartition("=")
        role, colon, token = credential.partition(":")
        if not colon or role not in _ROLES:
            role, token = "agent", credential
        token = token.strip()
        try:
            grants = tuple(BankGrant.parse(b, "grant") for b in banks.split(",") if b.strip())
        except HindsightError as exc:
            raise SettingsError(f"{source}: {exc}") from None
        if not sep or not token or not grants:
            raise SettingsError(
                f"{source}: each entry must look like 'token=bank1,bank2:read+write' or 'admin:token=*'"
            )
        if role == "admin" and ALL_BANKS not in {g.bank for g in grants}:
            raise SettingsError(f"{source}: an admin token must grant every bank ('admin:token=*')")
        hashed = _DIGEST.fullmatch(token)
        digest = hashed.group(1).lower() if hashed else token_digest(token)
        callers[digest] = Caller(
            name=f"{role}:{digest[:8]}", grants=grants, admin=role == "admin", expires_at=expires_at
        )
    return callers


@dataclass
class _TokensFile:
    """A tokens file and what it said when last read; re-read when its size or mtime changes."""

    path: Path
    callers: dict[str, Caller] = field(default_factory=dict)
    signature: tuple[int, int] | None = None
    checked: float = float("-inf")
    lock: threading.Lock = field(default_factory=threading.Lock)

    def current(self) -> dict[str, Caller]:
        now = time.monotonic()
        if now - self.checked < _RELOAD_CHECK_SECONDS:
            return self.callers
        with self.lock:
            self.checked = now
            self._reload_if_changed()
        return self.callers

    def _reload_if_changed(self) -> None:
        try:
            stat = self.path.stat()
        except OSError as exc:
            if self.signature is not None:
                log.error("tokens file unreadable; keeping the tokens read before", extra={"error": str(exc)})
            return
        signature = (stat.st_mtime_ns, stat.st_size)
        if signature == self.signature:
            return
        try:
            callers = parse_entries(self.path.read_text(), source=str(self.path))
        except (OSError, SettingsError) as exc:
            log.error("tokens file not reloaded; keeping the tokens read before", extra={"error": str(exc)})
            return
        first = self.signature is None
        self.callers, self.signature = callers, signature
        if not first:
            log.warning("tokens file reloaded", extra={"tokens": len(callers)})


class TokenSource(Protocol):
    """Credentials kept outside the service's settings (managed tokens), looked up after the static ones."""

    def lookup(self, digest: str) -> Caller | None:
        """The caller of the token with this digest (revoked ones included, so the refusal can say so);
        None when unknown. Raises (UNAVAILABLE) when the source cannot vouch for what it holds."""
        ...

    def refused(self, caller: Caller, reason: str) -> None:
        """Told of each presentation of a token it knows that is refused (revoked, expired)."""
        ...

    async def start(self) -> None:
        """Load what it holds and keep it fresh (called by each front that attaches it; idempotent)."""
        ...


class Grants:
    """Which credentials a service accepts, and the banks each grants."""

    def __init__(
        self,
        callers: Mapping[str, Caller] | None = None,
        *,
        tokens_file: Path | None = None,
        open: bool = False,
    ) -> None:
        self._callers = dict(callers or {})
        self._file = _TokensFile(tokens_file) if tokens_file is not None else None
        if self._file is not None:
            self._file.current()
        self.open = open
        """Authentication off: every caller may use every bank (only on loopback; see :func:`grants_for`)."""
        self.source: TokenSource | None = None
        """Managed tokens, looked up after the static ones (the edge attaches its registry)."""

    def with_source(self, source: TokenSource) -> Grants:
        """These grants, also accepting the tokens ``source`` knows (the static ones win)."""
        self.source = source
        return self

    @classmethod
    def parse(cls, spec: str) -> Grants:
        """Grants of client tokens written as in ``HINDSIGHT_TOKENS``."""
        return cls(parse_entries(spec))

    @classmethod
    def off(cls) -> Grants:
        """Authentication off (tests and loopback development)."""
        return cls(open=True)

    @property
    def empty(self) -> bool:
        """No credential configured at all (a tokens file counts even while it is empty)."""
        return not self._callers and self._file is None

    def _lookup(self, token: str) -> Caller | None:
        digest = token_digest(token)
        if self._file is not None and (caller := self._file.current().get(digest)):
            return caller
        if caller := self._callers.get(digest):
            return caller
        return self.source.lookup(digest) if self.source is not None else None

    def authenticate(self, token: str | None) -> Caller:
        """The caller ``token`` belongs to; UNAUTHENTICATED when missing, unknown, expired or revoked."""
        if self.open:
            return OPEN_CALLER
        if not token:
            raise Unauthenticated("missing bearer token")
        caller = self._lookup(token)
        if caller is None:
            raise Unauthenticated("unknown bearer token")
        reason = ""
        if caller.revoked:
            reason = f"token {caller.name!r} was revoked"
        elif caller.expired(time.time()):
            assert caller.expires_at is not None
            reason = f"token {caller.name!r} expired at {caller.expires_at.isoformat()}"
        if reason:
            if caller.managed and self.source is not None:
                self.source.refused(caller, reason)
            raise Unauthenticated(reason)
        return caller

    def check(self, token: str | None, bank_id: str, operation: Operation = Operation.READ) -> Caller:
        """The caller, after checking that it may do ``operation`` on ``bank_id``."""
        caller = self.authenticate(token)
        caller.require(bank_id, operation)
        return caller


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or name a server binds) is reachable only from this machine."""
    if host in {"localhost", "localhost.localdomain"}:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def grants_for(
    tokens: str = "",
    tokens_file: str = "",
    internal_token: str = "",
    admin_token: str = "",
    auth: str = "required",
    host: str = "127.0.0.1",
) -> Grants:
    """The grants a service enforces, from its settings; refuses (SettingsError) to run open by accident.

    ``auth``: ``required`` (the default) needs at least one credential; ``off`` accepts every caller and is
    refused unless ``host`` is loopback.
    """
    if auth not in {"required", "off"}:
        raise SettingsError(f"HINDSIGHT_AUTH={auth!r}: must be 'required' or 'off'")
    if auth == "off":
        if not is_loopback(host):
            raise SettingsError(
                f"HINDSIGHT_AUTH=off is refused on {host}: authentication may be off only on loopback"
            )
        return Grants.off()
    callers = parse_entries(tokens)
    if admin_token:
        digest = token_digest(admin_token)
        callers[digest] = Caller(name="admin", admin=True)
    if internal_token:
        callers[token_digest(internal_token)] = Caller(name=INTERNAL, mesh=True)
    path = Path(tokens_file).expanduser() if tokens_file else None
    if path is not None and not path.is_file():
        raise SettingsError(f"HINDSIGHT_TOKENS_FILE={tokens_file!r} is not a readable file")
    grants = Grants(callers, tokens_file=path)
    if grants.empty:
        raise SettingsError(
            "no credential configured: set HINDSIGHT_TOKENS, HINDSIGHT_TOKENS_FILE or "
            "HINDSIGHT_INTERNAL_TOKEN "
            "(HINDSIGHT_AUTH=off opens a service on loopback only)"
        )
    return grants


def bearer(metadata_value: str | None) -> str | None:
    """The token in an ``authorization: Bearer <token>`` value."""
    if not metadata_value:
        return None
    scheme, _, token = metadata_value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def server_grants(settings: ServerSettings) -> Grants:
    """The grants a service enforces, from its :class:`ServerSettings`."""
    return grants_for(
        tokens=settings.tokens,
        tokens_file=settings.tokens_file,
        internal_token=settings.internal_token,
        admin_token=settings.admin_token,
        auth=settings.auth,
        host=settings.host,
    )
