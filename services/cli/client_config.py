"""``hindsight mcp --print-config CLIENT``: the block an MCP client's configuration needs, with real values.

Each client has its own documented format; the block is printed as JSON on stdout (so it can be redirected
into the file), and where it goes, plus any warning, on stderr. Stdio blocks name this installation's
``hindsight`` executable and home; HTTP blocks carry the running mesh's MCP URL and the agent token.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hindsight.cli.credentials import client_token
from hindsight.runtime.home import read_mesh, resolve_home

CLIENTS = ("claude-desktop", "vscode", "cursor", "http", "inspector")
DEFAULT_MCP_URL = "http://127.0.0.1:8765/mcp"
TOKEN_PLACEHOLDER = "<agent token from `hindsight status --tokens`>"
SERVER_NAME = "hindsight"

WHERE = {
    "claude-desktop": "Claude Desktop: merge into claude_desktop_config.json (Settings > Developer > Edit "
    "Config), then restart Claude Desktop.",
    "vscode": "VS Code: save as .vscode/mcp.json in the workspace (or run 'MCP: Open User Configuration').",
    "cursor": "Cursor: merge into ~/.cursor/mcp.json (all projects) or .cursor/mcp.json (one project).",
    "http": "Any client that takes a streamable HTTP server with headers (Claude Code's .mcp.json, ...).",
    "inspector": "MCP Inspector: save as hindsight-inspector.json, then run\n"
    "  npx @modelcontextprotocol/inspector --config hindsight-inspector.json --server hindsight",
}


@dataclass(frozen=True)
class ClientSetup:
    """What a client needs to reach this installation."""

    executable: str
    """Absolute path of the ``hindsight`` command (beside the running Python)."""
    home: str
    """``HINDSIGHT_HOME`` of the mesh."""
    mcp_url: str
    """The mesh's MCP endpoint, or the default one when no mesh runs."""
    token: str
    """The agent token (else the admin token), or a placeholder when none was generated yet."""
    mesh_running: bool


def client_setup(home: Path | str | None = None, environ: Mapping[str, str] | None = None) -> ClientSetup:
    """The values of this installation: executable, home, and the running mesh's URL and token."""
    resolved = resolve_home(home)
    mesh = read_mesh(resolved)
    return ClientSetup(
        executable=str(Path(sys.executable).parent / "hindsight"),
        home=str(resolved),
        mcp_url=mesh.mcp_url if mesh else DEFAULT_MCP_URL,
        token=client_token(resolved, environ) or TOKEN_PLACEHOLDER,
        mesh_running=mesh is not None,
    )


def _stdio(setup: ClientSetup) -> dict[str, Any]:
    return {"command": setup.executable, "args": ["mcp"], "env": {"HINDSIGHT_HOME": setup.home}}


def _headers(setup: ClientSetup) -> dict[str, str]:
    return {"Authorization": f"Bearer {setup.token}"}


def client_config(client: str, setup: ClientSetup, transport: str = "") -> dict[str, Any]:
    """The configuration block for ``client``; ``transport`` (stdio or http) where the client takes both."""
    if client not in CLIENTS:
        raise ValueError(f"client: must be one of {', '.join(CLIENTS)}, not {client!r}")
    if transport not in ("", "stdio", "http"):
        raise ValueError(f"transport: must be stdio or http, not {transport!r}")
    if client == "claude-desktop":
        if transport == "http":
            raise ValueError("transport: Claude Desktop's config file takes stdio servers only")
        return {"mcpServers": {SERVER_NAME: _stdio(setup)}}
    if client == "vscode":
        if transport == "http":
            entry = {"type": "http", "url": setup.mcp_url, "headers": _headers(setup)}
        else:
            entry = {"type": "stdio", **_stdio(setup)}
        return {"servers": {SERVER_NAME: entry}}
    if client == "cursor":
        if transport == "http":
            return {"mcpServers": {SERVER_NAME: {"url": setup.mcp_url, "headers": _headers(setup)}}}
        return {"mcpServers": {SERVER_NAME: _stdio(setup)}}
    if client == "http":
        if transport == "stdio":
            raise ValueError("transport: the http block is streamable HTTP only")
        return {
            "mcpServers": {SERVER_NAME: {"type": "http", "url": setup.mcp_url, "headers": _headers(setup)}}
        }
    if transport == "http":
        raise ValueError("transport: give the Inspector's HTTP URL and bearer token in its UI")
    return {"mcpServers": {SERVER_NAME: {"type": "stdio", **_stdio(setup)}}}


def notes(client: str, setup: ClientSetup, transport: str = "") -> list[str]:
    """Where the block goes and what to watch for, for stderr."""
    lines = [WHERE[client]]
    uses_http = client == "http" or transport == "http"
    if uses_http and not setup.mesh_running:
        lines.append(
            f"No mesh is running on {setup.home}: the URL is the default one; start `hindsight up` and "
            "print the block again for the real URL."
        )
    if uses_http and setup.token == TOKEN_PLACEHOLDER:
        lines.append("No token was generated yet: `hindsight up` creates one; replace the placeholder.")
    if uses_http:
        lines.append("The block holds a secret token: keep the file private.")
    if client == "inspector":
        lines.append(f"For HTTP, connect the Inspector to {setup.mcp_url} with the bearer token in its UI.")
    return lines


def print_config(client: str, home: Path | str | None = None, transport: str = "") -> int:
    """Print ``client``'s block on stdout and its notes on stderr."""
    setup = client_setup(home)
    try:
        block = client_config(client, setup, transport)
    except ValueError as exc:
        print(f"hindsight mcp: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(block, indent=2, ensure_ascii=False))
    for line in notes(client, setup, transport):
        print(line, file=sys.stderr)
    return 0
