"""Episode rows: columns, row conversion, statement parameters, filters and the dedup key.

Kept apart from the store's families so that the episode writers (written, segmented, shared, imported),
the purge (which remakes episodes through :mod:`hindsight.episodic.lineage`) and the export build their
statements from the same definitions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from psycopg import sql
from psycopg.rows import DictRow

from hindsight.episodic.models import Episode, EpisodeFilter, Outcome
from hindsight.episodic.rows import record_conditions
from hindsight.runtime.records import RecordMeta
from hindsight.runtime.text import search_terms
from hindsight.runtime.tsearch import tsvector_literal

EPISODE_COLUMN_NAMES = (
    "id, session_id, situation, action, outcome, lesson, task_type, tools, result, source, trust, tags, "
    "importance, source_turn_ids, occurred_at, recorded_at, schema_version, agent"
).split(", ")
EPISODE_COLUMNS = sql.SQL(", ").join(map(sql.Identifier, EPISODE_COLUMN_NAMES))
EPISODE_COLUMNS_OF_E = sql.SQL(", ").join(sql.Identifier("e", name) for name in EPISODE_COLUMN_NAMES)


def episode_from_row(row: DictRow) -> Episode:
    meta = RecordMeta.from_fields(row, time=row["occurred_at"])
    return Episode(
        id=row["id"],
        session_id=row["session_id"],
        situation=row["situation"],
        action=row["action"],
        outcome=row["outcome"],
        lesson=row["lesson"],
        task_type=row["task_type"],
        tools=tuple(row["tools"]),
        result=Outcome(row["result"]),
        meta=meta,
        recorded_at=row["recorded_at"],
    )


def episode_terms(episode: Episode) -> str:
    """The indexed terms of an episode (plain terms, as its queries are analysed)."""
    return tsvector_literal(episode.text_parts())


def episode_params(bank_id: str, episode: Episode) -> dict[str, Any]:
    return {
        "bank_id": bank_id,
        "id": episode.id,
        "session_id": episode.session_id,
        "situation": episode.situation,
        "action": episode.action,
        "outcome": episode.outcome,
        "lesson": episode.lesson,
        "task_type": episode.task_type,
        "tools": list(episode.tools),
        "result": episode.result.value,
        **episode.meta.to_fields(),
        "occurred_at": episode.meta.time,
        "search_terms": episode_terms(episode),
    }


def episode_update_params(bank_id: str, episode: Episode) -> dict[str, Any]:
    """An episode's columns for an update in place, its dedup key included."""
    return {**episode_params(bank_id, episode), "dedup_key": dedup_key(episode)}


def episode_conditions(alias: str, where: EpisodeFilter, params: dict[str, Any]) -> list[sql.Composable]:
    """SQL conditions for an episode filter: the task type and tools pre-filter candidates before ranking."""

    def col(name: str) -> sql.Composable:
        return sql.Identifier(alias, name)

    conditions: list[sql.Composable] = [sql.SQL("{} IS NULL").format(col("archived_at"))]
    if where.task_type:
        params["f_task_type"] = where.task_type
        conditions.append(sql.SQL("{} = %(f_task_type)s").format(col("task_type")))
    if where.tools:
        params["f_tools"] = list(where.tools)
        conditions.append(sql.SQL("{} && %(f_tools)s::text[]").format(col("tools")))
    if where.result is not Outcome.UNSPECIFIED:
        params["f_result"] = where.result.value
        conditions.append(sql.SQL("{} = %(f_result)s").format(col("result")))
    conditions += record_conditions(col, where.tags, where.sources, where.min_trust, where.time_range, params)
    return conditions


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """Overlap of two term sets: shared over all."""
    left, right = set(a), set(b)
    if not left or not right:
        return 0.0
    return len(left & right) / len(left | right)


def dedup_terms(episode: Episode) -> set[str]:
    """What two episodes must share to be the same: the terms of situation and action."""
    return set(search_terms(f"{episode.situation} {episode.action}"))


MAX_DEDUP_KEY_CHARS = 512
"""Longer keys are stored as their digest: a btree index entry must stay under a third of a page."""


def dedup_key(episode: Episode) -> str:
    """The normalised situation and action: equal keys are certainly the same episode (a long one as its
    SHA-256, which keeps equal keys equal and fits the index)."""
    key = " ".join(sorted(dedup_terms(episode)))
    if len(key) <= MAX_DEDUP_KEY_CHARS:
        return key
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()
