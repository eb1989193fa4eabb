"""Semantic memory's logic: extract, embed, merge or supersede, store; search with graph expansion.

The write path of one Upsert, in order: facts and entities are extracted from the turns; every text
(records and facts) is embedded in one batched call; a distilled record (fact, preference, rule,
entity summary) at cosine >= the dedup threshold to a current one of its kind merges into it (newer
text wins, provenance and merged ids unioned); a fact about a subject's single-valued attribute that
contradicts the current value supersedes it, becomes history itself, or goes to the review queue
(see :func:`.settlement.settle`); then records, links, review items and entity contributions are written.

Writes, deletes and review decisions of one bank hold the bank's lock for their read-modify-write, so
concurrent Upserts settle as if one ran after the other, and every write first drops what stands on
deleted turns (tombstones, :mod:`.erase`). LLM fact passes are queued work (:mod:`.llm_passes`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import numpy as np

from hindsight.runtime.errors import FailedPrecondition, InvalidArgument, NotFound
from hindsight.runtime.modality import asserts_now
from hindsight.runtime.offload import off_loop
from hindsight.runtime.records import TimeRange, content_id
from hindsight.runtime.rewrites import Phrasings
from hindsight.runtime.text import key_of
from hindsight.semantic.embedder import Embedder
from hindsight.semantic.erase import erase, reelect, reinstated_on_write
from hindsight.semantic.expansion import MAX_QUERY_KEYS, expand, query_keys
from hindsight.semantic.extract import Extraction, RuleExtractor, is_multi_valued
from hindsight.semantic.importing import ImportedLearned, import_learned
from hindsight.semantic.lineage_store import SemanticStore, without
from hindsight.semantic.llm_adjudge import Adjudicator
from hindsight.semantic.llm_extract import LLMExtractor
from hindsight.semantic.llm_passes import PassQueue
from hindsight.semantic.pages import EntityMatch, EntityPage, PageKeeper
from hindsight.semantic.records import (
    DISTILLED,
    EmbeddedRecord,
    Entity,
    RecordKind,
    Resolution,
    ReviewItem,
    ScoredRecord,
    SearchOptions,
    SemanticRecord,
    lineage_of,
)
from hindsight.semantic.settlement import (
    Outcome,
    contributions_of,
    is_version_of,
    merge_into,
    replaced_versions,
    rival,
    settle,
)
from hindsight.semantic.speakers import SpeakerPolicy
from hindsight.semantic.trust import guard
from hindsight.semantic.turn_chains import TurnChains

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 10
MAX_LIMIT = 200
DEDUP_THRESHOLD = 0.95
MAX_LLM_PASSES = 8
"""LLM fact passes running at once; the others wait in the store (:mod:`.llm_passes`)."""
EXTRACT_OFF_LOOP_CHARS = 1_500
"""Characters of turns from which rule extraction (~1.5 us per character) runs on a worker thread."""
TWIN_OFF_LOOP_VALUES = 100_000
"""Vector values (records times dimensions) from which a near-duplicate comparison runs on a worker thread."""


REPLY_CONTEXT_CHARS = 300
"""Characters of the turn a reply answers that are read into the reply's vector."""


def reply_context(speaker: str, text: str) -> str:
    """How the turn a reply answers is read into the reply's vector: ``"speaker: text"``, cut."""
    text = text[:REPLY_CONTEXT_CHARS].strip()
    return f"{speaker}: {text}" if speaker and text else text


def embedding_text(record: SemanticRecord) -> str:
    """What a record's vector encodes: ``"speaker: text"`` for a turn whose speaker is known, else the
    text; a reply is read after the turn it answers (``replies_to_text``).

    Questions name people ("What did Caroline paint?"); a turn's text rarely names its own speaker,
    so without it a vector cannot tell whose memory it is (R@10 of the vector channel on the LoCoMo
    dev split: 0.19 for the text alone, 0.33 with the speaker; docs/retrieval.md). A reply ("Yes, last
    Friday!") says what it is about only with the turn it answers. Facts name their subject already.
    """
    if record.kind in DISTILLED:
        return record.text
    said = f"{record.speaker}: {record.text}" if record.speaker else record.text
    return f"{record.replies_to_text}\n{said}" if record.replies_to_text else said


async def record_vectors(
    embedder: Embedder, bank_id: str, records: Sequence[SemanticRecord]
) -> list[list[float]]:
    """Each record's vector, in one batched call: :func:`embedding_text`'s, and for a reply the mean
    direction of it and of the reply read alone, so that the turn it answers adds what the reply leaves
    unsaid without drowning what the reply says itself: a turn after a change of topic still matches its
    own words. On the LoCoMo dev file the blend keeps 0.024 of the 0.043 R@10 that the reply read only
    with the turn it answers gains (docs/retrieval.md)."""
    texts = [embedding_text(record) for record in records]
    replies = [i for i, record in enumerate(records) if record.replies_to_text]
    alone = [embedding_text(replace(records[i], replies_to_text="")) for i in replies]
    vectors = await embedder.embed(bank_id, texts + alone)
    found = vectors[: len(records)]
    for i, vector in zip(replies, vectors[len(records) :], strict=True):
        blended = np.asarray(found[i], dtype=np.float64) + np.asarray(vector, dtype=np.float64)
        norm = float(np.linalg.norm(blended))
        found[i] = (blended / norm).tolist() if norm else found[i]
    return found


async def write_in_tier(store: SemanticStore, bank_id: str, items: Sequence[EmbeddedRecord]) -> None:
    """Write records again, each in the tier it lies in (a write alone brings a cold record back to the
    hot tier, as a re-delivery should; a re-embedding or an import should not)."""
    await store.upsert(bank_id, items)
    cold = [item.record.id for item in items if item.record.cold]
    if cold:
        await store.mark_cold(bank_id, cold, None, 0.0)


def tentative_facts(turns: Sequence[SemanticRecord], facts: Sequence[SemanticRecord]) -> set[str]:
    """Ids of the facts whose turn states them in a sentence that asserts nothing holding now."""
    texts = {turn.id: turn.text for turn in turns}
    return {
        fact.id
        for fact in facts
        if any(t in texts and not asserts_now(texts[t], fact.value) for t in fact.meta.source_turn_ids)
    }


def utc_now() -> datetime:
    """The real clock; tests inject their own."""
    return datetime.now(UTC)


@dataclass
class _Batch:
    """The records one upsert will write, by id, with their vectors."""

    records: dict[str, EmbeddedRecord] = field(default_factory=dict)
    superseded: list[tuple[str, datetime, str]] = field(default_factory=list)
    reviews: list[ReviewItem] = field(default_factory=list)
    tentative: set[str] = field(default_factory=set)
    """Facts read from sentences that assert nothing holding now (a question, a condition, a story about
    another time: :mod:`.modality`): kept, but they supersede nothing."""

    def put(self, record: SemanticRecord, vector: list[float]) -> None:
        self.records[record.id] = EmbeddedRecord(record, vector)


@dataclass
class SemanticEngine:
    """Upsert, search and delete inside one bank."""

    store: SemanticStore
    embedder: Embedder
    extractor: RuleExtractor | None = field(default_factory=RuleExtractor)
    llm: LLMExtractor | None = None
    hops: int = 0
    """Entity-graph expansion depth of a search that does not say."""
    dedup_threshold: float = DEDUP_THRESHOLD
    clock: Callable[[], datetime] = utc_now
    corrections: bool = True
    """Whether a turn that corrects or restates an earlier one supersedes it (:mod:`.turn_chains`)."""
    speakers: SpeakerPolicy = field(default_factory=SpeakerPolicy)
    """Which turns of a bank come from the same person, for corrections (:mod:`.speakers`)."""
    corrections_by_meaning: bool = True
    """With ``corrections``: also the turns answering the same question anew, found by meaning
    (:mod:`.by_meaning`)."""
    adjudicator: Adjudicator | None = None
    """An LLM's judgement of those corrections (:mod:`.llm_adjudge`); None: the rules alone (the default)."""
    pages: bool = True
    """Whether turns are read for the entities they mention, kept on entity pages (:mod:`.pages`)."""
    defences: bool = True
    """Poisoning defences: unverified facts stay low and marked until corroborated (:mod:`.trust`)."""
    llm_pass_timeout: float = 300.0
    """Seconds one background LLM fact pass may take in all: the LLM's answer, then embedding and writing
    its facts (it runs after the Upsert answered, outside that call's deadline)."""
    llm_pass_attempts: int = 5
    """Attempts of one LLM fact pass before it is given up (counted, logged, kept in the store)."""
    llm_pass_backoff: float = 5.0
    """Seconds before a failed LLM fact pass is tried again (doubled per attempt, at most 300)."""
    _pages: PageKeeper = field(init=False, repr=False)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict, init=False, repr=False)
    passes: PassQueue = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._pages = PageKeeper(self.store)
        self.passes = PassQueue(
            self.store,
            self._llm_pass,
            self._lock,
            timeout=self.llm_pass_timeout,
            max_in_flight=MAX_LLM_PASSES,
            max_attempts=self.llm_pass_attempts,
            backoff=self.llm_pass_backoff,
        )

    def _lock(self, bank_id: str) -> asyncio.Lock:
        """The bank's write lock: the read-modify-write of an Upsert, a Delete or a review decision runs
        whole before the next one of the same bank starts (one process; replicas split banks by routing)."""
        held = self._locks.get(bank_id)
        if held is None:
            held = self._locks[bank_id] = asyncio.Lock()
        return held

    def resume(self) -> None:
        """After a start: run the LLM fact passes a previous process left (no-op without an LLM)."""
        if self.llm is not None:
            self.passes.resume()

    def close(self) -> None:
        """Stop scheduling retries (they stay in the store for the next start)."""
        self.passes.close()

    # ----- write path ---------------------------------------------------------------------------------
    async def upsert(self, bank_id: str, records: Sequence[SemanticRecord]) -> int:
        """Extract by rules, embed every text in one batched call, merge or supersede, write; returns the
        number of records given. The LLM extractor, when configured, runs after the reply (its facts join
        when it answers), so retain never waits for it.

        A failed embedding writes nothing. Writing a record again by id (a re-delivery) replaces it, and
        the facts extracted from it again merge into themselves, so re-delivery changes nothing.
        """
        given = list({record.id: record for record in records}.values())
        extraction = await self._extract([record for record in given if record.kind is RecordKind.TURN])
        async with self._lock(bank_id):
            alive = await self._alive(bank_id, given, lift=True)
            await self._write(bank_id, alive, extraction)
            turns = [record for record in alive if record.kind is RecordKind.TURN]
            if self.llm is not None and turns:
                await self.passes.enqueue(bank_id, turns)
        return len(given)

    async def _alive(
        self, bank_id: str, records: Sequence[SemanticRecord], lift: bool = False
    ) -> list[SemanticRecord]:
        """``records`` without the deleted turns they stand on (tombstones); one standing on none left is
        dropped. ``lift``: a turn written again whose tombstone is an archive's is restored."""
        cited = {
            i for record in records for i in (record.id, *lineage_of(record), *record.meta.source_turn_ids)
        }
        buried = await self.store.buried(bank_id, sorted(cited)) if cited else {}
        if not buried:
            return list(records)
        if lift:
            restored = [r.id for r in records if r.kind is RecordKind.TURN and buried.get(r.id)]
            await self.store.unbury(bank_id, restored)
            for turn_id in restored:
                buried.pop(turn_id)
        dead = set(buried)  # a record purged by its own id (an episode) stays purged too
        kept = (without(record, dead) for record in records if record.id not in dead)
        alive = [record for record in kept if record is not None]
        if len(alive) < len(records):
            log.info("late writes of deleted turns dropped", extra={"dropped": len(records) - len(alive)})
        return alive

    async def _extract(self, turns: Sequence[SemanticRecord]) -> Extraction:
        """Facts and entities of ``turns`` by the rules (off the event loop for long texts)."""
        extractor = self.extractor
        if extractor is None or not turns:
            return Extraction()
        chars = sum(len(turn.text) for turn in turns)
        log.debug("extracting facts by rules", extra={"turns": len(turns), "chars": chars})
        extraction = await off_loop(
            lambda: extractor.extract(turns), size=chars, threshold=EXTRACT_OFF_LOOP_CHARS
        )
        log.debug("facts extracted by rules", extra={"turns": len(turns), "facts": len(extraction.facts)})
        return extraction

    async def _llm_pass(self, bank_id: str, turns: Sequence[SemanticRecord]) -> bool:
        """One attempt of a queued pass (:mod:`.llm_passes`; a failure raises, and it is tried again). Its
        facts are written under the bank's lock, after the tombstone check."""
        if self.llm is None:
            return True
        found = await self.llm.extract(bank_id, turns)
        if found.facts:
            async with self._lock(bank_id):
                await self._write(bank_id, [], found, replaced_versions(turns))
        return True

    async def drain(self) -> None:
        """Wait for the LLM passes due now (on shutdown, and in tests)."""
        await self.passes.drain()

    async def _write(
        self,
        bank_id: str,
        given: list[SemanticRecord],
        extraction: Extraction,
        versions: dict[str, frozenset[str]] | None = None,
    ) -> None:
        """Embed, merge or supersede, then write records, links, review items and entity contributions, in
        that order (records first: a link or an entity never points at a record that was not written).
        ``versions``: the updates among the turns (:func:`replaced_versions`; by default read from
        ``given``). Runs under the bank's lock; facts of deleted turns are dropped here (tombstones).

        Settlement is idempotent: written again, a record whose earlier write stopped before its links
        were set is settled again (:meth:`_distil`); contributions are replaced by origin, never added."""
        if extraction.facts:
            extraction = replace(extraction, facts=await self._alive(bank_id, extraction.facts))
        mentions: dict[str, list[Entity]] = {}
        if self.pages:
            given, mentions = await self._pages.annotate(bank_id, given, extraction)
        ids = {record.id for record in given}
        everything = given + [fact for fact in extraction.facts if fact.id not in ids]
        if self.defences:
            everything = [guard(record) for record in everything]
        if not everything:
            return
        vectors = await record_vectors(self.embedder, bank_id, everything)
        items = [EmbeddedRecord(r, v) for r, v in zip(everything, vectors, strict=True)]
        batch = _Batch()
        if self.corrections:
            items = await self._chain_turns(bank_id, items, extraction, batch)
            batch.tentative = tentative_facts(given, extraction.facts)
        for item in items:
            if item.record.kind not in DISTILLED:  # every record says since when it holds
                batch.put(
                    replace(item.record, valid_from=item.record.valid_from or item.record.meta.time),
                    item.vector,
                )
        distilled = [item for item in items if item.record.kind in DISTILLED]
        await self._distil(
            bank_id, distilled, batch, replaced_versions(given) if versions is None else versions
        )
        written = await self.store.upsert(bank_id, list(batch.records.values()))
        for record_id, valid_to, by in batch.superseded:
            await self.store.supersede(bank_id, record_id, valid_to, by)
        for review in batch.reviews:
            await self.store.add_review(bank_id, review)
        contributions = contributions_of(mentions, [*extraction.facts, *given])
        if contributions:
            touched = await self.store.put_contributions(bank_id, contributions)
            await self.store.rebuild_entities(bank_id, sorted(touched))
        log.info(
            "upserted",
            extra={
                "records": len(given),
                "facts": len(extraction.facts),
                "written": written,
                "superseded": len(batch.superseded),
                "reviews": len(batch.reviews),
            },
        )

    async def _chain_turns(
        self, bank_id: str, items: list[EmbeddedRecord], extraction: Extraction, batch: _Batch
    ) -> list[EmbeddedRecord]:
        """The turns keyed and linked to the earlier ones they correct (the stored ones are closed after
        the write, with the facts' links)."""
        turns = [item for item in items if item.record.kind is RecordKind.TURN]
        if not turns:
            return items
        chains = TurnChains(
            self.extractor or RuleExtractor(),
            clock=self.clock,
            guarded=self.defences,
            speakers=self.speakers,
            by_meaning=self.corrections_by_meaning,
            adjudicator=self.adjudicator,
        )
        links = await chains.link(self.store, bank_id, turns, extraction.facts)
        batch.superseded.extend(links.superseded)
        for rewritten in links.rewrites:
            batch.put(rewritten.record, rewritten.vector)
        return [EmbeddedRecord(links.records.get(i.record.id, i.record), i.vector) for i in items]

    async def _distil(
        self,
        bank_id: str,
        items: Sequence[EmbeddedRecord],
        batch: _Batch,
        versions: dict[str, frozenset[str]],
    ) -> None:
        """Merge near-duplicates, then settle conflicts, in the order the records came (a fact from an
        update's new version corrects the facts of the version it replaced: ``versions``)."""
        if not items:
            return
        known = await self.store.get(bank_id, [item.record.id for item in items])
        writing = {i for i, held in batch.records.items() if held.record.kind is RecordKind.TURN}
        reinstated = await reinstated_on_write(
            self.store, bank_id, [held.record for held in known.values()], writing
        )
        about, nearest = await self._compared_with(bank_id, items, known)
        current = self._single_values(about)
        for item in sorted(
            items, key=lambda i: i.record.valid_from or i.record.meta.time or datetime.min.replace(tzinfo=UTC)
        ):
            key = (key_of(item.record.subject), item.record.attribute)
            if item.record.id in known:
                contested = self._written_again(item, known, reinstated, current, key, batch)
            else:
                contested = await self._written_first(item, about, nearest, current, key, batch)
            if contested is not None:
                record, old = contested
                stored = record.id in known
                await self._settle_conflict(
                    bank_id, record, item.vector, old, current, key, batch, versions, stored
                )

    async def _compared_with(
        self, bank_id: str, items: Sequence[EmbeddedRecord], known: dict[str, EmbeddedRecord]
    ) -> tuple[list[EmbeddedRecord], dict[str, SemanticRecord | None]]:
        """What the records are compared with: facts with a subject with that subject's current facts, read
        in one filtered call (which also gives the values they may contradict); others not stored yet by a
        nearest-neighbour query each."""
        subjects = sorted({key_of(item.record.subject) for item in items if item.record.subject})
        about = await self.store.current_about(bank_id, subjects) if subjects else []
        loose = [item for item in items if item.record.id not in known and not item.record.subject]
        nearest = dict(
            zip(
                (item.record.id for item in loose),
                await self.store.nearest(bank_id, loose, self.dedup_threshold),
                strict=True,
            )
        )
        return about, nearest

    @staticmethod
    def _single_values(about: Sequence[EmbeddedRecord]) -> dict[tuple[str, str], list[SemanticRecord]]:
        """The current records of each (subject, single-valued attribute): what a new value contradicts."""
        current: dict[tuple[str, str], list[SemanticRecord]] = {}
        for held in about:
            record = held.record
            if record.attribute and not is_multi_valued(record.attribute):
                current.setdefault((key_of(record.subject), record.attribute), []).append(record)
        return current

    def _written_again(
        self,
        item: EmbeddedRecord,
        known: dict[str, EmbeddedRecord],
        reinstated: set[str],
        current: dict[tuple[str, str], list[SemanticRecord]],
        key: tuple[str, str],
        batch: _Batch,
    ) -> tuple[SemanticRecord, SemanticRecord] | None:
        """A record written again by id, with its text, the validity and merges learned since: put in the
        batch, or with the current value it contradicts, to settle."""
        record = merge_into(known[item.record.id].record, item.record, self.defences)
        if record.id in reinstated:  # its successor is gone and a live turn states it again
            record = replace(record, valid_to=None, superseded_by="")
        old = rival(current, key, record) if record.current else None
        if old is None:  # settled already (a retry whose first try stopped early settles here)
            batch.put(record, item.vector)
            return None
        return record, old

    async def _written_first(
        self,
        item: EmbeddedRecord,
        about: Sequence[EmbeddedRecord],
        nearest: dict[str, SemanticRecord | None],
        current: dict[tuple[str, str], list[SemanticRecord]],
        key: tuple[str, str],
        batch: _Batch,
    ) -> tuple[SemanticRecord, SemanticRecord] | None:
        """A record not stored before: merged into its near-duplicate (of this write or stored), or put in
        the batch as a value of its attribute, or with the current value it contradicts, to settle. A
        tentative fact contradicts nothing."""
        record = item.record
        pool = [held for held in about if held.record.id not in batch.records]
        twin = await self._twin(item, [*pool, *batch.records.values()]) or nearest.get(record.id)
        if twin is not None:
            base = batch.records[twin.id].record if twin.id in batch.records else twin
            batch.put(merge_into(base, record, self.defences), item.vector)
            return None
        record = replace(record, valid_from=record.valid_from or record.meta.time or self.clock())
        tentative = record.id in batch.tentative
        old = None if tentative else rival(current, key, record)
        if old is None:
            batch.put(record, item.vector)
            if (
                not tentative
                and record.subject
                and record.attribute
                and not is_multi_valued(record.attribute)
            ):
                current.setdefault(key, []).append(record)
            return None
        return record, old

    async def _settle_conflict(
        self,
        bank_id: str,
        record: SemanticRecord,
        vector: list[float],
        old: SemanticRecord,
        current: dict[tuple[str, str], list[SemanticRecord]],
        key: tuple[str, str],
        batch: _Batch,
        versions: dict[str, frozenset[str]],
        stored: bool,
    ) -> None:
        """``record`` against the current value it contradicts (:func:`.settlement.settle`): it supersedes
        it, becomes history before the value that followed it, or both go to the review queue (``stored``:
        a record written as current by a write that stopped is kept as it was)."""
        outcome, reason = settle(record, old, self.defences, is_version_of(record, old, versions))
        if outcome is Outcome.SUPERSEDE:
            until = record.valid_from or self.clock()
            if old.id in batch.records:
                held = batch.records[old.id]
                batch.put(replace(held.record, valid_to=until, superseded_by=record.id), held.vector)
            else:
                batch.superseded.append((old.id, until, record.id))
            record = replace(record, supersedes=tuple(dict.fromkeys((old.id, *old.supersedes))))
            batch.put(record, vector)
            current[key] = [r for r in current.get(key, []) if r.id not in {old.id, record.id}] + [record]
        elif outcome is Outcome.HISTORY:
            successor = await self._successor(bank_id, record, old, batch)
            batch.put(
                replace(record, valid_to=successor.valid_from or self.clock(), superseded_by=successor.id),
                vector,
            )
        else:
            batch.reviews.append(
                ReviewItem(content_id(bank_id, record.id, old.id), record, old, reason, self.clock())
            )
            if stored:  # was written as current by a write that stopped: keep it as it was
                batch.put(record, vector)

    async def _successor(
        self, bank_id: str, record: SemanticRecord, current: SemanticRecord, batch: _Batch
    ) -> SemanticRecord:
        """The earliest value of the chain that became valid after ``record`` (``current`` at the latest),
        so a late, older statement slots into the chain where it belongs."""
        chain = await self.store.facts_about(
            bank_id, [(record.subject, record.attribute)], current_only=False
        )
        chain += [
            held.record
            for held in batch.records.values()
            if (key_of(held.record.subject), held.record.attribute)
            == (key_of(record.subject), record.attribute)
        ]
        since = record.valid_from or record.meta.time
        later = [r for r in chain if r.valid_from and since and r.valid_from > since and r.id != record.id]
        return min(later, key=lambda r: (r.valid_from or since, r.id)) if later else current

    async def _twin(self, item: EmbeddedRecord, pool: Sequence[EmbeddedRecord]) -> SemanticRecord | None:
        """The record of ``pool`` closest to ``item`` at cosine >= the dedup threshold: same kind, current,
        another id, and about the same subject when ``item`` has one (off the event loop for a large pool)."""

        def closest() -> SemanticRecord | None:
            subject = key_of(item.record.subject)
            same = [
                held
                for held in pool
                if held.record.kind is item.record.kind
                and held.record.current
                and held.record.id != item.record.id
                and (not subject or key_of(held.record.subject) == subject)
            ]
            if not same:
                return None
            matrix = np.asarray([held.vector for held in same], dtype=np.float32)
            scores = matrix @ np.asarray(item.vector, dtype=np.float32)
            best = int(np.argmax(scores))
            return same[best].record if scores[best] >= self.dedup_threshold else None

        return await off_loop(closest, size=len(pool) * len(item.vector), threshold=TWIN_OFF_LOOP_VALUES)

    # ----- search -------------------------------------------------------------------------------------
    async def search(
        self,
        bank_id: str,
        query: str | Phrasings,
        limit: int,
        time_range: TimeRange,
        options: SearchOptions | None = None,
        banks: Sequence[str] = (),
    ) -> list[ScoredRecord]:
        """The bank's records closest in meaning to ``query``, best first, plus facts about entities
        related to those the query names (up to ``hops`` relations away).

        With rewrites, every phrasing is embedded in one batched call and searched, and their lists are
        merged into one (see :mod:`hindsight.runtime.rewrites`). ``banks``: search these banks together
        instead of ``bank_id``: the phrasings are embedded once, each bank is searched with them (all at
        once), and each phrasing's hits of every bank are one list by cosine similarity, each hit naming
        its bank.
        """
        chosen = options or SearchOptions()
        phrasings = Phrasings.of(query)
        hops = self.hops if chosen.hops is None else chosen.hops
        vectors = await self.embedder.embed(banks[0] if banks else bank_id, list(phrasings.texts), query=True)

        async def of_bank(bank: str) -> list[list[ScoredRecord]]:
            nearest = await self.store.search_many(bank, vectors, limit, time_range, chosen)

            async def one(text: str, vector: list[float], hits: list[ScoredRecord]) -> list[ScoredRecord]:
                """One phrasing's hits: nearest records, the graph's facts, then the every-tag filter."""
                if hops > 0:
                    hits = await expand(self.store, bank, text, vector, limit, time_range, chosen, hops, hits)
                if chosen.all_tags and chosen.tags:
                    hits = [hit for hit in hits if hit.record.meta.carries_tags(chosen.tags)]
                # the similarity is kept before rewrites rescale scores
                return [replace(hit, similarity=hit.score, bank_id=bank if banks else "") for hit in hits]

            return list(
                await asyncio.gather(
                    *(one(t, v, h) for t, v, h in zip(phrasings.texts, vectors, nearest, strict=True))
                )
            )

        if not banks:
            lists = await of_bank(bank_id)
        else:
            per_bank = await asyncio.gather(*(of_bank(bank) for bank in banks))
            lists = [
                sorted(
                    (hit for found in per_bank for hit in found[index]),
                    key=lambda hit: (-hit.score, hit.bank_id, hit.record.id),
                )[:limit]
                for index in range(len(phrasings.texts))
            ]
        return phrasings.merge(lists, key=lambda hit: f"{hit.bank_id}/{hit.record.id}")

    # ----- history, review, tiers, delete -------------------------------------------------------------
    async def records(self, bank_id: str, ids: Sequence[str]) -> list[SemanticRecord]:
        """The records with these ids (either tier), in the order asked; unknown ids are left out."""
        found = await self.store.get(bank_id, ids)
        return [found[record_id].record for record_id in dict.fromkeys(ids) if record_id in found]

    async def history(
        self, bank_id: str, record_id: str, subject: str, attribute: str
    ) -> list[SemanticRecord]:
        """Every value the attribute took, oldest first (by when each became valid)."""
        if record_id:
            found = await self.store.get(bank_id, [record_id])
            if record_id not in found:
                raise NotFound(f"record {record_id!r} not found in bank {bank_id!r}")
            subject, attribute = found[record_id].record.subject, found[record_id].record.attribute
            if not subject or not attribute:
                raise FailedPrecondition(f"record {record_id!r} is not a fact with a subject and attribute")
        elif not subject or not attribute:
            raise InvalidArgument("subject", "give record_id, or subject and attribute")
        records = await self.store.facts_about(bank_id, [(subject, attribute)], current_only=False)
        oldest = datetime.min.replace(tzinfo=UTC)
        return sorted(records, key=lambda r: (r.valid_from or oldest, r.current, r.id))

    async def reviews(self, bank_id: str, limit: int) -> list[ReviewItem]:
        """Queued conflicts, oldest first."""
        return await self.store.reviews(bank_id, limit)

    async def resolve(self, bank_id: str, review_id: str, resolution: Resolution) -> SemanticRecord:
        """Accept: the candidate supersedes what is current now. Reject: the candidate is kept as
        history that never held. Returns the record current afterwards.

        Under the bank's lock; the item leaves the queue only after its decision is written (a retry
        applies it again, to the same end). A candidate whose turns were all deleted writes nothing."""
        async with self._lock(bank_id):
            item = await self.store.get_review(bank_id, review_id)
            if item is None:
                raise NotFound(f"review item {review_id!r} not found in bank {bank_id!r}")
            alive = await self._alive(bank_id, [item.candidate])
            if not alive:
                await self.store.drop_review(bank_id, review_id)
                raise NotFound(f"review item {review_id!r}: the turns it stood on were deleted")
            current = await self._decide(bank_id, replace(item, candidate=alive[0]), resolution)
            await self.store.drop_review(bank_id, review_id)
            return current

    async def _decide(self, bank_id: str, item: ReviewItem, resolution: Resolution) -> SemanticRecord:
        """Write a decision (by id: writing it twice ends the same)."""
        review_id = item.id
        candidate = item.candidate
        [vector] = await self.embedder.embed(bank_id, [embedding_text(candidate)])
        now = self.clock()
        if resolution is Resolution.REJECT:
            since = candidate.valid_from or now
            await self.store.upsert(
                bank_id,
                [EmbeddedRecord(replace(candidate, valid_to=since, superseded_by=item.current.id), vector)],
            )
            log.info("review rejected", extra={"review_id": review_id})
            return item.current
        live = await self.store.facts_about(
            bank_id, [(candidate.subject, candidate.attribute)], current_only=True
        )
        await self.store.upsert(bank_id, [EmbeddedRecord(candidate, vector)])
        for old in live:
            if old.id != candidate.id:
                await self.store.supersede(
                    bank_id, old.id, max(now, candidate.valid_from or now), candidate.id
                )
        log.info("review accepted", extra={"review_id": review_id, "superseded": [r.id for r in live]})
        return candidate

    async def mark_cold(
        self, bank_id: str, ids: Sequence[str], unused_before: datetime | None, importance_below: float
    ) -> int:
        """Move records to the cold tier; returns how many moved."""
        moved = await self.store.mark_cold(bank_id, ids, unused_before, importance_below)
        log.info("marked cold", extra={"records": moved})
        return moved

    async def entities(self, bank_id: str, limit: int) -> list[Entity]:
        """The bank's entities by name."""
        return await self.store.list_entities(bank_id, limit)

    # ----- entity pages (read even when this layer no longer writes them) --------------------------
    async def list_pages(
        self, bank_id: str, limit: int, entity_type: str = "", prefix: str = "", token: str = ""
    ) -> tuple[list[Entity], str]:
        """One page of the bank's entities by name, and the token of the next."""
        return await self._pages.list(bank_id, limit, entity_type, prefix, token)

    async def entity_page(self, bank_id: str, name: str, mention_limit: int, token: str = "") -> EntityPage:
        """What is known about one entity (:class:`~hindsight.semantic.pages.EntityPage`)."""
        return await self._pages.page(bank_id, name, mention_limit, token)

    async def entity_matches(
        self, bank_id: str, query: str | Phrasings, max_share: float, named_limit: int
    ) -> list[EntityMatch]:
        """The entities the query (or a rewrite of it) names, with the turns that name them."""
        phrasings = Phrasings.of(query)
        keys = list(dict.fromkeys(key for text in phrasings.texts for key in query_keys(text)))
        return await self._pages.matches(bank_id, keys[:MAX_QUERY_KEYS], max_share, named_limit)

    async def delete(
        self,
        bank_id: str,
        ids: Sequence[str],
        source_turn_ids: Sequence[str],
        session_id: str = "",
        whole_bank: bool = False,
        archived: bool = False,
    ) -> int:
        """Delete records by id, and turns that are gone (named, or a session's) with what stands on them
        (:mod:`.erase`: lineage subtracted, tombstones left; ``archived``: a restore may lift them), or
        the whole bank; returns how many records went. A record whose successor is deleted becomes
        current again, unless that successor was superseded itself (an update's old version, archived):
        then the successor's successor replaces it, as it replaced the deleted one. It becomes current
        only while it stands on a live turn (:func:`.erase.reelect`): a value whose turns are all archived
        or replaced stays history."""
        async with self._lock(bank_id):
            self._pages.forget(bank_id)
            if whole_bank:
                turns = await self.store.bank_turns(bank_id)
                deleted = await self.store.delete_bank(bank_id)
                await self.store.bury(bank_id, turns, recoverable=False)
                log.info("deleted bank", extra={"records": deleted})
                return deleted
            done = await erase(self.store, bank_id, ids, source_turn_ids, session_id, archived)
            successors = _successors(done.gone, done.links)
            relinked = 0
            for record_id, successor in successors.items():
                relinked += await self.store.relink(bank_id, record_id, successor)
            restored = await reelect(self.store, bank_id, [i for i in done.gone if i not in successors])
            await self.store.rebuild_entities(bank_id, sorted(done.touched))
            await self._unread_replies(bank_id, done.gone)
            if done.orphans:  # a review whose rival went: its candidate is settled as if it came now
                await self._write(bank_id, done.orphans, Extraction())
            self._pages.forget(bank_id)
            log.info("deleted", extra={"records": len(done.gone), "restored": restored, "relinked": relinked})
            return len(done.gone)

    async def import_learned(
        self,
        bank_id: str,
        records: Sequence[SemanticRecord],
        reviews: Sequence[ReviewItem],
        replace_all: bool,
    ) -> ImportedLearned:
        """An export's learned records and review items, written as they were (:mod:`.importing`)."""
        async with self._lock(bank_id):
            self._pages.forget(bank_id)
            done = await import_learned(self.store, self.embedder, bank_id, records, reviews, replace_all)
            self._pages.forget(bank_id)
            return done

    async def _unread_replies(self, bank_id: str, gone: Sequence[str]) -> None:
        """Re-embed alone the turns whose vector read a deleted turn as the turn they answer: a vector
        holds no words of a deleted turn."""
        replies = [record for record in await self.store.replies_to(bank_id, gone) if record.id not in gone]
        if not replies:
            return
        alone = [replace(record, replies_to="", replies_to_text="") for record in replies]
        vectors = await self.embedder.embed(bank_id, [embedding_text(record) for record in alone])
        items = [EmbeddedRecord(r, v) for r, v in zip(alone, vectors, strict=True)]
        await write_in_tier(self.store, bank_id, items)
        log.info("replies re-embedded alone", extra={"records": len(alone)})


def _successors(gone: Sequence[str], superseded_by: dict[str, str]) -> dict[str, str]:
    """Deleted id -> the first record after it in its chain that is not deleted too (``superseded_by``:
    the links of the deleted records known), for those that have one."""
    deleted = set(gone)
    found: dict[str, str] = {}
    for record_id in gone:
        successor, seen = superseded_by.get(record_id, ""), {record_id}
        while successor in deleted and successor not in seen:
            seen.add(successor)
            successor = superseded_by.get(successor, "")
        if successor and successor not in deleted:
            found[record_id] = successor
    return found
