"""Keyword search scores the same as a plain Okapi BM25 computed here, before and after every kind of write.

The expected ranking is computed in Python from the live turns the test keeps (same analysis, k1, b and
decay as the store promises), and compared with what the store returns: ids in order and scores to
float tolerance. A bank of a few hundred turns over common words makes searches read postings in rounds
and stop on a bound, so a wrong bound or a drifted statistic shows up as a different ranking.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from psycopg import sql

from hindsight.episodic.engine import EpisodicMemory
from hindsight.episodic.keyword import BM25_B, BM25_K1, FIRST_BUDGET
from hindsight.episodic.models import PurgeScope, TurnFilter
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.store import PostgresEpisodicStore
from hindsight.runtime.records import RecordMeta, TimeRange, Turn
from hindsight.runtime.text import search_terms

K1, B = 1.2, 0.75
T0 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
NOW = T0 + timedelta(days=12)
BANK = "b"


@dataclass(frozen=True)
class Doc:
    """A turn as the test knows it."""

    id: str
    text: str
    time: datetime
    session: str = "s1"
    speaker: str = ""
    tags: tuple[str, ...] = ()

    @property
    def terms(self) -> list[str]:
        return search_terms(" ".join(part for part in (self.speaker, self.text) if part))

    def turn(self) -> Turn:
        meta = RecordMeta(time=self.time, tags=self.tags)
        return Turn(self.id, self.session, self.text, speaker=self.speaker, meta=meta)


@dataclass
class Bank:
    """What the bank holds: live turns and archived ones (which a restore brings back)."""

    live: dict[str, Doc] = field(default_factory=dict)
    archived: dict[str, Doc] = field(default_factory=dict)


def decay(settings: EpisodicSettings, at: datetime) -> float:
    age = max((NOW - at).total_seconds(), 0.0)
    half_life = settings.half_life_days * 86_400.0
    return settings.decay_floor + (1 - settings.decay_floor) * 0.5 ** (age / half_life)


def expected(
    bank: Bank, settings: EpisodicSettings, query: str, limit: int, where: TurnFilter | None = None
) -> list[tuple[str, float]]:
    """Okapi BM25 over the live turns (Lucene's IDF), times decay; filters after scoring."""
    docs = list(bank.live.values())
    if not docs:
        return []
    n = len(docs)
    lengths = {doc.id: len(doc.terms) for doc in docs}
    avgdl = max(sum(lengths.values()) / n, 1.0)
    df = Counter(term for doc in docs for term in set(doc.terms))
    qtf = Counter(search_terms(query))
    scored = []
    for doc in docs:
        tf = Counter(doc.terms)
        if not any(tf[term] for term in qtf):
            continue
        bm25 = 0.0
        for term, count in qtf.items():
            if tf[term]:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                norm = K1 * (1 - B + B * lengths[doc.id] / avgdl)
                bm25 += count * idf * tf[term] * (K1 + 1) / (tf[term] + norm)
        scored.append((doc, bm25 * decay(settings, doc.time)))
    if where is not None:
        window = where.time_range
        scored = [
            (doc, score)
            for doc, score in scored
            if (not where.session_id or doc.session == where.session_id)
            and set(where.tags) <= set(doc.tags)
            and (window.start is None or doc.time >= window.start)
            and (window.end is None or doc.time < window.end)
        ]
    scored.sort(key=lambda item: (-item[1], -item[0].time.timestamp(), item[0].id))
    return [(doc.id, score) for doc, score in scored[:limit]]


async def assert_same_ranking(
    memory: EpisodicMemory,
    bank: Bank,
    settings: EpisodicSettings,
    queries: Sequence[str],
    limits: Sequence[int] = (3, 10, 40),
    where: TurnFilter | None = None,
) -> None:
    for query in queries:
        for limit in limits:
            hits = await memory.search_turns(BANK, query, where or TurnFilter(), limit)
            want = expected(bank, settings, query, limit, where)
            assert [hit.turn.id for hit in hits] == [doc_id for doc_id, _ in want], (query, limit)
            for hit, (_, score) in zip(hits, want, strict=True):
                assert hit.score == pytest.approx(score, rel=1e-9), (query, limit, hit.turn.id)


async def assert_exact_statistics(settings: EpisodicSettings, bank: Bank) -> None:
    """The keyword tables hold exactly the live turns' counts, lengths, document frequencies, postings."""
    docs = list(bank.live.values())
    tables = {name: sql.Identifier(settings.schema, name) for name in ("keyword_banks", "keyword_terms")}
    tables["postings"] = sql.Identifier(settings.schema, "keyword_postings")
    async with await psycopg.AsyncConnection.connect(settings.database_url, autocommit=True) as conn:
        row = await (
            await conn.execute(
                sql.SQL("SELECT turns, terms FROM {} WHERE bank_id = %s").format(tables["keyword_banks"]),
                (BANK,),
            )
        ).fetchone()
        assert row == ((len(docs), sum(len(doc.terms) for doc in docs)) if docs else None)
        stored = await (
            await conn.execute(
                sql.SQL("SELECT term, turns, max_tf FROM {} WHERE bank_id = %s").format(
                    tables["keyword_terms"]
                ),
                (BANK,),
            )
        ).fetchall()
        df = Counter(term for doc in docs for term in set(doc.terms))
        assert {term: turns for term, turns, _ in stored} == dict(df)
        highest = Counter[str]()
        for doc in docs:
            for term, count in Counter(doc.terms).items():
                highest[term] = max(highest[term], count)
        assert all(max_tf >= highest[term] for term, _, max_tf in stored)  # an upper bound, never lower
        postings = await (
            await conn.execute(
                sql.SQL("SELECT count(*) FROM {} WHERE bank_id = %s").format(tables["postings"]), (BANK,)
            )
        ).fetchone()
        assert postings == (sum(df.values()),)


@pytest.fixture
def memory(episodic_store: PostgresEpisodicStore, episodic_settings: EpisodicSettings) -> EpisodicMemory:
    return EpisodicMemory(episodic_store, episodic_settings, clock=lambda: NOW)


SMALL = [
    Doc("a1", "We talked about the weather today, the weather was nice.", T0, speaker="Caroline"),
    Doc("a2", "Caroline painted a sunrise over the lake.", T0 + timedelta(minutes=7), speaker="Melanie"),
    Doc("a3", "The lake was frozen, we skated on the lake all afternoon.", T0 + timedelta(hours=5)),
    Doc("a4", "I bought a theremin at the market.", T0 + timedelta(days=1), session="s2"),
    Doc("a5", "Paint, paints, painted, painting: she paints every day.", T0 + timedelta(days=2)),
    Doc("a6", "Biscuit " + " ".join(f"filler{i}" for i in range(40)), T0 + timedelta(days=3)),
    Doc("a7", "Biscuit is asleep.", T0 + timedelta(days=3, minutes=1), tags=("pets",)),
    Doc("a8", "我们上周三去了西湖，湖边的风景很好。", T0 + timedelta(days=4), session="s2"),
    Doc("a9", "西湖的天气今天不错。", T0 + timedelta(days=5), speaker="小李"),
    Doc("a10", "The market sells weather vanes and lake maps.", T0 + timedelta(days=6), tags=("pets",)),
    Doc("a11", "Only stop words here: it is what it is.", T0 + timedelta(days=6, hours=1)),
    Doc("a12", "Melanie melanie MELANIE came by with her dog.", T0 + timedelta(days=7), speaker="Melanie"),
]
SMALL_QUERIES = [
    "weather",
    "the lake weather",
    "When does she paint sunrises?",
    "What did Melanie say about the dog?",
    "theremin market",
    "西湖 天气",
    "biscuit biscuit",
    "lake lake market",
    "nothing matches this",
]


async def test_scores_equal_plain_bm25_through_every_kind_of_write(
    memory: EpisodicMemory, episodic_settings: EpisodicSettings
) -> None:
    bank = Bank()
    await memory.record_turns(BANK, [doc.turn() for doc in SMALL])
    bank.live = {doc.id: doc for doc in SMALL}
    await assert_same_ranking(memory, bank, episodic_settings, SMALL_QUERIES)
    await assert_exact_statistics(episodic_settings, bank)

    assert await memory.forget_turns(BANK, ["a1", "a3", "a8"], hard=False) == 3
    for doc_id in ("a1", "a3", "a8"):
        bank.archived[doc_id] = bank.live.pop(doc_id)
    await assert_same_ranking(memory, bank, episodic_settings, SMALL_QUERIES)
    await assert_exact_statistics(episodic_settings, bank)

    assert await memory.restore_turns(BANK, ["a3", "a8"]) == 2
    for doc_id in ("a3", "a8"):
        bank.live[doc_id] = bank.archived.pop(doc_id)
    await assert_same_ranking(memory, bank, episodic_settings, SMALL_QUERIES)

    updated = await memory.update_turn(BANK, "a4", "I sold the theremin and bought a lake map.", None)
    old = bank.live.pop("a4")
    bank.archived["a4"] = old
    new = Doc(updated.turn.id, updated.turn.text, old.time, session=old.session)
    bank.live[new.id] = new
    await assert_same_ranking(memory, bank, episodic_settings, SMALL_QUERIES)
    await assert_exact_statistics(episodic_settings, bank)

    assert (await memory.purge(BANK, PurgeScope(ids=("a2", "a1")))).turns == 2  # one live, one archived
    bank.live.pop("a2")
    bank.archived.pop("a1")
    await assert_same_ranking(memory, bank, episodic_settings, SMALL_QUERIES)
    await assert_exact_statistics(episodic_settings, bank)

    late = [Doc("a13", "More weather talk by the lake.", T0 + timedelta(days=8))]
    assert (await memory.record_turns(BANK, [late[0].turn(), SMALL[4].turn()])).recorded == 1  # a5 again
    bank.live["a13"] = late[0]
    await assert_same_ranking(memory, bank, episodic_settings, SMALL_QUERIES)
    await assert_exact_statistics(episodic_settings, bank)

    await memory.purge(BANK, PurgeScope(whole_bank=True))
    bank = Bank()
    assert await memory.search_turns(BANK, "weather", TurnFilter(), 10) == []
    await assert_exact_statistics(episodic_settings, bank)  # no statistics (no words) left behind


def medium_corpus(count: int = 1200) -> list[Doc]:
    """Turns of a small vocabulary with a steep word frequency, in many lengths and sessions, 12 minutes
    apart over ten days (so decay varies a lot); tf of a common word is often 2 or more."""
    rng = random.Random(20260105)
    vocabulary = (
        "river stone garden candle window ladder pepper violin harbor meadow lantern copper "
        "saddle pillow marble falcon cactus tunnel walnut orchid ribbon anchor basket needle "
        "bottle castle dragon feather glacier helmet island jacket kettle lemon magnet nugget "
        "oyster parrot quartz rocket spider temple umpire vessel wagon yacht zebra almond bamboo "
        "cobalt dolphin ember fossil goblet hammock igloo jigsaw koala lagoon"
    ).split()
    weights = [1 / (rank + 1) ** 1.1 for rank in range(len(vocabulary))]
    docs = []
    for index in range(count):
        length = rng.choice([1, 2, 3, 4, 5, 6, 8, 10, 14, 20, 30])
        words = rng.choices(vocabulary, weights=weights, k=length)
        docs.append(
            Doc(
                f"m{index:03d}",
                " ".join(words),
                T0 + timedelta(minutes=12 * index),
                session=f"s{index // 120}",
                tags=("even",) if index % 2 == 0 else (),
            )
        )
    return docs


MEDIUM_QUERIES = [
    "river",  # the most common word: read in rounds, proven by the bound
    "stone",
    "river stone",
    "river river garden",
    "garden candle window",
    "lagoon",  # rare: read whole
    "river lagoon koala",
]


async def test_a_bank_read_in_rounds_ranks_exactly_as_plain_bm25(
    memory: EpisodicMemory, episodic_settings: EpisodicSettings
) -> None:
    docs = medium_corpus()
    bank = Bank(live={doc.id: doc for doc in docs})
    await memory.record_turns(BANK, [doc.turn() for doc in docs])
    common = Counter(term for doc in docs for term in set(doc.terms))
    assert common["river"] > FIRST_BUDGET  # so the first round cannot read it whole
    await assert_same_ranking(memory, bank, episodic_settings, MEDIUM_QUERIES)

    forgotten = [doc.id for doc in docs[::7]]
    assert await memory.forget_turns(BANK, forgotten, hard=False) == len(forgotten)
    for doc_id in forgotten:
        bank.archived[doc_id] = bank.live.pop(doc_id)
    await assert_same_ranking(memory, bank, episodic_settings, MEDIUM_QUERIES)
    restored = forgotten[::2]
    assert await memory.restore_turns(BANK, restored) == len(restored)
    for doc_id in restored:
        bank.live[doc_id] = bank.archived.pop(doc_id)
    for doc in docs[1:200:11]:
        if doc.id in bank.live:
            updated = await memory.update_turn(BANK, doc.id, f"{doc.text} river river lagoon", None)
            bank.archived[doc.id] = bank.live.pop(doc.id)
            bank.live[updated.turn.id] = Doc(
                updated.turn.id, updated.turn.text, doc.time, session=doc.session, tags=doc.tags
            )
    await assert_same_ranking(memory, bank, episodic_settings, MEDIUM_QUERIES)
    await assert_exact_statistics(episodic_settings, bank)


async def test_filters_apply_after_scoring_with_the_banks_statistics(
    memory: EpisodicMemory, episodic_settings: EpisodicSettings
) -> None:
    docs = medium_corpus()
    bank = Bank(live={doc.id: doc for doc in docs})
    await memory.record_turns(BANK, [doc.turn() for doc in docs])
    filters = [
        TurnFilter(session_id="s3"),  # a small window: scored whole
        TurnFilter(time_range=TimeRange(start=T0 + timedelta(days=2), end=T0 + timedelta(days=3))),
        TurnFilter(time_range=TimeRange(start=T0 + timedelta(days=1))),  # nine days: still scored whole
        TurnFilter(tags=("even",)),  # no window: read in rounds, each candidate checked
    ]
    for where in filters:
        await assert_same_ranking(memory, bank, episodic_settings, MEDIUM_QUERIES, (5, 30), where)


def test_the_test_uses_the_stores_parameters() -> None:
    assert (BM25_K1, BM25_B) == (K1, B)
