"""``hindsight share``: copy memories of one bank into a team bank on a running mesh's edge.

The copies are written by the credential's name (the sharing agent) and stay linked to their sources: a
purge of a source removes its copy unless the team bank updated it since. The command presents ``--token``,
else ``$HINDSIGHT_TOKEN``, else the agent token of the mesh of ``--home``; it needs ``read`` on the source
bank and ``write`` on the team bank.

Importing this module is cheap (gRPC loads only when the command runs), so ``build_parser`` can use it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from hindsight.cli.operator import add_mesh_arguments, client_credential, run_with_client


def add_command(commands: Any) -> None:
    """Register ``share`` on the ``hindsight`` sub-command parser."""
    share = commands.add_parser("share", help="copy memories into a team bank, linked to their sources")
    add_mesh_arguments(
        share,
        "host:port of the edge's gRPC port (default: the mesh's)",
        "the credential to act with (default: $HINDSIGHT_TOKEN, else the agent token of --home)",
    )
    share.set_defaults(token=os.environ.get("HINDSIGHT_TOKEN", ""))
    share.add_argument("--bank", required=True, help="the bank the memories are in (needs read)")
    share.add_argument("--to", required=True, dest="to_bank", help="the team bank to copy into (needs write)")
    share.add_argument(
        "ids", nargs="+", metavar="ID", help="memory ids, as recall and list_recent return them"
    )
    share.add_argument(
        "--json", action="store_true", help='{"to_bank", "shared": [{"source_id", "id", ...}]}'
    )
    share.set_defaults(run=run)


async def _share(client: Any, args: argparse.Namespace) -> int:
    from hindsight.contracts.memory.v1 import memory_pb2

    reply = await client.call(
        "Share", memory_pb2.ShareRequest(bank_id=args.bank, target_bank_id=args.to_bank, ids=list(args.ids))
    )
    shared = [{"source_id": m.source_id, "id": m.id, "layer": m.layer, "kind": m.kind} for m in reply.shared]
    if args.json:
        json.dump({"to_bank": reply.target_bank_id, "shared": shared, "indexed": reply.indexed}, sys.stdout)
        print()
        return 0
    for item in shared:
        print(f"{item['source_id']} -> {item['id']}  ({item['kind']}, {item['layer']})")
    print(f"shared {len(shared)} memories into bank {reply.target_bank_id!r}", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    """Entry point of ``hindsight share``: acts as the agent, not as the operator."""
    from hindsight.contracts.memory.v1 import memory_pb2_grpc
    from hindsight.runtime.home import EDGE

    stub = memory_pb2_grpc.MemoryServiceStub
    return run_with_client(args, "share", EDGE, stub, _share, token=client_credential)
