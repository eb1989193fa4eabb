"""The credentials of an embedded mesh: made on the first ``hindsight up``, kept in ``HINDSIGHT_HOME``.

- ``credentials.json`` (mode 0600) holds the generated secrets: the operator's admin token, the agent token
  that clients (``hindsight mcp``, the bench, an MCP client configured by hand) present, and the mesh
  credential the layers present to each other. ``hindsight status --tokens`` prints the first two.
- ``tokens`` (mode 0600) is the client-tokens file every service reads (``HINDSIGHT_TOKENS_FILE``) and
  re-reads when it changes: a block the mesh writes (the digests of the admin and agent tokens, never
  the secrets), and below it any lines the user adds, e.g. ``token=bank-a`` for an agent of one bank.

Tokens given in the environment win over generated ones: ``HINDSIGHT_TOKENS`` replaces the agent token
(none is generated), ``HINDSIGHT_ADMIN_TOKEN`` the admin token, ``HINDSIGHT_INTERNAL_TOKEN`` the mesh
credential.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from hindsight.runtime.auth import token_digest
from hindsight.runtime.home import CREDENTIALS_FILE, Credentials, read_credentials, stored_credentials

TOKENS_FILE = "tokens"
_BLOCK_START = "# --- written by hindsight up on every start: edit below the end line, not here ---"
_BLOCK_END = "# --- end of the generated block; add 'token=bank1,bank2' lines below ---"


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, readable by the owner only."""
    temporary = path.with_name(path.name + ".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(temporary, path)


def ensure_credentials(home: Path, environ: Mapping[str, str] | None = None) -> tuple[Credentials, bool]:
    """The credentials of ``home``, generating what is missing; also whether any were generated now."""
    source = os.environ if environ is None else environ
    stored = stored_credentials(home)
    wanted = {
        "admin": "HINDSIGHT_ADMIN_TOKEN",
        "agent": "HINDSIGHT_TOKENS",
        "internal": "HINDSIGHT_INTERNAL_TOKEN",
    }
    created = False
    for key, variable in wanted.items():
        if not source.get(variable) and not stored.get(key):
            stored[key] = secrets.token_urlsafe(32)
            created = True
    if created:
        _write_private(home / CREDENTIALS_FILE, json.dumps(stored, indent=2) + "\n")
    credentials = read_credentials(home, source)
    assert credentials is not None
    return credentials, created


def write_tokens_file(home: Path, credentials: Credentials) -> Path:
    """Rewrite the generated block of ``home/tokens`` (keeping the user's own lines); returns its path."""
    path = home / TOKENS_FILE
    try:
        previous = path.read_text()
    except FileNotFoundError:
        previous = ""
    users = previous.split(_BLOCK_END + "\n", 1)[1] if _BLOCK_END in previous else ""
    block = [_BLOCK_START, f"admin:sha256:{token_digest(credentials.admin)}=*"]
    if credentials.agent:
        # the local user's own agent: every bank, and forgetting too (a grant without operations would
        # only read and write)
        block.append(f"agent:sha256:{token_digest(credentials.agent)}=*:read+write+forget")
    text = "\n".join([*block, _BLOCK_END]) + "\n" + users
    if text != previous:
        _write_private(path, text)
    return path


def public_view(credentials: Credentials) -> dict[str, str]:
    """What ``hindsight status --tokens`` shows: the tokens a person or a client uses (not the mesh's own)."""
    shown = asdict(credentials)
    shown.pop("internal")
    return {key: value for key, value in shown.items() if value}


def client_token(home: Path, environ: Mapping[str, str] | None = None) -> str:
    """The token a local client of ``home``'s mesh presents: the agent token, else the admin token."""
    credentials = read_credentials(home, environ)
    return credentials.for_client if credentials else ""
