"""``hindsight``: serve one layer, run every layer on loopback (``up``), probe health, or serve MCP on stdio.

Heavy imports (a service, gRPC, the supervisor) happen inside the subcommand that needs them, so each
subcommand starts only what it uses.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from hindsight.bench import SUITES, add_bench_command
from hindsight.cli.layers import BY_NAME, LAYERS
from hindsight.runtime.logs import configure_logging


def _serve(args: argparse.Namespace) -> int:
    """Run one layer in this process until SIGTERM/SIGINT (its ``main`` configures its own logging)."""
    module = importlib.import_module(f"hindsight.{args.layer}.service")
    if args.env_from_stdin:
        # Started by ``hindsight up`` before the stores were ready: the import (the slow part) is done,
        # now take the stores' settings, one JSON object on one line. EOF: the supervisor gave up.
        line = sys.stdin.readline()
        if not line.strip():
            return 1
        os.environ.update(json.loads(line))
    module.main()
    return 0


def _up(args: argparse.Namespace) -> int:
    from hindsight.cli.mesh import MeshOptions, resolve_home, run_mesh

    # The terminal shows the progress lines; the supervisor's own log says only what goes wrong unless asked.
    configure_logging("mesh", os.environ.get("HINDSIGHT_LOG_LEVEL", "WARNING"))
    options = MeshOptions(
        home=resolve_home(args.home),
        mcp_port=args.mcp_port,
        timeout=args.timeout,
        grace=args.grace,
        llm=args.llm or os.environ.get("HINDSIGHT_LLM", ""),
    )
    return run_mesh(options)


def _healthcheck(args: argparse.Namespace) -> int:
    """gRPC health Check: 0 when SERVING, 1 otherwise (the contract of Docker HEALTHCHECK)."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    configure_logging("healthcheck", os.environ.get("HINDSIGHT_LOG_LEVEL", "WARNING"))
    service = BY_NAME[args.service].service if args.service in BY_NAME else args.service
    label = f"{args.address} {service or '(liveness)'}"
    with grpc.insecure_channel(args.address) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=args.timeout
            )
        except grpc.RpcError as exc:
            code = exc.code() if isinstance(exc, grpc.Call) else None
            print(f"{label}: {code.name if code else exc}", file=sys.stderr)
            return 1
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    serving = reply.status == health_pb2.HealthCheckResponse.SERVING
    print(f"{label}: {status}", file=sys.stdout if serving else sys.stderr)
    return 0 if serving else 1


def _mcp(args: argparse.Namespace) -> int:
    """MCP over stdio, in ``hindsight.cli.mcp_stdio``: stdout carries the protocol, logs go to stderr."""
    if args.print_config:
        from hindsight.cli.client_config import print_config

        return print_config(args.print_config, args.home, args.transport)
    configure_logging("mcp", os.environ.get("HINDSIGHT_LOG_LEVEL", "WARNING"))
    module = importlib.import_module("hindsight.cli.mcp_stdio")
    result = module.main(args)
    return int(result or 0)


def _maintain(args: argparse.Namespace) -> int:
    from hindsight.cli.maintain import run

    configure_logging("maintain", os.environ.get("HINDSIGHT_LOG_LEVEL", "WARNING"))
    return run(args)


def _default_address() -> str | None:
    port = os.environ.get("HINDSIGHT_PORT", "")
    return f"127.0.0.1:{port}" if port and port != "0" else None


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``hindsight``."""
    parser = argparse.ArgumentParser(prog="hindsight", description="Layered memory for LLM agents.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", help="run one layer's gRPC service until stopped")
    serve.add_argument("layer", choices=[layer.name for layer in LAYERS])
    serve.add_argument("--env-from-stdin", action="store_true", help=argparse.SUPPRESS)  # used by `up`
    serve.set_defaults(run=_serve)

    up = commands.add_parser("up", help="run every layer on loopback, with embedded stores where none is set")
    up.add_argument(
        "--home", type=Path, default=None, help="data directory (default: $HINDSIGHT_HOME or ~/.hindsight)"
    )
    up.add_argument(
        "--mcp-port",
        type=int,
        default=8765,
        help="port of the MCP endpoint; a free one is used if it is taken (0: any free port)",
    )
    up.add_argument("--timeout", type=float, default=180.0, help="seconds every service has to become ready")
    up.add_argument(
        "--grace", type=float, default=10.0, help="seconds each service gets to stop before it is killed"
    )
    up.add_argument(
        "--llm",
        choices=["local"],
        default=None,
        help="local: serve a GGUF model on loopback for LLM reflection/extraction (default: $HINDSIGHT_LLM)",
    )
    up.set_defaults(run=_up)

    health = commands.add_parser("healthcheck", help="gRPC health check: exit 0 when SERVING")
    default_address = _default_address()
    health.add_argument(
        "--address",
        default=default_address,
        required=default_address is None,
        help="host:port of the service (default: 127.0.0.1:$HINDSIGHT_PORT)",
    )
    health.add_argument(
        "--service",
        default="",
        help="full gRPC service name or layer name (default: '', the server's liveness)",
    )
    health.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the answer")
    health.set_defaults(run=_healthcheck)

    mcp = commands.add_parser("mcp", help="serve MCP on stdio, starting the mesh in the background if needed")
    mcp.add_argument(
        "--home", type=Path, default=None, help="data directory (default: $HINDSIGHT_HOME or ~/.hindsight)"
    )
    mcp.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for the mesh to be ready")
    mcp.add_argument(
        "--print-config",
        metavar="CLIENT",
        choices=["claude-desktop", "vscode", "cursor", "http", "inspector"],
        default=None,
        help="print the MCP configuration block for CLIENT (%(choices)s) and exit",
    )
    mcp.add_argument(
        "--transport",
        choices=["stdio", "http"],
        default="",
        help="with --print-config: stdio or streamable HTTP, where the client takes both (vscode, cursor)",
    )
    mcp.set_defaults(run=_mcp)

    reindex = commands.add_parser(
        "reindex", help="re-embed the semantic layer's stored texts with the current model, then switch over"
    )
    reindex.add_argument("--bank", default="", help="re-embed only this bank (same model only); default: all")
    reindex.add_argument("--drop-old", action="store_true", help="delete the old collection after the switch")
    reindex.add_argument("--home", type=Path, default=None, help="data directory (default: $HINDSIGHT_HOME)")
    reindex.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    reindex.set_defaults(run=lambda args: importlib.import_module("hindsight.cli.reindex").run(args))

    maintain = commands.add_parser("maintain", help="run the maintenance job now (decay, archive, merge)")
    maintain.set_defaults(run=_maintain)
    from hindsight.cli import maintain as maintain_module  # cheap: gRPC loads only when it runs

    maintain_module.add_arguments(maintain)

    from hindsight.cli import (  # no gRPC
        doctor,
        down,
        export_import,
        outbox,
        settings_doc,
        share,
        status,
        tokens,
    )

    status.add_command(commands)
    down.add_command(commands)
    doctor.add_command(commands)
    export_import.add_commands(commands)
    outbox.add_command(commands)
    tokens.add_command(commands)
    share.add_command(commands)

    settings_doc.add_command(commands)
    if SUITES:
        add_bench_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``hindsight`` console script."""
    args = build_parser().parse_args(argv)
    sys.exit(args.run(args))


if __name__ == "__main__":
    main()
