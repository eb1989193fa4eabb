"""``hindsight outbox``: the episodic outbox's dead-letter list, listed, queued again or dropped.

An entry a layer refused for good (a record too large, a field it rejects) leaves the outbox for the
dead-letter list after ``HINDSIGHT_EPISODIC_OUTBOX_MAX_ATTEMPTS`` tries, so the rest of its bank is
delivered. ``dead-letters`` lists them, ``retry`` queues them again once the cause is fixed (a setting,
a layer upgraded), ``drop`` deletes them for good; both are recorded in the audit log. They are admin
operations of the episodic layer: the command presents the operator's token.

Importing this module is cheap (gRPC loads only when the command runs), so ``build_parser`` can use it.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC
from typing import Any

from hindsight.cli.operator import add_mesh_arguments, run_with_client

PAGE = 500
"""Dead letters read per call while listing."""


def add_command(commands: Any) -> None:
    """Register ``outbox`` and its sub-commands on the ``hindsight`` sub-command parser."""
    outbox = commands.add_parser("outbox", help="the outbox's dead-letter list: list, retry or drop entries")
    actions = outbox.add_subparsers(dest="outbox_action", required=True, metavar="ACTION")
    listing = actions.add_parser("dead-letters", help="list the entries a layer refused for good")
    retry = actions.add_parser("retry", help="queue dead letters for delivery again (all when no ID)")
    drop = actions.add_parser("drop", help="delete dead letters for good, audited (all when no ID)")
    for parser in (listing, retry, drop):
        parser.add_argument("--bank", default="", help="only this bank (default: every bank)")
        add_mesh_arguments(
            parser,
            "host:port of the episodic layer (default: the mesh's)",
            "the admin token (default: $HINDSIGHT_ADMIN_TOKEN, else the one of --home)",
        )
    listing.add_argument("--json", action="store_true", help="one JSON object instead of text")
    for parser in (retry, drop):
        parser.add_argument("ids", nargs="*", type=int, metavar="ID", help="dead-letter ids (default: all)")
    outbox.set_defaults(run=run)


def letter_view(letter: Any) -> dict[str, Any]:
    """A dead letter as plain data (what ``--json`` prints)."""
    return {
        "id": letter.id,
        "bank_id": letter.bank_id,
        "target": letter.target,
        "operation": letter.operation,
        "record_kind": letter.record_kind,
        "record_id": letter.record_id,
        "payload": json.loads(letter.payload_json) if letter.payload_json else {},
        "attempts": letter.attempts,
        "last_error": letter.last_error,
        "created_at": letter.created_at.ToDatetime(tzinfo=UTC).isoformat(),
        "dead_at": letter.dead_at.ToDatetime(tzinfo=UTC).isoformat(),
    }


async def _list(client: Any, args: argparse.Namespace) -> int:
    from hindsight.contracts.episodic.v1 import episodic_pb2

    letters: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    token = ""
    while True:
        reply = await client.call(
            "ListDeadLetters",
            episodic_pb2.ListDeadLettersRequest(bank_id=args.bank, limit=PAGE, page_token=token),
        )
        letters += [letter_view(letter) for letter in reply.dead_letters]
        counts = dict(reply.counts)
        token = reply.next_page_token
        if not token:
            break
    if args.json:
        json.dump({"counts": counts, "dead_letters": letters}, sys.stdout)
        print()
        return 0
    if not letters:
        print("no dead letters" + (f" in bank {args.bank}" if args.bank else ""))
        return 0
    for letter in letters:
        what = f"{letter['operation']} {letter['record_kind']} {letter['record_id']}".strip()
        if letter["operation"] != "sync":
            what = f"{letter['operation']} {json.dumps(letter['payload'], sort_keys=True)}"
        print(
            f"{letter['id']:>8}  {letter['bank_id']}  -> {letter['target']}: {what}; "
            f"{letter['attempts']} attempts, dead since {letter['dead_at']}"
        )
        print(f"          last error: {letter['last_error']}")
    summary = ", ".join(f"{target} {count}" for target, count in sorted(counts.items()))
    print(f"{len(letters)} dead letters ({summary}); `hindsight outbox retry` or `drop` takes them")
    return 0


async def _handle(client: Any, args: argparse.Namespace) -> int:
    from hindsight.contracts.episodic.v1 import episodic_pb2

    if args.outbox_action == "retry":
        reply = await client.call(
            "RetryDeadLetters", episodic_pb2.RetryDeadLettersRequest(bank_id=args.bank, ids=args.ids)
        )
        print(f"queued {reply.retried_count} dead letters for delivery again")
    else:
        reply = await client.call(
            "DropDeadLetters", episodic_pb2.DropDeadLettersRequest(bank_id=args.bank, ids=args.ids)
        )
        print(f"dropped {reply.dropped_count} dead letters")
    if reply.missing_ids:
        print(f"not dead letters: {', '.join(map(str, reply.missing_ids))}", file=sys.stderr)
        return 1
    return 0


def run(args: argparse.Namespace) -> int:
    """Entry point of ``hindsight outbox``."""
    from hindsight.contracts.episodic.v1 import episodic_pb2_grpc

    action = _list if args.outbox_action == "dead-letters" else _handle
    return run_with_client(args, "outbox", "episodic", episodic_pb2_grpc.EpisodicServiceStub, action)
