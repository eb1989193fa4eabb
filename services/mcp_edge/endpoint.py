"""Where MCP streamable HTTP listens, the URL clients know it by, and the Host and Origin values it accepts.

A browser page can reach a server on the user's machine or network through a name the page's owner
controls (DNS rebinding); it cannot make the browser send that server's own name in ``Host``, nor another
site's origin in ``Origin``. So the endpoint accepts only the names it is known by: the loopback names at the
bound port, the public URL's host, and what the deployment adds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, urlsplit

from mcp.server.transport_security import TransportSecuritySettings

from hindsight.runtime.auth import is_loopback
from hindsight.runtime.settings import SettingsError

if TYPE_CHECKING:
    from hindsight.mcp_edge.settings import EdgeSettings

WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})
"""Bind addresses that mean every interface."""
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
"""How a client on this machine names it in ``Host``."""
DEFAULT_PORTS = {"http": 80, "https": 443}


def url_host(host: str) -> str:
    """``host`` as it is written in a URL or a Host header (IPv6 literals in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


@dataclass(frozen=True)
class HttpEndpoint:
    """One MCP HTTP endpoint: bind address, path, public URL and the Host/Origin values it accepts."""

    host: str
    port: int
    path: str
    public_url: str
    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...]

    @classmethod
    def of(cls, settings: EdgeSettings) -> HttpEndpoint:
        """The endpoint ``settings`` describe (their ``mcp_*`` fields)."""
        host, port, path = settings.mcp_host, settings.mcp_port, settings.mcp_path
        shown = "localhost" if host in WILDCARD_HOSTS else url_host(host)
        public_url = settings.mcp_public_url or f"http://{shown}:{port}{path}"
        public = urlsplit(public_url)
        hosts = [f"{name}:{port}" for name in LOOPBACK_NAMES]
        if host not in WILDCARD_HOSTS:
            hosts.append(f"{url_host(host).lower()}:{port}")
        hosts += _host_forms(public)
        hosts += [item.lower() for item in settings.mcp_allowed_hosts]
        origins = [f"http://{name}:{port}" for name in LOOPBACK_NAMES]
        origins.append(_origin(public))
        origins += [item.lower().rstrip("/") for item in settings.mcp_allowed_origins]
        return cls(
            host=host,
            port=port,
            path=path,
            public_url=public_url,
            allowed_hosts=tuple(dict.fromkeys(hosts)),
            allowed_origins=tuple(dict.fromkeys(origins)),
        )

    @property
    def local_url(self) -> str:
        """The endpoint's URL as seen from this machine."""
        host = "127.0.0.1" if self.host in WILDCARD_HOSTS else url_host(self.host)
        return f"http://{host}:{self.port}{self.path}"

    @property
    def public_origin(self) -> str:
        """Scheme, host and port of the public URL."""
        return _origin(urlsplit(self.public_url))

    @property
    def loopback(self) -> bool:
        """Whether only this machine can reach the bound address."""
        return is_loopback(self.host)

    def transport_security(self) -> TransportSecuritySettings:
        """The SDK's DNS rebinding protection for this endpoint: on, whatever the bind address."""
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=list(self.allowed_hosts),
            allowed_origins=list(self.allowed_origins),
        )


def _host_forms(url: SplitResult) -> list[str]:
    """The Host values a client of ``url`` sends: as written, and with the scheme's default port spelt out."""
    name = url_host((url.hostname or "").lower())
    if url.port is not None:
        return [f"{name}:{url.port}"]
    return [name, f"{name}:{DEFAULT_PORTS[url.scheme]}"]


def _origin(url: SplitResult) -> str:
    name = url_host((url.hostname or "").lower())
    return f"{url.scheme}://{name}" + (f":{url.port}" if url.port is not None else "")


def _http_url(value: str, variable: str) -> SplitResult:
    """``value`` parsed as an absolute http(s) URL with a host, or a SettingsError naming ``variable``."""
    try:
        url = urlsplit(value)
        url.port  # noqa: B018 - a malformed port raises here
    except ValueError as exc:
        raise SettingsError(f"{variable}={value!r} is not a URL: {exc}") from None
    if url.scheme not in DEFAULT_PORTS or not url.hostname or url.query or url.fragment or url.username:
        raise SettingsError(f"{variable}={value!r} must be an http(s) URL with a host, no query or user")
    return url


def check_mcp_http(settings: EdgeSettings) -> None:
    """Refuse MCP HTTP settings that are malformed, naming the variable."""
    if not settings.mcp_path.startswith("/"):
        raise SettingsError("HINDSIGHT_MCP_PATH must start with '/'")
    if settings.mcp_public_url:
        _http_url(settings.mcp_public_url, "HINDSIGHT_MCP_PUBLIC_URL")
    for item in settings.mcp_allowed_hosts:
        if "/" in item or "@" in item or " " in item:
            raise SettingsError(f"HINDSIGHT_MCP_ALLOWED_HOSTS: {item!r} must look like name:port or name:*")
    for item in settings.mcp_allowed_origins:
        url = _http_url(item.removesuffix(":*"), "HINDSIGHT_MCP_ALLOWED_ORIGINS")
        if url.path not in {"", "/"}:
            raise SettingsError(f"HINDSIGHT_MCP_ALLOWED_ORIGINS: {item!r} is an origin, without a path")
    if settings.mcp_jwks.startswith(("http://", "https://")):
        url = _http_url(settings.mcp_jwks, "HINDSIGHT_MCP_JWKS")
        if url.scheme == "http" and not is_loopback(url.hostname or ""):
            raise SettingsError("HINDSIGHT_MCP_JWKS: keys are fetched over https (http only on loopback)")
    if settings.mcp_jwt_issuer:
        _http_url(settings.mcp_jwt_issuer, "HINDSIGHT_MCP_JWT_ISSUER")
    if not settings.mcp_jwt_banks_claim or not settings.mcp_jwt_admin_claim:
        raise SettingsError("HINDSIGHT_MCP_JWT_BANKS_CLAIM and HINDSIGHT_MCP_JWT_ADMIN_CLAIM need a name")
    for scope in settings.mcp_scopes:
        if " " in scope or '"' in scope:
            raise SettingsError(f"HINDSIGHT_MCP_SCOPES: {scope!r} is not one scope")
