"""Semantic memory's logic: extract, embed, merge or supersede, store; search with graph expansion.

The write path of one Upsert, in order: facts and entities are extracted from the turns; every text
(records and facts) is embedded in one batched call; a distilled record (fact, preference, rule,
entity summary) at cosine >= the dedup threshold to a current one of its kind merges into it (newer
text wins, provenance and merged ids unioned); a fact about a subject's single-valued attribute that
contradicts the current value supersedes it, becomes history itself, or goes to the review queue
(see :func:`settle`); then everything is written in one call.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import numpy as np

from hindsight.runtime.background import spawn
from hindsight.runtime.errors import FailedPrecondition, InvalidArgument, NotFound
from hindsight.runtime.offload import off_loop
from hindsight.runtime.records import TimeRange, content_id
from hindsight.runtime.rewrites import Phrasings
from hindsight.runtime.trust import untrusted
from hindsight.semantic.embedder import Embedder
from hindsight.semantic.extract import Extraction, RuleExtractor, entities_of_fact, is_multi_valued
from hindsight.semantic.llm_extract import LLMExtractor
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
)
from hindsight.semantic.store import VectorStore, key_of
from hindsight.semantic.trust import guard, merged_meta, unverified
from hindsight.semantic.turn_chains import TurnChains

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 10
MAX_LIMIT = 200
DEDUP_THRESHOLD = 0.95
HOP_DECAY = 0.9
"""An expanded fact scores at least ``best direct score * HOP_DECAY ** hops``."""
MAX_LLM_PASSES = 8
"""LLM extractions running after their Upserts replied; beyond it a batch keeps the rules' facts only."""
MAX_QUERY_KEYS = 300
"""Candidate entity names read from one query."""
EXTRACT_OFF_LOOP_CHARS = 1_500
"""Characters of turns from which rule extraction (~1.5 us per character) runs on a worker thread."""
TWIN_OFF_LOOP_VALUES = 100_000
"""Vector values (records times dimensions) from which a near-duplicate comparison runs on a worker thread."""


def embedding_text(record: SemanticRecord) -> str:
    """What a record's vector encodes: ``"speaker: text"`` for a turn whose speaker is known, else the text.

    Questions name people ("What did Caroline paint?"); a turn's text rarely names its own speaker,
    so without it a vector cannot tell whose memory it is (R@10 of the vector channel on the LoCoMo
    dev split: 0.19 for the text alone, 0.33 with the speaker; docs/retrieval.md). Facts name their
    subject in their text already.
    """
    if record.speaker and record.kind not in DISTILLED:
        return f"{record.speaker}: {record.text}"
    return record.text


def utc_now() -> datetime:
    """The real clock; tests inject their own."""
    return datetime.now(UTC)


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
    )


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


def query_keys(query: str) -> list[str]:
    """Names a query might hold, in :func:`key_of` form: Latin word runs of one to three words (a
    possessive ``'s`` dropped) and Chinese runs of two to four characters."""
    keys: list[str] = []
    words = [re.sub(r"['\u2019]s$", "", w) for w in re.findall(r"[A-Za-z][\w'\u2019-]*", query)]
    for size in (1, 2, 3):
        keys.extend(" ".join(words[i : i + size]) for i in range(len(words) - size + 1))
    for run in re.findall(r"[\u4e00-\u9fff]+", query):
        for size in (2, 3, 4):
            keys.extend(run[i : i + size] for i in range(len(run) - size + 1))
    return list(dict.fromkeys(key_of(k) for k in keys if k))[:MAX_QUERY_KEYS]


@dataclass
class _Batch:
    """The records one upsert will write, by id, with their vectors."""

    records: dict[str, EmbeddedRecord] = field(default_factory=dict)
    superseded: list[tuple[str, datetime, str]] = field(default_factory=list)
    reviews: list[ReviewItem] = field(default_factory=list)

    def put(self, record: SemanticRecord, vector: list[float]) -> None:
        self.records[record.id] = EmbeddedRecord(record, vector)


@dataclass
class SemanticEngine:
    """Upsert, search and delete inside one bank."""

    store: VectorStore
    embedder: Embedder
    extractor: RuleExtractor | None = field(default_factory=RuleExtractor)
    llm: LLMExtractor | None = None
    hops: int = 0
    """Entity-graph expansion depth of a search that does not say."""
    dedup_threshold: float = DEDUP_THRESHOLD
    clock: Callable[[], datetime] = utc_now
    corrections: bool = True
    """Whether a turn that corrects or restates an earlier one supersedes it (:mod:`.turn_chains`)."""
    pages: bool = True
    """Whether turns are read for the entities they mention, kept on entity pages (:mod:`.pages`)."""
    defences: bool = True
    """Poisoning defences: unverified facts stay low and marked until corroborated (:mod:`.trust`)."""
    llm_pass_timeout: float = 300.0
    """Seconds one background LLM fact pass may take in all: the LLM's answer, then embedding and writing
    its facts (it runs after the Upsert answered, outside that call's deadline)."""
    _pending: set[asyncio.Task[None]] = field(default_factory=set, init=False, repr=False)
    _pages: PageKeeper = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._pages = PageKeeper(self.store)

    # ----- write path ---------------------------------------------------------------------------------
    async def upsert(self, bank_id: str, records: Sequence[SemanticRecord]) -> int:
        """Extract by rules, embed every text in one batched call, merge or supersede, write; returns the
        number of records given. The LLM extractor, when configured, runs after the reply (its facts join
        when it answers), so retain never waits for it.

        A failed embedding writes nothing. Writing a record again by id (a re-delivery) replaces it, and
        the facts extracted from it again merge into themselves, so re-delivery changes nothing.
        """
        given = list({record.id: record for record in records}.values())
        turns = [record for record in given if record.kind is RecordKind.TURN]
        extraction = await self._extract(turns)
        await self._write(bank_id, given, extraction)
        if self.llm is not None and turns and len(self._pending) >= MAX_LLM_PASSES:
            log.warning(
                "llm fact passes all busy; this batch keeps the rules' facts", extra={"turns": len(turns)}
            )
        elif self.llm is not None and turns:
            spawn(
                self._llm_pass(self.llm, bank_id, turns),
                name="llm-fact-pass",
                timeout=self.llm_pass_timeout,
                keep=self._pending,
            )
        return len(given)

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

    async def _llm_pass(self, llm: LLMExtractor, bank_id: str, turns: Sequence[SemanticRecord]) -> None:
        """Runs after the Upsert replied: a failure is logged, the rules' facts stay."""
        try:
            found = await llm.extract(bank_id, turns)
            if found is not None and found.facts:
                await self._write(bank_id, [], found, replaced_versions(turns))
        except Exception:
            log.exception("llm fact pass failed", extra={"bank_id": bank_id})

    async def drain(self) -> None:
        """Wait for the LLM passes in flight (on shutdown, and in tests)."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    async def _write(
        self,
        bank_id: str,
        given: list[SemanticRecord],
        extraction: Extraction,
        versions: dict[str, frozenset[str]] | None = None,
    ) -> None:
        """Embed, merge or supersede, then write records, links, review items and entities, in that order
        (records first: a link or an entity never points at a record that was not written). ``versions``:
        the updates among the turns (:func:`replaced_versions`; by default read from ``given``)."""
        page_entities: list[Entity] = []
        if self.pages:
            given, page_entities = await self._pages.annotate(bank_id, given, extraction)
        ids = {record.id for record in given}
        everything = given + [fact for fact in extraction.facts if fact.id not in ids]
        if self.defences:
            everything = [guard(record) for record in everything]
        if not everything:
            return
        vectors = await self.embedder.embed(bank_id, [embedding_text(record) for record in everything])
        items = [EmbeddedRecord(r, v) for r, v in zip(everything, vectors, strict=True)]
        batch = _Batch()
        if self.corrections:
            items = await self._chain_turns(bank_id, items, extraction, batch)
        for item in items:
            if item.record.kind not in DISTILLED:
                batch.put(item.record, item.vector)
        distilled = [item for item in items if item.record.kind in DISTILLED]
        await self._distil(
            bank_id, distilled, batch, replaced_versions(given) if versions is None else versions
        )
        entities = [*extraction.entities, *page_entities]
        for record in given:  # facts the caller distilled feed the graph too
            if record.kind in DISTILLED and record.subject and record.attribute and record.value:
                entities.extend(
                    entities_of_fact(record.subject, record.attribute, record.value, record.speaker)
                )
        written = await self.store.upsert(bank_id, list(batch.records.values()))
        for record_id, valid_to, by in batch.superseded:
            await self.store.supersede(bank_id, record_id, valid_to, by)
        for review in batch.reviews:
            await self.store.add_review(bank_id, review)
        if entities:
            await self.store.put_entities(bank_id, entities)
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
        chains = TurnChains(self.extractor or RuleExtractor(), clock=self.clock, guarded=self.defences)
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
        fresh = [item for item in items if item.record.id not in known]
        # Facts with a subject are compared with that subject's current facts, read in one filtered call
        # (which also gives the values they may contradict); others by a nearest-neighbour query each.
        subjects = sorted({key_of(item.record.subject) for item in items if item.record.subject})
        about = await self.store.current_about(bank_id, subjects) if subjects else []
        loose = [item for item in fresh if not item.record.subject]
        nearest = dict(
            zip(
                (item.record.id for item in loose),
                await self.store.nearest(bank_id, loose, self.dedup_threshold),
                strict=True,
            )
        )
        current: dict[tuple[str, str], SemanticRecord] = {}
        for held in about:
            record = held.record
            if record.attribute and not is_multi_valued(record.attribute):
                current[(key_of(record.subject), record.attribute)] = record
        for item in sorted(
            items, key=lambda i: i.record.valid_from or i.record.meta.time or datetime.min.replace(tzinfo=UTC)
        ):
            record, vector = item.record, item.vector
            if record.id in known:  # written again by id: its text, the validity and merges learned since
                batch.put(merge_into(known[record.id].record, record, self.defences), vector)
                continue
            pool = [held for held in about if held.record.id not in batch.records]
            twin = await self._twin(item, [*pool, *batch.records.values()]) or nearest.get(record.id)
            if twin is not None:
                base = batch.records[twin.id].record if twin.id in batch.records else twin
                batch.put(merge_into(base, record, self.defences), vector)
                continue
            record = replace(record, valid_from=record.valid_from or record.meta.time or self.clock())
            key = (key_of(record.subject), record.attribute)
            old = current.get(key) if record.subject and record.attribute else None
            if old is None or key_of(old.value) == key_of(record.value) or is_multi_valued(record.attribute):
                batch.put(record, vector)
                if record.subject and record.attribute and not is_multi_valued(record.attribute):
                    current[key] = record
                continue
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
                current[key] = record
            elif outcome is Outcome.HISTORY:
                successor = await self._successor(bank_id, record, old, batch)
                batch.put(
                    replace(
                        record, valid_to=successor.valid_from or self.clock(), superseded_by=successor.id
                    ),
                    vector,
                )
            else:
                batch.reviews.append(
                    ReviewItem(content_id(bank_id, record.id, old.id), record, old, reason, self.clock())
                )

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
    ) -> list[ScoredRecord]:
        """The bank's records closest in meaning to ``query``, best first, plus facts about entities
        related to those the query names (up to ``hops`` relations away).

        With rewrites, every phrasing is embedded in one batched call and searched, and their lists are
        merged into one (see :mod:`hindsight.runtime.rewrites`).
        """
        chosen = options or SearchOptions()
        phrasings = Phrasings.of(query)
        hops = self.hops if chosen.hops is None else chosen.hops
        vectors = await self.embedder.embed(bank_id, list(phrasings.texts), query=True)

        nearest = await self.store.search_many(bank_id, vectors, limit, time_range, chosen)

        async def one(text: str, vector: list[float], hits: list[ScoredRecord]) -> list[ScoredRecord]:
            """One phrasing's hits: nearest records, the entity graph's facts, then the every-tag filter."""
            if hops > 0:
                hits = await self._expand(bank_id, text, vector, limit, time_range, chosen, hops, hits)
            if chosen.all_tags and chosen.tags:
                hits = [hit for hit in hits if hit.record.meta.carries_tags(chosen.tags)]
            return hits

        lists = await asyncio.gather(
            *(one(t, v, h) for t, v, h in zip(phrasings.texts, vectors, nearest, strict=True))
        )
        return phrasings.merge(lists, key=lambda hit: hit.record.id)

    async def _expand(
        self,
        bank_id: str,
        query: str,
        vector: list[float],
        limit: int,
        time_range: TimeRange,
        options: SearchOptions,
        hops: int,
        hits: list[ScoredRecord],
    ) -> list[ScoredRecord]:
        """Breadth-first over relations from the query's entities; facts about the reached ones join the
        hits with at least ``best score * HOP_DECAY ** hops`` (at most half the limit of them)."""
        anchors = await self.store.entities_named(bank_id, query_keys(query))
        if not anchors:
            return hits
        paths: dict[str, tuple[str, ...]] = {key_of(e.name): (e.name,) for e in anchors}
        frontier: list[Entity] = anchors
        for _ in range(min(hops, 2)):
            targets: dict[str, tuple[str, ...]] = {}
            for entity in frontier:
                for relation in entity.relations:
                    key = key_of(relation.target)
                    if key not in paths and key not in targets:
                        targets[key] = (*paths[key_of(entity.name)], relation.target)
            if not targets:
                break
            paths.update(targets)
            frontier = await self.store.entities_named(bank_id, list(targets))
            for entity in frontier:  # matched by an alias: the path goes on under its own name
                own = key_of(entity.name)
                if own not in paths:
                    keys = [own, *(key_of(alias) for alias in entity.aliases)]
                    path = next((targets[k] for k in keys if k in targets), None)
                    if path is not None:
                        paths[own] = (*path[:-1], entity.name)
        reached = {key: path for key, path in paths.items() if len(path) > 1}
        if not reached:
            return hits
        facts = await self.store.search(
            bank_id,
            vector,
            max(1, limit // 2),
            time_range,
            replace(options, kinds=options.kinds or DISTILLED, min_score=0.0),
            subjects=[path[-1] for path in reached.values()],
        )
        best = hits[0].score if hits else 0.0
        by_id = {hit.record.id: hit for hit in hits}
        for fact in facts:
            path = reached.get(key_of(fact.record.subject))
            if path is None:
                continue
            score = max(fact.score, best * HOP_DECAY ** (len(path) - 1))
            if score < options.min_score:
                continue
            held = by_id.get(fact.record.id)
            if held is None or held.score < score:
                by_id[fact.record.id] = ScoredRecord(fact.record, score, path)
        return sorted(by_id.values(), key=lambda hit: -hit.score)[:limit]

    # ----- history, review, tiers, delete -------------------------------------------------------------
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
        history that never held. Returns the record current afterwards."""
        item = await self.store.take_review(bank_id, review_id)
        if item is None:
            raise NotFound(f"review item {review_id!r} not found in bank {bank_id!r}")
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
    ) -> int:
        """Delete by record id, cited source turn or session (or the whole bank); returns how many
        records went. A record whose successor is deleted becomes current again, unless that successor
        was superseded itself (an update's old version, archived): then the successor's successor replaces
        it, as it replaced the deleted one."""
        self._pages.forget(bank_id)
        if whole_bank:
            deleted = await self.store.delete_bank(bank_id)
            log.info("deleted bank", extra={"records": deleted})
            return deleted
        named = await self.store.get(bank_id, ids) if ids else {}
        gone = await self.store.delete(bank_id, ids, source_turn_ids, session_id)
        successors = _successors(gone, {i: held.record.superseded_by for i, held in named.items()})
        relinked = 0
        for record_id, successor in successors.items():
            relinked += await self.store.relink(bank_id, record_id, successor)
        restored = await self.store.restore(bank_id, [i for i in gone if i not in successors])
        log.info("deleted", extra={"records": len(gone), "restored": restored, "relinked": relinked})
        return len(gone)


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
