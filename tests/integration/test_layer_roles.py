"""Layer ports serve only the mesh and the operator: a client token, even one that grants every bank (as the
agent token ``hindsight up`` makes does), is refused by every RPC of every layer.

The RPCs are walked from the generated service descriptors, so a method added later is probed too. Each is
called with an empty request naming one bank, once with each credential, on a mesh whose layers are closed
as deployed ones are. A call *answers* a credential when its status is anything but PERMISSION_DENIED or
UNAUTHENTICATED (INVALID_ARGUMENT about the empty request means the credential got through). The mesh
credential and the admin token are served by every layer RPC, but for the few the operator alone may call.
"""

from __future__ import annotations

import secrets

import grpc
import pytest

from hindsight.runtime.channels import open_channel
from hindsight.runtime.roles import ROLES, Role
from tests.integration.mesh import LayerAddresses, MeshCredentials
from tests.integration.rpcs import Rpc, call_answered, every_rpc

BANK = "roles-bank"
REFUSED = {grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED}
CREDENTIALS = MeshCredentials(
    internal="mesh-" + secrets.token_urlsafe(16),
    admin="admin-" + secrets.token_urlsafe(16),
    tokens=f"agent:agent-every-bank=*;agent-one-bank={BANK}",
)
AGENT_TOKENS = ("agent-every-bank", "agent-one-bank")
EDGE = "mcp_edge"
"""The edge's MemoryService is where client tokens belong: not a layer port."""


def layer_rpcs() -> list[Rpc]:
    """Every RPC of every layer's own port, from the generated descriptors."""
    return [rpc for rpc in every_rpc() if rpc.layer != EDGE]


def _address(mesh: LayerAddresses, rpc: Rpc) -> str:
    return str(getattr(mesh, rpc.layer))


async def _codes(mesh: LayerAddresses, token: str) -> dict[str, grpc.StatusCode]:
    """The status of every layer RPC called with ``token``, by method path."""
    codes: dict[str, grpc.StatusCode] = {}
    channels: dict[str, grpc.aio.Channel] = {}
    try:
        for rpc in layer_rpcs():
            address = _address(mesh, rpc)
            channel = channels.setdefault(address, open_channel(address))
            answer = await call_answered(channel, rpc, rpc.request(bank_id=BANK), token, timeout=30.0)
            codes[rpc.path] = answer.code
    finally:
        for channel in channels.values():
            await channel.close()
    return codes


def test_every_layer_rpc_is_walked_from_the_descriptors() -> None:
    layers = {rpc.layer for rpc in layer_rpcs()}
    assert layers == {"inference", "working", "episodic", "semantic", "reflect"}
    assert len(layer_rpcs()) > 40


@pytest.mark.parametrize("token", AGENT_TOKENS)
async def test_no_layer_rpc_answers_a_client_token(closed_mesh: LayerAddresses, token: str) -> None:
    codes = await _codes(closed_mesh, token)
    answered = sorted(path for path, code in codes.items() if code not in REFUSED)
    print(f"layer RPCs answering {token}: {len(answered)} of {len(codes)}")
    assert answered == []


async def test_no_layer_rpc_answers_without_a_credential(closed_mesh: LayerAddresses) -> None:
    codes = await _codes(closed_mesh, "")
    assert {path for path, code in codes.items() if code is not grpc.StatusCode.UNAUTHENTICATED} == set()


async def test_the_mesh_credential_is_served_by_every_layer_rpc_but_the_operators(
    closed_mesh: LayerAddresses,
) -> None:
    codes = await _codes(closed_mesh, CREDENTIALS.internal)
    refused = {path for path, code in codes.items() if code in REFUSED}
    assert refused == {path for path in codes if ROLES[path] is Role.ADMIN}
    assert len(refused) < 5


async def test_the_admin_token_is_served_by_every_layer_rpc(closed_mesh: LayerAddresses) -> None:
    codes = await _codes(closed_mesh, CREDENTIALS.admin)
    assert sorted(path for path, code in codes.items() if code in REFUSED) == []
