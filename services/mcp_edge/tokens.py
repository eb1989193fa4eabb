"""Minting, listing and revoking managed tokens for a caller, the same for gRPC and MCP.

An operator (the admin token, an ``admin:`` static token, an operator managed token) may do anything. A token
with ``admin`` on banks may mint tokens for those banks only, never wider than itself: each grant's operations
among its own there, no operator token, and an expiry no later than its own (its own by default). It lists and
revokes the tokens that lie within the banks it administers. A token minted by a managed token is its child:
revoking the parent revokes it. The episodic layer stores the digest only and audits each change in the same
transaction; this edge applies the change to its own copy before answering, other edges within a second.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.runtime.auth import Caller, token_digest
from hindsight.runtime.errors import InvalidArgument, PermissionDenied
from hindsight.runtime.interceptors import acting_as
from hindsight.runtime.permissions import ALL_BANKS, BankGrant, Operation, Scope, wider_than
from hindsight.runtime.records import to_timestamp, utcnow
from hindsight.runtime.token_records import ManagedToken, check_token_name, grants_to_pb
from hindsight.runtime.validation import check_limit

SECRET_PREFIX = "hst_"
"""Marks a managed token's secret (so a leaked one is recognisable to secret scanners)."""
DEFAULT_PAGE, MAX_PAGE = 100, 1000


@dataclass(frozen=True)
class Minted:
    """A new token and its secret (shown once)."""

    token: ManagedToken
    secret: str


def administered(caller: Caller, what: str) -> list[str]:
    """The banks whose tokens ``caller`` manages: none to say (every token) for an operator, else those it
    holds ``admin`` on; PERMISSION_DENIED when there are none."""
    if caller.admin or caller.mesh:
        return []
    banks = sorted(grant.bank for grant in caller.grants if Operation.ADMIN in grant.operations)
    if not banks:
        raise PermissionDenied(
            f"{what} needs operation 'admin' on a bank (credential {caller.name!r} has none)"
        )
    return banks


async def create_token(
    engine: MemoryEngine,
    caller: Caller,
    name: str,
    grants: tuple[BankGrant, ...],
    admin: bool = False,
    expires_at: datetime | None = None,
) -> Minted:
    """Mint a token for ``caller`` (see the module docstring); INVALID_ARGUMENT naming the field,
    ALREADY_EXISTS for a name in use, PERMISSION_DENIED naming the bank and operation that would be wider
    than the caller."""
    administered(caller, "CreateToken")  # a credential that administers nothing is refused before all else
    check_token_name(name)
    if not grants and not admin:
        raise InvalidArgument("grants", "name at least one bank (or make an operator token)")
    if expires_at is not None and expires_at <= utcnow():
        raise InvalidArgument("expires_at", f"{expires_at.isoformat()} is not in the future")
    if expires_at is None and not (caller.admin or caller.mesh):
        expires_at = caller.expires_at  # a child lives no longer than the token that minted it
    wanted = Scope(() if admin else grants, admin, expires_at)
    if reason := wider_than(wanted, caller.scope, caller.name):
        raise PermissionDenied(f"the new token may not be wider than the credential minting it: {reason}")
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    request = episodic_pb2.CreateTokenRequest(
        name=name,
        digest=token_digest(secret),
        grants=grants_to_pb(wanted.grants),
        admin=admin,
        expires_at=to_timestamp(expires_at),
        parent=caller.name if caller.managed else "",
        created_by=caller.name,
    )
    with acting_as(caller.name):
        reply = await engine.clients.episodic.call("CreateToken", request, engine.settings.write_timeout)
    await _refresh(engine)
    return Minted(ManagedToken.from_pb(reply.token), secret)


async def list_tokens(
    engine: MemoryEngine,
    caller: Caller,
    include_revoked: bool = False,
    page_size: int = 0,
    page_token: str = "",
) -> tuple[list[ManagedToken], str]:
    """The tokens ``caller`` manages, by name, a page at a time (never a secret)."""
    request = episodic_pb2.ListTokensRequest(
        include_revoked=include_revoked,
        within_bank_ids=administered(caller, "ListTokens"),
        page_size=check_limit(page_size, "page_size", DEFAULT_PAGE, MAX_PAGE),
        page_token=page_token,
    )
    reply = await engine.clients.episodic.call("ListTokens", request, engine.settings.write_timeout)
    return [ManagedToken.from_pb(t) for t in reply.tokens], reply.next_page_token


async def revoke_token(engine: MemoryEngine, caller: Caller, name: str) -> list[str]:
    """Revoke ``name`` and the tokens minted under it; returns the names revoked now. NOT_FOUND for no such
    token, PERMISSION_DENIED for one that grants more than the banks ``caller`` administers."""
    within = administered(caller, "RevokeToken")  # refused before the name is even looked at
    request = episodic_pb2.RevokeTokenRequest(
        name=check_token_name(name), within_bank_ids=within, revoked_by=caller.name
    )
    with acting_as(caller.name):
        reply = await engine.clients.episodic.call("RevokeToken", request, engine.settings.write_timeout)
    await _refresh(engine)
    return list(reply.revoked_names)


async def _refresh(engine: MemoryEngine) -> None:
    """This edge's copy takes the change now (others within their refresh interval)."""
    try:
        await engine.tokens.sync()
    except Exception:  # the background refresh will take it
        return


def grants_text(token: ManagedToken) -> list[str]:
    """A token's grants as the tokens file writes them (``*`` with every operation for an operator)."""
    if token.admin:
        return [f"{ALL_BANKS}:read+write+forget+admin"]
    return [str(grant) for grant in token.grants]
