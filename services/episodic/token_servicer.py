"""The RPCs of the managed-token registry on the episodic layer (mesh and operator only, as every method of a
layer's port): the edge mints, lists and revokes through them, and keeps its cache with the changes."""

from __future__ import annotations

import re
from typing import Any

import grpc

from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.episodic.tokens import TokenStore
from hindsight.runtime.errors import FailedPrecondition, InvalidArgument
from hindsight.runtime.interceptors import acting_name
from hindsight.runtime.permissions import ALL_BANKS
from hindsight.runtime.records import from_timestamp, utcnow
from hindsight.runtime.token_records import ManagedToken, check_token_name, grants_from_pb
from hindsight.runtime.validation import check_bank_id, check_limit

_DIGEST = re.compile(r"[0-9a-f]{64}")
DEFAULT_PAGE, MAX_PAGE = 100, 1000
DEFAULT_SYNC, MAX_SYNC = 1000, 5000
MAX_USES = 10_000


def _banks(values: Any, field: str) -> list[str]:
    return [
        value if value == ALL_BANKS else check_bank_id(value, f"{field}[{i}]")
        for i, value in enumerate(values)
    ]


class TokenServicer:
    """Mixed into the episodic servicer, which holds the memory (``_memory``) whose store keeps the tokens."""

    _memory: Any

    def _tokens(self) -> TokenStore:
        store = getattr(self._memory.store, "tokens", None)
        if not isinstance(store, TokenStore):
            raise FailedPrecondition("managed tokens need the PostgreSQL store")
        return store

    async def CreateToken(
        self, request: episodic_pb2.CreateTokenRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.CreateTokenResponse:
        name = check_token_name(request.name)
        if not _DIGEST.fullmatch(request.digest):
            raise InvalidArgument(
                "digest", "must be the hex SHA-256 of the secret (64 lower-case hex digits)"
            )
        grants = grants_from_pb(request.grants)
        if not grants and not request.admin:
            raise InvalidArgument("grants", "name at least one bank (or make an operator token)")
        expires_at = (
            from_timestamp(request.expires_at, "expires_at") if request.HasField("expires_at") else None
        )
        if expires_at is not None and expires_at <= utcnow():
            raise InvalidArgument("expires_at", f"{expires_at.isoformat()} is not in the future")
        if request.parent:
            check_token_name(request.parent, "parent")
        token = ManagedToken(
            name=name,
            grants=() if request.admin else grants,
            admin=request.admin,
            expires_at=expires_at,
            parent=request.parent,
            created_by=request.created_by or acting_name(),
        )
        stored = await self._tokens().create(token, request.digest)
        return episodic_pb2.CreateTokenResponse(token=stored.to_pb())

    async def ListTokens(
        self, request: episodic_pb2.ListTokensRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.ListTokensResponse:
        size = check_limit(request.page_size, "page_size", DEFAULT_PAGE, MAX_PAGE)
        within = _banks(request.within_bank_ids, "within_bank_ids")
        tokens, following = await self._tokens().page(
            within, request.include_revoked, size, request.page_token
        )
        return episodic_pb2.ListTokensResponse(tokens=[t.to_pb() for t in tokens], next_page_token=following)

    async def RevokeToken(
        self, request: episodic_pb2.RevokeTokenRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.RevokeTokenResponse:
        name = check_token_name(request.name)
        within = _banks(request.within_bank_ids, "within_bank_ids")
        revoked = await self._tokens().revoke(name, within, request.revoked_by or acting_name())
        return episodic_pb2.RevokeTokenResponse(revoked_names=revoked)

    async def SyncTokens(
        self, request: episodic_pb2.SyncTokensRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.SyncTokensResponse:
        if request.after_version < 0:
            raise InvalidArgument("after_version", "must not be negative")
        size = check_limit(request.page_size, "page_size", DEFAULT_SYNC, MAX_SYNC)
        records = await self._tokens().changes(request.after_version, size + 1)
        more = len(records) > size
        records = records[:size]
        return episodic_pb2.SyncTokensResponse(
            tokens=[
                episodic_pb2.TokenRecord(token=r.token.to_pb(), digest=r.digest, version=r.version)
                for r in records
            ],
            version=records[-1].version if records else request.after_version,
            more=more,
        )

    async def TouchTokens(
        self, request: episodic_pb2.TouchTokensRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.TouchTokensResponse:
        if len(request.uses) > MAX_USES:
            raise InvalidArgument("uses", f"at most {MAX_USES} per call")
        uses = []
        for index, use in enumerate(request.uses):
            check_token_name(use.name, f"uses[{index}].name")
            moment = from_timestamp(use.used_at, f"uses[{index}].used_at")
            if moment is None:
                raise InvalidArgument(f"uses[{index}].used_at", "is required")
            uses.append((use.name, moment))
        return episodic_pb2.TouchTokensResponse(updated_count=await self._tokens().touch(uses))
