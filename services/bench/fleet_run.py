"""The phases of ``hindsight bench fleet`` against one running mesh.

1. tokens: the operator mints each agent's token through the API (MCP ``token_create``): its own bank
   read+write+forget, its team's bank read+write, the handbook read;
2. learning: each agent retains its facts and a private note in its own bank (the operator fills the
   handbook, one agent per team puts the team's private note in the team bank), then shares some of its
   facts into its team's bank (``share``);
3. cross-agent recall: for each shared fact a teammate asks its question, once over the team bank and once
   over its own and the team's banks in one recall; found when the shared copy is in the top 5;
4. latency: each agent asks its questions over its own bank and over three banks (own, team, handbook),
   one call at a time on the gRPC port, in a random order;
5. dead tokens: tokens minted, used, then revoked (``token_revoke``) or left to expire; how long each
   takes to be refused on both ports;
6. isolation: the random attempts of :mod:`.fleet_attempts`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hindsight.bench.fleet_attempts import Actor, Isolation, World, run_attempts
from hindsight.bench.fleet_data import ORG_BANK, ORG_FACTS, Agent, Fleet, canary_note
from hindsight.bench.fleet_ports import GRPC, MCP, McpSession, Outcome, grpc_port, mcp_session
from hindsight.bench.metrics import percentile

TOP_K = 5
CONCURRENCY = 4
"""Agents working at once in the learning and cross-recall phases (latency is measured one call at a time)."""
WARMUP = 3
"""Recalls per mode asked first and not counted."""
REFUSAL_PATIENCE = 10.0
"""Longest a dead token is probed before the run records it as still served."""
PROBE_QUERY = "What does the handbook say about production changes?"


class FleetError(RuntimeError):
    """A step the workload needs failed (not an isolation attempt: those are counted, never raised)."""


@dataclass(frozen=True)
class FleetSettings:
    agents: int
    teams: int
    facts: int
    shares: int
    attempts: int
    latency_queries: int
    expiry_seconds: int
    seed: int


@dataclass
class Check:
    """One teammate looking for one shared fact."""

    sharer: str
    teammate: str
    mode: str
    """``team`` (the team bank alone) or ``own+team`` (one recall over both)."""
    found: bool
    rank: int | None
    agent: str
    """Who the found memory says wrote it."""
    question: str = ""
    top: tuple[str, ...] = ()
    """For a miss: what the top 5 held instead (bank, layer, id and text of each)."""


@dataclass
class FleetResult:
    shared: int = 0
    share_error: str = ""
    """Why sharing failed (then no cross-agent recall was measured)."""
    checks: list[Check] = field(default_factory=list)
    single_ms: list[float] = field(default_factory=list)
    multi_ms: list[float] = field(default_factory=list)
    layer_ms: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    """Per mode (``single``, ``multi``), per layer (and ``edge``: the whole recall inside the edge), the
    time of each counted recall: where a multi-bank recall spends its extra time."""
    revoked_ms: dict[str, dict[str, float | None]] = field(default_factory=dict)
    expired_ms: dict[str, dict[str, float | None]] = field(default_factory=dict)
    """Per dead token, per port: milliseconds from revocation (expiry) to the first refusal."""
    isolation: Isolation = field(default_factory=Isolation)
    phase_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def shared_found(self) -> float | None:
        return sum(c.found for c in self.checks) / len(self.checks) if self.checks else None

    def found_by_mode(self) -> dict[str, float]:
        modes = sorted({c.mode for c in self.checks})
        return {
            mode: round(
                sum(c.found for c in self.checks if c.mode == mode)
                / sum(1 for c in self.checks if c.mode == mode),
                4,
            )
            for mode in modes
        }

    def layer_p50(self) -> dict[str, dict[str, float]]:
        return {
            mode: {layer: round(percentile(values, 0.50), 2) for layer, values in sorted(layers.items())}
            for mode, layers in self.layer_ms.items()
        }

    def latency(self) -> dict[str, dict[str, float]]:
        return {
            name: {
                "p50": round(percentile(values, 0.50), 2),
                "p95": round(percentile(values, 0.95), 2),
                "count": len(values),
            }
            for name, values in (("single", self.single_ms), ("multi", self.multi_ms))
        }


def _required(outcome: Outcome, what: str) -> dict[str, Any]:
    if not outcome.ok:
        raise FleetError(f"{what}: {outcome.code}: {outcome.text[:500]}")
    return outcome.data


async def mint(admin: McpSession, name: str, banks: list[str], expires: str = "") -> tuple[str, str]:
    """A managed token minted by the operator over MCP: its secret and expiry (ISO 8601, or empty)."""
    arguments: dict[str, Any] = {"name": name, "banks": banks}
    if expires:
        arguments["expires"] = expires
    data = _required(await admin.call("token_create", arguments), f"token_create {name}")
    return str(data["token"]), str(data.get("expires") or "")


async def retain(session: McpSession, bank: str, turns: list[tuple[str, str]]) -> list[str]:
    """Store ``(id, text)`` turns in ``bank``; the text must be stored as given (no screening touched it)."""
    arguments = {
        "bank": bank,
        "session_id": f"{bank}-notes",
        "turns": [{"id": turn_id, "text": text} for turn_id, text in turns],
    }
    data = _required(await session.call("retain", arguments), f"retain into {bank}")
    if data.get("screened"):
        raise FleetError(f"retain into {bank}: screening changed a turn: {data['screened']}")
    return [str(turn_id) for turn_id in data["turn_ids"]]


def holds(memory: dict[str, Any], team: str, shared_id: str, source_id: str) -> bool:
    """Whether a recalled memory is the shared copy (or a record drawn from it) in the team bank."""
    if memory.get("bank_id") not in ("", team):
        return False
    cited = set(memory.get("source_turn_ids") or ())
    return memory.get("id") == shared_id or shared_id in cited or source_id in cited


class FleetRun:
    """One run of the phases against the mesh at ``mcp_url`` / ``grpc_address`` as ``admin``."""

    def __init__(
        self,
        fleet: Fleet,
        settings: FleetSettings,
        mcp_url: str,
        grpc_address: str,
        admin_token: str,
        say: Any = print,
    ) -> None:
        self.fleet = fleet
        self.settings = settings
        self.mcp_url = mcp_url
        self.grpc_address = grpc_address
        self.admin_token = admin_token
        self.say = say
        self.rng = random.Random(settings.seed + 1)
        self.result = FleetResult()
        self.tokens: dict[str, str] = {}
        self.sessions: dict[str, McpSession] = {}
        self.ids: dict[str, list[str]] = {}
        self.shared: dict[str, list[tuple[str, str, int]]] = {}
        """Agent -> (shared id in the team bank, source id, fact index) per fact it shared."""

    async def run(self) -> FleetResult:
        async with contextlib.AsyncExitStack() as stack:
            self.stack = stack
            self.admin = await stack.enter_async_context(mcp_session(self.mcp_url, self.admin_token))
            self.grpc = await stack.enter_async_context(grpc_port(self.grpc_address))
            await self._phase("tokens", self.mint_tokens())
            await self._phase("learning", self.learn())
            await self._phase("sharing", self.share())
            await self._phase("cross_recall", self.cross_recall())
            await self._phase("latency", self.latency())
            dead = await self._phase("dead_tokens", self.dead_tokens())
            world = World(self.fleet, self.actors(), dead, self.ids, self.grpc)
            self.result.isolation = await self._phase(
                "isolation", run_attempts(world, self.settings.attempts, self.rng, self.say)
            )
        return self.result

    async def _phase(self, name: str, work: Any) -> Any:
        started = time.monotonic()
        self.say(f"{name} ...")
        outcome = await work
        self.result.phase_seconds[name] = round(time.monotonic() - started, 2)
        return outcome

    async def _each(self, agents: Any, work: Any) -> list[Any]:
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(agent: Agent) -> Any:
            async with gate:
                return await work(agent)

        return list(await asyncio.gather(*(one(agent) for agent in agents)))

    def actors(self) -> list[Actor]:
        return [
            Actor(a.name, self.tokens[a.name], self.sessions[a.name], a.bank, a.team, a.readable())
            for a in self.fleet.agents
        ]

    async def mint_tokens(self) -> None:
        for agent in self.fleet.agents:
            self.tokens[agent.name], _ = await mint(self.admin, agent.name, agent.grants(), expires="1d")
            self.sessions[agent.name] = await self.stack.enter_async_context(
                mcp_session(self.mcp_url, self.tokens[agent.name])
            )

    async def learn(self) -> None:
        handbook = [(f"{ORG_BANK}-{n}", text) for n, text in enumerate(ORG_FACTS, start=1)]
        self.ids[ORG_BANK] = await retain(self.admin, ORG_BANK, handbook)
        for team in self.fleet.teams:
            first = next(a for a in self.fleet.agents if a.team == team)
            note = [(f"{team}-note", canary_note(team, self.fleet.canaries[team]))]
            self.ids[team] = await retain(self.sessions[first.name], team, note)

        async def own(agent: Agent) -> None:
            turns = [(f"{agent.name}-fact-{n}", f.statement) for n, f in enumerate(agent.facts, start=1)]
            turns.append((f"{agent.name}-note", canary_note(agent.bank, self.fleet.canaries[agent.bank])))
            self.ids[agent.bank] = await retain(self.sessions[agent.name], agent.bank, turns)

        await self._each(self.fleet.agents, own)

    async def share(self) -> None:
        async def one(agent: Agent) -> None:
            chosen = [self.ids[agent.bank][index] for index in agent.shared]
            arguments = {"bank": agent.bank, "to_bank": agent.team, "ids": chosen}
            outcome = await self.sessions[agent.name].call("share", arguments)
            if not outcome.ok:
                self.result.share_error = self.result.share_error or f"{outcome.code}: {outcome.text[:300]}"
                return
            copies = {str(item["source_id"]): str(item["id"]) for item in outcome.data.get("shared", [])}
            self.shared[agent.name] = [
                (copies.get(source, ""), source, index)
                for source, index in zip(chosen, agent.shared, strict=True)
            ]
            self.ids[agent.team].extend(copy for copy in copies.values() if copy)

        await self._each(self.fleet.agents, one)
        self.result.shared = sum(len(items) for items in self.shared.values())
        if self.result.share_error:
            self.say(f"  share failed: {self.result.share_error}")

    async def cross_recall(self) -> None:
        plan: list[tuple[Agent, Agent, str, str, int, str]] = []
        for agent in self.fleet.agents:
            for shared_id, source_id, index in self.shared.get(agent.name, []):
                for mode in ("team", "own+team"):
                    teammate = self.rng.choice(self.fleet.teammates(agent))
                    plan.append((agent, teammate, shared_id, source_id, index, mode))
        gate = asyncio.Semaphore(CONCURRENCY)

        async def check(item: tuple[Agent, Agent, str, str, int, str]) -> Check:
            sharer, teammate, shared_id, source_id, index, mode = item
            arguments: dict[str, Any] = {"query": sharer.facts[index].question, "top_k": TOP_K}
            if mode == "team":
                arguments["bank"] = sharer.team
            else:
                arguments["banks"] = [teammate.bank, sharer.team]
            async with gate:
                outcome = await self.sessions[teammate.name].call("recall", arguments)
            memories = _required(outcome, f"recall by {teammate.name}")["memories"][:TOP_K]
            for rank, memory in enumerate(memories, start=1):
                if shared_id and holds(memory, sharer.team, shared_id, source_id):
                    return Check(sharer.name, teammate.name, mode, True, rank, str(memory.get("agent", "")))
            top = tuple(
                ("[outdated] " if m.get("outdated") else "")
                + f"{m.get('bank_id')}/{m.get('layer')}/{m.get('id')}: {str(m.get('text'))[:80]}"
                for m in memories
            )
            return Check(sharer.name, teammate.name, mode, False, None, "", arguments["query"], top)

        self.result.checks = list(await asyncio.gather(*(check(item) for item in plan)))

    async def latency(self) -> None:
        from hindsight.contracts.memory.v1 import memory_pb2

        for agent in self.fleet.agents:
            token = self.tokens[agent.name]
            team_facts = [
                mate.facts[index].question for mate in self.fleet.teammates(agent) for index in mate.shared
            ]
            pool = [f.question for f in agent.facts] + team_facts
            for n in range(self.settings.latency_queries + WARMUP):
                query = self.rng.choice(pool)
                single = memory_pb2.RecallRequest(bank_id=agent.bank, query=query, top_k=TOP_K)
                multi = memory_pb2.RecallRequest(
                    bank_ids=[agent.bank, agent.team, ORG_BANK], query=query, top_k=TOP_K
                )
                order = [("single", single), ("multi", multi)]
                self.rng.shuffle(order)
                for name, request in order:
                    outcome = await self.grpc.call("Recall", request, token)
                    _required(outcome, f"{name}-bank recall by {agent.name}")
                    if n >= WARMUP:
                        (self.result.single_ms if name == "single" else self.result.multi_ms).append(
                            outcome.elapsed_ms
                        )
                        self._note_layers(name, outcome.data)

    def _note_layers(self, mode: str, reply: dict[str, Any]) -> None:
        times = self.result.layer_ms.setdefault(mode, {})
        times.setdefault("edge", []).append(float(reply.get("elapsed_ms", 0.0)))
        for report in reply.get("layer_reports", []):
            layer = str(report.get("layer", "LAYER_UNSPECIFIED")).removeprefix("LAYER_").lower()
            times.setdefault(layer, []).append(float(report.get("elapsed_ms", 0.0)))

    async def _probe(self, actor: Actor) -> dict[str, Outcome]:
        from hindsight.contracts.memory.v1 import memory_pb2

        request = memory_pb2.RecallRequest(bank_id=actor.team, query=PROBE_QUERY, top_k=1)
        return {
            MCP: await actor.session.call("recall", {"bank": actor.team, "query": PROBE_QUERY, "top_k": 1}),
            GRPC: await self.grpc.call("Recall", request, actor.token),
        }

    async def _until_refused(self, actor: Actor, since: float) -> dict[str, float | None]:
        """Milliseconds from ``since`` (a ``time.monotonic()``) until each port refused ``actor``."""
        waiting = {MCP, GRPC}
        took: dict[str, float | None] = {MCP: None, GRPC: None}
        while waiting and time.monotonic() - since < REFUSAL_PATIENCE:
            outcomes = await self._probe(actor)
            for port in list(waiting):
                if outcomes[port].refused:
                    took[port] = round((time.monotonic() - since) * 1000, 1)
                    waiting.discard(port)
            await asyncio.sleep(0.01)
        return took

    async def _ghost(self, name: str, team: str, expires: str) -> tuple[Actor, str]:
        """A token like an agent's, used while valid (an MCP session held, a write, a recall on each port)."""
        grants = [f"{name}:read+write+forget", f"{team}:read+write", f"{ORG_BANK}:read"]
        token, expires_at = await mint(self.admin, name, grants, expires)
        session = await self.stack.enter_async_context(mcp_session(self.mcp_url, token))
        actor = Actor(name, token, session, name, team, frozenset(), dead="")
        self.ids[name] = await retain(session, name, [(f"{name}-note", f"{name} was here while valid.")])
        for port, outcome in (await self._probe(actor)).items():
            _required(outcome, f"{name} on {port} while valid")
        return actor, expires_at

    async def dead_tokens(self) -> list[Actor]:
        """Revoked tokens first (timed from the revocation's answer), then expiring ones, minted in a row
        so that each is probed from the moment it expires."""
        dead: list[Actor] = []
        for team in self.fleet.teams:
            actor, _ = await self._ghost(f"revoked-{team}", team, "")
            _required(await self.admin.call("token_revoke", {"name": actor.name}), f"revoke {actor.name}")
            self.result.revoked_ms[actor.name] = await self._until_refused(actor, time.monotonic())
            dead.append(dataclasses.replace(actor, dead="revoked"))
        expiring: list[tuple[Actor, datetime]] = []
        for team in self.fleet.teams:
            actor, expiry = await self._ghost(f"expiring-{team}", team, f"{self.settings.expiry_seconds}s")
            expiring.append((actor, datetime.fromisoformat(expiry)))
        for actor, expires_at in expiring:
            wait = (expires_at - datetime.now(UTC)).total_seconds()
            if wait > 0:
                await asyncio.sleep(wait)
            since = time.monotonic() - (datetime.now(UTC) - expires_at).total_seconds()
            self.result.expired_ms[actor.name] = await self._until_refused(actor, since)
            dead.append(dataclasses.replace(actor, dead="expired"))
        return dead
