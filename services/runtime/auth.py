"""Credentials and the banks each grants: closed unless a deployment says otherwise.

Every service knows three kinds of credential:

- client tokens (``HINDSIGHT_TOKENS``, and ``HINDSIGHT_TOKENS_FILE``, reloaded when it changes), each granting
  a list of banks or ``*``; written ``token=bank-a,bank-b``, ``admin:token=*`` for an operator, and with
  ``sha256:<hex>`` in place of the token so a deployment's config need not hold the secret itself;
- the mesh credential (``HINDSIGHT_INTERNAL_TOKEN``), which every layer presents when it calls another and
  accepts from the others, whatever the client tokens say, so no setting of those can break the mesh;
- the operator's token (``HINDSIGHT_ADMIN_TOKEN``), every bank plus the admin-only operations.

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
from pathlib import Path

from hindsight.runtime.errors import PermissionDenied, Unauthenticated
from hindsight.runtime.settings import ServerSettings, SettingsError

log = logging.getLogger(__name__)

ALL_BANKS = "*"
INTERNAL = "internal"
"""Name of the mesh credential's caller."""
_DIGEST = re.compile(r"sha256:([0-9a-fA-F]{64})")
_ROLES = ("admin", "agent")
_RELOAD_CHECK_SECONDS = 1.0
"""How often a tokens file is looked at for changes (one ``stat`` per interval, on the calling thread)."""


def token_digest(token: str) -> str:
    """The hex SHA-256 of a token: how tokens are stored and compared."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class Caller:
    """Who a credential belongs to, and what it may use."""

    name: str
    """A label of the credential for logs and audit (never the secret)."""
    banks: frozenset[str]
    """Bank ids it grants, or ``{"*"}`` for every bank."""
    admin: bool = False
    """Operator: every bank, and the admin-only operations."""

    @property
    def all_banks(self) -> bool:
        return ALL_BANKS in self.banks

    def may_use(self, bank_id: str) -> bool:
        """Whether this caller may read and write ``bank_id``."""
        return self.all_banks or bank_id in self.banks

    def require(self, bank_id: str) -> None:
        """Raise PERMISSION_DENIED unless this caller may use ``bank_id``."""
        if not self.may_use(bank_id):
            raise PermissionDenied(f"credential {self.name!r} does not grant bank {bank_id!r}")

    def require_all_banks(self, what: str) -> None:
        """Raise PERMISSION_DENIED unless this caller grants every bank (``what`` spans banks)."""
        if not self.all_banks:
            raise PermissionDenied(f"{what} needs a credential that grants every bank")

    def require_admin(self, what: str) -> None:
        """Raise PERMISSION_DENIED unless this caller is an operator."""
        if not self.admin:
            raise PermissionDenied(f"{what} needs the admin token")


OPEN_CALLER = Caller(name="open", banks=frozenset({ALL_BANKS}), admin=True)
"""Every caller of a service whose authentication is off."""


def parse_entries(spec: str, source: str = "HINDSIGHT_TOKENS") -> dict[str, Caller]:
    """Parse ``'tok1=bank-a,bank-b;admin:tok2=*;sha256:<hex>=bank-c'`` (``;`` or newlines between entries,
    ``#`` starts a comment) into callers keyed by token digest."""
    callers: dict[str, Caller] = {}
    lines = (line.split("#", 1)[0] for line in spec.splitlines())
    for entry in filter(None, (part.strip() for line in lines for part in line.split(";"))):
        credential, sep, banks = entry.rpartition("=")
        role, colon, token = credential.partition(":")
        if not colon or role not in _ROLES:
            role, token = "agent", credential
        token = token.strip()
        names = frozenset(b.strip() for b in banks.split(",") if b.strip())
        if not sep or not token or not names:
            raise SettingsError(f"{source}: each entry must look like 'token=bank1,bank2' or 'admin:token=*'")
        if role == "admin" and ALL_BANKS not in names:
            raise SettingsError(f"{source}: an admin token must grant every bank ('admin:token=*')")
        hashed = _DIGEST.fullmatch(token)
        digest = hashed.group(1).lower() if hashed else token_digest(token)
        callers[digest] = Caller(name=f"{role}:{digest[:8]}", banks=names, admin=role == "admin")
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
        return self._callers.get(digest)

    def authenticate(self, token: str | None) -> Caller:
        """The caller ``token`` belongs to; UNAUTHENTICATED when it is missing or unknown."""
        if self.open:
            return OPEN_CALLER
        if not token:
            raise Unauthenticated("missing bearer token")
        caller = self._lookup(token)
        if caller is None:
            raise Unauthenticated("unknown bearer token")
        return caller

    def check(self, token: str | None, bank_id: str) -> Caller:
        """The caller, after checking that it may use ``bank_id``."""
        caller = self.authenticate(token)
        caller.require(bank_id)
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
        callers[digest] = Caller(name="admin", banks=frozenset({ALL_BANKS}), admin=True)
    if internal_token:
        callers[token_digest(internal_token)] = Caller(name=INTERNAL, banks=frozenset({ALL_BANKS}))
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
