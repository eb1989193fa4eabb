"""MCP HTTP authorization on a real edge over every real layer: the 401 and the protected resource metadata
of the MCP authorization spec, static tokens and JWTs through the official MCP client, the bank check of
each tool, and DNS rebinding protection (forged Host and Origin) on loopback and beyond."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.auth.utils import extract_field_from_www_auth, extract_resource_metadata_from_www_auth
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import ProtectedResourceMetadata

from hindsight.cli.mcp_stdio import LOCAL_USER
from hindsight.mcp_edge.endpoint import HttpEndpoint
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.mcp_edge.http import serving_mcp_http
from hindsight.mcp_edge.mcp_auth import http_auth_for
from hindsight.mcp_edge.mcp_server import build_mcp_server
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime.auth import Caller, Grants
from hindsight.runtime.embedded import free_port
from hindsight.runtime.settings import SettingsError
from tests.jwt_issuer import ISSUER, Issuer, serving_jwks

TOKENS = "alpha-token=bank-a;ops-token=*"
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
MCP_HEADERS = {"accept": "application/json, text/event-stream"}


@contextlib.asynccontextmanager
async def edge_http(engine: MemoryEngine, grants: Grants, **settings: Any) -> AsyncIterator[str]:
    """The edge's MCP HTTP on a free port, with the given ``mcp_*`` settings; yields its local URL."""
    values: dict[str, Any] = {"mcp_port": free_port(), "default_bank": "bank-a"} | settings
    async with serving_mcp_http(engine, EdgeSettings(**values), grants) as url:
        yield url


def _client(url: str, token: str) -> Client:
    """The official MCP client over streamable HTTP, presenting ``token``."""
    http = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"})
    return Client(streamable_http_client(url, http_client=http))


async def _text(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    result = await client.call_tool(tool, arguments)
    return result.is_error, str(getattr(result.content[0], "text", "")) if result.content else ""


def _origin(url: str) -> str:
    return url.removesuffix("/mcp")


async def test_without_a_good_token_the_edge_answers_401_and_points_at_its_resource_metadata(
    engine: MemoryEngine, tmp_path: Path
) -> None:
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    issuer = Issuer(resource).add_key("k1").add_key("stranger")
    jwks = issuer.write_jwks(tmp_path / "jwks.json", "k1")
    async with (
        edge_http(
            engine,
            Grants.parse(TOKENS),
            mcp_port=port,
            mcp_jwks=str(jwks),
            mcp_jwt_issuer=ISSUER,
            mcp_scopes=("memory",),
        ) as url,
        httpx2.AsyncClient() as http,
    ):
        metadata_url = f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
        for token in (
            None,
            "wrong-token",
            issuer.sign("k1", lifetime=-3600),  # expired
            issuer.sign("k1", aud="http://elsewhere.test/mcp"),
            issuer.sign("k1", iss="https://other-issuer.test"),
            issuer.sign("stranger"),  # a key the edge does not trust
        ):
            headers = MCP_HEADERS | ({"authorization": f"Bearer {token}"} if token else {})
            refused = await http.post(url, json=PING, headers=headers)
            assert refused.status_code == 401, token
            challenge = refused.headers["www-authenticate"]
            assert challenge.startswith("Bearer ")
            assert extract_field_from_www_auth(refused, "error") == "invalid_token"
            assert extract_resource_metadata_from_www_auth(refused) == metadata_url

        metadata = await http.get(metadata_url)
        assert metadata.status_code == 200
        document = metadata.json()
        assert document == {
            "resource": resource,
            "authorization_servers": [ISSUER],
            "scopes_supported": ["memory"],
            "bearer_methods_supported": ["header"],
        }
        parsed = ProtectedResourceMetadata.model_validate(document)  # as an OAuth client reads it
        assert str(parsed.resource) == resource

        unscoped = await http.post(
            url, json=PING, headers=MCP_HEADERS | {"authorization": f"Bearer {issuer.sign('k1', scope=None)}"}
        )
        assert unscoped.status_code == 403
        assert extract_field_from_www_auth(unscoped, "error") == "insufficient_scope"
        for token in ("alpha-token", issuer.sign("k1")):  # static tokens carry every required scope
            admitted = await http.post(
                url, json=PING, headers=MCP_HEADERS | {"authorization": f"Bearer {token}"}
            )
            assert admitted.status_code == 200 and admitted.json()["result"] == {}


async def test_a_static_token_reaches_only_the_banks_it_grants(
    engine: MemoryEngine, unique_name: str
) -> None:
    async with edge_http(engine, Grants.parse(TOKENS)) as url, _client(url, "alpha-token") as client:
        failed, text = await _text(
            client, "retain", {"text": f"alpha keeps the {unique_name} notes", "id": unique_name}
        )
        assert not failed, text
        listed = await client.call_tool("list_recent", {"limit": 100})
        assert not listed.is_error and listed.structured_content is not None
        assert unique_name in [turn["id"] for turn in listed.structured_content["turns"]]
        for tool, arguments in (
            ("recall", {"query": "notes", "bank": "bank-b"}),
            ("retain", {"text": "sneaky", "bank": "bank-b"}),
            ("list_recent", {"bank": "bank-b"}),
            ("purge", {"whole_bank": True, "bank": "bank-b"}),
        ):
            failed, text = await _text(client, tool, arguments)
            assert failed and "PERMISSION_DENIED: " in text and "'bank-b'" in text, (tool, text)


async def test_a_jwt_grants_the_banks_its_claim_lists(
    engine: MemoryEngine, tmp_path: Path, unique_name: str
) -> None:
    port = free_port()
    issuer = Issuer(f"http://127.0.0.1:{port}/mcp").add_key("k1", "ES256")
    settings = {
        "mcp_port": port,
        "mcp_jwks": str(issuer.write_jwks(tmp_path / "jwks.json")),
        "mcp_jwt_issuer": ISSUER,
    }
    bank = f"jwt-{unique_name}"
    async with edge_http(engine, Grants.parse(TOKENS), **settings) as url:
        async with _client(url, issuer.sign(hindsight_banks=[bank])) as client:
            failed, text = await _text(client, "retain", {"text": "the JWT agent was here", "bank": bank})
            assert not failed, text
            failed, text = await _text(client, "list_recent", {"bank": bank})
            assert not failed and "the JWT agent was here" in text
            failed, text = await _text(client, "list_recent", {"bank": "bank-a"})
            assert failed and "PERMISSION_DENIED: " in text and "'bank-a'" in text
        async with _client(url, issuer.sign()) as client:  # no banks claim: no bank at all
            for target in (bank, "bank-a"):
                failed, text = await _text(client, "list_recent", {"bank": target})
                assert failed and "PERMISSION_DENIED: " in text and repr(target) in text
        async with _client(url, issuer.sign(hindsight_admin=True)) as client:
            failed, text = await _text(client, "list_recent", {"bank": bank})
            assert not failed and "the JWT agent was here" in text


async def test_jwt_keys_come_from_the_issuers_jwks_url(engine: MemoryEngine) -> None:
    port = free_port()
    issuer = Issuer(f"http://127.0.0.1:{port}/mcp").add_key("k1")
    with serving_jwks(issuer.jwks()) as served:
        async with (
            edge_http(engine, Grants.off(), mcp_port=port, mcp_jwks=served.url) as url,
            _client(url, issuer.sign(hindsight_banks=["bank-a"])) as client,
        ):
            tools = await client.list_tools()
            assert "recall" in {tool.name for tool in tools.tools}
            failed, text = await _text(client, "list_recent", {})
            assert not failed, text
            async with httpx2.AsyncClient() as http:  # JWTs on: authentication-off no longer admits anyone
                anonymous = await http.post(url, json=PING, headers=MCP_HEADERS)
            assert anonymous.status_code == 401
        assert served.requests == 1  # fetched once, then cached


async def _ping(url: str, *, token: str | None = None, **headers: str) -> int:
    sent = MCP_HEADERS | headers | ({"authorization": f"Bearer {token}"} if token else {})
    async with httpx2.AsyncClient() as http:
        return (await http.post(url, json=PING, headers=sent)).status_code


async def test_forged_host_and_origin_headers_are_refused_on_loopback(engine: MemoryEngine) -> None:
    for grants, token in ((Grants.parse(TOKENS), "alpha-token"), (Grants.off(), None)):
        async with edge_http(engine, grants) as url:
            port = url.split(":")[2].split("/")[0]
            assert await _ping(url, token=token) == 200
            assert await _ping(url, token=token, host=f"localhost:{port}") == 200
            assert await _ping(url, token=token, origin=f"http://localhost:{port}") == 200
            assert await _ping(url, token=token, origin=_origin(url)) == 200
            assert await _ping(url, token=token, host=f"attacker.example:{port}") == 421
            assert await _ping(url, token=token, host="attacker.example") == 421
            assert await _ping(url, token=token, host=f"127.0.0.1:{int(port) + 1}") == 421
            assert await _ping(url, token=token, origin="http://attacker.example") == 403
            assert await _ping(url, token=token, origin=f"http://attacker.example:{port}") == 403


async def test_off_loopback_the_host_must_be_the_public_urls_or_an_allowed_one(engine: MemoryEngine) -> None:
    port = free_port()
    public = f"http://memory.test:{port}/mcp"
    with pytest.raises(SettingsError, match="only on loopback"):
        async with edge_http(engine, Grants.off(), mcp_host="0.0.0.0", mcp_port=port):
            pass
    async with edge_http(
        engine,
        Grants.parse(TOKENS),
        mcp_host="0.0.0.0",
        mcp_port=port,
        mcp_public_url=public,
        mcp_allowed_hosts=("edge.internal:*",),
        mcp_allowed_origins=("https://console.example",),
    ) as url:
        assert url == f"http://127.0.0.1:{port}/mcp"
        for host, status in (
            (f"memory.test:{port}", 200),
            (f"edge.internal:{port}", 200),
            (f"127.0.0.1:{port}", 200),
            (f"attacker.example:{port}", 421),
            (f"memory.test.attacker.example:{port}", 421),
        ):
            assert await _ping(url, token="alpha-token", host=host) == status, host
        assert await _ping(url, token="alpha-token", origin="https://console.example") == 200
        assert await _ping(url, token="alpha-token", origin=f"http://memory.test:{port}") == 200
        assert await _ping(url, token="alpha-token", origin="https://attacker.example") == 403
        async with httpx2.AsyncClient() as http:
            refused = await http.post(url, json=PING, headers=MCP_HEADERS | {"host": f"memory.test:{port}"})
            assert refused.status_code == 401
            metadata_url = extract_resource_metadata_from_www_auth(refused)
            assert metadata_url == f"http://memory.test:{port}/.well-known/oauth-protected-resource/mcp"
            document = (
                await http.get(f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp")
            ).json()
            assert document["resource"] == public
            assert document["authorization_servers"] == [f"http://memory.test:{port}"]
        async with _client(url, "alpha-token") as client:
            failed, text = await _text(client, "list_recent", {})
            assert not failed, text


async def test_a_call_without_identity_is_refused_whenever_authentication_is_on(engine: MemoryEngine) -> None:
    settings = EdgeSettings(mcp_port=free_port())
    grants = Grants.parse(TOKENS)
    auth = http_auth_for(settings, grants, HttpEndpoint.of(settings))
    closed = (
        build_mcp_server(engine, grants, "bank-a", http_auth=auth),  # the HTTP server, reached without HTTP
        build_mcp_server(engine, grants, "bank-a"),  # tokens configured, no HTTP auth to carry them
        build_mcp_server(engine, Grants(), "bank-a"),  # closed: no credential at all
    )
    for server in closed:
        async with Client(server) as client:
            failed, text = await _text(client, "list_recent", {})
            assert failed and "UNAUTHENTICATED: " in text, text
    local = Caller(name="stdio-test", banks=frozenset({"bank-a"}))
    async with Client(build_mcp_server(engine, grants, "bank-a", local_caller=local)) as client:
        failed, text = await _text(client, "list_recent", {})
        assert not failed, text
        failed, text = await _text(client, "list_recent", {"bank": "bank-b"})
        assert failed and "PERMISSION_DENIED: " in text and "'stdio-test'" in text
    for server in (
        build_mcp_server(engine, Grants(), "bank-b", local_caller=LOCAL_USER),  # what `hindsight mcp` serves
        build_mcp_server(engine, Grants.off(), "bank-b"),  # authentication off (loopback development)
    ):
        async with Client(server) as client:
            failed, text = await _text(client, "list_recent", {})
            assert not failed, text
