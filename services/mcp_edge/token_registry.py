"""The edge's copy of the managed tokens: looked up on every call after the static tokens, kept fresh from
the episodic layer's registry.

A lookup never leaves the process: the edge holds every managed token's digest and grants, and a background
loop asks the registry for what changed since the last version it read (an indexed query that usually
returns nothing) every ``HINDSIGHT_TOKEN_REFRESH_SECONDS``. A revocation therefore reaches every port of every
edge within that interval plus one round trip; an expiry takes effect at the instant itself (checked on each
call). When the registry has not answered for ``HINDSIGHT_TOKEN_STALE_SECONDS`` the edge stops vouching for
managed tokens (UNAVAILABLE) rather than honour one that may have been revoked meanwhile; static tokens are
unaffected. Uses are noted in memory and sent in one batch every ``HINDSIGHT_TOKEN_TOUCH_SECONDS``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import UTC, datetime

from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.mcp_edge.audit import AuditQueue, entry
from hindsight.runtime.auth import Caller
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.errors import Unavailable
from hindsight.runtime.records import to_timestamp
from hindsight.runtime.token_records import ManagedToken

log = logging.getLogger(__name__)

FIRST_SYNC_SECONDS = 5.0
"""How long starting waits for the first copy (the edge serves meanwhile; managed tokens wait for it)."""
REFUSED_ACTION = "token_refused"


def managed_caller(token: ManagedToken) -> Caller:
    """The caller a managed token names (its name is the caller's name, in logs and the audit log)."""
    return Caller(
        name=token.name,
        grants=token.grants,
        admin=token.admin,
        expires_at=token.expires_at,
        managed=True,
        revoked=token.revoked_at is not None,
    )


class TokenRegistry:
    """A :class:`~hindsight.runtime.auth.TokenSource` over the episodic layer's token registry."""

    def __init__(
        self,
        episodic: LayerClient[episodic_pb2_grpc.EpisodicServiceStub],
        audit: AuditQueue,
        *,
        refresh_seconds: float = 0.25,
        stale_seconds: float = 5.0,
        touch_seconds: float = 10.0,
    ) -> None:
        self._episodic = episodic
        self._audit = audit
        self.refresh_seconds = refresh_seconds
        self.stale_seconds = stale_seconds
        self.touch_seconds = touch_seconds
        self._by_digest: dict[str, Caller] = {}
        self._digest_of: dict[str, str] = {}
        self._version = 0
        self._synced_at: float | None = None
        self._used: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None
        self._started = asyncio.Lock()

    # ----- TokenSource ---------------------------------------------------------------------------------
    def lookup(self, digest: str) -> Caller | None:
        caller = self._by_digest.get(digest)
        synced = self._synced_at
        if synced is None or time.monotonic() - synced > self.stale_seconds:
            if caller is None and synced is None and self._task is None:
                return None  # this edge keeps no registry (never started): only static tokens exist
            raise Unavailable(
                "managed tokens cannot be checked now: the token registry has not answered "
                f"for over {self.stale_seconds:g} s"
            )
        if caller is not None and not caller.revoked:
            self._used[caller.name] = time.time()
        return caller

    def refused(self, caller: Caller, reason: str) -> None:
        banks = sorted(caller.banks)
        bank = banks[0] if len(banks) == 1 else ""
        self._audit.record(entry(REFUSED_ACTION, bank, caller.name, caller.name, reason))

    # ----- keeping the copy ------------------------------------------------------------------------------
    async def start(self) -> None:
        """Read the registry once (waiting at most :data:`FIRST_SYNC_SECONDS`), then keep it fresh in the
        background; calling it again does nothing."""
        async with self._started:
            if self._task is not None:
                return
            try:
                await asyncio.wait_for(self.sync(), FIRST_SYNC_SECONDS)
            except Exception as exc:  # the loop keeps trying; managed tokens wait for it
                log.warning("token registry not read at start", extra={"error": repr(exc)})
            self._task = asyncio.create_task(self._run(), name="token registry")

    async def sync(self) -> int:
        """Apply the registry's changes since the last version read; returns how many."""
        applied = 0
        while True:
            started = time.monotonic()
            reply = await self._episodic.call(
                "SyncTokens",
                episodic_pb2.SyncTokensRequest(after_version=self._version),
                max(self.stale_seconds, 1.0),
            )
            for record in reply.tokens:
                token = ManagedToken.from_pb(record.token)
                previous = self._digest_of.get(token.name)
                if previous is not None and previous != record.digest:
                    self._by_digest.pop(previous, None)
                self._by_digest[record.digest] = managed_caller(token)
                self._digest_of[token.name] = record.digest
            applied += len(reply.tokens)
            self._version = reply.version
            self._synced_at = started
            if not reply.more:
                return applied

    async def _run(self) -> None:
        touched = time.monotonic()
        while True:
            await asyncio.sleep(self.refresh_seconds)
            try:
                await self.sync()
                if time.monotonic() - touched >= self.touch_seconds:
                    touched = time.monotonic()
                    await self.flush_uses()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the episodic layer is down or slow: try again next round
                log.warning("token registry not refreshed", extra={"error": repr(exc)})

    async def flush_uses(self) -> None:
        """Send the last use of each token presented since the previous flush (one call for all)."""
        if not self._used:
            return
        used, self._used = self._used, {}
        uses = [
            episodic_pb2.TokenUse(name=name, used_at=to_timestamp(datetime.fromtimestamp(at, UTC)))
            for name, at in sorted(used.items())
        ]
        try:
            await self._episodic.call("TouchTokens", episodic_pb2.TouchTokensRequest(uses=uses))
        except Exception:
            for name, at in used.items():  # kept for the next flush, unless a later use replaced it
                self._used[name] = max(at, self._used.get(name, 0.0))
            raise

    async def close(self) -> None:
        """Stop refreshing and send the uses not yet sent (best effort)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        with contextlib.suppress(Exception):
            await self.flush_uses()
