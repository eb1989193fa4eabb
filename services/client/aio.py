"""The asynchronous ``MemoryService`` client: one channel, a bearer token, deadlines and retries."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc

from hindsight.client import convert
from hindsight.client import types as t
from hindsight.client.errors import Unavailable, from_rpc_error
from hindsight.client.retry import Backoff, call_with_retries
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.runtime.home import read_credentials, read_mesh, resolve_home

TOKEN_ENV = "HINDSIGHT_TOKEN"
"""Where the token comes from when none is passed."""
ADMIN_TOKEN_HEADER = "x-hindsight-admin-token"
DEFAULT_TIMEOUT = 30.0
DEFAULT_RETRIES = 3
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
_CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    # Reconnect soon after the edge comes back, so that the client's own retries find it.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2_000),
]


class AsyncMemoryClient:
    """Typed calls to the edge's gRPC ``MemoryService``.

    ``timeout`` is each attempt's deadline in seconds (every method takes ``timeout=`` to override it);
    ``retries`` is how many more attempts an idempotent call gets after UNAVAILABLE or
    DEADLINE_EXCEEDED, with exponential back-off and jitter. The token (argument, else
    ``$HINDSIGHT_TOKEN``) goes with every call as ``authorization: Bearer``; ``admin_token`` only with
    :meth:`debug_list`. Use it as ``async with AsyncMemoryClient(...) as client:`` or call :meth:`close`.
    """

    def __init__(
        self,
        address: str,
        token: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        backoff: Backoff | None = None,
        admin_token: str = "",
        credentials: grpc.ChannelCredentials | None = None,
    ) -> None:
        if timeout <= 0:
            raise ValueError("timeout: must be positive")
        if retries < 0:
            raise ValueError("retries: must be zero or more")
        self.address = address
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff or Backoff()
        token = os.environ.get(TOKEN_ENV, "") if token is None else token
        self._metadata: tuple[tuple[str, str], ...] = (("authorization", f"Bearer {token}"),) if token else ()
        self._admin_token = admin_token
        if credentials is None:
            self._channel = grpc.aio.insecure_channel(address, options=_CHANNEL_OPTIONS)
        else:
            self._channel = grpc.aio.secure_channel(address, credentials, options=_CHANNEL_OPTIONS)
        self._stub = memory_pb2_grpc.MemoryServiceStub(self._channel)

    @classmethod
    def from_home(cls, home: Path | str | None = None, **options: Any) -> AsyncMemoryClient:
        """A client of the mesh ``hindsight up`` runs on ``home`` (default ``$HINDSIGHT_HOME``, else
        ``~/.hindsight``), with its agent token and its admin token (for :meth:`debug_list`)."""
        mesh = read_mesh(home)
        if mesh is None:
            message = f"no mesh is running on {resolve_home(home)} (start one with `hindsight up`)"
            raise Unavailable(grpc.StatusCode.UNAVAILABLE, message)
        credentials = read_credentials(Path(mesh.home))
        options.setdefault("token", credentials.for_client if credentials else "")
        options.setdefault("admin_token", credentials.admin if credentials else "")
        return cls(mesh.memory_address, **options)

    async def close(self) -> None:
        """Close the channel; calls in flight are cancelled."""
        await self._channel.close()

    async def __aenter__(self) -> AsyncMemoryClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()

    async def _call(
        self,
        method: str,
        request: Any,
        *,
        idempotent: bool,
        timeout: float | None,
        metadata: tuple[tuple[str, str], ...] = (),
    ) -> Any:
        rpc = getattr(self._stub, method)
        deadline = self.timeout if timeout is None else timeout
        headers = self._metadata + metadata

        async def attempt() -> Any:
            return await rpc(request, timeout=deadline, metadata=headers)

        try:
            return await call_with_retries(attempt, self.retries, self.backoff, idempotent)
        except grpc.aio.AioRpcError as error:
            raise from_rpc_error(error) from None

    async def retain(
        self, bank: str, turns: t.Turn | Sequence[t.Turn], *, timeout: float | None = None
    ) -> t.RetainResult:
        """Store turns in order; retried on failure only when every turn has an id (the idempotency key)."""
        batch = [turns] if isinstance(turns, t.Turn) else list(turns)
        request = memory_pb2.RetainRequest(bank_id=bank, turns=[convert.turn_to_pb(turn) for turn in batch])
        idempotent = all(turn.id for turn in batch)
        reply = await self._call("Retain", request, idempotent=idempotent, timeout=timeout)
        return convert.from_message(t.RetainResult, reply)

    async def recall(
        self,
        bank: str | Sequence[str],
        query: str,
        *,
        top_k: int = 0,
        layers: Sequence[t.Layer | str] = (),
        time_range: t.TimeRange | None = None,
        session_id: str = "",
        min_score: float = 0.0,
        tags: Sequence[str] = (),
        token_budget: int = 0,
        order: str = "",
        reference_time: datetime | None = None,
        time_zone: str = "",
        as_of: datetime | None = None,
        bank_weights: Mapping[str, float] | None = None,
        group_by_bank: bool = False,
        agent: str = "",
        timeout: float | None = None,
    ) -> t.RecallResult:
        """The memories that matter for ``query``, best first, and a context within ``token_budget``.

        ``top_k`` 0 and ``token_budget`` 0 mean the edge's defaults; ``reference_time`` is "now" for time
        words in the query ("last Tuesday"); ``as_of``: the state as it was then. Retried on failure (a
        recall changes nothing). ``bank`` may be several banks (a list): one ranking over all of them, each
        memory naming its bank, ``bank_weights`` a factor per bank, ``group_by_bank`` the context by bank;
        ``agent``: only what that agent wrote.
        """
        several = not isinstance(bank, str)
        request = memory_pb2.RecallRequest(
            bank_id="" if several else str(bank),
            bank_ids=list(bank) if several else [],
            bank_weights=dict(bank_weights or {}),
            group_by_bank=group_by_bank,
            agent=agent,
            query=query,
            top_k=top_k,
            layers=[convert.layer_to_pb(layer) for layer in layers],
            time_range=convert.time_range_to_pb(time_range),
            session_id=session_id,
            min_score=min_score,
            tags=list(tags),
            token_budget=token_budget,
            order=convert.order_to_pb(order),
            reference_time=convert.moment_to_pb(reference_time),
            time_zone=time_zone,
            as_of=convert.moment_to_pb(as_of),
        )
        reply = await self._call("Recall", request, idempotent=True, timeout=timeout)
        return convert.recall_from_pb(reply)

    async def write_episode(
        self, bank: str, episode: t.Episode, *, timeout: float | None = None
    ) -> t.Episode:
        """Record a finished task; returns it with its id. Not retried (each call records one)."""
        request = memory_pb2.WriteEpisodeRequest(bank_id=bank, episode=convert.episode_to_pb(episode))
        reply = await self._call("WriteEpisode", request, idempotent=False, timeout=timeout)
        return convert.episode_from_pb(reply.episode)

    async def reflect(
        self, bank: str, session_id: str = "", *, timeout: float | None = None
    ) -> t.ReflectResult:
        """Draw lessons from the bank's (or one session's) finished episodes. Not retried."""
        request = memory_pb2.ReflectRequest(bank_id=bank, session_id=session_id)
        reply = await self._call("Reflect", request, idempotent=False, timeout=timeout)
        return convert.reflect_from_pb(reply)

    async def forget(
        self,
        bank: str,
        turn_ids: Sequence[str] = (),
        *,
        hard: bool = False,
        filter: t.TurnFilter | None = None,
        timeout: float | None = None,
    ) -> t.ForgetResult:
        """Archive turns by id and/or by ``filter`` (``hard``: delete them for good). Not retried."""
        request = memory_pb2.ForgetRequest(
            bank_id=bank, turn_ids=list(turn_ids), hard=hard, filter=convert.turn_filter_to_pb(filter)
        )
        reply = await self._call("Forget", request, idempotent=False, timeout=timeout)
        return convert.from_message(t.ForgetResult, reply)

    async def invalidate(
        self,
        bank: str,
        ids: Sequence[str],
        *,
        reason: str = "",
        valid_to: datetime | None = None,
        timeout: float | None = None,
    ) -> t.InvalidateResult:
        """End the validity of memories without deleting them (``valid_to``: when; default now). Retried on
        failure (a second call changes nothing)."""
        request = memory_pb2.InvalidateRequest(
            bank_id=bank, ids=list(ids), reason=reason, valid_to=convert.moment_to_pb(valid_to)
        )
        reply = await self._call("Invalidate", request, idempotent=True, timeout=timeout)
        return convert.from_message(t.InvalidateResult, reply)

    async def compress(self, bank: str, session_id: str, *, timeout: float | None = None) -> t.CompressResult:
        """Summarise the oldest turns of a session's working memory. Not retried."""
        request = memory_pb2.CompressRequest(bank_id=bank, session_id=session_id)
        reply = await self._call("Compress", request, idempotent=False, timeout=timeout)
        return convert.from_message(t.CompressResult, reply)

    async def close_session(
        self, bank: str, session_id: str, *, timeout: float | None = None
    ) -> t.CloseSessionResult:
        """End a session: drop its working memory, then reflect on its episodes. Not retried."""
        request = memory_pb2.CloseSessionRequest(bank_id=bank, session_id=session_id)
        reply = await self._call("CloseSession", request, idempotent=False, timeout=timeout)
        return convert.close_session_from_pb(reply)

    async def list_recent(
        self,
        bank: str,
        *,
        limit: int = 0,
        session_id: str = "",
        tags: Sequence[str] = (),
        include_archived: bool = False,
        page_token: str = "",
        agent: str = "",
        timeout: float | None = None,
    ) -> t.TurnPage:
        """The newest turns (0: the edge's default page size), newest first; ``agent``: only that agent's.
        Retried on failure."""
        request = memory_pb2.ListRecentRequest(
            bank_id=bank,
            limit=limit,
            session_id=session_id,
            tags=list(tags),
            include_archived=include_archived,
            page_token=page_token,
            agent=agent,
        )
        reply = await self._call("ListRecent", request, idempotent=True, timeout=timeout)
        return convert.turn_page_from_pb(reply)

    async def update(
        self,
        bank: str,
        turn_id: str,
        *,
        text: str = "",
        meta: t.RecordMeta | None = None,
        timeout: float | None = None,
    ) -> t.UpdateResult:
        """Replace a turn's text (empty: keep) or metadata (None: keep); the old version is archived.
        Not retried (a second attempt would find the turn already superseded)."""
        request = memory_pb2.UpdateRequest(
            bank_id=bank,
            turn_id=turn_id,
            text=text,
            meta=convert.meta_to_pb(meta) if meta is not None else None,
        )
        reply = await self._call("Update", request, idempotent=False, timeout=timeout)
        return convert.update_from_pb(reply)

    async def purge(
        self,
        bank: str,
        *,
        ids: Sequence[str] = (),
        session_id: str = "",
        whole_bank: bool = False,
        timeout: float | None = None,
    ) -> t.PurgeResult:
        """Delete for good turns and episodes by id, a session, or the whole bank. Not retried."""
        request = memory_pb2.PurgeRequest(
            bank_id=bank, ids=list(ids), session_id=session_id, whole_bank=whole_bank
        )
        reply = await self._call("Purge", request, idempotent=False, timeout=timeout)
        return convert.from_message(t.PurgeResult, reply)

    async def share(
        self, bank: str, target_bank: str, ids: Sequence[str], *, timeout: float | None = None
    ) -> t.ShareResult:
        """Copy memories of ``bank`` (turns, episodes, facts or lessons, by the ids recall returns) into the
        team bank ``target_bank``, with their provenance; needs ``read`` on ``bank`` and ``write`` on
        ``target_bank``. Sharing again returns the same copies, so the call is retried on failure."""
        request = memory_pb2.ShareRequest(bank_id=bank, target_bank_id=target_bank, ids=list(ids))
        reply = await self._call("Share", request, idempotent=True, timeout=timeout)
        return convert.share_from_pb(reply)

    async def debug_list(
        self, bank: str, *, limit: int = 0, page_token: str = "", timeout: float | None = None
    ) -> t.DebugListing:
        """Everything the bank holds, archived included; needs the admin token. Retried on failure."""
        request = memory_pb2.DebugListRequest(bank_id=bank, limit=limit, page_token=page_token)
        admin = ((ADMIN_TOKEN_HEADER, self._admin_token),) if self._admin_token else ()
        reply = await self._call("DebugList", request, idempotent=True, timeout=timeout, metadata=admin)
        return convert.debug_list_from_pb(reply)

    async def list_entities(
        self,
        bank: str,
        *,
        type: str = "",
        prefix: str = "",
        limit: int = 0,
        page_token: str = "",
        timeout: float | None = None,
    ) -> t.EntityList:
        """The people, places and things the bank's memories are about, by name. Retried on failure."""
        request = memory_pb2.ListEntitiesRequest(
            bank_id=bank, type=type, prefix=prefix, limit=limit, page_token=page_token
        )
        reply = await self._call("ListEntities", request, idempotent=True, timeout=timeout)
        return convert.entity_list_from_pb(reply)

    async def entity_page(
        self,
        bank: str,
        entity: str,
        *,
        mention_limit: int = 0,
        page_token: str = "",
        timeout: float | None = None,
    ) -> t.EntityPage:
        """One entity's page (by name or alias): its facts with history and the turns mentioning it.
        Retried on failure."""
        request = memory_pb2.GetEntityPageRequest(
            bank_id=bank, entity=entity, mention_limit=mention_limit, page_token=page_token
        )
        reply = await self._call("GetEntityPage", request, idempotent=True, timeout=timeout)
        return convert.entity_page_from_pb(reply)
