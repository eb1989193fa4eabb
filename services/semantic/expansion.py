"""Graph expansion of a search: facts about the entities related to those a query names.

A query's candidate names (:func:`query_keys`) are looked up in the bank's entity graph; relations are
followed breadth-first (up to two hops), and facts about the entities reached join the hits, ranked below
the best direct hit by :data:`HOP_DECAY` per hop.
"""

from __future__ import annotations

import re
from dataclasses import replace

from hindsight.runtime.records import TimeRange
from hindsight.runtime.text import key_of
from hindsight.semantic.records import DISTILLED, Entity, ScoredRecord, SearchOptions
from hindsight.semantic.store import VectorStore

HOP_DECAY = 0.9
"""An expanded fact scores at least ``best direct score * HOP_DECAY ** hops``."""
MAX_QUERY_KEYS = 300
"""Candidate entity names read from one query."""


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


async def expand(
    store: VectorStore,
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
    anchors = await store.entities_named(bank_id, query_keys(query))
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
        frontier = await store.entities_named(bank_id, list(targets))
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
    facts = await store.search(
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
