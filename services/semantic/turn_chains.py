"""Supersede chains of turns: the write-path step that applies :mod:`hindsight.semantic.corrections`.

For one Upsert's turns, in time order: read what each states (and denies), key the turn record by its
first statement, find the current records it replaces (stored ones through one filtered lookup by key,
earlier turns of the same batch directly, and, for a cued correction that names only the wrong value,
the speaker's statements that held it), and link them: the old record gets ``valid_to`` and
``superseded_by`` (it stays searchable as history), the new one lists the chain it replaced in
``supersedes``. Facts a turn denies ("I no longer live in Paris") are closed the same way. Turns stay
whole in the episodic layer; only the semantic records carry the chain.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from hindsight.runtime.modality import asserts_now
from hindsight.runtime.text import key_of
from hindsight.semantic.by_meaning import Finder
from hindsight.semantic.corrections import (
    Reading,
    Statement,
    affirmatives,
    keyed,
    owner_of,
    read,
    replaces,
    same_value,
    stored_statement,
    turn_subject,
)
from hindsight.semantic.extract import RuleExtractor, is_multi_valued
from hindsight.semantic.llm_adjudge import Adjudicator
from hindsight.semantic.records import DISTILLED, EmbeddedRecord, RecordKind, SemanticRecord
from hindsight.semantic.same_question import comparable_values
from hindsight.semantic.speakers import BankSpeakers, SpeakerPolicy
from hindsight.semantic.store import VectorStore
from hindsight.semantic.trust import may_replace

log = logging.getLogger(__name__)


def asserted(text: str, reading: Reading) -> Reading:
    """``reading`` without what ``text`` does not assert as holding now (:mod:`.modality`): a question, a
    condition, a plan called off or a story about another time states no value that replaces another."""
    kept = tuple(s for s in reading.statements if asserts_now(text, s.value or next(iter(s.denied), "")))
    loose = reading.loose_denials if asserts_now(text) else ()
    return replace(reading, statements=kept, loose_denials=loose)


@dataclass
class Links:
    """What the step decided: turn records to write (keyed, linked) and stored records to close."""

    records: dict[str, SemanticRecord] = field(default_factory=dict)
    superseded: list[tuple[str, datetime, str]] = field(default_factory=list)
    """(stored record id, valid until, id of the record that replaced it)."""
    count: int = 0
    """Records superseded (in the batch or stored)."""
    rewrites: list[EmbeddedRecord] = field(default_factory=list)
    """Stored current records whose chain grew by a late, older statement (written again whole)."""
    late: dict[str, list[str]] = field(default_factory=dict)
    """Stored successor id -> ids of the late, older statements linked below it."""


def _oldest() -> datetime:
    return datetime.min.replace(tzinfo=UTC)


@dataclass
class TurnChains:
    """Links corrections and replacements between turns (see the module docstring)."""

    extractor: RuleExtractor = field(default_factory=RuleExtractor)
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    guarded: bool = True
    """Whether an unverified source (tool, external) is kept from superseding a trusted one."""
    speakers: SpeakerPolicy = field(default_factory=SpeakerPolicy)
    """Which turns of a bank come from the same person (:mod:`.speakers`)."""
    by_meaning: bool = True
    """Whether a turn that states no "my X is Y" still supersedes the earlier turns answering the same
    question (:mod:`.by_meaning`)."""
    adjudicator: Adjudicator | None = None
    """The LLM's judgement of those, when configured (:mod:`.llm_adjudge`)."""

    _one_person: bool = field(default=False, init=False, repr=False)
    _bank: str = field(default="", init=False, repr=False)

    def _now(self) -> datetime:
        return self.clock()

    async def link(
        self,
        store: VectorStore,
        bank_id: str,
        turns: Sequence[EmbeddedRecord],
        facts: Sequence[SemanticRecord],
    ) -> Links:
        """Key, link and close (see the module docstring); reads the store, writes nothing."""
        links = Links()
        if not turns:
            return links
        known = await store.get(bank_id, [item.record.id for item in turns])
        readings: dict[str, Reading] = {}
        fact_denials: dict[str, list[Statement]] = {}
        for item in turns:
            record = item.record
            own = [f for f in facts if record.id in f.meta.source_turn_ids]
            single = {f.attribute for f in own if not is_multi_valued(f.attribute)}
            reading = asserted(record.text, read(record, own, single))
            denied = self._denied_facts(record)
            if denied:
                fact_denials[record.id] = denied
                reading = replace(
                    reading,
                    statements=(*reading.statements, *(replace(d, value="") for d in denied)),
                    cue=True,
                )
            readings[record.id] = reading
            held = known.get(record.id)
            chained = replace(
                keyed(record, reading),
                valid_to=held.record.valid_to if held else record.valid_to,
                superseded_by=held.record.superseded_by if held else record.superseded_by,
                supersedes=held.record.supersedes if held else record.supersedes,
            )
            links.records[record.id] = chained
        parsed = not all(r.empty for r in readings.values())
        if not parsed and not self.by_meaning:
            return links
        stored = await self._stored(store, bank_id, readings, fact_denials) if parsed else []
        self._one_person = self.speakers.mode(bank_id) is not BankSpeakers.POOLED
        self._bank = bank_id
        finder = Finder(self.speakers, self.guarded, self.adjudicator) if self.by_meaning else None
        nearest = await finder.nearest(store, bank_id, turns) if finder is not None else {}
        earlier: list[EmbeddedRecord] = []
        current: dict[tuple[str, str], list[tuple[Statement, SemanticRecord]]] = {}
        for record in stored:
            if record.kind is RecordKind.TURN and (statement := stored_statement(record)) is not None:
                current.setdefault(statement.key, []).append((statement, record))
        done: list[SemanticRecord] = []
        ordered = sorted(turns, key=lambda i: i.record.meta.time or _oldest())
        for item in ordered:
            record = links.records[item.record.id]
            reading = readings[record.id]
            replaced = self._by_key(record, reading, current, links)
            replaced += self._close_facts(record, fact_denials.get(record.id, ()), stored, links)
            if reading.cue and not replaced and self._denials(reading):
                replaced += await self._by_value(store, bank_id, record, reading, done, links)
            if finder is not None and not replaced and record.id in nearest:
                replaced += await self._by_meaning(finder, nearest[record.id], item, earlier, links)
            earlier.append(EmbeddedRecord(links.records[record.id], item.vector))
            for statement in reading.statements:
                if statement.value:
                    current.setdefault(statement.key, []).append((statement, links.records[record.id]))
            done.append(links.records[record.id])
        if links.late:
            for held in (await store.get(bank_id, list(links.late))).values():
                chain = tuple(dict.fromkeys((*held.record.supersedes, *links.late[held.record.id])))
                links.rewrites.append(EmbeddedRecord(replace(held.record, supersedes=chain), held.vector))
        if links.count:
            log.info("turn chains linked", extra={"superseded": links.count, "turns": len(turns)})
        return links

    def _denied_facts(self, record: SemanticRecord) -> list[Statement]:
        """Facts a denial presupposes ("I no longer live in Paris": user lives_in Paris), as statements."""
        found: list[Statement] = []
        for sentence in affirmatives(record.text):
            probe = replace(record, id=record.id + "\x1fdenied", text=sentence)
            for fact in self.extractor.extract([probe]).facts:
                if key_of(fact.subject) == "user" and key_of(owner_of(record)) != "user":
                    continue  # an unnamed agent's "I" (the extractor calls every unnamed speaker "user")
                found.append(Statement(fact.subject, fact.attribute, denied=(fact.value,)))
        return found

    async def _stored(
        self,
        store: VectorStore,
        bank_id: str,
        readings: dict[str, Reading],
        fact_denials: dict[str, list[Statement]],
    ) -> list[SemanticRecord]:
        """Current stored records keyed like the batch's statements (turns), or the facts it denies."""
        keys = {
            (turn_subject(s.owner), s.attribute) for reading in readings.values() for s in reading.statements
        }
        keys |= {(d.owner, d.attribute) for denied in fact_denials.values() for d in denied}
        found = await store.facts_about(bank_id, sorted(keys), current_only=True)
        return [r for r in found if r.id not in readings]

    def _by_key(
        self,
        record: SemanticRecord,
        reading: Reading,
        current: dict[tuple[str, str], list[tuple[Statement, SemanticRecord]]],
        links: Links,
    ) -> int:
        """Supersede the current turns with the same key that ``record`` replaces (only those holding the
        value it names as wrong, when it names one that was said); a late, older statement is kept as
        history of the newer one instead."""
        replaced = 0
        for statement in reading.statements:
            held = [(said, links.records.get(r.id, r)) for said, r in current.get(statement.key, [])]
            held = [(said, r) for said, r in held if r.current]
            hits = [
                (said, r)
                for said, r in held
                if replaces(statement, record, reading.cue, said, r, self.guarded, self._one_person)
                and (not statement.value or comparable_values(said.value, statement.value))
            ]
            named = [(s, r) for s, r in hits if any(same_value(d, s.value) for d in statement.denied)]
            for _, old in named or hits:
                self._supersede(old, record.id, links)
                current[statement.key] = [(s, r) for s, r in current[statement.key] if r.id != old.id]
                replaced += 1
            if hits or not statement.value:
                continue
            for said, old in held:
                if (
                    old.id not in links.records
                    and replaces(said, old, False, statement, record, self.guarded, self._one_person)
                    and (old.meta.time or _oldest()) > (record.meta.time or _oldest())
                ):
                    links.records[record.id] = replace(
                        links.records[record.id],
                        valid_to=old.meta.time or record.meta.time,
                        superseded_by=old.id,
                    )
                    links.late.setdefault(old.id, []).append(record.id)
                    links.count += 1
                    break
        return replaced

    def _close_facts(
        self,
        record: SemanticRecord,
        denied: Sequence[Statement],
        stored: Sequence[SemanticRecord],
        links: Links,
    ) -> int:
        """Close the stored current facts whose value ``record`` denies."""
        closed = 0
        for statement in denied:
            for fact in stored:
                if (
                    fact.kind in DISTILLED
                    and (key_of(fact.subject), fact.attribute) == statement.key
                    and any(same_value(value, fact.value) for value in statement.denied)
                    and int(record.meta.trust) >= int(fact.meta.trust)
                    and (not self.guarded or may_replace(record.meta.source, fact.meta.source))
                ):
                    links.superseded.append((fact.id, record.meta.time or self._now(), record.id))
                    links.count += 1
                    closed += 1
        return closed

    @staticmethod
    def _denials(reading: Reading) -> list[str]:
        return [*reading.loose_denials, *(d for s in reading.statements for d in s.denied)]

    async def _by_value(
        self,
        store: VectorStore,
        bank_id: str,
        record: SemanticRecord,
        reading: Reading,
        done: Sequence[SemanticRecord],
        links: Links,
    ) -> int:
        """A cued correction that names only the wrong value ("Actually it's B, not A"): the latest earlier
        statement of the same speaker, in the batch or stored, whose value it names."""
        owner = owner_of(record)
        wrong = self._denials(reading)
        stored = await store.current_about(bank_id, [key_of(turn_subject(owner))])
        candidates = {r.id: r for r in [*(held.record for held in stored), *done]}

        def named(old: SemanticRecord) -> bool:
            old = links.records.get(old.id, old)
            said = stored_statement(old)
            return (
                said is not None
                and old.current
                and old.kind is RecordKind.TURN
                and old.id != record.id
                and key_of(said.owner) == key_of(owner)
                and (old.meta.time or _oldest()) <= (record.meta.time or _oldest())
                and int(record.meta.trust) >= int(old.meta.trust)
                and (not self.guarded or may_replace(record.meta.source, old.meta.source))
                and any(same_value(value, said.value) for value in wrong)
            )

        found = [old for old in candidates.values() if named(old)]
        if not found:
            return 0
        latest = max(found, key=lambda r: (r.meta.time or _oldest(), r.id))
        self._supersede(links.records.get(latest.id, latest), record.id, links)
        return 1

    async def _by_meaning(
        self,
        finder: Finder,
        stored: Sequence[tuple[float, SemanticRecord]],
        item: EmbeddedRecord,
        earlier: Sequence[EmbeddedRecord],
        links: Links,
    ) -> int:
        """The earlier turns (stored, or of this write) that ``item`` answers anew (:mod:`.by_meaning`)."""
        record = links.records[item.record.id]
        closed = {old_id for old_id, _, _ in links.superseded}
        found = finder.candidates(EmbeddedRecord(record, item.vector), stored, earlier)
        candidates = [links.records.get(c.id, c) for c in found if c.id not in closed]
        replaced = await finder.adjudged(self._bank, record, candidates)
        for old in replaced:
            self._supersede(old, record.id, links)
        if replaced:
            log.info(
                "superseded by meaning", extra={"turn": record.id, "superseded": [r.id for r in replaced]}
            )
        return len(replaced)

    def _supersede(self, old: SemanticRecord, by: str, links: Links) -> None:
        """Link ``old`` below the turn ``by``: in the batch by rewriting it, else after the write."""
        new = links.records[by]
        until = new.meta.time or self._now()
        links.count += 1
        chain = tuple(dict.fromkeys((old.id, *old.supersedes, *new.supersedes)))
        links.records[by] = replace(new, supersedes=chain)
        if old.id in links.records:
            links.records[old.id] = replace(links.records[old.id], valid_to=until, superseded_by=by)
        else:
            links.superseded.append((old.id, until, by))
