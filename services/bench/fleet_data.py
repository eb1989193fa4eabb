"""The fleet of ``hindsight bench fleet``: agents, teams, their banks and grants, and the facts they learn.

Everything is drawn from the seed: which team each agent is in, the facts each agent retains (one made-up
service name per fact, one of a dozen attributes, a random value), which of them it shares, and one
private note per bank (a canary: if it ever shows up in an answer to a caller that may not read its bank,
that answer leaked). The text is generated here from the templates of ``data/fleet_data.json``, never
taken from a dataset.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from hindsight.bench.set_data import load

ORG_BANK = "fleet-org"
"""A bank every agent may read (the organisation's handbook): the third bank of a multi-bank recall."""

_TABLES = load("fleet_data")

ATTRIBUTES: tuple[tuple[str, str, tuple[str, ...]], ...] = tuple(
    (attribute["statement"], attribute["question"], attribute["values"])
    for attribute in _TABLES["attributes"]
)
"""(statement, question, values): what an agent learns about a service and how a teammate asks for it
(``data/fleet_data.json``)."""

_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "kr", "tr")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou")
_CODAS = ("", "n", "r", "l", "x", "s", "th")

ORG_FACTS: tuple[str, ...] = _TABLES["org_facts"]
"""The organisation's handbook, in the bank every agent may read."""


@dataclass(frozen=True)
class Fact:
    """One thing an agent learned: the statement it retains and the question a teammate asks for it."""

    statement: str
    question: str
    service: str


@dataclass
class Agent:
    """One agent: its token's name (also its own bank's id), its team, and what it learns."""

    name: str
    team: str
    facts: list[Fact] = field(default_factory=list)
    shared: list[int] = field(default_factory=list)
    """Indexes into ``facts`` of the facts it shares with its team."""

    @property
    def bank(self) -> str:
        return self.name

    def grants(self) -> list[str]:
        """Its token's grants: its own bank in full, its team's to read and write, the handbook to read."""
        return [f"{self.bank}:read+write+forget", f"{self.team}:read+write", f"{ORG_BANK}:read"]

    def readable(self) -> frozenset[str]:
        return frozenset({self.bank, self.team, ORG_BANK})


@dataclass(frozen=True)
class Fleet:
    """The agents, the team banks, and the canary of every bank."""

    agents: tuple[Agent, ...]
    teams: tuple[str, ...]
    canaries: dict[str, str]
    """Bank id -> the secret in a private note only that bank holds (see :func:`canary_note`)."""

    def team_of(self, agent: Agent) -> list[Agent]:
        return [a for a in self.agents if a.team == agent.team]

    def teammates(self, agent: Agent) -> list[Agent]:
        return [a for a in self.team_of(agent) if a.name != agent.name]

    @property
    def banks(self) -> tuple[str, ...]:
        return (*(a.bank for a in self.agents), *self.teams, ORG_BANK)


def service_names(rng: random.Random, count: int) -> list[str]:
    """``count`` distinct made-up service names (two or three syllables, capitalised)."""
    names: set[str] = set()
    ordered: list[str] = []
    while len(ordered) < count:
        syllables = rng.choice((2, 2, 3))
        name = "".join(
            rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables)
        )
        name = name.capitalize()
        if name not in names:
            names.add(name)
            ordered.append(name)
    return ordered


def plan_fleet(agents: int, teams: int, facts: int, shares: int, seed: int) -> Fleet:
    """``agents`` agents dealt round-robin into ``teams`` teams, each with ``facts`` facts of which it
    shares ``shares``; the same seed gives the same fleet."""
    if agents < 2 * teams:
        raise ValueError("every team needs at least two agents (one shares, a teammate recalls)")
    if not 1 <= shares <= facts:
        raise ValueError("shares must be between 1 and facts")
    rng = random.Random(seed)
    team_names = tuple(f"team-{t + 1}" for t in range(teams))
    services = service_names(rng, agents * facts + agents + teams)
    fleet_agents: list[Agent] = []
    for index in range(agents):
        agent = Agent(name=f"agent-{index + 1:02d}", team=team_names[index % teams])
        for service in services[index * facts : (index + 1) * facts]:
            statement, question, values = rng.choice(ATTRIBUTES)
            value = rng.choice(values)
            agent.facts.append(
                Fact(statement.format(s=service, v=value), question.format(s=service), service)
            )
        agent.shared = sorted(rng.sample(range(facts), shares))
        fleet_agents.append(agent)
    banks = (*(a.bank for a in fleet_agents), *team_names)
    rooms = services[agents * facts :]  # never a fact's service name
    canaries = {bank: f"{room}-{rng.randrange(100, 1000)}" for bank, room in zip(banks, rooms, strict=True)}
    return Fleet(agents=tuple(fleet_agents), teams=team_names, canaries=canaries)


def canary_note(bank: str, secret: str) -> str:
    """The private note a bank holds: its secret must never reach a caller that may not read the bank."""
    return f"Private note kept in {bank}: the retrospective is booked in meeting room {secret}."
