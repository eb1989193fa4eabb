"""The MCP tools that mint, list and revoke managed tokens (an operator, or a token with ``admin`` on the
banks concerned: :mod:`.tokens` decides, as for the gRPC methods)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

from hindsight.mcp_edge.coerce import AS_BOOL, SPLIT_COMMAS
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.mcp_edge.tokens import administered, create_token, grants_text, list_tokens, revoke_token
from hindsight.mcp_edge.tools.access import ToolContext, _hints, _tool_errors
from hindsight.runtime.errors import InvalidArgument, PermissionDenied
from hindsight.runtime.permissions import BankGrant, parse_expiry
from hindsight.runtime.records import utcnow
from hindsight.runtime.token_records import ManagedToken


class TokenOutput(BaseModel):
    """A managed token as listed (never its secret)."""

    name: str
    grants: list[str] = Field(description="Banks and operations, as `bank:read+write`.")
    expires: datetime | None = Field(description="When it stops working; null: never.")
    created: datetime | None
    last_used: datetime | None = Field(description="Noted in batches: up to a few seconds late.")
    revoked: datetime | None
    parent: str = Field(description="The token it was minted with (revoked with it); empty: none.")


class MintedOutput(BaseModel):
    """A new token: its secret is shown this once and never stored."""

    name: str
    token: str = Field(description="The secret to present as a bearer token.")
    grants: list[str]
    expires: datetime | None


class TokenListOutput(BaseModel):
    tokens: list[TokenOutput]
    next_page_token: str


class RevokedOutput(BaseModel):
    revoked: list[str] = Field(description="The token and those minted under it, revoked now.")


def token_output(token: ManagedToken) -> TokenOutput:
    return TokenOutput(
        name=token.name,
        grants=grants_text(token),
        expires=token.expires_at,
        created=token.created_at,
        last_used=token.last_used_at,
        revoked=token.revoked_at,
        parent=token.parent,
    )


def register_token_tools(server: MCPServer, engine: MemoryEngine, access: ToolContext) -> None:
    """Add ``token_create``, ``token_list`` and ``token_revoke`` to ``server``."""

    def refused(what: str, exc: PermissionDenied) -> None:
        access.deny("", what, exc)

    @server.tool(annotations=_hints("Mint a token (admin)"))
    async def token_create(
        ctx: Context[Any, Any],
        name: Annotated[str, Field(min_length=1, max_length=64, description="Unique name of the token.")],
        banks: Annotated[
            list[str] | None,
            Field(
                max_length=64,
                description="Banks it grants: each `bank` (read and write) or `bank:read+write+forget`.",
            ),
            SPLIT_COMMAS,
        ] = None,
        admin: Annotated[
            bool, Field(strict=True, description="An operator token (every bank); operators only."), AS_BOOL
        ] = False,
        expires: Annotated[
            str | None, Field(max_length=64, description="`7d`, `12h`, `30m`, `2w` or an ISO 8601 time.")
        ] = None,
    ) -> MintedOutput:
        """Mint a token; its secret is returned this once. A token with `admin` on a bank may mint tokens
        for that bank, never wider than itself."""
        with _tool_errors():
            caller = access.caller()
            try:
                administered(caller, "token_create")  # refused before the arguments are even read
            except PermissionDenied as exc:
                refused("token_create", exc)
                raise
            grants = tuple(BankGrant.parse(text, f"banks[{i}]") for i, text in enumerate(banks or ()))
            expires_at = parse_expiry(expires, utcnow()) if expires else None
            try:
                minted = await create_token(engine, caller, name, grants, admin=admin, expires_at=expires_at)
            except PermissionDenied as exc:
                refused("token_create", exc)
                raise
        return MintedOutput(
            name=minted.token.name,
            token=minted.secret,
            grants=grants_text(minted.token),
            expires=minted.token.expires_at,
        )

    @server.tool(annotations=_hints("List tokens (admin)", read_only=True, idempotent=True))
    async def token_list(
        ctx: Context[Any, Any],
        include_revoked: Annotated[
            bool, Field(strict=True, description="Also revoked tokens."), AS_BOOL
        ] = False,
        page_token: Annotated[str, Field(max_length=1000, description="From the previous page.")] = "",
    ) -> TokenListOutput:
        """Managed tokens (never a secret): every one for an operator, else those within the banks the
        caller administers."""
        with _tool_errors():
            try:
                tokens, following = await list_tokens(
                    engine, access.caller(), include_revoked, page_token=page_token
                )
            except PermissionDenied as exc:
                refused("token_list", exc)
                raise
        return TokenListOutput(tokens=[token_output(t) for t in tokens], next_page_token=following)

    @server.tool(annotations=_hints("Revoke a token (admin)", destructive=True, idempotent=True))
    async def token_revoke(
        ctx: Context[Any, Any],
        name: Annotated[str, Field(min_length=1, max_length=64, description="The token to revoke.")],
    ) -> RevokedOutput:
        """Revoke a token and every token minted under it, on every port within a second."""
        with _tool_errors():
            if not name.strip():
                raise InvalidArgument("name", "is required")
            try:
                revoked = await revoke_token(engine, access.caller(), name)
            except PermissionDenied as exc:
                refused("token_revoke", exc)
                raise
        return RevokedOutput(revoked=revoked)
