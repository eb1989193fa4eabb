"""A token issuer for tests: signing keys generated in the test, their JWKS, and JWTs signed with them."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

ISSUER = "https://issuer.test"


class Issuer:
    """Signs JWTs as an OAuth authorization server would, with keys it generates itself."""

    def __init__(self, audience: str, url: str = ISSUER) -> None:
        self.url = url
        self.audience = audience
        self.keys: dict[str, tuple[str, Any]] = {}
        """kid -> (algorithm, private key)."""

    def add_key(self, kid: str, algorithm: str = "RS256") -> Issuer:
        if algorithm.startswith("RS"):
            key: Any = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        else:
            key = ec.generate_private_key(ec.SECP256R1())
        self.keys[kid] = (algorithm, key)
        return self

    def jwks(self, *kids: str) -> dict[str, Any]:
        """The public keys (all, or those named) as a JWKS document."""
        entries = []
        for kid in kids or tuple(self.keys):
            algorithm, key = self.keys[kid]
            codec = RSAAlgorithm if algorithm.startswith("RS") else ECAlgorithm
            entry = codec.to_jwk(key.public_key(), as_dict=True)
            entries.append(entry | {"kid": kid, "alg": algorithm, "use": "sig"})
        return {"keys": entries}

    def write_jwks(self, path: Path, *kids: str) -> Path:
        path.write_text(json.dumps(self.jwks(*kids)))
        return path

    def sign(self, kid: str | None = None, *, lifetime: float = 600, **claims: Any) -> str:
        """A JWT signed with key ``kid`` (the first key by default); ``claims`` add to or replace the
        defaults (a claim given as None is left out)."""
        name = kid or next(iter(self.keys))
        algorithm, key = self.keys[name]
        now = int(time.time())
        payload = {
            "iss": self.url,
            "aud": self.audience,
            "sub": "agent-7",
            "iat": now,
            "exp": now + int(lifetime),
            "scope": "memory",
        } | claims
        payload = {k: v for k, v in payload.items() if v is not None}
        return jwt.encode(payload, key, algorithm=algorithm, headers={"kid": name})


class JwksServer:
    """A real HTTP server on loopback that serves a JWKS document and counts the requests for it."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.requests = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.requests += 1
                body = json.dumps(owner.document).encode()
                self.send_response(200 if self.path == "/jwks.json" else 404)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/jwks.json"


@contextlib.contextmanager
def serving_jwks(document: dict[str, Any]) -> Iterator[JwksServer]:
    """Serve ``document`` at ``/jwks.json`` on a free loopback port for the duration of the block."""
    server = JwksServer(document)
    thread = threading.Thread(target=server.http.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.http.shutdown()
        server.http.server_close()
        thread.join()
