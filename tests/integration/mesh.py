"""Every layer served in-process on loopback, each with its real store, for tests of the edge."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import grpc
import psycopg
import redis.asyncio as aioredis
from google.protobuf.message import Message
from psycopg import sql

from hindsight.contracts.memory.v1 import memory_pb2_grpc
from hindsight.episodic.service import open_service as open_episodic
from hindsight.episodic.settings import EpisodicSettings
from hindsight.inference.service import open_service as open_inference
from hindsight.inference.settings import InferenceSettings
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.mcp_edge.http import serving_mcp_http
from hindsight.mcp_edge.service import memory_service_spec
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.reflect.service import open_service as open_reflect
from hindsight.reflect.settings import ReflectSettings
from hindsight.runtime.auth import Grants
from hindsight.runtime.embedded import free_port, free_ports
from hindsight.runtime.server import ServiceSpec
from hindsight.runtime.testing import channel_to
from hindsight.runtime.testing import serving as serve_closed
from hindsight.semantic.service import open_service as open_semantic
from hindsight.semantic.settings import SemanticSettings
from hindsight.working.service import open_service as open_working
from hindsight.working.settings import WorkingSettings


@dataclass(frozen=True)
class MeshCredentials:
    """The credentials a closed mesh is served with (all empty: authentication off)."""

    internal: str = ""
    """The mesh credential every layer presents to the others and accepts."""
    admin: str = ""
    """The operator's token."""
    tokens: str = ""
    """Client tokens as ``HINDSIGHT_TOKENS`` writes them (the layers know them, as a deployed one does)."""


@dataclass(frozen=True)
class LayerAddresses:
    """Where each layer of an in-process mesh listens."""

    inference: str
    working: str
    episodic: str
    semantic: str
    reflect: str
    episodic_schema: str = ""
    """PostgreSQL schema of the episodic tables."""
    reflect_schema: str = ""
    """PostgreSQL schema of the reflect tables."""
    working_prefix: str = ""
    """Key prefix of working memory in Redis."""

    def edge_settings(self, **overrides: object) -> EdgeSettings:
        """Edge settings pointing at these layers (MCP HTTP off unless overridden)."""
        values: dict[str, object] = {
            "working_addr": self.working,
            "episodic_addr": self.episodic,
            "semantic_addr": self.semantic,
            "reflect_addr": self.reflect,
            "mcp_port": 0,
            "recall_timeout": 5.0,
        }
        values.update(overrides)
        return EdgeSettings(**values)  # type: ignore[arg-type]


async def drop_schemas(database_url: str, *schemas: str) -> None:
    """Drop test schemas and everything in them."""
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        for schema in schemas:
            await conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


M = TypeVar("M", bound=Message)


@dataclass(frozen=True)
class RecordedCall:
    """A call a layer answered (for a stream: one message it read)."""

    method: str
    """The full method name, ``/hindsight.working.v1.WorkingMemoryService/SearchRecent``."""
    request: Message


class CallRecorder(grpc.aio.ServerInterceptor):
    """Records every unary request and every stream message the servers it is given to read, in order."""

    def __init__(self) -> None:
        self.calls: list[RecordedCall] = []

    def since(self, start: int, method: str, kind: type[M], bank_id: str = "") -> list[M]:
        """Requests of type ``kind`` to ``method`` (its full name) recorded from position ``start`` on,
        only those for ``bank_id`` when it is given."""
        return [
            call.request
            for call in self.calls[start:]
            if call.method == method
            and isinstance(call.request, kind)
            and (not bank_id or getattr(call.request, "bank_id", bank_id) == bank_id)
        ]

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None:
            return handler
        if handler.unary_unary is not None:
            unary = handler.unary_unary

            async def recorded(request: Any, context: grpc.aio.ServicerContext) -> Any:
                self.calls.append(RecordedCall(method, request))
                return await unary(request, context)

            return grpc.unary_unary_rpc_method_handler(
                recorded,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.stream_stream is not None:
            stream = handler.stream_stream

            async def recorded_stream(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> Any:
                async def read() -> AsyncIterator[Any]:
                    async for message in requests:
                        self.calls.append(RecordedCall(method, message))
                        yield message

                async for reply in stream(read(), context):
                    yield reply

            return grpc.stream_stream_rpc_method_handler(
                recorded_stream,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler


@contextlib.asynccontextmanager
async def layer_mesh(
    database_url: str,
    redis_url: str,
    qdrant_path: Path,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    credentials: MeshCredentials | None = None,
) -> AsyncIterator[LayerAddresses]:
    """Serve all five layers, each with ``interceptors`` inside its own; schemas and key prefixes are
    unique to this mesh and dropped after. With ``credentials`` every layer is closed as a deployed one
    is (and presents the mesh credential when it calls another); without, authentication is off."""
    creds = credentials or MeshCredentials()
    internal = creds.internal

    def serving(factory: Any, **options: Any) -> Any:
        return serve_closed(
            factory,
            tokens=creds.tokens,
            internal_token=creds.internal,
            admin_token=creds.admin,
            **options,
        )

    suffix = uuid.uuid4().hex[:10]
    episodic_schema, reflect_schema = f"t_ep_{suffix}", f"t_rf_{suffix}"
    async with contextlib.AsyncExitStack() as stack:
        inference = await stack.enter_async_context(
            serving(lambda: open_inference(InferenceSettings()), interceptors=interceptors)
        )
        inference_addr = f"127.0.0.1:{inference.port}"
        working = await stack.enter_async_context(
            serving(
                lambda: open_working(WorkingSettings(redis_url=redis_url, prefix=f"t:{suffix}")),
                interceptors=interceptors,
            )
        )
        working_addr = f"127.0.0.1:{working.port}"
        semantic = await stack.enter_async_context(
            serving(
                lambda: open_semantic(
                    SemanticSettings(
                        qdrant_path=str(qdrant_path), inference_addr=inference_addr, internal_token=internal
                    )
                ),
                interceptors=interceptors,
            )
        )
        semantic_addr = f"127.0.0.1:{semantic.port}"
        # Episodic memory and reflection call each other (outbox deletes, episode reads): one port is
        # chosen first so each can be given the other's address.
        reflect_port = free_ports(1)[0]
        reflect_addr = f"127.0.0.1:{reflect_port}"
        episodic = await stack.enter_async_context(
            serving(
                lambda: open_episodic(
                    EpisodicSettings(
                        database_url=database_url,
                        schema=episodic_schema,
                        semantic_addr=semantic_addr,
                        working_addr=working_addr,
                        reflect_addr=reflect_addr,
                        inference_addr=inference_addr,
                        internal_token=internal,
                    )
                ),
                interceptors=interceptors,
            )
        )
        episodic_addr = f"127.0.0.1:{episodic.port}"
        await stack.enter_async_context(
            serving(
                lambda: open_reflect(
                    ReflectSettings(
                        database_url=database_url,
                        schema=reflect_schema,
                        episodic_addr=episodic_addr,
                        semantic_addr=semantic_addr,
                        internal_token=internal,
                    )
                ),
                port=reflect_port,
                interceptors=interceptors,
            )
        )
        try:
            yield LayerAddresses(
                inference=inference_addr,
                working=working_addr,
                episodic=episodic_addr,
                semantic=semantic_addr,
                reflect=reflect_addr,
                episodic_schema=episodic_schema,
                reflect_schema=reflect_schema,
                working_prefix=f"t:{suffix}",
            )
        finally:
            await drop_schemas(database_url, episodic_schema, reflect_schema)
            client = aioredis.from_url(redis_url)
            try:
                keys = [key async for key in client.scan_iter(match=f"t:{suffix}*")]
                if keys:
                    await client.delete(*keys)
            finally:
                await client.aclose()


@dataclass(frozen=True)
class ServedEdge:
    """An edge engine served on loopback: a stub to its MemoryService, the service's address and, when
    served too, the URL of its MCP tools over streamable HTTP."""

    stub: memory_pb2_grpc.MemoryServiceStub
    address: str
    mcp_url: str = ""


@contextlib.asynccontextmanager
async def serving_memory(engine: MemoryEngine, credentials: MeshCredentials) -> AsyncIterator[ServedEdge]:
    """``engine``'s MemoryService on loopback, closed with ``credentials`` as a deployed edge is (all
    empty: authentication off), and a stub to it."""

    @contextlib.asynccontextmanager
    async def spec() -> AsyncIterator[ServiceSpec]:
        yield memory_service_spec(engine)

    async with (
        serve_closed(
            spec,
            tokens=credentials.tokens,
            internal_token=credentials.internal,
            admin_token=credentials.admin,
        ) as server,
        channel_to(server) as channel,
    ):
        yield ServedEdge(memory_pb2_grpc.MemoryServiceStub(channel), f"127.0.0.1:{server.port}")


@contextlib.asynccontextmanager
async def serving_edge(
    engine: MemoryEngine,
    credentials: MeshCredentials,
    grants: Grants,
    default_bank: str,
    mcp_engine: MemoryEngine | None = None,
) -> AsyncIterator[ServedEdge]:
    """:func:`serving_memory`, and MCP over streamable HTTP admitting ``grants`` (served by ``mcp_engine``
    when given: two replicas of the edge, each with its own registry)."""
    http_settings = EdgeSettings(mcp_port=free_port(), default_bank=default_bank)
    async with (
        serving_memory(engine, credentials) as memory,
        serving_mcp_http(mcp_engine or engine, http_settings, grants) as url,
    ):
        yield replace(memory, mcp_url=url)
