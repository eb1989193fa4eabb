"""Recall's entity channel, and the entity pages the edge serves (read from the semantic layer).

A question about someone ("What did Caroline research?") is answered by what that person said or what
was said about them: in the dev conversations, 97% of the evidence of questions that name one speaker
is that speaker's own turns. The semantic layer keeps a page per entity and tells, for a query, which
of the bank's entities it names (by name or alias, leaving out those most turns mention) and which
turns name them (``match_entities`` on recall's one semantic search). The channel is then the keyword
list's hits that such an entity spoke or is named in, in their order: fused as one more list, weighed
by ``HINDSIGHT_ENTITY_WEIGHT``, it lifts the hits about the entity over equally worded hits about
someone else (docs/retrieval.md has what it moved).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.mcp_edge.domain import Candidate
from hindsight.runtime.text import key_of

ENTITY_CHANNEL = "entity"
"""The channel name of the entity list in fusion."""


@dataclass(frozen=True)
class NamedEntity:
    """An entity of the bank that a query names: every name it goes by, and the turns that name it."""

    name: str
    keys: frozenset[str]
    share: float
    named_turn_ids: frozenset[str] = frozenset()


def named_entities(matches: Iterable[semantic_pb2.EntityMatch]) -> tuple[NamedEntity, ...]:
    """The entity matches of a semantic answer (``Search`` with ``match_entities``, or ``MatchEntities``)."""
    return tuple(
        NamedEntity(
            name=match.entity.name,
            keys=frozenset(key_of(n) for n in (match.entity.name, *match.entity.aliases) if n.strip()),
            share=match.share,
            named_turn_ids=frozenset(match.named_turn_ids),
        )
        for match in matches
    )


_sink: ContextVar[list[NamedEntity] | None] = ContextVar("hindsight_named_entities", default=None)
"""Where the semantic answer of the recall being served puts the entities its query names."""


def collect_named() -> list[NamedEntity]:
    """A list that the semantic layer's answer to the current recall fills (the layer tasks created after
    this call share it), so the entities come back with the search instead of in a call of their own."""
    sink: list[NamedEntity] = []
    _sink.set(sink)
    return sink


def note_named(reply: semantic_pb2.SearchResponse) -> None:
    """Keep the entities a semantic search answered with, for the recall that asked."""
    sink = _sink.get()
    if sink is not None:
        sink.extend(named_entities(reply.entities))


def entity_channel(candidates: Sequence[Candidate], named: Sequence[NamedEntity]) -> list[Candidate]:
    """The candidates of one list (best first) that an entity of ``named`` spoke or is named in, in their
    order, marked as the entity channel."""
    if not named:
        return []
    keys = frozenset().union(*(entity.keys for entity in named))
    ids = frozenset().union(*(entity.named_turn_ids for entity in named))
    return [
        dataclasses.replace(candidate, channel=ENTITY_CHANNEL)
        for candidate in candidates
        if candidate.id in ids or (candidate.speaker and key_of(candidate.speaker) in keys)
    ]
