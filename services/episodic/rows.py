"""Turn rows and the SQL pieces the layer's stores share: columns, row conversion, insert parameters,
filters, time decay.

Kept apart so that each store (the record store's families under ``store``, keyword search in
``keyword``, the review queue in ``quarantine``, the export) builds its statements from the same
definitions without importing the others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from psycopg import sql
from psycopg.rows import DictRow

from hindsight.episodic.models import TurnFilter
from hindsight.runtime.records import RecordMeta, Role, Source, TimeRange, Trust, Turn

if TYPE_CHECKING:
    from hindsight.episodic.keyword import TurnTerms

TURN_COLUMN_NAMES = (
    "id, session_id, role, speaker, text, source, trust, occurred_at, tags, importance, "
    "source_turn_ids, schema_version, agent"
).split(", ")
TURN_COLUMNS = sql.SQL(", ").join(map(sql.Identifier, TURN_COLUMN_NAMES))
TURN_COLUMNS_OF_T = sql.SQL(", ").join(sql.Identifier("t", name) for name in TURN_COLUMN_NAMES)
"""The same columns, qualified with the alias ``t``."""


@dataclass(frozen=True)
class ScoredTurn:
    """A turn found by keyword search, with its rank (higher is better, comparable within one search)."""

    turn: Turn
    score: float
    bank_id: str = ""
    """Its bank, in a search over several banks (empty in a search of one)."""


@dataclass(frozen=True)
class Decay:
    """Time decay of keyword scores: ``floor + (1 - floor) * 0.5 ** (age / half_life)``, age at ``now``."""

    now: datetime
    half_life_days: float
    floor: float


def turn_from_row(row: DictRow) -> Turn:
    meta = RecordMeta.from_fields(row, time=row["occurred_at"])
    return Turn(
        id=row["id"],
        session_id=row["session_id"],
        text=row["text"],
        role=Role(row["role"]),
        speaker=row["speaker"],
        meta=meta,
    )


def turn_params(bank_id: str, turn: Turn, terms: TurnTerms) -> dict[str, Any]:
    """A turn's columns for an insert, with its analysed keyword terms."""
    meta = turn.meta
    return {
        "bank_id": bank_id,
        "id": turn.id,
        "session_id": turn.session_id,
        "role": turn.role.value,
        "speaker": turn.speaker,
        "text": turn.text,
        **meta.to_fields(),
        "occurred_at": meta.time,
        **terms.params(),
    }


def time_conditions(
    column: sql.Composable, time_range: TimeRange, params: dict[str, Any]
) -> list[sql.Composable]:
    conditions: list[sql.Composable] = []
    if time_range.start is not None:
        params["start"] = time_range.start
        conditions.append(sql.SQL("{} >= %(start)s").format(column))
    if time_range.end is not None:
        params["end"] = time_range.end
        conditions.append(sql.SQL("{} < %(end)s").format(column))
    return conditions


def record_conditions(
    col: Callable[[str], sql.Composable],
    tags: Sequence[str],
    sources: Sequence[Source],
    min_trust: Trust | None,
    time_range: TimeRange,
    params: dict[str, Any],
) -> list[sql.Composable]:
    """Conditions on what turns and episodes both carry: tags (all of them), source, trust and time."""
    conditions: list[sql.Composable] = []
    if tags:
        params["f_tags"] = list(tags)
        conditions.append(sql.SQL("{} @> %(f_tags)s::text[]").format(col("tags")))
    if sources:
        params["f_sources"] = [source.value for source in sources]
        conditions.append(sql.SQL("{} = ANY(%(f_sources)s)").format(col("source")))
    if min_trust is not None:
        params["f_trust"] = int(min_trust)
        conditions.append(sql.SQL("{} >= %(f_trust)s").format(col("trust")))
    return conditions + time_conditions(col("occurred_at"), time_range, params)


def turn_conditions(alias: str, where: TurnFilter, params: dict[str, Any]) -> list[sql.Composable]:
    """SQL conditions (on table alias ``alias``) for a turn filter; their values go into ``params``."""

    def col(name: str) -> sql.Composable:
        return sql.Identifier(alias, name)

    conditions: list[sql.Composable] = []
    if not where.include_archived:
        conditions.append(sql.SQL("{} IS NULL").format(col("archived_at")))
    if where.session_id:
        params["f_session"] = where.session_id
        conditions.append(sql.SQL("{} = %(f_session)s").format(col("session_id")))
    if where.agent:
        params["f_agent"] = where.agent
        conditions.append(sql.SQL("{} = %(f_agent)s").format(col("agent")))
    conditions += record_conditions(col, where.tags, where.sources, where.min_trust, where.time_range, params)
    return conditions


def and_(conditions: Sequence[sql.Composable]) -> sql.Composable:
    return sql.SQL(" AND ").join(conditions) if conditions else sql.SQL("TRUE")


def decay_factor(column: sql.Composable, decay: Decay, params: dict[str, Any]) -> sql.Composable:
    """The decay of ``column``'s time, in float8 throughout (it is computed for every candidate)."""
    params["d_now"] = decay.now
    params["d_floor"] = decay.floor
    params["d_half_life"] = decay.half_life_days * 86_400.0
    return sql.SQL(
        "(%(d_floor)s::float8 + (1 - %(d_floor)s::float8) * power(0.5::float8, "
        "greatest(date_part('epoch', %(d_now)s::timestamptz - {column}), 0) "
        "/ %(d_half_life)s::float8))"
    ).format(column=column)
