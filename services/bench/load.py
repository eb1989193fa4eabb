"""Many agents at once: N real clients, one operation a second each, latency and errors per operation.

Half the agents talk MCP over streamable HTTP (the official SDK client, one session each, kept open),
half the gRPC ``MemoryService`` (the client library, one channel each). Each has its own bank, filled
first with ``--turns-per-bank`` turns of the dev files' real text. Then each asks one operation a second
on an open-loop schedule (a jittered start, then fixed times; an operation that could not start on time
is counted late, never skipped): 70% recall, 25% retain of 1-5 turns, 5% other tools (the newest turns,
the entity list). Latency runs from the operation's scheduled time, so a slow mesh cannot hide it by
slowing the schedule down. A baseline of a few agents, measured first in the same run, gives the
unloaded latency the loaded figures are compared with.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from hindsight.bench.metrics import percentile
from hindsight.bench.provenance import add_env_argument, add_json_argument

if TYPE_CHECKING:  # imported in run(): building the command line stays fast
    from hindsight.bench.datasets import Message
    from hindsight.bench.scale_data import Corpus

OPERATIONS = ("recall", "retain", "other")
MIX = (0.70, 0.25, 0.05)
"""Share of each operation."""
OTHER_TOOLS = ("list_recent", "list_entities")
TOP_K = 10
MAX_RETAIN_TURNS = 5
LATE_S = 0.1
"""An operation that starts more than this after its scheduled time is late."""
MAX_IN_FLIGHT = 8
"""Operations one agent has open at once; the next waits (and is late) when they are all busy."""
OP_TIMEOUT_S = 30.0
PREFILL_BATCH = 100
PREFILL_CONCURRENCY = 4
MCP, GRPC = "mcp", "grpc"


@dataclass(frozen=True)
class Acknowledged:
    """A retain the mesh acknowledged: what must be found again afterwards."""

    bank: str
    turn_ids: tuple[str, ...]
    texts: tuple[str, ...]
    transport: str
    at: float
    """``time.monotonic()`` when the acknowledgement arrived."""


@dataclass(frozen=True)
class Planned:
    """One operation of an agent's schedule, with its arguments."""

    operation: str
    scheduled: float
    """Loop time it is due at."""
    query: str
    messages: tuple[Message, ...]
    """The turns of a retain (empty otherwise)."""
    tool: str


@dataclass(frozen=True)
class Sample:
    """One operation as the agent saw it."""

    operation: str
    transport: str
    latency_ms: float
    late: bool
    error: str = ""
    """Empty on success, else the kind (``grpc:UNAVAILABLE``, ``mcp:tool_error``, ``timeout``...)."""
    partial: bool = False


@dataclass
class LoadResult:
    """Every operation of one run."""

    agents: int
    seconds: float
    samples: list[Sample] = field(default_factory=list)
    asked: int = 0
    failures: list[str] = field(default_factory=list)
    """Agents whose connection failed (each ends that agent), by kind and cause."""
    close_errors: list[str] = field(default_factory=list)
    """Connections that failed only as they closed, after every operation had its outcome."""

    @property
    def served(self) -> list[Sample]:
        return [s for s in self.samples if not s.error]

    def summary(self) -> dict[str, Any]:
        """The contract JSON of a run: ops served, errors, p50/p95/p99 per operation (and extras)."""
        served = self.served
        errors: dict[str, int] = {}
        for kind in [s.error for s in self.samples if s.error] + self.failures:
            errors[kind] = errors.get(kind, 0) + 1
        return {
            "agents": self.agents,
            "seconds": self.seconds,
            "ops": len(served),
            "errors": len(self.samples) - len(served) + len(self.failures),
            "ops_ms": {op: _quantiles([s for s in served if s.operation == op]) for op in OPERATIONS},
            "asked": self.asked,
            "late": sum(s.late for s in self.samples),
            "unfinished": self.asked - len(self.samples),
            "throughput_per_s": round(len(served) / self.seconds, 2) if self.seconds else 0.0,
            "ops_count": {op: sum(s.operation == op for s in served) for op in OPERATIONS},
            "close_errors": self.close_errors,
            "recall_partial": sum(s.partial for s in served if s.operation == "recall"),
            "errors_by_kind": dict(sorted(errors.items())),
            "errors_by_transport": {
                kind: sum(1 for s in self.samples if s.transport == kind and s.error)
                for kind in sorted({s.transport for s in self.samples})
            },
            "by_transport": {
                kind: {
                    op: _quantiles([s for s in served if s.transport == kind and s.operation == op])
                    for op in OPERATIONS
                }
                for kind in sorted({s.transport for s in self.samples})
            },
        }


def _leaf(error: BaseException) -> str:
    """The first leaf of an exception group (what anyio wraps a session's failure in), by type."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return f"{type(error).__name__}: {str(error)[:120]}".rstrip(": ")


def _quantiles(samples: Sequence[Sample]) -> dict[str, float]:
    values = [s.latency_ms for s in samples]
    return {
        name: round(percentile(values, share), 1)
        for name, share in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
    }


class ToolError(Exception):
    """An operation the mesh refused or failed; ``kind`` is how errors are counted."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind


def error_kind(error: BaseException) -> str:
    """How a failed operation is counted: the gRPC code, the MCP error, else the exception's type."""
    from mcp.shared.exceptions import MCPError

    from hindsight.client import HindsightError

    if isinstance(error, ToolError):
        return error.kind
    if isinstance(error, HindsightError):
        return f"grpc:{error.code.name}"
    if isinstance(error, MCPError):
        return f"mcp:error_{error.code}"
    if isinstance(error, TimeoutError):
        return "timeout"
    return f"client:{type(error).__name__}"


class Agent(Protocol):
    """One agent's connection: the operations of the mix."""

    transport: str

    async def recall(self, bank: str, query: str) -> bool:
        """Recall for ``query``; True when the answer was partial."""
        ...

    async def retain(self, bank: str, messages: Sequence[Message]) -> tuple[str, ...]:
        """Store ``messages`` as turns of one session; the ids of the stored turns."""
        ...

    async def other(self, bank: str, tool: str) -> None:
        """One of :data:`OTHER_TOOLS`."""
        ...


class GrpcAgent:
    """An agent on the gRPC ``MemoryService``, through the client library (its defaults, retries included)."""

    transport = GRPC

    def __init__(self, client: Any) -> None:
        self._client = client

    async def recall(self, bank: str, query: str) -> bool:
        reply = await self._client.recall(bank, query, top_k=TOP_K)
        return bool(reply.partial)

    async def retain(self, bank: str, messages: Sequence[Message]) -> tuple[str, ...]:
        from hindsight.bench.transports import grpc_turn

        session = messages[0].session or "default"  # one session per call, as the MCP tool takes it
        turns = [grpc_turn(m, session) for m in messages]
        stored = await self._client.retain(bank, turns)
        return tuple(stored.turn_ids)

    async def other(self, bank: str, tool: str) -> None:
        if tool == "list_recent":
            await self._client.list_recent(bank, limit=20)
        else:
            await self._client.list_entities(bank, limit=50)


class McpAgent:
    """An agent on the edge's MCP tools, through the official client over streamable HTTP."""

    transport = MCP

    def __init__(self, client: Any) -> None:
        self._client = client

    async def _call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self._client.call_tool(tool, arguments)
        if result.is_error:
            text = " ".join(getattr(part, "text", "") for part in result.content)
            raise ToolError("mcp:tool_error", f"{tool}: {text[:200]}")
        return dict(result.structured_content or {})

    async def recall(self, bank: str, query: str) -> bool:
        reply = await self._call("recall", {"bank": bank, "query": query, "top_k": TOP_K})
        return bool(reply.get("partial"))

    async def retain(self, bank: str, messages: Sequence[Message]) -> tuple[str, ...]:
        from hindsight.bench.transports import mcp_turn

        turns = [mcp_turn(m) for m in messages]
        session = messages[0].session or "default"
        stored = await self._call("retain", {"bank": bank, "session_id": session, "turns": turns})
        return tuple(str(turn_id) for turn_id in stored.get("turn_ids", ()))

    async def other(self, bank: str, tool: str) -> None:
        arguments = {"bank": bank, "limit": 20 if tool == "list_recent" else 50}
        await self._call(tool, arguments)


@dataclass(frozen=True)
class Target:
    """Where the agents connect: the gRPC ``MemoryService`` and/or the MCP endpoint, with a token."""

    grpc_address: str = ""
    mcp_url: str = ""
    token: str = ""

    def transport_of(self, index: int) -> str:
        """Agent ``index``'s transport: even ones MCP, odd ones gRPC (one kind only when one is given)."""
        if not self.grpc_address:
            return MCP
        if not self.mcp_url:
            return GRPC
        return MCP if index % 2 == 0 else GRPC


class LoadDriver:
    """Fills banks and runs agents against one mesh; reusable by other benches (faults).

    ``on_retain`` is called with every acknowledged retain, in the order the acknowledgements arrive.
    Turn ids are unique per bank across every run of one driver (``t<index>``, counting on from the
    prefill), so a later check can look each one up.
    """

    def __init__(
        self,
        target: Target,
        corpus: Corpus,
        *,
        turns_per_bank: int = 200,
        rate: float = 1.0,
        seed: int = 0,
        run_id: str = "",
        on_retain: Callable[[Acknowledged], None] | None = None,
        op_timeout: float = OP_TIMEOUT_S,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate: must be positive")
        if turns_per_bank < 0:
            raise ValueError("turns_per_bank: must be zero or more")
        self.target = target
        self.corpus = corpus
        self.turns_per_bank = turns_per_bank
        self.rate = rate
        self.seed = seed
        self.run_id = run_id or uuid.uuid4().hex[:8]
        self.on_retain = on_retain
        self.op_timeout = op_timeout
        self._next_turn: dict[str, int] = {}
        self._filled: set[str] = set()

    def bank(self, index: int) -> str:
        """Agent ``index``'s bank."""
        return f"load-{self.run_id}-{index}"

    def _stream(self, bank: str) -> Any:
        from hindsight.bench.scale_data import BankStream

        index = int(bank.rsplit("-", 1)[1])
        return BankStream(self.corpus, bank, offset=index * 7919)

    async def prefill(self, agents: int, progress: bool = False) -> float:
        """Give banks ``0 .. agents-1`` their first turns (through gRPC, batches of 100); seconds taken."""
        from hindsight.client import AsyncMemoryClient

        started = time.perf_counter()
        banks = [self.bank(i) for i in range(agents) if self.bank(i) not in self._filled]
        jobs = [(bank, start) for bank in banks for start in range(0, self.turns_per_bank, PREFILL_BATCH)]
        limit = asyncio.Semaphore(PREFILL_CONCURRENCY)
        done = [0]

        async def one(agent: Agent, bank: str, start: int) -> None:
            stop = min(start + PREFILL_BATCH, self.turns_per_bank)
            messages = self._stream(bank).turns(start, stop)
            async with limit:
                # One session per call: the turns of a batch are stored under its first turn's session.
                await agent.retain(bank, messages)
            done[0] += 1
            if progress:
                print(f"\rprefill {done[0]}/{len(jobs)} batches", end="", file=sys.stderr, flush=True)

        async with contextlib.AsyncExitStack() as stack:
            writer: Agent
            if self.target.grpc_address:
                client = await stack.enter_async_context(
                    AsyncMemoryClient(self.target.grpc_address, token=self.target.token, timeout=300.0)
                )
                writer = GrpcAgent(client)
            else:
                writer = await _open_mcp(stack, self.target)
            await asyncio.gather(*(one(writer, bank, start) for bank, start in jobs))
        if progress and jobs:
            print(file=sys.stderr)
        for bank in banks:
            self._filled.add(bank)
            self._next_turn.setdefault(bank, self.turns_per_bank)
        return time.perf_counter() - started

    async def run(self, agents: int, seconds: float, first: int = 0) -> LoadResult:
        """Agents ``first .. first+agents-1`` on their banks for ``seconds``; every operation's outcome.

        Each agent runs in a task of its own, which holds its connection: an MCP session that breaks
        ends that agent (counted as an error), never the run. The schedule starts once all are connected;
        operations still open when the time is up are waited for (each has its own timeout).
        """
        if agents <= 0 or seconds <= 0:
            raise ValueError("agents and seconds: must be positive")
        result = LoadResult(agents=agents, seconds=seconds)
        loop = asyncio.get_running_loop()
        waiting = [agents]
        ready = asyncio.Event()
        start = [0.0]

        def arrived() -> None:
            waiting[0] -= 1
            if waiting[0] == 0:
                start[0] = loop.time() + 0.2
                ready.set()

        async def agent_task(index: int) -> None:
            counted = finished = False
            try:
                async with contextlib.AsyncExitStack() as stack:
                    agent = await self._connect(stack, index)
                    arrived()
                    counted = True
                    await ready.wait()
                    await self._agent(agent, index, start[0], seconds, result)
                    finished = True
            except Exception as exc:  # its connection failed: the agent ends, the others go on
                cause = f"{self.target.transport_of(index)}:connection_failed ({_leaf(exc)})"
                # Once every operation has its outcome, a close that fails loses nothing: reported apart.
                (result.close_errors if finished else result.failures).append(cause)
            finally:
                if not counted:
                    arrived()

        await asyncio.gather(*(agent_task(index) for index in range(first, first + agents)))
        return result

    async def _connect(self, stack: contextlib.AsyncExitStack, index: int) -> Agent:
        from hindsight.client import AsyncMemoryClient

        if self.target.transport_of(index) == MCP:
            return await _open_mcp(stack, self.target)
        client = await stack.enter_async_context(
            AsyncMemoryClient(self.target.grpc_address, token=self.target.token, timeout=self.op_timeout)
        )
        return GrpcAgent(client)

    async def _agent(
        self, agent: Agent, index: int, start: float, seconds: float, result: LoadResult
    ) -> None:
        """One agent's open-loop schedule: a jittered start, then one operation every ``1/rate`` s."""
        loop = asyncio.get_running_loop()
        rng = random.Random(self.seed * 100_003 + index)
        bank = self.bank(index)
        period = 1.0 / self.rate
        offset = rng.random() * period
        slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        tasks: list[asyncio.Task[None]] = []
        step = 0
        while (scheduled := start + offset + step * period) < start + seconds:
            step += 1
            delay = scheduled - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            planned = self._plan(bank, scheduled, rng)
            result.asked += 1
            tasks.append(asyncio.create_task(self._operation(agent, bank, planned, slots, result)))
        await asyncio.gather(*tasks)

    def _plan(self, bank: str, scheduled: float, rng: random.Random) -> Planned:
        """The next operation and its arguments, drawn in schedule order: one seed asks the same things."""
        operation = rng.choices(OPERATIONS, MIX)[0]
        query = rng.choice(self.corpus.queries)
        count = rng.randint(1, MAX_RETAIN_TURNS)
        tool = rng.choice(OTHER_TOOLS)
        messages = tuple(self._retain_batch(bank, count)) if operation == "retain" else ()
        return Planned(operation, scheduled, query, messages, tool)

    def _retain_batch(self, bank: str, count: int) -> list[Message]:
        first = self._next_turn.get(bank, self.turns_per_bank)
        self._next_turn[bank] = first + count
        return self._stream(bank).turns(first, first + count)

    async def _operation(
        self,
        agent: Agent,
        bank: str,
        planned: Planned,
        slots: asyncio.Semaphore,
        result: LoadResult,
    ) -> None:
        loop = asyncio.get_running_loop()
        operation, scheduled, messages = planned.operation, planned.scheduled, planned.messages
        async with slots:
            late = loop.time() - scheduled > LATE_S
            error, partial = "", False
            try:
                async with asyncio.timeout(self.op_timeout):
                    if operation == "recall":
                        partial = await agent.recall(bank, planned.query)
                    elif operation == "retain":
                        ids = await agent.retain(bank, messages)
                        if self.on_retain is not None:
                            self.on_retain(
                                Acknowledged(
                                    bank,
                                    ids or tuple(m.id for m in messages),
                                    tuple(m.text for m in messages),
                                    agent.transport,
                                    time.monotonic(),
                                )
                            )
                    else:
                        await agent.other(bank, planned.tool)
            except asyncio.CancelledError:  # its agent's connection broke: counted, then let go
                result.samples.append(Sample(operation, agent.transport, 0.0, late, "cancelled"))
                raise
            except Exception as exc:  # every failure is counted by kind, none stops the run
                error = error_kind(exc)
        latency = (loop.time() - scheduled) * 1000
        result.samples.append(Sample(operation, agent.transport, latency, late, error, partial))


async def _open_mcp(stack: contextlib.AsyncExitStack, target: Target) -> McpAgent:
    """A new MCP session (its own HTTP client), kept open until ``stack`` closes."""
    return await stack.enter_async_context(_mcp_session(target))


@contextlib.asynccontextmanager
async def _mcp_session(target: Target) -> AsyncIterator[McpAgent]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"authorization": f"Bearer {target.token}"} if target.token else {}
    timeout = httpx2.Timeout(OP_TIMEOUT_S, read=300.0)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        Client(streamable_http_client(target.mcp_url, http_client=http)) as client,
    ):
        yield McpAgent(client)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of ``hindsight bench load``."""
    from hindsight.bench.scale_data import DEFAULT_DATA

    parser.add_argument("--agents", type=int, default=50, metavar="N", help="simulated agents (default: 50)")
    parser.add_argument(
        "--seconds", type=float, default=60.0, metavar="S", help="length of the run (default: 60)"
    )
    parser.add_argument(
        "--turns-per-bank",
        type=int,
        default=200,
        metavar="N",
        help="turns in each bank before the run (default: 200)",
    )
    parser.add_argument(
        "--rate", type=float, default=1.0, metavar="R", help="operations per second per agent"
    )
    parser.add_argument(
        "--baseline-agents",
        type=int,
        default=2,
        metavar="N",
        help="agents of the unloaded baseline measured first (default: 2, one per transport; 0: none)",
    )
    parser.add_argument(
        "--baseline-seconds",
        type=float,
        default=20.0,
        metavar="S",
        help="length of the baseline (default: 20)",
    )
    parser.add_argument(
        "--data",
        type=Path,
        nargs="+",
        default=list(DEFAULT_DATA),
        metavar="FILE",
        help="benchmark files whose messages and questions are the agents' text (default: the dev files)",
    )
    parser.add_argument(
        "--address",
        default=None,
        metavar="HOST:PORT",
        help="a running edge's gRPC MemoryService (default: start a private embedded mesh)",
    )
    parser.add_argument(
        "--mcp-url",
        default=None,
        metavar="URL",
        help="a running edge's MCP endpoint (with or instead of --address)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("HINDSIGHT_TOKEN", ""),
        help="bearer token for --address / --mcp-url (default: $HINDSIGHT_TOKEN); a private mesh: its own",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the schedule and the operations drawn")
    add_json_argument(parser)
    add_env_argument(parser)
    parser.add_argument("--no-progress", action="store_true", help="no progress output")


def _check(args: argparse.Namespace) -> str:
    """The first bad argument, as a message naming it; empty when all are fine."""
    if args.agents <= 0:
        return "--agents: must be positive"
    if args.seconds <= 0:
        return "--seconds: must be positive"
    if args.rate <= 0:
        return "--rate: must be positive"
    if args.turns_per_bank < 0:
        return "--turns-per-bank: must be zero or more"
    if args.baseline_agents < 0 or args.baseline_seconds <= 0:
        return "--baseline-agents / --baseline-seconds: must be zero or more / positive"
    if args.baseline_agents > args.agents:
        return "--baseline-agents: at most --agents"
    if args.env and (args.address or args.mcp_url):
        return "--env sets up the private mesh; a running edge (--address) has its own"
    return ""


class CpuMeter:
    """CPU seconds (user + system) of the mesh's processes, by service, and of this process.

    On a shared machine latency depends on what else runs; the CPU an operation costs does not, so it
    is the figure to compare between runs. Processes are named after their layer (``children``), the
    embedded stores after their program, the supervisor ``supervisor`` and this process ``client``
    (``load-client`` unless the suite names it).
    """

    def __init__(self, supervisor_pid: int, children: dict[str, int], client: str = "load-client") -> None:
        import psutil

        self._root = psutil.Process(supervisor_pid)
        self._names = {pid: name for name, pid in children.items()}
        self._client = client

    def snapshot(self) -> dict[str, float]:
        """CPU seconds used so far, by name (a process gone since is left out)."""
        import psutil

        totals = {self._client: sum(psutil.Process().cpu_times()[:2])}
        with contextlib.suppress(psutil.Error):
            processes = [self._root, *self._root.children(recursive=True)]
            for process in processes:
                with contextlib.suppress(psutil.Error):
                    name = self._name(process)
                    totals[name] = totals.get(name, 0.0) + sum(process.cpu_times()[:2])
        return totals

    def _name(self, process: Any) -> str:
        if process.pid == self._root.pid:
            return "supervisor"
        if process.pid in self._names:
            return self._names[process.pid]
        program = process.name().lower()
        for store in ("postgres", "valkey", "redis"):
            if store in program:
                return store
        return program

    @staticmethod
    def per_op(before: dict[str, float], after: dict[str, float], ops: int) -> dict[str, float]:
        """Milliseconds of CPU per served operation, by name, most first, with the ``total``."""
        used = {name: after[name] - before.get(name, 0.0) for name in after}
        shares = {name: round(seconds * 1000 / max(1, ops), 2) for name, seconds in used.items()}
        ordered = dict(sorted(shares.items(), key=lambda item: -item[1]))
        ordered["total"] = round(sum(shares.values()), 2)
        return ordered


async def measure(
    driver: LoadDriver, args: argparse.Namespace, meter: CpuMeter | None = None
) -> dict[str, Any]:
    """Prefill, the baseline, then the loaded run: both summaries and the ratios between them."""
    progress = not args.no_progress
    prefill_s = await driver.prefill(args.agents, progress)
    baseline = None
    if args.baseline_agents:
        if progress:
            print(f"baseline: {args.baseline_agents} agents for {args.baseline_seconds:g}s", file=sys.stderr)
        baseline = (await driver.run(args.baseline_agents, args.baseline_seconds)).summary()
    if progress:
        print(f"load: {args.agents} agents for {args.seconds:g}s", file=sys.stderr)
    before = meter.snapshot() if meter else {}
    loaded = (await driver.run(args.agents, args.seconds)).summary()
    if meter is not None:
        loaded["cpu_ms_per_op"] = CpuMeter.per_op(before, meter.snapshot(), loaded["ops"])
    loaded["prefill_seconds"] = round(prefill_s, 1)
    loaded["turns_per_bank"] = args.turns_per_bank
    loaded["baseline"] = baseline
    if baseline is not None:
        loaded["vs_baseline"] = {
            op: {
                name: round(value / baseline["ops_ms"][op][name], 2) if baseline["ops_ms"][op][name] else None
                for name, value in loaded["ops_ms"][op].items()
            }
            for op in OPERATIONS
        }
    return loaded


def markdown(summary: dict[str, Any]) -> str:
    """The run as a table: each operation's count and latency, loaded and (if measured) unloaded."""
    lines = [
        f"{summary['agents']} agents x {summary['seconds']:g} s: {summary['ops']} of {summary['asked']} "
        f"operations served ({summary['throughput_per_s']}/s), {summary['late']} late, "
        f"{summary['errors']} errors {summary['errors_by_kind'] or ''}".rstrip(),
        "",
        "| operation | count | p50 ms | p95 ms | p99 ms | baseline p50 | baseline p99 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    baseline = summary.get("baseline")
    for op in OPERATIONS:
        q = summary["ops_ms"][op]
        b = baseline["ops_ms"][op] if baseline else {"p50": "-", "p99": "-"}
        cells = [op, summary["ops_count"][op], q["p50"], q["p95"], q["p99"], b["p50"], b["p99"]]
        lines.append("| " + " | ".join(str(cell) for cell in cells) + " |")
    if summary.get("cpu_ms_per_op"):
        shares = ", ".join(f"{name} {ms}" for name, ms in summary["cpu_ms_per_op"].items())
        lines += ["", f"CPU ms per operation: {shares}"]
    return "\n".join(lines)


def _measure_target(
    args: argparse.Namespace, corpus: Corpus, mesh_settings: dict[str, str]
) -> tuple[dict[str, Any], dict[str, str] | None]:
    """The run against ``--address`` / ``--mcp-url``, else a private mesh; its summary and the mesh's
    recorded settings (None for a mesh given on the command line)."""
    from hindsight.bench.provenance import mesh_environment, recorded_settings

    if args.address or args.mcp_url:
        target = Target(args.address or "", args.mcp_url or "", args.token)
        summary = asyncio.run(
            measure(
                LoadDriver(
                    target, corpus, turns_per_bank=args.turns_per_bank, rate=args.rate, seed=args.seed
                ),
                args,
            )
        )
        return summary, None
    else:
        from hindsight.bench.mesh_process import PeakMemory, embedded_mesh
        from hindsight.cli.credentials import client_token

        environ = mesh_environment(mesh_settings)
        settings = recorded_settings(environ)
        if not args.no_progress:
            print("starting an embedded mesh ...", file=sys.stderr, flush=True)
        with embedded_mesh(environ=environ) as (info, supervisor_pid), PeakMemory(supervisor_pid) as rss:
            target = Target(info.memory_address, info.mcp_url, client_token(Path(info.home)))
            driver = LoadDriver(
                target, corpus, turns_per_bank=args.turns_per_bank, rate=args.rate, seed=args.seed
            )
            meter = CpuMeter(supervisor_pid, info.children)
            summary = asyncio.run(measure(driver, args, meter))
            summary["peak_rss_mb"] = round(rss.peak_mb, 1)
    return summary, settings


def run(args: argparse.Namespace) -> int:
    """``hindsight bench load``: print the table and write the JSON; 0 when the run had no error."""

    from hindsight.bench.provenance import checkout, commit_label, parse_assignments, report_json
    from hindsight.bench.scale_data import Corpus
    from hindsight.client import HindsightError

    problem = _check(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        mesh_settings = parse_assignments(args.env)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    code = commit_label(checkout())
    corpus = Corpus.load(args.data)
    try:
        summary, settings = _measure_target(args, corpus, mesh_settings)
    except HindsightError as exc:  # the banks could not be filled: there is nothing to measure
        print(f"error: filling the agents' banks failed: {exc}", file=sys.stderr)
        return 1
    summary["commit"] = code
    summary["settings"] = settings
    summary["address"] = args.address or args.mcp_url or "embedded"
    summary["rate"] = args.rate
    print(markdown(summary))
    report_json(args.json, summary)
    return 0 if summary["errors"] == 0 else 1
