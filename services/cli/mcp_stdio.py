"""``hindsight mcp``: MCP over stdio for desktop clients.

It attaches to the mesh that ``hindsight up`` runs on the same home (starting one in the background if
none runs) and serves the edge's tools in this process, talking to the mesh's layers directly. Stdout
carries only the protocol; logs go to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
from pathlib import Path

from hindsight.cli.credentials import read_credentials
from hindsight.cli.mesh import MeshInfo, ensure_mesh
from hindsight.mcp_edge.engine import open_engine
from hindsight.mcp_edge.mcp_server import build_mcp_server
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime.auth import ALL_BANKS, Caller, Grants
from hindsight.runtime.permissions import ALL_OPERATIONS, BankGrant
from hindsight.runtime.settings import load

LOCAL_USER = Caller(name="stdio", grants=(BankGrant(ALL_BANKS, ALL_OPERATIONS),))
"""The caller of every stdio call: the user who started this process on their own mesh (every operation on
every bank, but not the operator's methods). The layers still check the credential the engine presents."""


def edge_settings_for(mesh: MeshInfo) -> EdgeSettings:
    """Edge settings from the environment, with the layer addresses and the mesh credential of ``mesh``."""
    settings = load(EdgeSettings)
    credentials = read_credentials(Path(mesh.home))
    internal = settings.internal_token or (credentials.internal if credentials else "")
    return dataclasses.replace(
        settings,
        internal_token=internal,
        working_addr=mesh.addresses["working"],
        episodic_addr=mesh.addresses["episodic"],
        semantic_addr=mesh.addresses["semantic"],
        reflect_addr=mesh.addresses["reflect"],
    )


async def serve_stdio(settings: EdgeSettings) -> None:
    """Serve the MCP tools on stdin/stdout until the client closes them."""
    async with open_engine(settings) as engine:
        # The local user's own process on its own pipes: no bearer token travels, the identity is fixed.
        server = build_mcp_server(engine, Grants(), settings.default_bank, local_caller=LOCAL_USER)
        await server.run_stdio_async()


def main(args: argparse.Namespace) -> int:
    """Entry of ``hindsight mcp``."""
    mesh = ensure_mesh(args.home, timeout=args.timeout)
    asyncio.run(serve_stdio(edge_settings_for(mesh)))
    return 0
