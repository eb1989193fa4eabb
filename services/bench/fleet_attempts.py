"""The isolation half of ``hindsight bench fleet``: seeded random attempts that must all be refused.

Each attempt is one call, on a port drawn at random (MCP or gRPC), by an agent against a bank or an
operation its token does not grant: reading, writing, updating, forgetting or purging another agent's or
another team's bank; forgetting in its own team's bank (read and write only) or writing to the handbook
(read only); sharing out of a bank it may not read or into one it may not write; a recall over several
banks that mixes granted ones with one denied (refused whole, never narrowed); minting or revoking tokens
without ``admin``; and any call at all with an expired or a revoked token, on the banks it once granted,
over the MCP session it opened while it was valid. An attempt is refused when the answer is
PERMISSION_DENIED or UNAUTHENTICATED (HTTP 401/403 on MCP); it leaks when it is served, or when any answer
(an error's text included) holds the private note of a bank the caller may not read.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hindsight.bench.fleet_data import ORG_BANK, Fleet
from hindsight.bench.fleet_ports import GRPC, MCP, GrpcPort, McpSession, Outcome
from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.memory.v1 import memory_pb2

EXAMPLES = 10
"""Leaks, and failures, kept to reproduce (each)."""


@dataclass(frozen=True)
class Actor:
    """A credential the bench calls with: an agent's, or a dead one (expired, revoked)."""

    name: str
    token: str
    session: McpSession
    bank: str
    team: str
    readable: frozenset[str]
    """Banks whose content it may see (none for a dead token)."""
    dead: str = ""
    """``expired`` or ``revoked``; empty for a live agent."""


@dataclass
class World:
    """What the attempts draw from."""

    fleet: Fleet
    agents: list[Actor]
    dead: list[Actor]
    ids: dict[str, list[str]]
    """Bank id -> ids of memories stored there (an attempt names real ones)."""
    grpc: GrpcPort


@dataclass(frozen=True)
class Call:
    """One attempt: who, which kind, against what, and the call on each port (None: not on that port)."""

    kind: str
    actor: Actor
    target: str
    mcp: tuple[str, dict[str, Any]]
    grpc: tuple[str, Any] | None


@dataclass
class Isolation:
    """The tally of the attempts."""

    attempts: int = 0
    refused: int = 0
    leaks: int = 0
    failed: int = 0
    """Neither served nor refused (another error): not a leak, but not the refusal wanted either."""
    by_kind: dict[str, Counter[str]] = field(default_factory=dict)
    by_port: Counter[str] = field(default_factory=Counter)
    examples: list[dict[str, str]] = field(default_factory=list)
    """The first few leaks and failures, to reproduce."""

    def add(self, call: Call, port: str, outcome: Outcome, leaked: bool) -> None:
        self.attempts += 1
        self.by_port[port] += 1
        counts = self.by_kind.setdefault(call.kind, Counter())
        counts["attempts"] += 1
        verdict = "leaks" if leaked else "refused" if outcome.refused else "failed"
        counts[verdict] += 1
        if leaked:
            self.leaks += 1
        elif outcome.refused:
            self.refused += 1
        else:
            self.failed += 1
        if verdict != "refused" and sum(e["verdict"] == verdict for e in self.examples) < EXAMPLES:
            self.examples.append(
                {
                    "verdict": verdict,
                    "kind": call.kind,
                    "actor": call.actor.name,
                    "port": port,
                    "target": call.target,
                    "code": outcome.code,
                    "text": outcome.text[:300],
                }
            )

    def summary(self) -> dict[str, Any]:
        return {
            "attempts": self.attempts,
            "refused": self.refused,
            "leaks": self.leaks,
            "failed": self.failed,
            "by_port": dict(sorted(self.by_port.items())),
            "by_kind": {kind: dict(sorted(counts.items())) for kind, counts in sorted(self.by_kind.items())},
            "examples": self.examples,
        }


def _other_agent(rng: random.Random, world: World, actor: Actor, same_team: bool | None = None) -> Actor:
    others = [a for a in world.agents if a.name != actor.name]
    if same_team is not None:
        others = [a for a in others if (a.team == actor.team) is same_team] or others
    return rng.choice(others)


def _other_team(rng: random.Random, world: World, actor: Actor) -> str:
    return rng.choice([t for t in world.fleet.teams if t != actor.team])


def _foreign_bank(rng: random.Random, world: World, actor: Actor) -> str:
    """A bank the actor may not read: a teammate's, another team's agent's, or another team's bank."""
    pick = rng.random()
    if pick < 0.35:
        return _other_agent(rng, world, actor, same_team=True).bank
    if pick < 0.65:
        return _other_agent(rng, world, actor, same_team=False).bank
    return _other_team(rng, world, actor)


def _an_id(rng: random.Random, world: World, bank: str) -> str:
    return rng.choice(world.ids.get(bank) or [f"{bank}-unknown"])


PROBE_QUERY = "Which meeting room is the retrospective booked in?"
"""What a reading attempt asks: the private note of the bank it aims at."""


def _read(rng: random.Random, world: World, actor: Actor, bank: str, kind: str) -> Call:
    tool = rng.choice(("recall", "list_recent", "list_entities", "entity_page"))
    if tool == "recall":
        return Call(
            kind,
            actor,
            bank,
            ("recall", {"bank": bank, "query": PROBE_QUERY, "top_k": 5}),
            ("Recall", memory_pb2.RecallRequest(bank_id=bank, query=PROBE_QUERY, top_k=5)),
        )
    if tool == "list_recent":
        return Call(
            kind,
            actor,
            bank,
            ("list_recent", {"bank": bank, "limit": 20}),
            ("ListRecent", memory_pb2.ListRecentRequest(bank_id=bank, limit=20)),
        )
    if tool == "list_entities":
        return Call(
            kind,
            actor,
            bank,
            ("list_entities", {"bank": bank}),
            ("ListEntities", memory_pb2.ListEntitiesRequest(bank_id=bank)),
        )
    return Call(
        kind,
        actor,
        bank,
        ("entity_page", {"bank": bank, "entity": "retrospective"}),
        ("GetEntityPage", memory_pb2.GetEntityPageRequest(bank_id=bank, entity="retrospective")),
    )


def _write(actor: Actor, bank: str, kind: str, text: str) -> Call:
    turn = common_pb2.Turn(role=common_pb2.ROLE_USER, session_id="fleet-attempt", text=text)
    return Call(
        kind,
        actor,
        bank,
        ("retain", {"bank": bank, "text": text, "session_id": "fleet-attempt"}),
        ("Retain", memory_pb2.RetainRequest(bank_id=bank, turns=[turn])),
    )


def _forget(rng: random.Random, world: World, actor: Actor, bank: str, kind: str) -> Call:
    target = _an_id(rng, world, bank)
    if rng.random() < 0.5:
        hard = rng.random() < 0.3
        return Call(
            kind,
            actor,
            bank,
            ("forget", {"bank": bank, "turn_ids": [target], "hard": hard}),
            ("Forget", memory_pb2.ForgetRequest(bank_id=bank, turn_ids=[target], hard=hard)),
        )
    return Call(
        kind,
        actor,
        bank,
        ("purge", {"bank": bank, "ids": [target]}),
        ("Purge", memory_pb2.PurgeRequest(bank_id=bank, ids=[target])),
    )


def _share(world: World, actor: Actor, source: str, target: str, ids: list[str], kind: str) -> Call:
    grpc_call = None
    if hasattr(memory_pb2, "ShareRequest") and world.grpc.has("Share"):
        grpc_call = ("Share", memory_pb2.ShareRequest(bank_id=source, target_bank_id=target, ids=ids))
    return Call(
        kind,
        actor,
        f"{source}->{target}",
        ("share", {"bank": source, "to_bank": target, "ids": ids}),
        grpc_call,
    )


def _multi(actor: Actor, banks: list[str], kind: str) -> Call:
    return Call(
        kind,
        actor,
        ",".join(banks),
        ("recall", {"banks": banks, "query": PROBE_QUERY, "top_k": 5}),
        ("Recall", memory_pb2.RecallRequest(bank_ids=banks, query=PROBE_QUERY, top_k=5)),
    )


def read_foreign(rng: random.Random, world: World, actor: Actor) -> Call:
    return _read(rng, world, actor, _foreign_bank(rng, world, actor), "read_foreign")


def write_foreign(rng: random.Random, world: World, actor: Actor) -> Call:
    bank = _foreign_bank(rng, world, actor)
    return _write(actor, bank, "write_foreign", f"{actor.name} plants a note in {bank}.")


def write_read_only(rng: random.Random, world: World, actor: Actor) -> Call:
    return _write(actor, ORG_BANK, "write_read_only", f"{actor.name} edits the handbook.")


def update_foreign(rng: random.Random, world: World, actor: Actor) -> Call:
    bank = _other_agent(rng, world, actor).bank
    turn_id = _an_id(rng, world, bank)
    text = f"{actor.name} rewrote this."
    return Call(
        "update_foreign",
        actor,
        bank,
        ("update", {"bank": bank, "turn_id": turn_id, "text": text}),
        ("Update", memory_pb2.UpdateRequest(bank_id=bank, turn_id=turn_id, text=text)),
    )


def forget_team(rng: random.Random, world: World, actor: Actor) -> Call:
    """Forgetting in a bank it may read and write, but not forget in (its team's), or only read (the
    handbook)."""
    bank = actor.team if rng.random() < 0.7 else ORG_BANK
    return _forget(rng, world, actor, bank, "forget_without_grant")


def forget_foreign(rng: random.Random, world: World, actor: Actor) -> Call:
    return _forget(rng, world, actor, _foreign_bank(rng, world, actor), "forget_foreign")


def share_from_foreign(rng: random.Random, world: World, actor: Actor) -> Call:
    source = _other_agent(rng, world, actor).bank
    return _share(world, actor, source, actor.team, [_an_id(rng, world, source)], "share_from_foreign")


def share_to_foreign(rng: random.Random, world: World, actor: Actor) -> Call:
    pick = rng.random()
    if pick < 0.5:
        target = _other_team(rng, world, actor)
    elif pick < 0.8:
        target = _other_agent(rng, world, actor).bank
    else:
        target = ORG_BANK
    return _share(world, actor, actor.bank, target, [_an_id(rng, world, actor.bank)], "share_to_foreign")


def multi_mixed(rng: random.Random, world: World, actor: Actor) -> Call:
    """Granted banks with one denied among them, in a random order."""
    granted = rng.sample([actor.bank, actor.team, ORG_BANK], rng.randint(1, 3))
    banks = [*granted, _foreign_bank(rng, world, actor)]
    rng.shuffle(banks)
    return _multi(actor, banks, "multi_mixed")


def mint(rng: random.Random, world: World, actor: Actor) -> Call:
    """Minting without ``admin``: a child of its own bank, a token for another bank, or an operator one."""
    name = f"mint-{actor.name}-{rng.randrange(10**9)}"
    pick = rng.random()
    bank = actor.bank if pick < 0.4 else _foreign_bank(rng, world, actor)
    admin = pick > 0.85
    arguments: dict[str, Any] = {"name": name, "banks": [f"{bank}:read"], "admin": admin}
    grant = episodic_pb2.TokenGrant(bank_id=bank, operations=[episodic_pb2.OPERATION_READ])
    request = memory_pb2.CreateTokenRequest(name=name, grants=[grant], admin=admin)
    return Call("mint", actor, bank, ("token_create", arguments), ("CreateToken", request))


def revoke_other(rng: random.Random, world: World, actor: Actor) -> Call:
    victim = _other_agent(rng, world, actor).name
    return Call(
        "revoke_other",
        actor,
        victim,
        ("token_revoke", {"name": victim}),
        ("RevokeToken", memory_pb2.RevokeTokenRequest(name=victim)),
    )


def dead_token(rng: random.Random, world: World, actor: Actor) -> Call:
    """Anything a dead token once could do, on the banks it once granted."""
    ghost = rng.choice(world.dead)
    pick = rng.random()
    kind = f"{ghost.dead}_token"
    if pick < 0.3:
        return _read(rng, world, ghost, rng.choice([ghost.bank, ghost.team, ORG_BANK]), kind)
    if pick < 0.5:
        return _write(
            ghost, rng.choice([ghost.bank, ghost.team]), kind, f"{ghost.name} writes after its end."
        )
    if pick < 0.7:
        return _multi(ghost, [ghost.bank, ghost.team, ORG_BANK], kind)
    if pick < 0.85:
        return _share(world, ghost, ghost.bank, ghost.team, [_an_id(rng, world, ghost.bank)], kind)
    return _forget(rng, world, ghost, ghost.bank, kind)


KINDS: tuple[tuple[Callable[[random.Random, World, Actor], Call], float], ...] = (
    (read_foreign, 1.5),
    (write_foreign, 1.0),
    (write_read_only, 0.5),
    (update_foreign, 0.7),
    (forget_team, 1.0),
    (forget_foreign, 1.0),
    (share_from_foreign, 1.0),
    (share_to_foreign, 1.0),
    (multi_mixed, 1.5),
    (mint, 0.5),
    (revoke_other, 0.3),
    (dead_token, 2.0),
)
"""Each kind of attempt and how often it is drawn."""


def draw(rng: random.Random, world: World) -> tuple[Call, str]:
    """One attempt and the port it goes to."""
    maker = rng.choices([k for k, _ in KINDS], weights=[w for _, w in KINDS])[0]
    call = maker(rng, world, rng.choice(world.agents))
    port = GRPC if call.grpc is not None and rng.random() < 0.5 else MCP
    return call, port


def leaked(fleet: Fleet, actor: Actor, outcome: Outcome) -> bool:
    """Served at all, or any answer showing the private note of a bank the actor may not read."""
    if outcome.ok:
        return True
    return any(
        secret in outcome.text for bank, secret in fleet.canaries.items() if bank not in actor.readable
    )


async def attempt(world: World, call: Call, port: str) -> Outcome:
    if port == GRPC and call.grpc is not None:
        method, request = call.grpc
        return await world.grpc.call(method, request, call.actor.token)
    tool, arguments = call.mcp
    return await call.actor.session.call(tool, arguments)


async def run_attempts(world: World, count: int, rng: random.Random, say: Any = print) -> Isolation:
    """``count`` attempts, one at a time, drawn from ``rng``."""
    tally = Isolation()
    for done in range(1, count + 1):
        call, port = draw(rng, world)
        outcome = await attempt(world, call, port)
        tally.add(call, port, outcome, leaked(world.fleet, call.actor, outcome))
        if done % 250 == 0 or done == count:
            say(f"  isolation: {done}/{count} attempts, {tally.refused} refused, {tally.leaks} leaks")
    return tally
