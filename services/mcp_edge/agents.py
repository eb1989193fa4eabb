"""Who wrote a record: the agent the edge stamps on every retained turn, updated turn and written episode.

The agent is the name of the credential the write is served for; a write never trusts a request field for
it, except from the mesh credential or an operator, who write on behalf of agents (an import, a service
that relays an agent's memory) and may name one. Any other credential naming another agent is refused,
never silently rewritten, so a caller learns that its claim was not taken.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from hindsight.runtime.auth import Caller
from hindsight.runtime.errors import InvalidArgument, PermissionDenied
from hindsight.runtime.records import MAX_AGENT_CHARS, Turn


def writing_agent(caller: Caller, claimed: str = "", field: str = "agent") -> str:
    """The agent a write by ``caller`` is recorded as: its own name, or ``claimed`` when the caller is the
    mesh or an operator; PERMISSION_DENIED naming ``field`` when another credential claims another agent."""
    claimed = check_agent(claimed, field)
    if not claimed or claimed == caller.name:
        return caller.name
    if caller.mesh or caller.admin:
        return claimed
    raise PermissionDenied(
        f"{field}: credential {caller.name!r} writes as agent {caller.name!r} and may not claim {claimed!r}"
    )


def check_agent(agent: str, field: str = "agent") -> str:
    """An agent to filter by (a name as records carry it; empty: every agent), outer spaces dropped."""
    agent = agent.strip()
    if len(agent) > MAX_AGENT_CHARS or not agent.isprintable():
        raise InvalidArgument(field, f"must be at most {MAX_AGENT_CHARS} printable characters")
    return agent


def stamped(caller: Caller, turns: Sequence[Turn], field: str = "turns[{}].meta.agent") -> list[Turn]:
    """``turns`` with their agent set by :func:`writing_agent` (each turn's own claim, named by index)."""
    return [
        dataclasses.replace(
            turn,
            meta=dataclasses.replace(
                turn.meta, agent=writing_agent(caller, turn.meta.agent, field.format(index))
            ),
        )
        for index, turn in enumerate(turns)
    ]
