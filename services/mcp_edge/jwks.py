"""Public keys that sign JWT bearer tokens: a JWKS document read from a file or fetched from an issuer.

Only asymmetric signing keys are kept: a shared secret in a published key set would let anyone who reads
the set sign tokens. A file is re-read when it changes. A URL is fetched with a short timeout and cached;
it is fetched again when the cache is old, or when a token names a key id the cache lacks (the issuer
rotated its keys), at most once per ``refetch_interval``, so forged key ids cannot make the edge hammer
the issuer. A failed fetch keeps the keys fetched before.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx2
import jwt

from hindsight.runtime.settings import SettingsError

log = logging.getLogger(__name__)

SIGNING_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
"""Asymmetric JWS algorithms a token may be signed with (never ``none`` nor an HMAC)."""
FETCH_TIMEOUT = 3.0
"""Seconds a JWKS fetch may take: it runs while a client waits for its first answer."""
MAX_JWKS_BYTES = 1 << 20
FILE_CHECK_SECONDS = 1.0
"""How often a JWKS file is looked at for changes (one ``stat``)."""


class JwksError(ValueError):
    """A JWKS document that holds no usable signing key."""


@dataclass(frozen=True)
class SigningKey:
    """One public key of a key set."""

    kid: str | None
    algorithm: str | None
    """The algorithm the key set declares for it (``alg``); None: any of its key type."""
    key: Any
    """The public key, as :func:`jwt.decode` takes it."""


def parse_jwks(document: str | bytes) -> tuple[SigningKey, ...]:
    """The signing keys of a JWKS document; keys of other uses, types or algorithms are left out."""
    try:
        data = json.loads(document)
    except ValueError as exc:
        raise JwksError(f"not JSON: {exc}") from None
    entries = data.get("keys") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise JwksError("a JWKS document is an object with a 'keys' list")
    keys: list[SigningKey] = []
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
            continue
        try:
            parsed = jwt.PyJWK(entry)
        except jwt.PyJWTError as exc:
            log.info("JWKS key left out", extra={"kid": entry.get("kid"), "reason": str(exc)})
            continue
        if parsed.algorithm_name not in SIGNING_ALGORITHMS:
            log.info("JWKS key left out", extra={"kid": entry.get("kid"), "reason": "not an asymmetric key"})
            continue
        kid = entry.get("kid")
        declared = entry.get("alg")
        keys.append(
            SigningKey(
                kid=kid if isinstance(kid, str) else None,
                algorithm=declared if isinstance(declared, str) else None,
                key=parsed.key,
            )
        )
    if not keys:
        raise JwksError("no usable signing key (RSA, EC or Ed25519 public keys)")
    return tuple(keys)


def pick(keys: tuple[SigningKey, ...], kid: str | None) -> SigningKey | None:
    """The key ``kid`` names; a token without ``kid`` is accepted only when the set holds one key."""
    if kid is None:
        return keys[0] if len(keys) == 1 else None
    return next((key for key in keys if key.kid == kid), None)


class KeySource(Protocol):
    """Where the keys of JWTs come from."""

    async def key(self, kid: str | None) -> SigningKey | None:
        """The key that signed a token whose header names ``kid``; None when there is none."""
        ...


class JwksFile:
    """Keys from a JWKS file, re-read when its size or modification time changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._checked = time.monotonic()
        try:
            self._signature = self._stat()
            self._keys = parse_jwks(path.read_bytes())
        except (OSError, JwksError) as exc:
            raise SettingsError(f"HINDSIGHT_MCP_JWKS={str(path)!r}: {exc}") from None

    def _stat(self) -> tuple[int, int]:
        stat = self.path.stat()
        return stat.st_mtime_ns, stat.st_size

    def _reload_if_changed(self) -> None:
        self._checked = time.monotonic()
        try:
            signature = self._stat()
            if signature == self._signature:
                return
            keys = parse_jwks(self.path.read_bytes())
        except (OSError, JwksError) as exc:
            log.error("JWKS file not reloaded; keeping the keys read before", extra={"error": str(exc)})
            return
        self._keys, self._signature = keys, signature
        log.warning("JWKS file reloaded", extra={"keys": len(keys)})

    async def key(self, kid: str | None) -> SigningKey | None:
        if time.monotonic() - self._checked >= FILE_CHECK_SECONDS:
            self._reload_if_changed()
        found = pick(self._keys, kid)
        if found is None and kid is not None:  # a new key id: the file may have just been rotated
            self._reload_if_changed()
            found = pick(self._keys, kid)
        return found


class JwksUrl:
    """Keys fetched from an issuer's JWKS URL, cached for ``max_age`` seconds."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = FETCH_TIMEOUT,
        max_age: float = 300.0,
        refetch_interval: float = 10.0,
    ) -> None:
        self.url = url
        self.timeout = timeout
        self.max_age = max_age
        self.refetch_interval = refetch_interval
        self.fetches = 0
        """Fetches tried so far (the log and tests read it)."""
        self._keys: tuple[SigningKey, ...] = ()
        self._fetched = float("-inf")
        self._attempted = float("-inf")
        self._lock = asyncio.Lock()

    def _may_fetch(self) -> bool:
        return time.monotonic() - self._attempted >= self.refetch_interval

    async def key(self, kid: str | None) -> SigningKey | None:
        stale = time.monotonic() - self._fetched > self.max_age
        found = None if stale else pick(self._keys, kid)
        if found is not None:
            return found
        async with self._lock:  # one fetch at a time; the others then read what it brought
            found = pick(self._keys, kid)
            stale = time.monotonic() - self._fetched > self.max_age
            if (found is None or stale) and self._may_fetch():
                await self._fetch()
                found = pick(self._keys, kid)
        return found

    async def _fetch(self) -> None:
        self._attempted = time.monotonic()
        self.fetches += 1
        try:
            async with (
                httpx2.AsyncClient(timeout=self.timeout, follow_redirects=False) as client,
                client.stream("GET", self.url, headers={"accept": "application/json"}) as response,
            ):
                response.raise_for_status()
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_JWKS_BYTES:
                        raise JwksError(f"larger than {MAX_JWKS_BYTES} bytes")
            keys = parse_jwks(bytes(body))
        except (httpx2.HTTPError, JwksError) as exc:
            log.warning(
                "JWKS fetch failed; keeping the keys fetched before",
                extra={"url": self.url, "keys": len(self._keys), "error": str(exc) or type(exc).__name__},
            )
            return
        self._keys, self._fetched = keys, time.monotonic()
        log.info("JWKS fetched", extra={"url": self.url, "keys": len(keys)})


def key_source(jwks: str) -> KeySource:
    """The key source a ``HINDSIGHT_MCP_JWKS`` value names: an http(s) URL, else a file path."""
    if jwks.startswith(("http://", "https://")):
        return JwksUrl(jwks)
    return JwksFile(Path(jwks).expanduser())
