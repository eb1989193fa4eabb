"""The shared bootstrap: health, reflection, auth and error mapping on a real loopback server."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
from hindsight.runtime import interceptors
from hindsight.runtime.auth import token_digest
from hindsight.runtime.errors import NotFound
from hindsight.runtime.roles import Role
from hindsight.runtime.server import ServiceSpec, running
from hindsight.runtime.settings import ServerSettings, SettingsError
from hindsight.runtime.testing import channel_to, serving, wait_serving

SERVICE = "hindsight.working.v1.WorkingMemoryService"
PROBE = "hindsight.test.v1.Probe"
"""A service made of raw handlers, written for these tests: one of each handler kind."""
TEST_ROLES = {
    f"/{SERVICE}/GetWindow": Role.CLIENT,
    f"/{PROBE}/NoBank": Role.CLIENT,
    f"/{PROBE}/Echo": Role.CLIENT,
    f"/{PROBE}/ServerStream": Role.CLIENT,
    f"/{PROBE}/ClientStream": Role.CLIENT,
}
"""These tests exercise the bootstrap with client tokens, so their services declare client methods (a
layer's own table serves only the mesh: see tests of the roles)."""
EVERY_OPERATION_TOKENS = "alpha=bank-a:read+write+forget+admin;root=*:read+write+forget+admin"
"""Tokens with every operation on their banks: the test methods are in no operations table (so they need
`admin`), and what is under test is the bank and the credential."""


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
        roles=TEST_ROLES,
    )


async def test_liveness_and_readiness_are_reported_by_health() -> None:
    async with serving(echo_service) as server, channel_to(server) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        live = await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
        assert live.status == health_pb2.HealthCheckResponse.SERVING
        await wait_serving(channel, SERVICE)


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
    async with serving(echo_service, tokens=EVERY_OPERATION_TOKENS) as server, channel_to(server) as channel:
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


def _probe_handlers(seen: list[str]) -> grpc.GenericRpcHandler:
    identity = (lambda raw: raw, lambda raw: raw)  # bytes in, bytes out: no message types needed

    async def no_bank(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        seen.append(interceptors.caller_var.get().name)
        return b"ok"

    async def server_stream(request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        seen.append("server_stream ran")
        yield b"leak"

    async def client_stream(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> bytes:
        seen.append("client_stream ran")
        return b"leak"

    deserialize, serialize = identity
    kinds = {"request_deserializer": deserialize, "response_serializer": serialize}
    return grpc.method_handlers_generic_handler(
        PROBE,
        {
            "NoBank": grpc.unary_unary_rpc_method_handler(no_bank, **kinds),
            "ServerStream": grpc.unary_stream_rpc_method_handler(server_stream, **kinds),
            "ClientStream": grpc.stream_unary_rpc_method_handler(client_stream, **kinds),
        },
    )


def _probe_service(seen: list[str]) -> Callable[[], contextlib.AbstractAsyncContextManager[ServiceSpec]]:
    @contextlib.asynccontextmanager
    async def factory() -> AsyncIterator[ServiceSpec]:
        def register(server: grpc.aio.Server) -> None:
            working_pb2_grpc.add_WorkingMemoryServiceServicer_to_server(EchoWindow(), server)
            server.add_generic_rpc_handlers((_probe_handlers(seen),))

        yield ServiceSpec(SERVICE, register, roles=TEST_ROLES)

    return factory


async def _code(call: Awaitable[object]) -> grpc.StatusCode:
    try:
        await call
    except grpc.aio.AioRpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


async def test_every_call_needs_a_credential_a_bankless_one_needs_every_bank_and_health_is_public() -> None:
    seen: list[str] = []
    async with (
        serving(_probe_service(seen), tokens=EVERY_OPERATION_TOKENS) as server,
        channel_to(server) as channel,
    ):
        no_bank = channel.unary_unary(f"/{PROBE}/NoBank")

        def auth(token: str) -> tuple[tuple[str, str], ...]:
            return (("authorization", f"Bearer {token}"),)

        assert await _code(no_bank(b"", timeout=5)) == grpc.StatusCode.UNAUTHENTICATED
        assert (
            await _code(no_bank(b"", timeout=5, metadata=auth("alpha"))) == grpc.StatusCode.PERMISSION_DENIED
        )
        assert await _code(no_bank(b"", timeout=5, metadata=auth("root"))) == grpc.StatusCode.OK
        assert seen == ["agent:" + token_digest("root")[:8]]  # the handler saw who called

        health = health_pb2_grpc.HealthStub(channel)
        live = await health.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
        assert live.status == health_pb2.HealthCheckResponse.SERVING


async def test_handler_kinds_the_interceptor_does_not_guard_are_refused_even_with_a_valid_token() -> None:
    seen: list[str] = []
    async with (
        serving(_probe_service(seen), tokens=EVERY_OPERATION_TOKENS) as server,
        channel_to(server) as channel,
    ):
        metadata = (("authorization", "Bearer root"),)
        server_stream = channel.unary_stream(f"/{PROBE}/ServerStream")
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            async for _ in server_stream(b"", timeout=5, metadata=metadata):
                pass
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        client_stream = channel.stream_unary(f"/{PROBE}/ClientStream")
        assert await _code(client_stream(iter([b"x"]), timeout=5, metadata=metadata)) == (
            grpc.StatusCode.PERMISSION_DENIED
        )
        assert seen == []  # neither handler ran


async def test_a_service_with_no_credential_refuses_to_start_before_opening_its_stores() -> None:
    opened: list[bool] = []

    @contextlib.asynccontextmanager
    async def factory() -> AsyncIterator[ServiceSpec]:
        opened.append(True)
        yield ServiceSpec(SERVICE, lambda server: None)

    with pytest.raises(SettingsError, match="no credential configured"):
        async with running(factory, ServerSettings(host="127.0.0.1", port=0)):
            pass
    with pytest.raises(SettingsError, match="loopback"):
        async with running(factory, ServerSettings(host="0.0.0.0", port=0, auth="off")):
            pass
    assert opened == []


async def test_a_refused_stream_reaches_the_caller_as_its_status_not_a_reset_stream() -> None:
    """Refused before its first write arrived, a stream raced that write: on a fresh channel about one call in
    a hundred saw INTERNAL ("Internal error from Core") instead of UNAUTHENTICATED."""
    seen: list[str] = []

    def echo_handlers() -> grpc.GenericRpcHandler:
        async def echo(
            requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext
        ) -> AsyncIterator[bytes]:
            seen.append("ran")
            async for request in requests:
                yield request

        handler = grpc.stream_stream_rpc_method_handler(
            echo, request_deserializer=lambda raw: raw, response_serializer=lambda raw: raw
        )
        return grpc.method_handlers_generic_handler(PROBE, {"Echo": handler})

    @contextlib.asynccontextmanager
    async def factory() -> AsyncIterator[ServiceSpec]:
        yield ServiceSpec(
            SERVICE, lambda server: server.add_generic_rpc_handlers((echo_handlers(),)), roles=TEST_ROLES
        )

    codes: dict[grpc.StatusCode, int] = {}
    async with serving(factory, tokens=EVERY_OPERATION_TOKENS) as server:
        for _ in range(600):
            async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                stream = channel.stream_stream(f"/{PROBE}/Echo")
                code = grpc.StatusCode.OK
                try:
                    async for _reply in stream(iter([b"x" * 1000]), timeout=10):
                        pass
                except grpc.aio.AioRpcError as exc:
                    code = exc.code()
                codes[code] = codes.get(code, 0) + 1
    assert codes == {grpc.StatusCode.UNAUTHENTICATED: 600}
    assert seen == []
