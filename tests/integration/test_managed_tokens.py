"""Grants by bank and operation, and managed tokens, on a closed mesh of real layers (PostgreSQL, Redis) with
two real edges: one serving gRPC, the other MCP over streamable HTTP (each with its own copy of the registry,
as two replicas would), driven through real gRPC channels, the official MCP client and the CLI."""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from hindsight.cli import tokens as token_command
from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.mcp_edge.engine import MemoryEngine, open_engine
from hindsight.runtime.auth import grants_for
from hindsight.runtime.records import to_timestamp
from tests.integration.mesh import LayerAddresses, MeshCredentials, serving_edge

READER, WRITER, FORGETTER = "reader-token", "writer-token", "forgetter-token"
BANK = "fleet-bank"
CREDENTIALS = MeshCredentials(
    internal="tokens-mesh-secret",
    admin="tokens-admin-secret",
    # today's syntax (a grant without operations: read and write) beside operations per bank
    tokens=f"{READER}={BANK}:read;{WRITER}={BANK};{FORGETTER}={BANK}:read+write+forget",
)
READ, WRITE, FORGET, ADMIN = (
    episodic_pb2.OPERATION_READ,
    episodic_pb2.OPERATION_WRITE,
    episodic_pb2.OPERATION_FORGET,
    episodic_pb2.OPERATION_ADMIN,
)
OK = grpc.StatusCode.OK


@dataclass(frozen=True)
class Edges:
    grpc: memory_pb2_grpc.MemoryServiceStub
    grpc_address: str
    grpc_engine: MemoryEngine
    mcp_url: str


@pytest.fixture
async def edges(closed_mesh: LayerAddresses) -> AsyncIterator[Edges]:
    settings = closed_mesh.edge_settings(internal_token=CREDENTIALS.internal, admin_token=CREDENTIALS.admin)
    async with open_engine(settings) as grpc_engine, open_engine(settings) as mcp_engine:
        grants = grants_for(
            tokens=CREDENTIALS.tokens, internal_token=CREDENTIALS.internal, admin_token=CREDENTIALS.admin
        )
        async with serving_edge(grpc_engine, CREDENTIALS, grants, BANK, mcp_engine=mcp_engine) as served:
            yield Edges(served.stub, served.address, grpc_engine, served.mcp_url)


def _as(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


async def _code(call: Awaitable[Any]) -> tuple[grpc.StatusCode, str]:
    try:
        await call
    except grpc.aio.AioRpcError as exc:
        return exc.code(), exc.details() or ""
    return OK, ""


def _turn(text: str) -> common_pb2.Turn:
    return common_pb2.Turn(role=common_pb2.ROLE_USER, session_id="s1", text=text)


async def _mcp(url: str, token: str, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """Whether the tool call was refused or failed, and its text; a token the edge does not accept fails
    the HTTP request itself (401)."""
    http = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"})
    try:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            result = await client.call_tool(tool, arguments)
    except Exception as exc:  # the transport refused the credential
        return True, f"refused: {exc!r}"
    text = str(getattr(result.content[0], "text", "")) if result.content else ""
    return result.is_error, text


def _grant(bank: str, *operations: int) -> episodic_pb2.TokenGrant:
    return episodic_pb2.TokenGrant(bank_id=bank, operations=list(operations))


async def _mint(
    edges: Edges, name: str, *grants: episodic_pb2.TokenGrant, by: str = CREDENTIALS.admin, **fields: Any
) -> memory_pb2.CreateTokenResponse:
    request = memory_pb2.CreateTokenRequest(name=name, grants=list(grants), **fields)
    reply: memory_pb2.CreateTokenResponse = await edges.grpc.CreateToken(request, metadata=_as(by))
    return reply


async def _names(edges: Edges, by: str = CREDENTIALS.admin, revoked: bool = False) -> set[str]:
    reply = await edges.grpc.ListTokens(
        memory_pb2.ListTokensRequest(include_revoked=revoked), metadata=_as(by)
    )
    return {token.name for token in reply.tokens}


def _unique(prefix: str) -> str:
    return f"{prefix}-{time.monotonic_ns() % 10**9}"


async def test_each_call_needs_its_operation_on_the_bank_and_a_refusal_names_both(edges: Edges) -> None:
    retain = memory_pb2.RetainRequest(bank_id=BANK, turns=[_turn("The deploy window is Friday at 6pm.")])
    recall = memory_pb2.RecallRequest(bank_id=BANK, query="deploy window")
    purge = memory_pb2.PurgeRequest(bank_id=BANK, session_id="nothing-here")

    assert (await _code(edges.grpc.Retain(retain, metadata=_as(WRITER))))[0] == OK  # old syntax: read+write
    assert (await _code(edges.grpc.Recall(recall, metadata=_as(READER))))[0] == OK
    code, detail = await _code(edges.grpc.Retain(retain, metadata=_as(READER)))
    assert code == grpc.StatusCode.PERMISSION_DENIED
    assert "'write'" in detail and repr(BANK) in detail
    code, detail = await _code(edges.grpc.Purge(purge, metadata=_as(WRITER)))
    assert code == grpc.StatusCode.PERMISSION_DENIED and "'forget'" in detail and repr(BANK) in detail
    assert (await _code(edges.grpc.Purge(purge, metadata=_as(FORGETTER))))[0] == OK

    failed, text = await _mcp(edges.mcp_url, READER, "recall", {"query": "deploy window"})
    assert not failed, text
    failed, text = await _mcp(edges.mcp_url, READER, "retain", {"text": "Reader tries to write."})
    assert failed and "PERMISSION_DENIED" in text and "'write'" in text and repr(BANK) in text
    failed, text = await _mcp(edges.mcp_url, WRITER, "forget", {"session_id": "nothing-here"})
    assert failed and "PERMISSION_DENIED" in text and "'forget'" in text
    failed, text = await _mcp(edges.mcp_url, FORGETTER, "forget", {"session_id": "nothing-here"})
    assert not failed, text


async def test_a_minted_token_works_on_every_port_and_a_revoked_one_is_refused_within_a_second(
    edges: Edges,
) -> None:
    name = _unique("agent")
    minted = await _mint(edges, name, _grant(BANK, READ, WRITE))
    secret = minted.secret
    assert minted.token.name == name and secret and minted.token.HasField("created_at")
    listed = (
        await edges.grpc.ListTokens(memory_pb2.ListTokensRequest(), metadata=_as(CREDENTIALS.admin))
    ).tokens
    assert name in {t.name for t in listed} and secret not in str(listed)

    recall = memory_pb2.RecallRequest(bank_id=BANK, query="deploy")
    assert (await _code(edges.grpc.Recall(recall, metadata=_as(secret))))[0] == OK
    deadline = time.monotonic() + 2  # the other edge reads the registry within its refresh interval
    while (await _mcp(edges.mcp_url, secret, "recall", {"query": "deploy"}))[0]:
        assert time.monotonic() < deadline, "the MCP edge never accepted the new token"

    await edges.grpc.RevokeToken(memory_pb2.RevokeTokenRequest(name=name), metadata=_as(CREDENTIALS.admin))
    revoked_at = time.monotonic()
    code, detail = await _code(edges.grpc.Recall(recall, metadata=_as(secret)))
    assert code == grpc.StatusCode.UNAUTHENTICATED and "revoked" in detail  # this edge: at once
    # The other edge reads the registry every quarter second (the time it takes is what `bench fleet`
    # measures); the bound here only keeps a broken refresh from hanging the test.
    while not (await _mcp(edges.mcp_url, secret, "recall", {"query": "deploy"}))[0]:
        assert time.monotonic() - revoked_at < 15.0, "the other edge still honours a revoked token"
    while time.monotonic() - revoked_at < 1.1:  # and still refused on both more than a second later
        await _mcp(edges.mcp_url, secret, "recall", {"query": "deploy"})
    assert (await _mcp(edges.mcp_url, secret, "recall", {"query": "deploy"}))[0]
    assert (await _code(edges.grpc.Recall(recall, metadata=_as(secret))))[
        0
    ] == grpc.StatusCode.UNAUTHENTICATED

    audit = await edges.grpc.ListAudit(
        memory_pb2.ListAuditRequest(bank_id=BANK), metadata=_as(CREDENTIALS.admin)
    )
    actions = {(e.action, e.target) for e in audit.entries}
    assert ("token_create", name) in actions and ("token_revoke", name) in actions
    await edges.grpc_engine.drain()
    deadline = time.monotonic() + 5
    while True:  # refusals reach the log off the request path
        audit = await edges.grpc.ListAudit(
            memory_pb2.ListAuditRequest(bank_id=BANK, action="token_refused"), metadata=_as(CREDENTIALS.admin)
        )
        if any(e.actor == name for e in audit.entries):
            break
        assert time.monotonic() < deadline, "the refused presentation of a revoked token was not audited"


async def test_a_token_s_last_use_reaches_the_listing(edges: Edges) -> None:
    """Uses are noted in memory and written in batches (one call for all tokens), off the request path."""
    name = _unique("used")
    minted = await _mint(edges, name, _grant(BANK, READ))

    async def last_used() -> episodic_pb2.ManagedToken | None:
        reply = await edges.grpc.ListTokens(memory_pb2.ListTokensRequest(), metadata=_as(CREDENTIALS.admin))
        return next((t for t in reply.tokens if t.name == name), None)

    listed = await last_used()
    assert listed is not None and not listed.HasField("last_used_at")
    before = datetime.now(UTC)
    recall = memory_pb2.RecallRequest(bank_id=BANK, query="deploy")
    assert (await _code(edges.grpc.Recall(recall, metadata=_as(minted.secret))))[0] == OK
    deadline = time.monotonic() + 60  # a hang guard: the batch goes out every few seconds
    while True:
        listed = await last_used()
        if listed is not None and listed.HasField("last_used_at"):
            break
        assert time.monotonic() < deadline, "the token's use never reached the registry"
        await asyncio.sleep(0.5)
    assert listed.last_used_at.ToDatetime(tzinfo=UTC) >= before - timedelta(seconds=1)


async def test_an_expired_token_is_refused_on_every_port(edges: Edges) -> None:
    expires = datetime.now(UTC) + timedelta(seconds=1.5)
    minted = await _mint(edges, _unique("brief"), _grant(BANK, READ), expires_at=to_timestamp(expires))
    recall = memory_pb2.RecallRequest(bank_id=BANK, query="deploy")
    assert (await _code(edges.grpc.Recall(recall, metadata=_as(minted.secret))))[0] == OK
    deadline = time.monotonic() + 2
    while (await _mcp(edges.mcp_url, minted.secret, "recall", {"query": "deploy"}))[0]:
        assert time.monotonic() < deadline
    while datetime.now(UTC) < expires:
        await _code(edges.grpc.Recall(recall, metadata=_as(minted.secret)))
    code, detail = await _code(edges.grpc.Recall(recall, metadata=_as(minted.secret)))
    assert code == grpc.StatusCode.UNAUTHENTICATED and "expired" in detail
    assert (await _mcp(edges.mcp_url, minted.secret, "recall", {"query": "deploy"}))[0]


async def test_a_bank_admin_mints_children_never_wider_than_itself_and_revoking_it_revokes_them(
    edges: Edges,
) -> None:
    team, other = "team-bank", "other-bank"
    lead_expiry = datetime.now(UTC) + timedelta(hours=1)
    lead = await _mint(
        edges, _unique("lead"), _grant(team, READ, WRITE, ADMIN), expires_at=to_timestamp(lead_expiry)
    )
    child_name = _unique("child")
    child = await _mint(edges, child_name, _grant(team, READ), by=lead.secret)
    assert child.token.parent == lead.token.name
    assert child.token.expires_at.ToDatetime(tzinfo=UTC) == lead.token.expires_at.ToDatetime(tzinfo=UTC)

    wider = {
        "forget": (_grant(team, FORGET), {}),
        "other bank": (_grant(other, READ), {}),
        "every bank": (_grant("*", READ), {}),
        "later expiry": (_grant(team, READ), {"expires_at": to_timestamp(lead_expiry + timedelta(days=1))}),
    }
    for why, (grant, fields) in wider.items():
        code, detail = await _code(_mint(edges, _unique("wide"), grant, by=lead.secret, **fields))
        assert code == grpc.StatusCode.PERMISSION_DENIED, why
        assert ("expir" in detail) if why == "later expiry" else ("bank" in detail), (why, detail)
    code, _ = await _code(_mint(edges, _unique("op"), admin=True, by=lead.secret))
    assert code == grpc.StatusCode.PERMISSION_DENIED
    code, _ = await _code(_mint(edges, _unique("x"), _grant(team, READ), by=child.secret))  # no admin
    assert code == grpc.StatusCode.PERMISSION_DENIED

    seen_by_lead = await _names(edges, by=lead.secret)
    assert child_name in seen_by_lead and lead.token.name in seen_by_lead
    assert seen_by_lead <= await _names(edges)
    code, _ = await _code(
        edges.grpc.RevokeToken(memory_pb2.RevokeTokenRequest(name=READER), metadata=_as(lead.secret))
    )
    assert code in {grpc.StatusCode.NOT_FOUND, grpc.StatusCode.PERMISSION_DENIED}  # static: not managed

    reply = await edges.grpc.RevokeToken(
        memory_pb2.RevokeTokenRequest(name=lead.token.name), metadata=_as(CREDENTIALS.admin)
    )
    assert set(reply.revoked_names) == {lead.token.name, child_name}
    recall = memory_pb2.RecallRequest(bank_id=team, query="anything")
    assert (await _code(edges.grpc.Recall(recall, metadata=_as(child.secret))))[0] == (
        grpc.StatusCode.UNAUTHENTICATED
    )


async def test_bad_input_names_the_field_and_writes_nothing(edges: Edges) -> None:
    before = await _names(edges, revoked=True)
    taken = _unique("taken")
    await _mint(edges, taken, _grant(BANK))
    cases: list[tuple[Callable[[], Awaitable[Any]], grpc.StatusCode, str]] = [
        (
            lambda: _mint(edges, _unique("op"), _grant(BANK, 9)),
            grpc.StatusCode.INVALID_ARGUMENT,
            "operations[0]",
        ),
        (
            lambda: _mint(
                edges,
                _unique("past"),
                _grant(BANK),
                expires_at=to_timestamp(datetime(2020, 1, 1, tzinfo=UTC)),
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
            "expires_at",
        ),
        (lambda: _mint(edges, taken, _grant(BANK)), grpc.StatusCode.ALREADY_EXISTS, "name"),
        (lambda: _mint(edges, "Bad Name", _grant(BANK)), grpc.StatusCode.INVALID_ARGUMENT, "name"),
        (lambda: _mint(edges, _unique("none")), grpc.StatusCode.INVALID_ARGUMENT, "grants"),
        (
            lambda: _mint(edges, _unique("bank"), _grant("no spaces")),
            grpc.StatusCode.INVALID_ARGUMENT,
            "bank_id",
        ),
    ]
    for call, expected, field in cases:
        code, detail = await _code(call())
        assert code == expected and field in detail, (code, detail)
    assert await _names(edges, revoked=True) == before | {taken}

    failed, text = await _mcp(
        edges.mcp_url, CREDENTIALS.admin, "token_create", {"name": _unique("m"), "banks": [f"{BANK}:reed"]}
    )
    assert failed and "INVALID_ARGUMENT" in text and "reed" in text
    failed, text = await _mcp(
        edges.mcp_url,
        CREDENTIALS.admin,
        "token_create",
        {"name": _unique("m"), "banks": [BANK], "expires": "soon"},
    )
    assert failed and "INVALID_ARGUMENT" in text and "expires" in text
    assert await _names(edges, revoked=True) == before | {taken}


async def test_the_mcp_tools_mint_list_and_revoke(edges: Edges) -> None:
    name = _unique("via-mcp")
    failed, text = await _mcp(
        edges.mcp_url,
        CREDENTIALS.admin,
        "token_create",
        {"name": name, "banks": [f"{BANK}:read"], "expires": "1h"},
    )
    assert not failed, text
    minted = json.loads(text)
    assert minted["grants"] == [f"{BANK}:read"] and minted["token"].startswith("hst_")
    failed, text = await _mcp(edges.mcp_url, CREDENTIALS.admin, "token_list", {})
    assert not failed and name in text and minted["token"] not in text
    failed, text = await _mcp(edges.mcp_url, READER, "token_list", {})
    assert failed and "PERMISSION_DENIED" in text
    failed, text = await _mcp(edges.mcp_url, CREDENTIALS.admin, "token_revoke", {"name": name})
    assert not failed and name in text


def _cli(edges: Edges, capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    token_command.add_command(parser.add_subparsers())
    args = parser.parse_args(
        ["token", *arguments, "--address", edges.grpc_address, "--token", CREDENTIALS.admin]
    )
    code = token_command.run(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def test_the_cli_creates_lists_and_revokes_against_a_running_edge(
    edges: Edges, capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncio

    name = _unique("cli")
    code, out, err = await asyncio.to_thread(
        _cli,
        edges,
        capsys,
        "create",
        "--name",
        name,
        "--bank",
        f"{BANK}:read+write+forget",
        "--expires",
        "7d",
        "--json",
    )
    assert code == 0, err
    shown = json.loads(out)
    assert set(shown) == {"name", "token", "grants", "expires"}
    assert shown["name"] == name and shown["grants"] == [f"{BANK}:read+write+forget"] and shown["expires"]
    purge = memory_pb2.PurgeRequest(bank_id=BANK, session_id="nothing-here")
    assert (await _code(edges.grpc.Purge(purge, metadata=_as(shown["token"]))))[0] == OK

    code, out, err = await asyncio.to_thread(_cli, edges, capsys, "list", "--json")
    assert code == 0, err
    listed = {item["name"]: item for item in json.loads(out)}
    assert listed[name]["grants"] == [f"{BANK}:read+write+forget"] and shown["token"] not in out
    assert {"expires", "created", "last_used"} <= set(listed[name])

    code, out, err = await asyncio.to_thread(
        _cli, edges, capsys, "create", "--name", _unique("bad"), "--bank", f"{BANK}:delete"
    )
    assert code == 1 and "unknown operation 'delete'" in err
    code, out, err = await asyncio.to_thread(_cli, edges, capsys, "create", "--name", name, "--bank", BANK)
    assert code == 1 and "ALREADY_EXISTS" in err and "name" in err

    code, out, err = await asyncio.to_thread(_cli, edges, capsys, "revoke", name)
    assert code == 0 and name in out, err
    assert (await _code(edges.grpc.Purge(purge, metadata=_as(shown["token"]))))[
        0
    ] == grpc.StatusCode.UNAUTHENTICATED
