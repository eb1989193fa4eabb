"""``hindsight export BANK`` and ``hindsight import FILE``: the commands, and their connection to the layers.

An export is every record of a bank as versioned JSON Lines, written as it is read; an import writes it
back in batches sized by bytes (the format and both directions: :mod:`hindsight.cli.export`). Both talk
to the episodic, semantic and reflect layers with the admin token, on the layers' own ports. Importing a
file twice changes nothing the second time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hindsight.cli.export.fileformat import FORMAT, KINDS, VERSION, ExportError, read_export

__all__ = ["FORMAT", "KINDS", "VERSION", "ExportError", "add_commands", "read_export"]
_LAYERS = ("episodic", "semantic", "reflect")


def add_commands(commands: Any) -> None:
    """Register ``export`` and ``import`` on the ``hindsight`` sub-command parser."""
    export = commands.add_parser("export", help="write a bank's memories as versioned JSON Lines")
    export.add_argument("bank", help="the memory bank")
    export.add_argument("--out", type=Path, default=None, help="file to write (default: standard output)")
    _connection_arguments(export)
    export.set_defaults(run=run_export)

    load = commands.add_parser("import", help="load a file written by `hindsight export` (idempotent)")
    load.add_argument("file", type=Path, help="the export file ('-': standard input)")
    load.add_argument("--bank", default="", help="import into this bank (default: the exported bank)")
    load.add_argument(
        "--max-request-bytes",
        type=int,
        default=0,
        help="largest request to send (default: HINDSIGHT_MAX_REQUEST_BYTES, as the target accepts)",
    )
    load.add_argument(
        "--settle-timeout",
        type=float,
        default=600.0,
        help="seconds to wait for the layers to index the turns before archiving the archived ones",
    )
    _connection_arguments(load)
    load.set_defaults(run=run_import)


def _connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--home", type=Path, default=None, help="home of a running `hindsight up` (default: $HINDSIGHT_HOME)"
    )
    parser.add_argument(
        "--address",
        action="append",
        default=[],
        metavar="LAYER=HOST:PORT",
        help="address of episodic, semantic and reflect (repeat for each; default: from the running mesh)",
    )
    parser.add_argument("--token", default="", help="admin token (default: the admin token of --home)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds one call may take")


@dataclass
class Layers:
    """Clients of the three layers that hold a bank's memories."""

    episodic: Any
    semantic: Any
    reflect: Any
    clients: list[Any] = field(default_factory=list)

    async def close(self) -> None:
        for client in self.clients:
            await client.close()


def _targets(args: argparse.Namespace) -> tuple[dict[str, str], str]:
    from hindsight.runtime.home import read_credentials, read_mesh, resolve_home

    given: dict[str, str] = {}
    for item in args.address:
        layer, _, address = str(item).partition("=")
        if layer not in _LAYERS or not address:
            raise ExportError(f"--address must be LAYER=HOST:PORT with LAYER one of {', '.join(_LAYERS)}")
        given[layer] = address
    token = str(args.token)
    missing = [layer for layer in _LAYERS if layer not in given]
    if missing or not token:
        home = resolve_home(args.home)
        info = read_mesh(home)
        if missing and info is None:
            raise ExportError(f"no mesh running on {home}; start `hindsight up` or give --address")
        if info is not None:
            given = {layer: info.addresses[layer] for layer in missing} | given
        if not token:
            credentials = read_credentials(home)
            token = credentials.admin if credentials else ""
    if not token:
        raise ExportError("no admin token: give --token or the --home of a mesh")
    return given, token


def _open_layers(args: argparse.Namespace) -> Layers:
    from hindsight.contracts.episodic.v1 import episodic_pb2_grpc
    from hindsight.contracts.reflect.v1 import reflect_pb2_grpc
    from hindsight.contracts.semantic.v1 import semantic_pb2_grpc
    from hindsight.runtime.channels import LayerClient

    addresses, token = _targets(args)
    stubs = {
        "episodic": episodic_pb2_grpc.EpisodicServiceStub,
        "semantic": semantic_pb2_grpc.SemanticServiceStub,
        "reflect": reflect_pb2_grpc.ReflectServiceStub,
    }
    clients = {
        name: LayerClient(addresses[name], stub, token=token, default_timeout=args.timeout)
        for name, stub in stubs.items()
    }
    return Layers(clients["episodic"], clients["semantic"], clients["reflect"], list(clients.values()))


# ----- entry points -------------------------------------------------------------------------------------
async def _export(args: argparse.Namespace) -> int:
    from hindsight.cli.export.dump import export_bank

    layers = _open_layers(args)
    try:
        if args.out is None:
            await export_bank(layers, args.bank, sys.stdout)
            return 0
        partial = args.out.with_name(args.out.name + ".partial")
        try:
            with partial.open("w", encoding="utf-8") as out:
                counts = await export_bank(layers, args.bank, out)
        except BaseException:
            partial.unlink(missing_ok=True)  # a failed export leaves no file behind
            raise
        partial.replace(args.out)
    finally:
        await layers.close()
    print(f"exported bank {args.bank} to {args.out}: {counts.describe()}", file=sys.stderr)
    return 0


@contextlib.contextmanager
def _source(file: Path) -> Iterator[Callable[[], Iterator[str]]]:
    """Opens the file for each of the import's two readings; standard input is spooled to a temporary file
    first (read once, a line at a time)."""
    if str(file) != "-":
        yield lambda: _lines(file)
        return
    with tempfile.TemporaryDirectory(prefix="hindsight-import-") as folder:
        spooled = Path(folder) / "import.jsonl"
        with spooled.open("w", encoding="utf-8") as out:
            shutil.copyfileobj(sys.stdin, out)
        yield lambda: _lines(spooled)


def _lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as handle:
        yield from handle


async def _import(args: argparse.Namespace) -> int:
    from hindsight.cli.export.load import check, load
    from hindsight.runtime.channels import message_limits

    with _source(args.file) as lines:
        header, records = read_export(lines())
        bank = args.bank or header.bank
        check(header, records, bank)  # every line, before anything is written
        limit = int(args.max_request_bytes or message_limits().max_request_bytes)
        layers = _open_layers(args)
        try:
            done = await load(
                layers, header, lambda: read_export(lines())[1], bank, limit, args.settle_timeout
            )
        finally:
            await layers.close()
    print(done.describe())
    return 0


def _run(main: Any, args: argparse.Namespace, name: str) -> int:
    try:
        return int(asyncio.run(main(args)))
    except (ExportError, OSError) as exc:
        print(f"hindsight {name}: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # a layer down or a refused token: one line, not a traceback
        print(f"hindsight {name}: {exc}", file=sys.stderr)
        return 1


def run_export(args: argparse.Namespace) -> int:
    """Entry of ``hindsight export``."""
    return _run(_export, args, "export")


def run_import(args: argparse.Namespace) -> int:
    """Entry of ``hindsight import``."""
    return _run(_import, args, "import")
