"""``hindsight token``: mint, list and revoke managed client tokens on a running mesh's edge.

``create`` prints the secret once (only its digest is stored); ``list`` never shows a secret; ``revoke`` takes
effect on every port of every edge within a second, with the tokens minted under it. The command presents the
operator's token by default, or any token given with ``--token``: a token with ``admin`` on a bank may mint,
list and revoke tokens for that bank. Everything is audited.

Importing this module is cheap (gRPC loads only when the command runs), so ``build_parser`` can use it.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from hindsight.cli.operator import add_mesh_arguments, run_with_client


def add_command(commands: Any) -> None:
    """Register ``token`` and its sub-commands on the ``hindsight`` sub-command parser."""
    token = commands.add_parser("token", help="managed client tokens: create, list, revoke")
    actions = token.add_subparsers(dest="token_action", required=True, metavar="ACTION")
    create = actions.add_parser("create", help="mint a token and print its secret, once")
    listing = actions.add_parser("list", help="list tokens (never a secret)")
    revoke = actions.add_parser("revoke", help="revoke a token and those minted under it")
    for parser in (create, listing, revoke):
        add_mesh_arguments(
            parser,
            "host:port of the edge's gRPC port (default: the mesh's)",
            "the credential to act with (default: $HINDSIGHT_ADMIN_TOKEN, else the admin token of --home)",
        )
    create.add_argument("--name", required=True, help="unique name (lower-case letters, digits, ._-)")
    create.add_argument(
        "--bank",
        action="append",
        default=[],
        metavar="BANK[:OPS]",
        help="a bank it grants, with operations joined by + (read, write, forget, admin; default "
        "read+write); repeatable; * for every bank",
    )
    create.add_argument("--expires", default="", help="7d, 12h, 30m, 2w or an ISO 8601 time (default: never)")
    create.add_argument("--admin", action="store_true", help="an operator token: every bank, every operation")
    create.add_argument("--json", action="store_true", help='{"name", "token", "grants", "expires"}')
    listing.add_argument("--json", action="store_true", help="a JSON list instead of text")
    listing.add_argument("--all", action="store_true", help="also revoked tokens")
    revoke.add_argument("name", help="the token to revoke")
    token.set_defaults(run=run)


def _when(stamp: Any, message: Any, field: str) -> str | None:
    return stamp.ToDatetime().replace(tzinfo=None).isoformat() + "Z" if message.HasField(field) else None


def _view(token: Any) -> dict[str, Any]:
    from hindsight.mcp_edge.tokens import grants_text
    from hindsight.runtime.token_records import ManagedToken

    return {
        "name": token.name,
        "grants": grants_text(ManagedToken.from_pb(token)),
        "expires": _when(token.expires_at, token, "expires_at"),
        "created": _when(token.created_at, token, "created_at"),
        "last_used": _when(token.last_used_at, token, "last_used_at"),
        "revoked": _when(token.revoked_at, token, "revoked_at"),
        "parent": token.parent,
    }


async def _create(client: Any, args: argparse.Namespace) -> int:
    from hindsight.contracts.memory.v1 import memory_pb2
    from hindsight.runtime.permissions import BankGrant, parse_expiry
    from hindsight.runtime.records import to_timestamp, utcnow
    from hindsight.runtime.token_records import grants_to_pb

    grants = [BankGrant.parse(text, f"--bank {text}") for text in args.bank]
    request = memory_pb2.CreateTokenRequest(name=args.name, grants=grants_to_pb(grants), admin=args.admin)
    if args.expires:
        request.expires_at.CopyFrom(to_timestamp(parse_expiry(args.expires, utcnow(), "--expires")))
    reply = await client.call("CreateToken", request)
    view = _view(reply.token)
    if args.json:
        shown = {
            "name": view["name"],
            "token": reply.secret,
            "grants": view["grants"],
            "expires": view["expires"],
        }
        json.dump(shown, sys.stdout)
        print()
        return 0
    print(reply.secret)
    print(
        f"token {view['name']!r}: {', '.join(view['grants'])}; expires {view['expires'] or 'never'} "
        "(the secret above is shown this once)",
        file=sys.stderr,
    )
    return 0


async def _list(client: Any, args: argparse.Namespace) -> int:
    from hindsight.contracts.memory.v1 import memory_pb2

    tokens: list[dict[str, Any]] = []
    page = ""
    while True:
        reply = await client.call(
            "ListTokens", memory_pb2.ListTokensRequest(include_revoked=args.all, page_token=page)
        )
        tokens += [_view(token) for token in reply.tokens]
        page = reply.next_page_token
        if not page:
            break
    if args.json:
        json.dump(tokens, sys.stdout)
        print()
        return 0
    if not tokens:
        print("no managed tokens")
        return 0
    for item in tokens:
        state = f"revoked {item['revoked']}" if item["revoked"] else f"expires {item['expires'] or 'never'}"
        print(
            f"{item['name']}  {', '.join(item['grants'])}  {state}  created {item['created']}  "
            f"last used {item['last_used'] or 'never'}"
            + (f"  minted by {item['parent']}" if item["parent"] else "")
        )
    return 0


async def _revoke(client: Any, args: argparse.Namespace) -> int:
    from hindsight.contracts.memory.v1 import memory_pb2

    reply = await client.call("RevokeToken", memory_pb2.RevokeTokenRequest(name=args.name))
    if not reply.revoked_names:
        print(f"token {args.name!r} was revoked already")
        return 0
    print(f"revoked {', '.join(reply.revoked_names)}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Entry point of ``hindsight token``."""
    from hindsight.contracts.memory.v1 import memory_pb2_grpc
    from hindsight.runtime.home import EDGE

    action = {"create": _create, "list": _list, "revoke": _revoke}[args.token_action]
    return run_with_client(args, "token", EDGE, memory_pb2_grpc.MemoryServiceStub, action)
