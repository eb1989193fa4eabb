"""Mutual TLS between layers: a real server with certificates made here by a test CA, real channels."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.embedded import free_ports
from hindsight.runtime.errors import Unavailable
from hindsight.runtime.server import ServiceSpec, running
from hindsight.runtime.settings import ServerSettings, SettingsError
from hindsight.runtime.tls import TlsSettings

SERVICE = "hindsight.working.v1.WorkingMemoryService"
TOKEN = "mesh-token"


class _Window(working_pb2_grpc.WorkingMemoryServiceServicer):
    """Written for this test only: answers every GetWindow, so the test sees the transport, not memory."""

    async def GetWindow(self, request, context):  # type: ignore[no-untyped-def]
        return working_pb2.GetWindowResponse()


@contextlib.asynccontextmanager
async def _service() -> AsyncIterator[ServiceSpec]:
    yield ServiceSpec(
        SERVICE, lambda server: working_pb2_grpc.add_WorkingMemoryServiceServicer_to_server(_Window(), server)
    )


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(path: Path, key: ec.EllipticCurvePrivateKey, cert: x509.Certificate) -> tuple[str, str]:
    key_path, cert_path = path.with_suffix(".key"), path.with_suffix(".pem")
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return str(cert_path), str(key_path)


def _issue(
    ca_key: ec.EllipticCurvePrivateKey, ca: x509.Certificate, name: str, key: ec.EllipticCurvePrivateKey
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    names = [x509.DNSName(name), x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    return (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )


def _authority(path: Path, name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate, str]:
    key = _key()
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(_name(name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    ca_path = path / f"{name}.pem"
    ca_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key, cert, str(ca_path)


@pytest.fixture
def certificates(tmp_path: Path) -> dict[str, TlsSettings]:
    """TLS settings of a server, a client of the same CA, and a client with a certificate of another CA."""
    ca_key, ca, ca_path = _authority(tmp_path, "mesh-ca")
    rogue_key, rogue, _ = _authority(tmp_path, "rogue-ca")
    server_key, client_key, intruder_key = _key(), _key(), _key()
    server = _write(tmp_path / "server", server_key, _issue(ca_key, ca, "working", server_key))
    client = _write(tmp_path / "client", client_key, _issue(ca_key, ca, "edge", client_key))
    intruder = _write(tmp_path / "intruder", intruder_key, _issue(rogue_key, rogue, "edge", intruder_key))
    return {
        "server": TlsSettings(cert=server[0], key=server[1], ca=ca_path),
        "client": TlsSettings(cert=client[0], key=client[1], ca=ca_path),
        "intruder": TlsSettings(cert=intruder[0], key=intruder[1], ca=ca_path),
    }


async def test_layers_talk_over_mutual_tls_and_a_client_without_a_certificate_of_the_ca_is_refused(
    certificates: dict[str, TlsSettings],
) -> None:
    port, health_port = free_ports(2)
    server_tls = TlsSettings(**{**certificates["server"].__dict__, "health_port": health_port})
    settings = ServerSettings(host="127.0.0.1", port=port, internal_token=TOKEN, grace_seconds=0.5)
    request = working_pb2.GetWindowRequest(bank_id="bank-a", session_id="s")
    async with running(_service, settings, tls=server_tls):
        target = f"127.0.0.1:{port}"
        trusted = LayerClient(
            target, working_pb2_grpc.WorkingMemoryServiceStub, token=TOKEN, tls=certificates["client"]
        )
        try:
            await trusted.call("GetWindow", request, timeout=10)  # TLS both ways, and the token still checked
        finally:
            await trusted.close()
        for refused_tls in (
            TlsSettings(),
            certificates["intruder"],
        ):  # plaintext; a certificate of another CA
            client = LayerClient(
                target,
                working_pb2_grpc.WorkingMemoryServiceStub,
                token=TOKEN,
                tls=refused_tls,
                options=(("grpc.max_reconnect_backoff_ms", 200),),
            )
            try:
                with pytest.raises(Unavailable):
                    await client.call("GetWindow", request, timeout=3)
            finally:
                await client.close()
        untokened = LayerClient(target, working_pb2_grpc.WorkingMemoryServiceStub, tls=certificates["client"])
        try:
            with pytest.raises(grpc.aio.AioRpcError) as missing:
                await untokened.call("GetWindow", request, timeout=10)
            assert missing.value.code() == grpc.StatusCode.UNAUTHENTICATED
        finally:
            await untokened.close()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{health_port}") as probe:  # the probes' own port
            live = await health_pb2_grpc.HealthStub(probe).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=10
            )
            assert live.status == health_pb2.HealthCheckResponse.SERVING
            with pytest.raises(grpc.aio.AioRpcError) as unserved:
                await working_pb2_grpc.WorkingMemoryServiceStub(probe).GetWindow(request, timeout=10)
            assert unserved.value.code() == grpc.StatusCode.UNIMPLEMENTED  # health alone, nothing else


def test_half_configured_tls_is_refused_naming_the_settings(tmp_path: Path) -> None:
    cert = tmp_path / "cert.pem"
    cert.write_text("not really a certificate")
    with pytest.raises(SettingsError, match="HINDSIGHT_TLS_KEY"):
        TlsSettings(cert=str(cert)).check()
    with pytest.raises(SettingsError, match="HINDSIGHT_TLS_CA"):
        TlsSettings(ca=str(cert)).check()
    with pytest.raises(SettingsError, match="not a readable file"):
        TlsSettings(cert=str(cert), key=str(tmp_path / "missing.key")).check()
