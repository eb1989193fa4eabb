"""Mutual TLS between the layers, as an option (Kubernetes with a certificate issuer, or any network the
operator does not trust).

Off by default: the embedded mesh talks over loopback, where the mesh credential already keeps other local
users out. With ``HINDSIGHT_TLS_CERT`` and ``HINDSIGHT_TLS_KEY`` a service serves TLS; with
``HINDSIGHT_TLS_CA`` as well it requires a client certificate signed by that CA (mutual TLS), and its own
calls to other layers present its certificate and verify theirs against the CA. Tokens are still checked:
TLS says which machine is calling, the token which banks it may use.

Orchestrators' gRPC probes speak plaintext; ``HINDSIGHT_HEALTH_PORT`` serves the health service alone,
without TLS, on a second port for them (health says nothing about any bank).
"""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path

import grpc

from hindsight.runtime.settings import SettingsError, env, load


@dataclasses.dataclass(frozen=True)
class TlsSettings:
    """Certificates for TLS between the layers; all empty: plaintext (the default)."""

    cert: str = env("HINDSIGHT_TLS_CERT", "", "PEM certificate this service serves and presents to others.")
    key: str = env("HINDSIGHT_TLS_KEY", "", "PEM private key of HINDSIGHT_TLS_CERT.")
    ca: str = env(
        "HINDSIGHT_TLS_CA",
        "",
        "PEM CA bundle: verifies the layers this service calls and, when set, requires client certificates.",
    )
    server_name: str = env(
        "HINDSIGHT_TLS_SERVER_NAME",
        "",
        "Name to expect in the called layers' certificates instead of the host of their address.",
    )
    health_port: int = env(
        "HINDSIGHT_HEALTH_PORT",
        0,
        "With TLS on: a plaintext port serving only gRPC health, for probes; 0: none.",
    )

    @property
    def enabled(self) -> bool:
        return bool(self.cert or self.key)

    def check(self) -> None:
        """Raise SettingsError unless the files are given in pairs and readable."""
        if bool(self.cert) != bool(self.key):
            raise SettingsError("HINDSIGHT_TLS_CERT and HINDSIGHT_TLS_KEY must be set together")
        for name, path in (
            ("HINDSIGHT_TLS_CERT", self.cert),
            ("HINDSIGHT_TLS_KEY", self.key),
            ("HINDSIGHT_TLS_CA", self.ca),
        ):
            if path and not Path(path).is_file():
                raise SettingsError(f"{name}={path!r} is not a readable file")
        if self.ca and not self.enabled:
            raise SettingsError(
                "HINDSIGHT_TLS_CA needs HINDSIGHT_TLS_CERT and HINDSIGHT_TLS_KEY (mutual TLS)"
            )


def _read(path: str) -> bytes | None:
    return Path(path).read_bytes() if path else None


def server_credentials(settings: TlsSettings) -> grpc.ServerCredentials | None:
    """What a service listens with: None for plaintext; mutual TLS when a CA is given."""
    settings.check()
    if not settings.enabled:
        return None
    pair = (Path(settings.key).read_bytes(), Path(settings.cert).read_bytes())
    ca = _read(settings.ca)
    return grpc.ssl_server_credentials([pair], root_certificates=ca, require_client_auth=ca is not None)


def channel_credentials(settings: TlsSettings) -> grpc.ChannelCredentials | None:
    """What a call to another layer presents: None for plaintext; our certificate when TLS is on."""
    settings.check()
    if not settings.enabled:
        return None
    return grpc.ssl_channel_credentials(
        root_certificates=_read(settings.ca),
        private_key=Path(settings.key).read_bytes(),
        certificate_chain=Path(settings.cert).read_bytes(),
    )


@cache
def environment_tls() -> TlsSettings:
    """The TLS settings of this process (read once: certificates change with a restart or a new pod)."""
    return load(TlsSettings)
