"""How a write settles against what a bank holds: merge a near-duplicate, supersede or keep as history a
contradicting value, or queue it for review; and what a write adds to entity pages.

Pure functions on records (no store): the engine reads the bank, calls these, and writes the outcome under
the bank's lock (:mod:`.engine`), so a retried write settles to the same end.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import replace

from hindsight.runtime.text import key_of
from hindsight.runtime.trust import untrusted
from hindsight.semantic.extract import entities_of_fact, is_multi_valued
from hindsight.semantic.records import DISTILLED, Contribution, Entity, RecordKind, SemanticRecord, lineage_of
from hindsight.semantic.trust import merged_meta, unverified


class Outcome(enum.Enum):
    """How a conflict between a new fact and the current one is settled."""

    SUPERSEDE = "supersede"
    """The new fact is current; the old one becomes history."""
    HISTORY = "history"
    """The new fact is older news: it is stored as history, superseded by the current one."""
    REVIEW = "review"
    """Time and trust disagree, or cannot tell: queued for a decision."""


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


def settle(
    new: SemanticRecord, old: SemanticRecord, guarded: bool = False, version: bool = False
) -> tuple[Outcome, str]:
    """Decide a conflict by time (when each was true or said) and trust; with the reason.

    A later statement replaces an earlier one unless it is less trusted; a more trusted one replaces a
    less trusted one unless it is older. When both speak at the same moment, trust alone decides.
    ``version``: ``new`` comes from an update's new version of a turn ``old`` came from, which corrects it
    whatever the times say (the new version keeps the old one's time). ``guarded`` (the poisoning
    defences): an unverified value (:mod:`.trust`) never replaces one from a trusted source (it is queued
    for review), and a trusted value always replaces an unverified one.
    """
    if guarded and unverified(new) and not untrusted(old.meta.source):
        return (
            Outcome.REVIEW,
            f"the newer value comes from a less trusted, unverified source ({new.meta.source.value})",
        )
    if version:
        return Outcome.SUPERSEDE, "an update replaced the turn the current value came from"
    if guarded and unverified(old) and not untrusted(new.meta.source):
        return (
            Outcome.SUPERSEDE,
            f"the current value comes from an unverified source ({old.meta.source.value})",
        )
    new_time, old_time = new.valid_from or new.meta.time, old.valid_from or old.meta.time
    time_order = _sign((new_time - old_time).total_seconds()) if new_time and old_time else 1
    trust_order = _sign(int(new.meta.trust) - int(old.meta.trust))
    if time_order == 0:
        if trust_order == 0:
            return Outcome.REVIEW, "both values were stated at the same time with the same trust"
        return (Outcome.SUPERSEDE if trust_order > 0 else Outcome.HISTORY), "settled by trust"
    if trust_order == 0 or trust_order == time_order:
        return (Outcome.SUPERSEDE if time_order > 0 else Outcome.HISTORY), "settled by time"
    if time_order > 0:
        return Outcome.REVIEW, "the newer value comes from a less trusted source"
    return Outcome.REVIEW, "the more trusted value is older than the current one"


def merge_into(kept: SemanticRecord, new: SemanticRecord, guarded: bool = False) -> SemanticRecord:
    """``kept`` absorbs ``new``: newer text and value, unioned provenance, tags and merged ids (``guarded``:
    trust and the unverified marker as corroboration decides, :func:`.trust.merged_meta`)."""
    meta = replace(
        kept.meta,
        source_turn_ids=tuple(dict.fromkeys((*kept.meta.source_turn_ids, *new.meta.source_turn_ids))),
        tags=tuple(dict.fromkeys((*kept.meta.tags, *new.meta.tags))),
        importance=max(kept.meta.importance, new.meta.importance),
        trust=max(kept.meta.trust, new.meta.trust),
        time=max((t for t in (kept.meta.time, new.meta.time) if t), default=None),
    )
    if guarded:
        meta = merged_meta(kept, new, meta)
    merged = (*kept.merged_ids, *([new.id] if new.id != kept.id else []), *new.merged_ids)
    return replace(
        kept,
        text=new.text,
        value=new.value or kept.value,
        meta=meta,
        source_episode_ids=tuple(dict.fromkeys((*kept.source_episode_ids, *new.source_episode_ids))),
        confidence=max(kept.confidence, new.confidence),
        merged_ids=tuple(dict.fromkeys(m for m in merged if m != kept.id)),
        lineage=tuple(dict.fromkeys((*lineage_of(kept), *lineage_of(new)))),
        replies_to=new.replies_to,  # the merged record is written with ``new``'s vector
        replies_to_text=new.replies_to_text,
    )


def contributions_of(
    mentions: dict[str, list[Entity]], facts: Sequence[SemanticRecord]
) -> list[Contribution]:
    """What a write adds to entity pages, by origin: each turn's mentions (standing on that turn), and
    each fact's entities and relation (standing on the fact's turns; on the fact itself when it cites
    none), so a deleted turn takes exactly its part away."""
    found = [Contribution(f"turn:{turn_id}", (turn_id,), tuple(e)) for turn_id, e in mentions.items() if e]
    for fact in facts:
        if fact.kind in DISTILLED and fact.subject and fact.attribute and fact.value:
            entities = entities_of_fact(fact.subject, fact.attribute, fact.value, fact.speaker.strip())
            found.append(Contribution(f"fact:{fact.id}", lineage_of(fact) or (fact.id,), tuple(entities)))
    return found


def replaced_versions(records: Sequence[SemanticRecord]) -> dict[str, frozenset[str]]:
    """Turn id -> the turns it is a new version of: a turn that cites other turns in its provenance is one (an
    update's new version, under a new id, cites the version it replaced first; an import keeps that link)."""
    versions: dict[str, frozenset[str]] = {}
    for record in records:
        earlier = frozenset(i for i in record.meta.source_turn_ids if i != record.id)
        if record.kind is RecordKind.TURN and earlier:
            versions[record.id] = earlier
    return versions


def is_version_of(new: SemanticRecord, old: SemanticRecord, versions: dict[str, frozenset[str]]) -> bool:
    """Whether ``new`` comes from a new version of a turn ``old`` came from (``versions``:
    :func:`replaced_versions`)."""
    replaced = {i for turn in new.meta.source_turn_ids for i in versions.get(turn, ())}
    return bool(replaced.intersection(old.meta.source_turn_ids))


def rival(
    current: dict[tuple[str, str], list[SemanticRecord]], key: tuple[str, str], record: SemanticRecord
) -> SemanticRecord | None:
    """The current value ``record`` contradicts: another current record of its single-valued attribute,
    with another value (the latest of them)."""
    if not record.subject or not record.attribute or is_multi_valued(record.attribute):
        return None
    others = [
        r for r in current.get(key, []) if r.id != record.id and key_of(r.value) != key_of(record.value)
    ]
    return others[-1] if others else None
