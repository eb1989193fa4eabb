"""The shared bootstrap: health, reflection, auth and error mapping on a real loopback server."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
from hindsight.runtime.errors import NotFound
from hindsight.runtime.server import ServiceSpec
from hindsight.runtime.testing import channel_to, serving

SERVICE = "hindsight.working.v1.WorkingMemoryService"


class EchoWindow(working_pb2_grpc.WorkingMemoryServiceServicer):
    """A servicer written for this test only: it exercises the bootstrap, not working memory."""

    async def GetWindow(self, request, context):
        if request.session_id == "missing":
            raise NotFound("session 'missing' does not exist")
        if request.session_id == "crash":
            raise RuntimeError("boom")
        return working_pb2.GetWindowResponse()


@contextlib.asynccontextmanager
async def echo_service() -> AsyncIterator[ServiceSpec]:
    async def ready() -> bool:
        return True

    yield ServiceSpec(
        SERVICE,
        lambda server: working_pb2_grpc.add_WorkingMemoryServiceServicer_to_server(EchoWindow(), server),
        ready,
    )


async def _wait_serving(channel: grpc.aio.Channel, name: str) -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    async for reply in stub.Watch(health_pb2.HealthCheckRequest(service=name), timeout=5):
        if reply.status == health_pb2.HealthCheckResponse.SERVING:
            return reply.status
    raise AssertionError("never became SERVING")


async def test_liveness_and_readiness_are_reported_by_health() -> None:
    async with serving(echo_service) as server, channel_to(server) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        live = await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
        assert live.status == health_pb2.HealthCheckResponse.SERVING
        assert await _wait_serving(channel, SERVICE) == health_pb2.HealthCheckResponse.SERVING


async def test_domain_errors_map_to_status_codes_and_bad_bank_ids_are_rejected() -> None:
    async with serving(echo_service) as server, channel_to(server) as channel:
        stub = working_pb2_grpc.WorkingMemoryServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as missing:
            await stub.GetWindow(working_pb2.GetWindowRequest(bank_id="b1", session_id="missing"), timeout=5)
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
        with pytest.raises(grpc.aio.AioRpcError) as crash:
            await stub.GetWindow(working_pb2.GetWindowRequest(bank_id="b1", session_id="crash"), timeout=5)
        assert crash.value.code() == grpc.StatusCode.INTERNAL
        assert "boom" not in (crash.value.details() or "")
        with pytest.raises(grpc.aio.AioRpcError) as no_bank:
            await stub.GetWindow(working_pb2.GetWindowRequest(session_id="s"), timeout=5)
        assert no_bank.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "bank_id" in (no_bank.value.details() or "")


async def test_a_token_reaches_only_the_banks_it_grants() -> None:
    async with serving(echo_service, tokens="alpha=bank-a;root=*") as server, channel_to(server) as channel:
        stub = working_pb2_grpc.WorkingMemoryServiceStub(channel)

        async def call(bank: str, token: str | None) -> grpc.StatusCode:
            metadata = (("authorization", f"Bearer {token}"),) if token else ()
            try:
                await stub.GetWindow(
                    working_pb2.GetWindowRequest(bank_id=bank, session_id="s"), timeout=5, metadata=metadata
                )
            except grpc.aio.AioRpcError as exc:
                return exc.code()
            return grpc.StatusCode.OK

        assert await call("bank-a", "alpha") == grpc.StatusCode.OK
        assert await call("bank-b", "alpha") == grpc.StatusCode.PERMISSION_DENIED
        assert await call("bank-b", "root") == grpc.StatusCode.OK
        assert await call("bank-a", None) == grpc.StatusCode.UNAUTHENTICATED
        assert await call("bank-a", "forged") == grpc.StatusCode.UNAUTHENTICATED
