"""``hindsight maintain``: run the maintenance job now, bank by bank, and say what it changed.

Importing this module is cheap (gRPC loads only when the command runs), so ``build_parser`` can use it.

Today it maintains the reflect layer (reflection on idle or important sessions, decay of unused lessons,
archive of weak unused ones, merge of near-duplicates). It is idempotent and resumable: each bank is
one call, a second run changes nothing, and a run stopped part-way is finished by running it again.
Nothing is deleted. The same job runs on a schedule inside the reflect service
(``HINDSIGHT_REFLECT_MAINTAIN_SECONDS``, daily by default).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``hindsight maintain``."""
    parser.add_argument(
        "--home",
        type=Path,
        default=None,
        help="data directory of a running `hindsight up` (default: $HINDSIGHT_HOME)",
    )
    parser.add_argument(
        "--address", default="", help="host:port of the reflect layer (default: from the mesh)"
    )
    parser.add_argument(
        "--bank",
        action="append",
        default=[],
        help="maintain only this bank (repeatable; default: every bank)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("HINDSIGHT_INTERNAL_TOKEN", ""),
        help="bearer token (default: $HINDSIGHT_INTERNAL_TOKEN, else the mesh credential of --home)",
    )
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds one bank's maintenance may take"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per bank instead of text")


def _token(args: argparse.Namespace) -> str:
    if args.token:
        return str(args.token)
    from hindsight.runtime.home import read_credentials, resolve_home

    credentials = read_credentials(resolve_home(args.home))
    return credentials.internal if credentials else ""


def _reflect_address(args: argparse.Namespace) -> str:
    if args.address:
        return str(args.address)
    from hindsight.runtime.home import read_mesh, resolve_home

    info = read_mesh(resolve_home(args.home))
    if info is None:
        raise SystemExit("hindsight maintain: no running mesh found; start `hindsight up` or pass --address")
    return info.addresses["reflect"]


async def _maintain(args: argparse.Namespace) -> int:
    from hindsight.contracts.reflect.v1 import reflect_pb2, reflect_pb2_grpc
    from hindsight.runtime.channels import LayerClient

    client = LayerClient(
        _reflect_address(args),
        reflect_pb2_grpc.ReflectServiceStub,
        token=_token(args),
        default_timeout=args.timeout,
    )
    try:
        banks = args.bank or list((await client.call("ListBanks", reflect_pb2.ListBanksRequest())).bank_ids)
        for bank in banks:
            reply = await client.call("Maintain", reflect_pb2.MaintainRequest(bank_id=bank))
            report = {
                "bank": bank,
                "lessons_checked": reply.lessons_checked,
                "reflected_sessions": list(reply.reflected_session_ids),
                "decayed": list(reply.decayed_ids),
                "archived": list(reply.archived_ids),
                "merged": list(reply.merged_ids),
                "skipped": list(reply.skipped),
                "semantic_cold": reply.cold_count,
                "open_conflicts": list(reply.open_conflicts),
            }
            if args.json:
                print(json.dumps(report), flush=True)
                continue
            sessions = len(reply.reflected_session_ids)
            print(
                f"{bank}: checked {reply.lessons_checked} lessons; reflected {sessions} sessions, "
                f"decayed {len(reply.decayed_ids)}, archived {len(reply.archived_ids)}, "
                f"merged {len(reply.merged_ids)}; moved {reply.cold_count} semantic records to the cold "
                f"tier; {len(reply.open_conflicts)} contradictory facts wait for review",
                flush=True,
            )
            for conflict in reply.open_conflicts:
                print(f"  to review: {conflict}", flush=True)
            for reason in reply.skipped:
                print(f"  skipped: {reason}", flush=True)
        if not args.json:
            print(f"maintained {len(banks)} bank{'' if len(banks) == 1 else 's'}", flush=True)
        return 0
    finally:
        await client.close()


def run(args: argparse.Namespace) -> int:
    """Entry point of ``hindsight maintain``."""
    try:
        return asyncio.run(_maintain(args))
    except Exception as exc:  # a layer down or a refused token: one line, not a traceback
        print(f"hindsight maintain: {exc}", file=sys.stderr)
        return 1
