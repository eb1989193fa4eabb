"""JWT bearer tokens on MCP HTTP: signature, expiry, issuer, audience, the banks claim, and the key sets
they are checked with (a JWKS file, and a JWKS URL on a real loopback HTTP server)."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from hindsight.mcp_edge.endpoint import HttpEndpoint
from hindsight.mcp_edge.jwks import JwksError, JwksFile, JwksUrl, parse_jwks
from hindsight.mcp_edge.mcp_auth import CallerToken, EdgeTokenVerifier, JwtVerifier, http_auth_for
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime.auth import Grants
from hindsight.runtime.settings import SettingsError, load
from tests.jwt_issuer import ISSUER, Issuer, serving_jwks

AUDIENCE = "http://127.0.0.1:8765/mcp"


@pytest.fixture(scope="module")
def issuer() -> Issuer:
    return Issuer(AUDIENCE).add_key("rsa-1").add_key("ec-1", "ES256").add_key("rsa-2")


@pytest.fixture
def verifier(issuer: Issuer, tmp_path: Path) -> JwtVerifier:
    path = issuer.write_jwks(tmp_path / "jwks.json", "rsa-1", "ec-1")
    return JwtVerifier(keys=JwksFile(path), audience=AUDIENCE, issuer=ISSUER)


async def test_a_signed_jwt_names_its_caller_and_the_banks_in_its_claim(
    issuer: Issuer, verifier: JwtVerifier
) -> None:
    for kid in ("rsa-1", "ec-1"):
        token = await verifier.verify(issuer.sign(kid, hindsight_banks=["bank-a", "bank-b"]))
        assert isinstance(token, CallerToken), kid
        assert token.caller.name == "jwt:agent-7" and not token.caller.admin
        assert token.caller.banks == {"bank-a", "bank-b"}
        assert token.caller.may_use("bank-a") and not token.caller.may_use("bank-c")
        assert token.scopes == ["memory"] and token.subject == "agent-7"
        assert token.expires_at is not None and token.expires_at > time.time()
        assert token.claims == {"iss": ISSUER}
        assert "." not in token.token  # the SDK keeps a digest, never the token itself


async def test_the_banks_claim_decides_what_a_jwt_grants(issuer: Issuer, verifier: JwtVerifier) -> None:
    async def banks(**claims: Any) -> frozenset[str] | None:
        token = await verifier.verify(issuer.sign(**claims))
        return token.caller.banks if token else None

    assert await banks() == frozenset()  # no claim: no bank
    assert await banks(hindsight_banks="*") == {"*"}
    assert await banks(hindsight_banks="bank-a") == {"bank-a"}
    assert await banks(hindsight_banks={"bank": "a"}) is None
    assert await banks(hindsight_banks=["bank-a", 3]) is None
    admin = await verifier.verify(issuer.sign(hindsight_admin=True))
    assert admin is not None and admin.caller.admin and admin.caller.may_use("any-bank")
    not_admin = await verifier.verify(issuer.sign(hindsight_admin="true", hindsight_banks=["x"]))
    assert not_admin is not None and not not_admin.caller.admin and not_admin.caller.banks == {"x"}


async def test_claim_names_are_settings(issuer: Issuer, tmp_path: Path) -> None:
    custom = JwtVerifier(
        keys=JwksFile(issuer.write_jwks(tmp_path / "jwks.json")),
        audience=AUDIENCE,
        banks_claim="memory_banks",
        admin_claim="ops",
    )
    token = await custom.verify(issuer.sign(memory_banks=["m"], hindsight_banks=["h"]))
    assert token is not None and token.caller.banks == {"m"}
    ops = await custom.verify(issuer.sign(ops=True))
    assert ops is not None and ops.caller.admin


async def test_expired_early_and_timeless_jwts_are_refused(issuer: Issuer, verifier: JwtVerifier) -> None:
    now = int(time.time())
    assert await verifier.verify(issuer.sign(exp=now - 3600)) is None
    assert await verifier.verify(issuer.sign(nbf=now + 3600)) is None
    assert await verifier.verify(issuer.sign(exp=None)) is None
    assert await verifier.verify(issuer.sign(nbf=now - 10)) is not None


async def test_issuer_and_audience_must_match(issuer: Issuer, verifier: JwtVerifier) -> None:
    assert await verifier.verify(issuer.sign(iss="https://other.test")) is None
    assert await verifier.verify(issuer.sign(iss=None)) is None
    assert await verifier.verify(issuer.sign(aud="http://elsewhere.test/mcp")) is None
    assert await verifier.verify(issuer.sign(aud=None)) is None
    listed = await verifier.verify(issuer.sign(aud=["https://api.test", AUDIENCE]))
    assert listed is not None and listed.resource == AUDIENCE


async def test_only_the_key_set_s_keys_and_algorithms_sign(
    issuer: Issuer, verifier: JwtVerifier, tmp_path: Path
) -> None:
    forged = issuer.sign("rsa-2", hindsight_banks="*")
    header = jwt.get_unverified_header(forged)
    assert header["kid"] == "rsa-2"
    assert await verifier.verify(forged) is None  # a key the set does not hold
    _, other_key = issuer.keys["rsa-2"]
    claims = {"iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 60, "hindsight_banks": "*"}
    same_kid = jwt.encode(claims, other_key, algorithm="RS256", headers={"kid": "rsa-1"})
    assert await verifier.verify(same_kid) is None  # signature does not match rsa-1
    _, rsa_key = issuer.keys["rsa-1"]
    public_pem = rsa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    hmac_forgery = _hs256(claims, public_pem, kid="rsa-1")
    assert await verifier.verify(hmac_forgery) is None
    unsigned = jwt.encode(claims, key="", algorithm="none", headers={"kid": "rsa-1"})
    assert await verifier.verify(unsigned) is None
    ec_as_rsa = jwt.encode(claims, issuer.keys["ec-1"][1], algorithm="ES256", headers={"kid": "rsa-1"})
    assert await verifier.verify(ec_as_rsa) is None
    other_algorithm = jwt.encode(claims, rsa_key, algorithm="PS256", headers={"kid": "rsa-1"})
    assert await verifier.verify(other_algorithm) is None  # rsa-1 is declared RS256
    undeclared = issuer.jwks("rsa-1")
    del undeclared["keys"][0]["alg"]
    (tmp_path / "undeclared.json").write_text(json.dumps(undeclared))
    lax = JwtVerifier(keys=JwksFile(tmp_path / "undeclared.json"), audience=AUDIENCE, issuer=ISSUER)
    assert await lax.verify(ec_as_rsa) is None  # an RSA key checks no ES256 signature
    assert await lax.verify(issuer.sign("rsa-1")) is not None
    assert await lax.verify(other_algorithm) is not None  # undeclared: any RSA algorithm
    assert await verifier.verify("not.a.jwt") is None


def _hs256(claims: dict[str, Any], secret: bytes, kid: str) -> str:
    """A token 'signed' with HMAC using the public key as the secret (the classic confusion attack)."""
    import base64
    import hashlib
    import hmac

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    head = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
    body = b64(json.dumps(claims).encode())
    signature = hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(signature)}"


async def test_a_token_without_kid_needs_a_key_set_of_one(issuer: Issuer, tmp_path: Path) -> None:
    _, key = issuer.keys["rsa-1"]
    claims = {"iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 60, "hindsight_banks": ["a"]}
    bare = jwt.encode(claims, key, algorithm="RS256")
    single = JwtVerifier(keys=JwksFile(issuer.write_jwks(tmp_path / "one.json", "rsa-1")), audience=AUDIENCE)
    double = JwtVerifier(
        keys=JwksFile(issuer.write_jwks(tmp_path / "two.json", "rsa-1", "ec-1")), audience=AUDIENCE
    )
    assert await single.verify(bare) is not None
    assert await double.verify(bare) is None


def test_a_key_set_keeps_only_asymmetric_signing_keys(issuer: Issuer) -> None:
    public = issuer.jwks("rsa-1", "ec-1")["keys"]
    secret = {"kty": "oct", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0", "kid": "shared", "alg": "HS256"}
    encrypting = public[0] | {"kid": "enc", "use": "enc"}
    keys = parse_jwks(json.dumps({"keys": [secret, encrypting, *public, "junk"]}))
    assert [key.kid for key in keys] == ["rsa-1", "ec-1"]
    with pytest.raises(JwksError):
        parse_jwks(json.dumps({"keys": [secret]}))
    with pytest.raises(JwksError):
        parse_jwks("{not json")
    with pytest.raises(JwksError):
        parse_jwks(json.dumps([1, 2]))


def test_an_unusable_jwks_file_stops_start_up_naming_the_setting(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="HINDSIGHT_MCP_JWKS"):
        JwksFile(tmp_path / "missing.json")
    (tmp_path / "empty.json").write_text('{"keys": []}')
    with pytest.raises(SettingsError, match="no usable signing key"):
        JwksFile(tmp_path / "empty.json")


async def test_a_jwks_file_is_read_again_when_its_keys_rotate(issuer: Issuer, tmp_path: Path) -> None:
    path = issuer.write_jwks(tmp_path / "jwks.json", "rsa-1")
    verifier = JwtVerifier(keys=JwksFile(path), audience=AUDIENCE)
    assert await verifier.verify(issuer.sign("rsa-2")) is None
    issuer.write_jwks(path, "rsa-2")
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 1_000_000_000))
    assert await verifier.verify(issuer.sign("rsa-2")) is not None  # the new kid made it look again
    path.write_text("{broken")
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 2_000_000_000))
    assert await verifier.verify(issuer.sign("rsa-1")) is None  # unknown kid, file unreadable...
    assert await verifier.verify(issuer.sign("rsa-2")) is not None  # ...and the keys read before stay


async def test_keys_from_a_jwks_url_are_cached_and_fetched_again_for_a_new_kid(issuer: Issuer) -> None:
    with serving_jwks(issuer.jwks("rsa-1")) as served:
        keys = JwksUrl(served.url, refetch_interval=0)
        verifier = JwtVerifier(keys=keys, audience=AUDIENCE, issuer=ISSUER)
        assert await verifier.verify(issuer.sign("rsa-1")) is not None
        assert await verifier.verify(issuer.sign("rsa-1", hindsight_banks=["x"])) is not None
        assert served.requests == 1  # cached
        served.document = issuer.jwks("rsa-2")  # the issuer rotates its key
        rotated = await verifier.verify(issuer.sign("rsa-2", hindsight_banks=["x"]))
        assert rotated is not None and rotated.caller.banks == {"x"}
        assert served.requests == 2


async def test_forged_key_ids_do_not_make_the_edge_hammer_the_issuer(issuer: Issuer) -> None:
    with serving_jwks(issuer.jwks("rsa-1")) as served:
        verifier = JwtVerifier(keys=JwksUrl(served.url, refetch_interval=60), audience=AUDIENCE)
        assert await verifier.verify(issuer.sign("rsa-1")) is not None
        for _ in range(5):
            assert await verifier.verify(issuer.sign("rsa-2")) is None
        assert served.requests == 1


async def test_a_jwks_url_that_does_not_answer_refuses_tokens_without_hanging(issuer: Issuer) -> None:
    with socket.socket() as silent:  # accepts connections (backlog) but never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        keys = JwksUrl(f"http://127.0.0.1:{silent.getsockname()[1]}/jwks.json", timeout=0.3)
        verifier = JwtVerifier(keys=keys, audience=AUDIENCE)
        assert await verifier.verify(issuer.sign("rsa-1")) is None
        assert keys.fetches == 1
    with serving_jwks(issuer.jwks("rsa-1")) as served:
        missing = JwtVerifier(keys=JwksUrl(served.url.replace("jwks.json", "nope")), audience=AUDIENCE)
        assert await missing.verify(issuer.sign("rsa-1")) is None  # 404


async def test_static_tokens_come_first_and_jwts_second(issuer: Issuer, verifier: JwtVerifier) -> None:
    both = EdgeTokenVerifier(grants=Grants.parse("static-tok=bank-s"), jwt=verifier, scopes=("memory",))
    static = await both.verify_token("static-tok")
    assert isinstance(static, CallerToken) and static.caller.banks == {"bank-s"}
    assert static.scopes == ["memory"] and "static-tok" not in static.token
    from_jwt = await both.verify_token(issuer.sign(hindsight_banks=["bank-j"]))
    assert isinstance(from_jwt, CallerToken) and from_jwt.caller.banks == {"bank-j"}
    assert await both.verify_token("unknown-tok") is None
    static_only = EdgeTokenVerifier(grants=Grants.parse("static-tok=bank-s"))
    assert await static_only.verify_token(issuer.sign(hindsight_banks=["bank-j"])) is None


def test_authentication_is_set_up_from_the_settings(issuer: Issuer, tmp_path: Path) -> None:
    plain = EdgeSettings(mcp_port=8765)
    endpoint = HttpEndpoint.of(plain)
    assert http_auth_for(plain, Grants.off(), endpoint) is None
    static = http_auth_for(plain, Grants.parse("tok=a"), endpoint)
    assert static is not None and static.verifier.jwt is None
    assert str(static.settings.resource_server_url) == "http://127.0.0.1:8765/mcp"
    assert str(static.settings.issuer_url) == "http://127.0.0.1:8765"
    with_jwt = EdgeSettings(
        mcp_port=8765,
        mcp_jwks=str(issuer.write_jwks(tmp_path / "jwks.json")),
        mcp_jwt_issuer=ISSUER,
        mcp_scopes=("memory",),
    )
    auth = http_auth_for(with_jwt, Grants.off(), HttpEndpoint.of(with_jwt))
    assert auth is not None and auth.verifier.grants is None and auth.verifier.jwt is not None
    assert auth.verifier.jwt.audience == "http://127.0.0.1:8765/mcp"  # the resource, by default
    assert str(auth.settings.issuer_url) == ISSUER and auth.settings.required_scopes == ["memory"]


def test_the_endpoint_accepts_its_own_names_only() -> None:
    loopback = HttpEndpoint.of(EdgeSettings(mcp_port=8765))
    assert loopback.allowed_hosts == ("127.0.0.1:8765", "localhost:8765", "[::1]:8765")
    assert "http://localhost:8765" in loopback.allowed_origins
    everywhere = HttpEndpoint.of(
        EdgeSettings(
            mcp_host="0.0.0.0",
            mcp_port=8765,
            mcp_public_url="https://Memory.Example.com/mcp",
            mcp_allowed_hosts=("edge.internal:8765",),
            mcp_allowed_origins=("https://console.example.com",),
        )
    )
    assert "0.0.0.0:8765" not in everywhere.allowed_hosts
    assert {"memory.example.com", "memory.example.com:443", "edge.internal:8765"} <= set(
        everywhere.allowed_hosts
    )
    assert {"https://memory.example.com", "https://console.example.com"} <= set(everywhere.allowed_origins)
    assert everywhere.local_url == "http://127.0.0.1:8765/mcp" and not everywhere.loopback
    wildcard_default = HttpEndpoint.of(EdgeSettings(mcp_host="0.0.0.0", mcp_port=8765))
    assert wildcard_default.public_url == "http://localhost:8765/mcp"
    one_address = HttpEndpoint.of(EdgeSettings(mcp_host="10.1.2.3", mcp_port=9000, mcp_path="/memory"))
    assert (
        one_address.public_url == "http://10.1.2.3:9000/memory"
        and "10.1.2.3:9000" in one_address.allowed_hosts
    )
    ipv6 = HttpEndpoint.of(EdgeSettings(mcp_host="::1", mcp_port=8765))
    assert ipv6.public_url == "http://[::1]:8765/mcp" and ipv6.loopback


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("HINDSIGHT_MCP_PUBLIC_URL", "ftp://memory.example.com/mcp", "http(s) URL"),
        ("HINDSIGHT_MCP_PUBLIC_URL", "https://memory.example.com:99999/mcp", "not a URL"),
        ("HINDSIGHT_MCP_ALLOWED_ORIGINS", "https://console.example.com/page", "without a path"),
        ("HINDSIGHT_MCP_ALLOWED_HOSTS", "https://memory.example.com", "name:port"),
        ("HINDSIGHT_MCP_JWKS", "http://issuer.example.com/jwks.json", "https"),
        ("HINDSIGHT_MCP_JWT_ISSUER", "issuer.example.com", "http(s) URL"),
        ("HINDSIGHT_MCP_PATH", "mcp", "start with '/'"),
        ("HINDSIGHT_MCP_SCOPES", 'a"b', "not one scope"),
    ],
)
def test_malformed_mcp_http_settings_are_refused_naming_the_variable(
    variable: str, value: str, message: str
) -> None:
    with pytest.raises(SettingsError, match=variable) as refused:
        load(EdgeSettings, {variable: value})
    assert message in str(refused.value)
    assert load(EdgeSettings, {"HINDSIGHT_MCP_JWKS": "http://127.0.0.1:9999/jwks.json"}).mcp_jwks
