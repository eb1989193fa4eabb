"""What the commands that act on a running mesh share: where its services listen and which credential
to present.

``hindsight token`` talks to the edge, ``hindsight outbox`` to episodic memory; both find the mesh through
its home directory unless ``--address`` says otherwise, and present the operator's token unless ``--token``
names another. gRPC is imported only when a client is made, so parsers stay cheap to build.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any


def add_mesh_arguments(parser: argparse.ArgumentParser, address_help: str, token_help: str) -> None:
    """``--home``, ``--address``, ``--token`` and ``--timeout``, as every operator command takes them."""
    parser.add_argument(
        "--home", type=Path, default=None, help="data directory of a running `hindsight up` ($HINDSIGHT_HOME)"
    )
    parser.add_argument("--address", default="", help=address_help)
    parser.add_argument("--token", default=os.environ.get("HINDSIGHT_ADMIN_TOKEN", ""), help=token_help)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds one call may take")


def credential(args: argparse.Namespace) -> str:
    """``--token``, else the admin token the mesh of ``--home`` generated (empty when there is none)."""
    if args.token:
        return str(args.token)
    from hindsight.runtime.home import read_credentials, resolve_home

    credentials = read_credentials(resolve_home(args.home))
    return credentials.admin if credentials else ""


def client_credential(args: argparse.Namespace) -> str:
    """``--token``, else the token a local client of the mesh of ``--home`` presents (its agent token, else
    its admin token): for commands that act as an agent rather than as the operator."""
    if args.token:
        return str(args.token)
    from hindsight.runtime.home import read_credentials, resolve_home

    credentials = read_credentials(resolve_home(args.home))
    return credentials.for_client if credentials else ""


def service_address(args: argparse.Namespace, layer: str, command: str) -> str:
    """``--address``, else the address of ``layer`` in the running mesh's ``mesh.json``."""
    if args.address:
        return str(args.address)
    from hindsight.runtime.home import read_mesh, resolve_home

    info = read_mesh(resolve_home(args.home))
    if info is None:
        raise SystemExit(
            f"hindsight {command}: no running mesh found; start `hindsight up` or pass --address"
        )
    return info.addresses[layer]


def service_client(
    args: argparse.Namespace, layer: str, stub: Any, command: str, token: str | None = None
) -> Any:
    """A client of ``layer`` presenting ``token`` (default: the command's operator credential), with the
    command's timeout."""
    from hindsight.runtime.channels import LayerClient

    return LayerClient(
        service_address(args, layer, command),
        stub,
        token=credential(args) if token is None else token,
        default_timeout=args.timeout,
    )


def report_failure(command: str, exc: Exception) -> int:
    """One line on stderr for a refused call, a bad argument or a service down (never a traceback)."""
    code, details = getattr(exc, "code", None), getattr(exc, "details", None)
    if callable(code) and callable(details):  # a gRPC status
        print(f"hindsight {command}: {code().name}: {details()}", file=sys.stderr)
    else:
        print(f"hindsight {command}: {exc}", file=sys.stderr)
    return 1


def run_with_client(
    args: argparse.Namespace,
    command: str,
    layer: str,
    stub: Any,
    work: Callable[[Any, argparse.Namespace], Awaitable[int]],
    token: Callable[[argparse.Namespace], str] = credential,
) -> int:
    """The body of an operator command: ``work(client, args)`` with a client of ``layer`` presenting
    ``token(args)``, closed afterwards; any failure, the client's making included, is one line on stderr
    (:func:`report_failure`) and exit code 1."""

    async def session() -> int:
        client = service_client(args, layer, stub, command, token=token(args))
        try:
            return await work(client, args)
        finally:
            await client.close()

    try:
        return asyncio.run(session())
    except Exception as exc:  # a refused token, a bad argument, the service down: one line, not a traceback
        return report_failure(command, exc)
