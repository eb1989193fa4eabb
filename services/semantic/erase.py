"""A Delete, with lineage: records by their own id, and turns subtracted from what stands on them.

``ids`` name records that go by their own id (a turn no longer live, an episode); the facts of an update's
archived old version stay as history, and only review items drawn from it go (nothing is left to
decide). ``turn_ids`` name turns that are gone: their turn records go, every derived record (fact,
episode record, review item, entity contribution, pending LLM pass) loses them from the turns it stands
on and goes with the last of them, and each leaves a tombstone that drops later writes of it
(recoverable for an archive: a restore's Upsert of the turn lifts it). A turn's own provenance never
makes it die with another turn: the new version of an updated turn outlives the old one.

What a deleted record had replaced becomes current again only when it stands on a live turn
(:func:`reelect`): the value an update replaced stays replaced when the new version is forgotten.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from hindsight.semantic.lineage_store import (
    CONTRIBUTION,
    LLM_PASS,
    SemanticStore,
    contribution_from_payload,
    contribution_payload,
    graph_key,
    pass_from_payload,
    without,
)
from hindsight.semantic.records import SemanticRecord, lineage_of

log = logging.getLogger(__name__)

MAX_REVIEWS_READ = 100_000
"""Review items read to find those whose records a delete removed."""
MAX_CHAIN_STEPS = 64
"""Links a re-election follows back past values that stand on no live turn (:func:`reelect`)."""


@dataclass
class Erased:
    """What a delete did, and what the engine still has to settle (under the same lock)."""

    gone: list[str] = field(default_factory=list)
    """Ids of the records deleted."""
    links: dict[str, str] = field(default_factory=dict)
    """Deleted id -> the record that superseded it (to mend the chains)."""
    touched: set[str] = field(default_factory=set)
    """Entity keys whose pages are rebuilt."""
    orphans: list[SemanticRecord] = field(default_factory=list)
    """Review candidates whose rival is gone: settled anew, as if they had just come."""


async def erase(
    store: SemanticStore,
    bank_id: str,
    ids: Sequence[str],
    turn_ids: Sequence[str],
    session_id: str,
    archived: bool,
) -> Erased:
    """Delete (see the module docstring); the tombstones are written last, when nothing failed before."""
    dead = list(dict.fromkeys(turn_ids))
    if session_id:
        dead = list(dict.fromkeys([*dead, *await store.session_turns(bank_id, session_id)]))
    done = Erased()
    named = await store.get(bank_id, [*ids, *dead])
    done.links = {i: held.record.superseded_by for i, held in named.items()}
    done.gone = await store.delete(bank_id, list(dict.fromkeys([*ids, *dead])), [], session_id)
    gone = set(done.gone)
    dying: list[str] = []
    dead_set = set(dead)
    for record in await store.standing_on(bank_id, dead):
        if record.id in gone:
            continue
        kept = without(record, dead_set)
        if kept is None:
            dying.append(record.id)
            done.links[record.id] = record.superseded_by
        else:
            await store.set_sources(bank_id, kept)
    if dying:
        done.gone.extend(await store.delete(bank_id, dying, [], ""))
        gone.update(done.gone)
    await _subtract_graph(store, bank_id, dead_set, gone, done)
    if gone or dead_set:
        await _settle_reviews(store, bank_id, dead_set, gone, done)
    await store.bury(bank_id, dead, recoverable=archived)
    log.info(
        "erased",
        extra={
            "records": len(done.gone),
            "turns": len(dead),
            "archived": archived,
            "pages": len(done.touched),
        },
    )
    return done


async def _subtract_graph(
    store: SemanticStore, bank_id: str, dead: set[str], gone: set[str], done: Erased
) -> None:
    """Contributions and pending passes standing on the dead turns lose them (and go with the last)."""
    for payload in await store.graph_on(bank_id, sorted(dead)):
        kind = payload.get("type")
        if kind == CONTRIBUTION:
            item = contribution_from_payload(payload)
            done.touched.update(payload.get("keys") or ())
            lineage = tuple(i for i in item.lineage if i not in dead)
            key = graph_key(CONTRIBUTION, item.origin)
            if lineage:
                await store.put_graph(
                    bank_id, key, contribution_payload(bank_id, replace(item, lineage=lineage))
                )
            else:
                await store.drop_graph(bank_id, [key])
        elif kind == LLM_PASS:
            pending = pass_from_payload(payload)
            turns = tuple(turn for turn in pending.turns if turn.id not in dead)
            if turns:
                await store.put_pass(bank_id, replace(pending, turns=turns))
            else:
                await store.drop_pass(bank_id, pending.id)


async def _settle_reviews(
    store: SemanticStore, bank_id: str, dead: set[str], gone: set[str], done: Erased
) -> None:
    """A review whose candidate stands on no live turn any more dies (its turns are gone, or it came from
    an update's old version: what was corrected is no question to decide); one whose current record is
    gone dies too, and its candidate is settled anew; the others lose the dead turns from their copies."""
    items = await store.reviews(bank_id, MAX_REVIEWS_READ)
    standing = await live_turns(store, bank_id, [t for item in items for t in lineage_of(item.candidate)])
    for item in items:
        candidate = without(item.candidate, dead)
        current = without(item.current, dead)
        turns = lineage_of(item.candidate)
        if candidate is None or item.candidate.id in gone or (turns and standing.isdisjoint(turns)):
            await store.drop_review(bank_id, item.id)
        elif current is None or item.current.id in gone:
            await store.drop_review(bank_id, item.id)
            done.orphans.append(candidate)
        elif candidate != item.candidate or current != item.current:
            await store.add_review(bank_id, replace(item, candidate=candidate, current=current))


async def live_turns(store: SemanticStore, bank_id: str, turn_ids: Sequence[str]) -> set[str]:
    """The turns among ``turn_ids`` the bank holds as turn records with no tombstone. Not live: an archived
    or purged turn (tombstoned), and an update's old version (its record deleted by its id alone)."""
    wanted = list(dict.fromkeys(turn_ids))
    held = await store.known_ids(bank_id, wanted) if wanted else set()
    buried = await store.buried(bank_id, sorted(held)) if held else {}
    return held - set(buried)


async def reelect(store: SemanticStore, bank_id: str, gone: Sequence[str]) -> int:
    """After a delete: the records the deleted ones (``gone``, with no successor left) had replaced become
    current again when they stand on a live turn (:func:`live_turns`), or on none (such a record dies only
    by its own id); returns how many.

    One standing only on turns that are not live stays history, still linked to the deleted record (a
    restore writes that record again under the same id, which heals the link and keeps it replaced), and
    what it had replaced in turn is considered in its place: forgetting an update's new version leaves the
    value the update replaced as history, and brings back the value before it if a live turn states it.
    A restored old version is written again as a live turn: its value is settled anew then (the engine's
    write path), since what replaced it is gone.
    """
    chosen: list[str] = []
    seen = set(gone)
    frontier = list(seen)
    for _ in range(MAX_CHAIN_STEPS):
        if not frontier:
            break
        waiting = [record for record in await store.successors_of(bank_id, frontier) if record.id not in seen]
        seen.update(record.id for record in waiting)
        live = await live_turns(store, bank_id, [turn for record in waiting for turn in lineage_of(record)])
        frontier = []
        for record in waiting:
            turns = lineage_of(record)
            (chosen if not turns or live.intersection(turns) else frontier).append(record.id)
    if frontier:
        log.warning("re-election stopped at the chain bound", extra={"left": len(frontier)})
    return await store.reinstate(bank_id, chosen)


async def reinstated_on_write(
    store: SemanticStore, bank_id: str, known: Sequence[SemanticRecord], writing: set[str]
) -> set[str]:
    """Ids of the ``known`` records, written again now, that history no longer holds: their successor is
    gone (deleted, with no heir) and they stand on a live turn again (one of ``writing``, the turns this
    write brings, or a held one :func:`live_turns` finds). A restored old version of an update whose new
    version was forgotten is one: its value is settled anew, as if it had just come. Written again from a
    turn that is not live (a late pass over an update's old version), it stays history."""
    links = {record.superseded_by for record in known if record.superseded_by}
    if not links:
        return set()
    gone = links - await store.known_ids(bank_id, sorted(links))
    waiting = [record for record in known if record.superseded_by in gone]
    if not waiting:
        return set()
    live = writing | await live_turns(store, bank_id, [t for record in waiting for t in lineage_of(record)])
    return {record.id for record in waiting if live.intersection(lineage_of(record))}
