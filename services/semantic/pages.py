"""Entity pages: per bank and entity, what is known about it, kept up to date on every Upsert.

An entity's page lives on its point in the graph collection (the entity graph, extended): name, kind,
aliases and relations as before, plus how many turns mention it (and how many it spoke), when it was
first and last mentioned, and the entities mentioned with it (with counts). The turns themselves carry
the keys of the entities they name (``entity_keys``) and the key of their speaker (``speaker_key``),
both indexed, so a page's mentions are one filtered read and stay right when turns are deleted. Facts
about the entity, with their supersede chains, are read from the facts themselves (by subject).

On write, :meth:`PageKeeper.annotate` finds the mentions of each turn (:mod:`.mentions`) with the names the
bank already knows (cached per bank, refreshed from the graph after :data:`GAZETTEER_TTL` seconds), and
returns each turn's page updates. The store keeps them per turn (a contribution, :mod:`.lineage_store`) and
builds each page from the contributions that name it: a re-delivered turn replaces its own, so it counts
once, and a deleted turn is subtracted exactly (its mentions, co-mentions and first or last sighting).
On recall, :meth:`PageKeeper.matches` says which of the bank's entities a query names, with the
turns that name them: the edge's entity channel.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import cast

from hindsight.runtime.errors import InvalidArgument, NotFound
from hindsight.runtime.offload import off_loop
from hindsight.runtime.paging import page_offset, page_token
from hindsight.runtime.text import key_of
from hindsight.semantic.extract import Extraction
from hindsight.semantic.mentions import (
    ADDRESSED,
    PERSON,
    Gazetteer,
    Mention,
    mentions_of,
    speaker_entity,
)
from hindsight.semantic.records import DISTILLED, Entity, RecordKind, SemanticRecord
from hindsight.semantic.store import VectorStore

log = logging.getLogger(__name__)

GAZETTEER_TTL = 60.0
"""Seconds a bank's cached names are used before they are read again (other replicas write too)."""
GAZETTEER_ENTITIES = 5_000
"""Entities read into a bank's cache."""
GAZETTEER_BANKS = 256
"""Banks whose names are cached at once (least recently used first out)."""
TURN_COUNT_TTL = 30.0
"""Seconds a bank's turn count (the base of an entity's share) is cached."""
RECENT_TTL = 30.0
"""Seconds recall keeps what it read of an entity (its page, the turns naming it) without a write here."""
RECENT_ENTRIES = 4_096
MAX_MENTION_SCAN = 20_000
"""Mentions a page read scans (newest first among them)."""
MAX_PAGE_TOKEN = 10_000_000
"""The largest offset a page token may name."""
DETECT_OFF_LOOP_CHARS = 1_500
"""Characters of turns from which mention detection (~0.5 us per character) runs on a worker thread."""


@dataclass(frozen=True)
class EntityMatch:
    """An entity a query names: its page, the share of the bank's turns that mention it, and the turns
    that name it (besides those it spoke, which a caller tells by their speaker)."""

    entity: Entity
    share: float
    named_turn_ids: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        """Its name and aliases in compared form."""
        return tuple(dict.fromkeys(key_of(n) for n in (self.entity.name, *self.entity.aliases)))


@dataclass(frozen=True)
class EntityPage:
    """What is known about one entity: its graph entry and counts, its facts (current and superseded,
    grouped by attribute, oldest first), and one page of the turns that mention it, newest first."""

    entity: Entity
    facts: tuple[SemanticRecord, ...] = ()
    mentions: tuple[SemanticRecord, ...] = ()
    next_page_token: str = ""


def _relative_aliases(mention: Mention) -> tuple[str, ...]:
    """``Melanie kids`` for ``Melanie's kids``: what a query that drops the possessive says."""
    if mention.how != "relative" or "'s " not in mention.name:
        return ()
    return (mention.name.replace("'s ", " ", 1),)


def page_updates(turn: SemanticRecord, mentions: Sequence[Mention]) -> list[Entity]:
    """One turn's contribution to the pages of the entities it mentions: a mention each, first and last
    seen at the turn's time, and the other entities of the turn as related."""
    moment = turn.meta.time
    names = [mention.name for mention in mentions if mention.how != ADDRESSED]
    learned = [Entity(m.name, m.type, aliases=(m.said,)) for m in mentions if m.how == ADDRESSED and m.said]
    return learned + [
        Entity(
            name=mention.name,
            type=mention.type,
            aliases=tuple(
                dict.fromkeys((*((mention.said,) if mention.said else ()), *_relative_aliases(mention)))
            ),
            mention_count=1,
            spoken_count=1 if mention.how == "spoke" else 0,
            first_seen=moment,
            last_seen=moment,
            related=tuple((other, 1) for other in names if key_of(other) != mention.key),
        )
        for mention in mentions
        if mention.how != ADDRESSED
    ]


def fact_chains(facts: Sequence[SemanticRecord]) -> tuple[SemanticRecord, ...]:
    """Facts grouped by attribute (attributes in name order), each group oldest first, so every chain
    reads from its first value to the current one."""
    oldest = datetime.min.replace(tzinfo=UTC)
    unique = {fact.id: fact for fact in facts}.values()
    return tuple(
        sorted(unique, key=lambda f: (f.attribute, f.valid_from or f.meta.time or oldest, f.current, f.id))
    )


@dataclass
class _Known:
    loaded: float
    names: Gazetteer


class _Recent:
    """What recall read about a bank's entities, kept :data:`RECENT_TTL` seconds (other replicas write too)
    and dropped for a bank as soon as this layer writes to it."""

    def __init__(self, monotonic: Callable[[], float]) -> None:
        self._monotonic = monotonic
        self._held: OrderedDict[tuple[str, ...], tuple[float, object]] = OrderedDict()

    def get(self, key: tuple[str, ...]) -> object | None:
        held = self._held.get(key)
        if held is None or self._monotonic() - held[0] >= RECENT_TTL:
            return None
        return held[1]

    def put(self, key: tuple[str, ...], value: object) -> None:
        self._held[key] = (self._monotonic(), value)
        self._held.move_to_end(key)
        while len(self._held) > RECENT_ENTRIES:
            self._held.popitem(last=False)

    def forget(self, bank_id: str) -> None:
        for key in [key for key in self._held if key[0] == bank_id]:
            del self._held[key]


@dataclass
class PageKeeper:
    """Writes and reads entity pages through the store (see the module docstring)."""

    store: VectorStore
    monotonic: Callable[[], float] = time.monotonic
    _gazetteers: OrderedDict[str, _Known] = field(default_factory=OrderedDict, init=False, repr=False)
    _turn_counts: dict[str, tuple[float, int]] = field(default_factory=dict, init=False, repr=False)
    _recent: _Recent = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._recent = _Recent(self.monotonic)

    # ----- write --------------------------------------------------------------------------------------
    async def _names(self, bank_id: str) -> Gazetteer:
        """The bank's known names: cached, read from the graph when missing or older than the TTL."""
        held = self._gazetteers.get(bank_id)
        now = self.monotonic()
        if held is not None and now - held.loaded < GAZETTEER_TTL:
            self._gazetteers.move_to_end(bank_id)
            return held.names
        listed = await self.store.list_entities(bank_id, GAZETTEER_ENTITIES)
        names = Gazetteer(complete=len(listed) < GAZETTEER_ENTITIES)
        for entity in listed:
            names.add(entity.name, entity.type)
            for alias in entity.aliases:
                names.add(alias, entity.type, entity.name)
        self._gazetteers[bank_id] = _Known(now, names)
        self._gazetteers.move_to_end(bank_id)
        while len(self._gazetteers) > GAZETTEER_BANKS:
            self._gazetteers.popitem(last=False)
        return names

    async def annotate(
        self, bank_id: str, records: Sequence[SemanticRecord], extraction: Extraction
    ) -> tuple[list[SemanticRecord], dict[str, list[Entity]]]:
        """``records`` with the keys of the entities each turn names, and each turn's page updates."""
        turns = [record for record in records if record.kind is RecordKind.TURN]
        if not turns:
            return list(records), {}
        self._recent.forget(bank_id)
        self._turn_counts.pop(bank_id, None)
        names = await self._names(bank_id)
        for entity in extraction.entities:
            names.add(entity.name, entity.type)
            for alias in entity.aliases:
                names.add(alias, entity.type, entity.name)
        for turn in turns:
            if owner := speaker_entity(turn.speaker):
                names.add(owner, PERSON)

        def detect() -> tuple[dict[str, SemanticRecord], dict[str, list[Entity]]]:
            annotated: dict[str, SemanticRecord] = {}
            updates: dict[str, list[Entity]] = {}
            for turn in turns:
                found = mentions_of(turn.text, turn.speaker, names)
                for mention in found:  # names learned here are known to the turns that follow
                    if mention.how == "named":
                        names.add(mention.name, mention.type)
                    if mention.said:
                        names.add(mention.said, mention.type, mention.name)
                named = tuple(m.key for m in found if m.how not in {"spoke", ADDRESSED})
                annotated[turn.id] = replace(turn, entities=named)
                updates[turn.id] = page_updates(turn, found)
            return annotated, updates

        chars = sum(len(turn.text) for turn in turns)
        annotated, updates = await off_loop(detect, size=chars, threshold=DETECT_OFF_LOOP_CHARS)
        return [annotated.get(record.id, record) for record in records], updates

    def forget(self, bank_id: str) -> None:
        """Drop what is cached about a bank (its records were deleted)."""
        self._gazetteers.pop(bank_id, None)
        self._turn_counts.pop(bank_id, None)
        self._recent.forget(bank_id)

    # ----- read ---------------------------------------------------------------------------------------
    async def _turn_count(self, bank_id: str) -> int:
        held = self._turn_counts.get(bank_id)
        now = self.monotonic()
        if held is not None and now - held[0] < TURN_COUNT_TTL:
            return held[1]
        count = await self.store.count_turns(bank_id)
        if len(self._turn_counts) >= GAZETTEER_BANKS:
            self._turn_counts.clear()
        self._turn_counts[bank_id] = (now, count)
        return count

    async def matches(
        self, bank_id: str, keys: Sequence[str], max_share: float, named_limit: int
    ) -> list[EntityMatch]:
        """The bank's entities among ``keys`` (a query's candidate names) that mention no more than
        ``max_share`` of its turns (one that most turns mention singles nothing out), most mentioned
        first, each with up to ``named_limit`` turns that name it."""
        known = await self._names(bank_id)
        if known.complete:  # the names the bank knows say which keys can match, without a store call
            keys = [key for key in keys if known.get(key) is not None]
        if not keys:
            return []
        entities = await self._entities(bank_id, keys)
        if not entities:
            return []
        total = max(1, await self._turn_count(bank_id))
        chosen = sorted(
            (e for e in entities if e.mention_count and e.mention_count / total <= max_share),
            key=lambda e: (-e.mention_count, key_of(e.name)),
        )

        async def named(entity: Entity) -> tuple[str, ...]:
            cached = self._recent.get((bank_id, "named", key_of(entity.name), str(named_limit)))
            if cached is not None:
                return cast(tuple[str, ...], cached)
            keys = [key_of(n) for n in (entity.name, *entity.aliases)]
            records = await self.store.mentioning(bank_id, keys, spoken=False, limit=named_limit)
            ids = tuple(dict.fromkeys(r.id for r in records if r.kind is RecordKind.TURN))
            self._recent.put((bank_id, "named", key_of(entity.name), str(named_limit)), ids)
            return ids

        named_ids = await asyncio.gather(*(named(e) for e in chosen))
        return [
            EntityMatch(entity, round(entity.mention_count / total, 4), ids)
            for entity, ids in zip(chosen, named_ids, strict=True)
        ]

    async def _entities(self, bank_id: str, keys: Sequence[str]) -> list[Entity]:
        """The entities among ``keys``, recently read ones from memory."""
        found: dict[str, Entity] = {}
        missing = []
        for key in dict.fromkeys(keys):
            cached = self._recent.get((bank_id, "entity", key))
            if cached is None:
                missing.append(key)
            elif cached:
                entity = cast(Entity, cached)
                found[key_of(entity.name)] = entity
        if missing:
            read = await self.store.entities_named(bank_id, missing)
            by_key = {key_of(n): e for e in read for n in (e.name, *e.aliases)}
            for key in missing:
                self._recent.put((bank_id, "entity", key), by_key.get(key, ()))
            found.update((key_of(e.name), e) for e in read)
        return list(found.values())

    async def entity(self, bank_id: str, name: str) -> Entity:
        """The entity called ``name`` (or with that alias); NotFound otherwise."""
        key = key_of(name)
        if not key:
            raise InvalidArgument("entity", "is required")
        found = await self.store.entities_named(bank_id, [key])
        if not found:
            raise NotFound(f"no entity {name!r} in bank {bank_id!r}")
        return next((e for e in found if key_of(e.name) == key), found[0])

    async def page(self, bank_id: str, name: str, mention_limit: int, token: str = "") -> EntityPage:
        """The page of the entity ``name``: its facts with their history, and ``mention_limit`` of the
        turns that mention it (spoken or named), newest first, from the offset ``token`` names."""
        offset = page_offset(token, maximum=MAX_PAGE_TOKEN)
        entity = await self.entity(bank_id, name)
        keys = list(dict.fromkeys(key_of(n) for n in (entity.name, *entity.aliases)))
        facts, mentions = await asyncio.gather(
            self.store.facts_of(bank_id, keys),
            self.store.mentioning(bank_id, keys, spoken=True, limit=MAX_MENTION_SCAN),
        )
        oldest = datetime.min.replace(tzinfo=UTC)
        turns = sorted(
            {r.id: r for r in mentions if r.kind is RecordKind.TURN}.values(),
            key=lambda r: (r.meta.time or oldest, r.id),
            reverse=True,
        )
        shown = turns[offset : offset + mention_limit]
        following = offset + len(shown) if offset + len(shown) < len(turns) else 0
        return EntityPage(
            entity=entity,
            facts=fact_chains([f for f in facts if f.kind in DISTILLED]),
            mentions=tuple(shown),
            next_page_token=page_token(following),
        )

    async def list(
        self, bank_id: str, limit: int, entity_type: str = "", prefix: str = "", token: str = ""
    ) -> tuple[list[Entity], str]:
        """One page of the bank's entities by name (of one type, or starting with ``prefix``), and the
        token of the next page."""
        offset = page_offset(token, maximum=MAX_PAGE_TOKEN)
        found = await self.store.list_entities(bank_id, limit + 1, entity_type, prefix, offset)
        following = offset + limit if len(found) > limit else 0
        return found[:limit], page_token(following)
