"""Who calls over MCP HTTP: bearer tokens checked the way the MCP authorization spec asks.

The SDK does the protocol: a request without a good token gets 401 with ``WWW-Authenticate: Bearer ...
resource_metadata="..."``, the RFC 9728 protected resource metadata is served, and each request's token is
in its auth context while a tool runs. This module tells the SDK which tokens are good and whom they belong
to: the static tokens the service's grants know and, when keys are configured, JWTs from an issuer, with
the banks they grant in a claim.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import jwt
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from pydantic import ConfigDict

from hindsight.mcp_edge.endpoint import HttpEndpoint
from hindsight.mcp_edge.jwks import SIGNING_ALGORITHMS, KeySource, key_source
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime.auth import Caller, Grants, token_digest
from hindsight.runtime.errors import HindsightError
from hindsight.runtime.permissions import BankGrant

log = logging.getLogger(__name__)

CLOCK_LEEWAY_SECONDS = 30
"""Clock skew allowed between the issuer and the edge when checking ``nbf`` and ``iat``."""
NAME_LENGTH = 80


class CallerToken(AccessToken):
    """An access token as the SDK keeps it, with the caller it belongs to (the secret itself is not kept)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    caller: Caller


def current_caller() -> Caller | None:
    """The caller the bearer token of the HTTP request being served belongs to; None outside one."""
    token = get_access_token()
    return token.caller if isinstance(token, CallerToken) else None


@dataclass(frozen=True)
class JwtVerifier:
    """Checks a JWT's signature, ``exp``/``nbf``, issuer and audience, and reads the banks it grants."""

    keys: KeySource
    audience: str
    issuer: str = ""
    banks_claim: str = "hindsight_banks"
    admin_claim: str = "hindsight_admin"

    async def verify(self, token: str) -> CallerToken | None:
        """The caller ``token`` names, or None (logged with the reason) when it is not a good JWT."""
        try:
            return await self._verify(token)
        except TokenRefused as exc:
            log.info("bearer token refused", extra={"reason": str(exc)})
            return None

    async def _verify(self, token: str) -> CallerToken:
        try:
            header = jwt.get_unverified_header(token)
            algorithm, kid = header.get("alg"), header.get("kid")
            if not isinstance(algorithm, str) or algorithm not in SIGNING_ALGORITHMS:
                raise TokenRefused(f"algorithm {algorithm!r} is not accepted")
            key = await self.keys.key(kid if isinstance(kid, str) else None)
            if key is None:
                raise TokenRefused(f"no key with id {kid!r}")
            if key.algorithm is not None and key.algorithm != algorithm:
                raise TokenRefused(f"key {kid!r} signs with {key.algorithm}, not {algorithm}")
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=[algorithm],
                audience=self.audience,
                issuer=self.issuer or None,
                leeway=CLOCK_LEEWAY_SECONDS,
                options={"require": ["exp"]},
            )
        except (jwt.PyJWTError, TypeError, ValueError) as exc:  # a key of another type raises TypeError
            raise TokenRefused(f"{type(exc).__name__}: {exc}") from None
        caller = self._caller(claims)
        audience = claims.get("aud")
        return CallerToken(
            token=f"sha256:{token_digest(token)}",
            client_id=str(claims.get("azp") or claims.get("client_id") or claims.get("sub") or "jwt"),
            scopes=_scopes(claims),
            expires_at=int(claims["exp"]),
            resource=self.audience if isinstance(audience, list) else str(audience),
            subject=str(claims["sub"]) if "sub" in claims else None,
            claims={"iss": claims["iss"]} if "iss" in claims else None,
            caller=caller,
        )

    def _caller(self, claims: dict[str, Any]) -> Caller:
        """The caller the claims describe; a token without the banks claim grants no bank."""
        granted = claims.get(self.banks_claim, [])
        if isinstance(granted, str):
            granted = [granted]
        if not isinstance(granted, list) or not all(isinstance(item, str) for item in granted):
            raise TokenRefused(f"claim {self.banks_claim!r} is neither a bank id nor a list of them")
        admin = claims.get(self.admin_claim) is True
        try:  # each entry as a tokens file writes it: "bank", "bank:read", "*:read+write+forget"
            grants = tuple(BankGrant.parse(item, self.banks_claim) for item in granted if item.strip())
        except HindsightError as exc:
            raise TokenRefused(f"claim {exc}") from None
        who = str(claims.get("sub") or claims.get("azp") or "?")[:NAME_LENGTH]
        return Caller(name=f"jwt:{who}", grants=() if admin else grants, admin=admin)


def _scopes(claims: dict[str, Any]) -> list[str]:
    """OAuth scopes of a JWT: ``scope`` (space-separated, RFC 9068) or ``scp`` (a list or a string)."""
    value = claims.get("scope", claims.get("scp", ""))
    if isinstance(value, str):
        return value.split()
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


class TokenRefused(Exception):
    """A bearer token that names no caller; the message says why (never the token)."""


@dataclass(frozen=True)
class EdgeTokenVerifier:
    """The SDK's token verifier: a static token the grants know, else a JWT when keys are configured."""

    grants: Grants | None
    """Static tokens; None when they are off (authentication off, JWTs only)."""
    jwt: JwtVerifier | None = None
    scopes: tuple[str, ...] = ()
    """Scopes a static token carries: every scope the endpoint requires (an operator issued it)."""

    async def verify_token(self, token: str) -> AccessToken | None:
        if self.grants is not None:
            try:
                caller = self.grants.authenticate(token)
            except HindsightError:
                pass
            else:
                return CallerToken(
                    token=f"sha256:{token_digest(token)}",
                    client_id=caller.name,
                    scopes=list(self.scopes),
                    caller=caller,
                )
        if self.jwt is not None and token.count(".") == 2:
            return await self.jwt.verify(token)
        log.info("bearer token refused", extra={"reason": "unknown token"})
        return None


@dataclass(frozen=True)
class HttpAuth:
    """What the SDK needs to authenticate MCP HTTP: the token verifier and its auth settings."""

    verifier: EdgeTokenVerifier
    settings: AuthSettings


def http_auth_for(settings: EdgeSettings, grants: Grants, endpoint: HttpEndpoint) -> HttpAuth | None:
    """How MCP HTTP at ``endpoint`` authenticates; None when it does not (authentication off, no JWTs)."""
    jwt_verifier = None
    if settings.mcp_jwks:
        jwt_verifier = JwtVerifier(
            keys=key_source(settings.mcp_jwks),
            audience=settings.mcp_jwt_audience or endpoint.public_url,
            issuer=settings.mcp_jwt_issuer,
            banks_claim=settings.mcp_jwt_banks_claim,
            admin_claim=settings.mcp_jwt_admin_claim,
        )
    static = None if grants.open else grants
    if static is None and jwt_verifier is None:
        return None
    scopes = tuple(settings.mcp_scopes)
    return HttpAuth(
        verifier=EdgeTokenVerifier(grants=static, jwt=jwt_verifier, scopes=scopes),
        settings=AuthSettings(
            issuer_url=settings.mcp_jwt_issuer or endpoint.public_origin,  # type: ignore[arg-type]
            resource_server_url=endpoint.public_url,  # type: ignore[arg-type]
            required_scopes=list(scopes) or None,
            # The verifier checks a JWT's audience itself (it may differ from the URL); static tokens have
            # none.
            validate_token_resource=False,
        ),
    )
