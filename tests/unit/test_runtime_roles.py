"""Authority by role on a real loopback server: who may call a method is its declared role, who a call acts
for comes from the credential (a name in the metadata counts from the mesh only), and every refusal is handed
to the service whatever the log level."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Iterator

import grpc
import pytest

from hindsight.contracts.memory.v1 import memory_pb2
from hindsight.runtime import interceptors
from hindsight.runtime.auth import grants_for
from hindsight.runtime.interceptors import ACTOR_HEADER, ADMIN_TOKEN_HEADER, Refusal
from hindsight.runtime.roles import (
    EDGE_ROLES,
    LAYER_ADMIN_METHODS,
    LAYER_SERVICES,
    MEMORY_SERVICE,
    ROLES,
    Role,
    declared,
)
from hindsight.runtime.server import ServiceSpec
from hindsight.runtime.testing import channel_to, serving

SERVICE = "hindsight.test.v1.Roles"
ROLES_UNDER_TEST = {
    f"/{SERVICE}/Client": Role.CLIENT,
    f"/{SERVICE}/Mesh": Role.MESH,
    f"/{SERVICE}/Admin": Role.ADMIN,
}
"""``Undeclared`` is served by a handler but named by no role."""
MESH, ADMIN = "mesh-secret", "admin-secret"
TOKENS = "agent-all=*:read+write+forget+admin;agent-one=bank-a"
"""``agent-all`` holds every operation: the role, not the operation, is under test (the fake methods are in no
operations table, so they need `admin` on their bank)."""


def _handlers(seen: list[str]) -> grpc.GenericRpcHandler:
    async def who(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        seen.append(interceptors.acting_name())
        return b"ok"

    def unary() -> grpc.RpcMethodHandler:
        return grpc.unary_unary_rpc_method_handler(
            who, request_deserializer=lambda raw: raw, response_serializer=lambda raw: raw
        )

    names = ("Client", "Mesh", "Admin", "Undeclared")
    return grpc.method_handlers_generic_handler(SERVICE, {name: unary() for name in names})


@contextlib.asynccontextmanager
async def _server(seen: list[str], refusals: list[Refusal] | None = None) -> AsyncIterator[grpc.aio.Channel]:
    @contextlib.asynccontextmanager
    async def factory() -> AsyncIterator[ServiceSpec]:
        yield ServiceSpec(
            SERVICE,
            lambda server: server.add_generic_rpc_handlers((_handlers(seen),)),
            roles=ROLES_UNDER_TEST,
            on_refusal=refusals.append if refusals is not None else None,
        )

    async with (
        serving(factory, tokens=TOKENS, internal_token=MESH, admin_token=ADMIN) as server,
        channel_to(server) as channel,
    ):
        yield channel


async def _call(channel: grpc.aio.Channel, method: str, token: str = "", **headers: str) -> grpc.StatusCode:
    metadata = [("authorization", f"Bearer {token}")] if token else []
    metadata += list(headers.items())
    try:
        await channel.unary_unary(f"/{SERVICE}/{method}")(b"", timeout=5, metadata=tuple(metadata))
    except grpc.aio.AioRpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


OK, DENIED = grpc.StatusCode.OK, grpc.StatusCode.PERMISSION_DENIED


@pytest.mark.parametrize(
    ("method", "agent", "mesh", "admin"),
    [
        ("Client", OK, OK, OK),
        ("Mesh", DENIED, OK, OK),
        ("Admin", DENIED, DENIED, OK),
        ("Undeclared", DENIED, DENIED, DENIED),
    ],
)
async def test_a_method_serves_the_credentials_its_role_names(
    method: str, agent: grpc.StatusCode, mesh: grpc.StatusCode, admin: grpc.StatusCode
) -> None:
    async with _server([]) as channel:
        assert await _call(channel, method, "agent-all") == agent
        assert await _call(channel, method, MESH) == mesh
        assert await _call(channel, method, ADMIN) == admin
        expected_anonymous = DENIED if method == "Undeclared" else grpc.StatusCode.UNAUTHENTICATED
        assert await _call(channel, method) == expected_anonymous


async def test_an_admin_method_takes_the_admin_token_beside_a_client_bearer_and_acts_as_operator() -> None:
    seen: list[str] = []
    async with _server(seen) as channel:
        assert await _call(channel, "Admin", "agent-one", **{ADMIN_TOKEN_HEADER: ADMIN}) == OK
        assert await _call(channel, "Admin", "agent-one", **{ADMIN_TOKEN_HEADER: "agent-all"}) == DENIED
        assert await _call(channel, "Admin", "agent-one", **{ADMIN_TOKEN_HEADER: "forged"}) == DENIED
    assert seen == ["admin"]


async def test_who_a_call_acts_for_is_named_in_the_metadata_by_the_mesh_only() -> None:
    seen: list[str] = []
    async with _server(seen) as channel:
        assert await _call(channel, "Mesh", MESH, **{ACTOR_HEADER: "agent:1234abcd"}) == OK
        assert await _call(channel, "Mesh", MESH) == OK
        assert await _call(channel, "Mesh", ADMIN, **{ACTOR_HEADER: "someone-else"}) == OK
        assert await _call(channel, "Client", "agent-all", **{ACTOR_HEADER: "admin"}) == OK
        assert await _call(channel, "Mesh", MESH, **{ACTOR_HEADER: "x" * 300}) == OK
    agent = seen[3]
    assert seen == ["agent:1234abcd", "internal", "admin", agent, "internal"]
    assert agent.startswith("agent:") and agent != "agent:1234abcd"


async def test_every_refusal_reaches_the_service_whatever_the_log_level(
    caplog: pytest.LogCaptureFixture,
) -> None:
    refusals: list[Refusal] = []
    access = logging.getLogger("hindsight.access")
    with _level(access, logging.CRITICAL):
        async with _server([], refusals) as channel:
            assert await _call(channel, "Mesh", "agent-all") == DENIED
            assert await _call(channel, "Client", "forged") == grpc.StatusCode.UNAUTHENTICATED
            assert await _call(channel, "Admin", MESH) == DENIED
            assert await _call(channel, "Client", "agent-all") == OK
    assert [(r.method.rsplit("/", 1)[1], r.code) for r in refusals] == [
        ("Mesh", DENIED),
        ("Client", grpc.StatusCode.UNAUTHENTICATED),
        ("Admin", DENIED),
    ]
    assert refusals[0].who.startswith("agent:") and refusals[1].who == "" and refusals[2].who == "internal"
    assert "client tokens are for the edge" in refusals[0].reason


@contextlib.contextmanager
def _level(logger: logging.Logger, level: int) -> Iterator[None]:
    before = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(before)


def test_every_method_of_every_service_declares_a_role() -> None:
    for service in (*LAYER_SERVICES, MEMORY_SERVICE):
        for method in service.methods:
            assert f"/{service.full_name}/{method.name}" in ROLES, (service.full_name, method.name)
    assert {role for path, role in ROLES.items() if path in EDGE_ROLES} == {Role.CLIENT, Role.ADMIN}
    layer_admin = {path for path, role in ROLES.items() if path not in EDGE_ROLES and role is Role.ADMIN}
    assert layer_admin == {
        f"/{service.full_name}/{name}" for service, names in LAYER_ADMIN_METHODS.items() for name in names
    }
    others = EDGE_ROLES.keys() | layer_admin
    assert {role for path, role in ROLES.items() if path not in others} == {Role.MESH}


def test_a_role_table_naming_a_method_the_service_lacks_is_refused() -> None:
    with pytest.raises(ValueError, match="Retian"):
        declared(MEMORY_SERVICE, {"Retian": Role.CLIENT})
    assert memory_pb2.DESCRIPTOR.services_by_name["MemoryService"] is MEMORY_SERVICE


def test_only_the_mesh_credential_is_the_mesh() -> None:
    grants = grants_for(tokens="agent-all=*;admin:boss=*", internal_token=MESH, admin_token=ADMIN)
    assert grants.authenticate(MESH).mesh
    assert not any(grants.authenticate(token).mesh for token in ("agent-all", "boss", ADMIN))
    assert grants.authenticate("boss").admin and grants.authenticate(ADMIN).admin
