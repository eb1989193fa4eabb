"""Qdrant filter conditions the store's families share: the bank, a field's value, and a search's filter."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from qdrant_client import models

from hindsight.runtime.records import TimeRange
from hindsight.runtime.text import key_of
from hindsight.semantic.records import SearchOptions


def of_bank(bank_id: str) -> models.FieldCondition:
    return models.FieldCondition(key="bank_id", match=models.MatchValue(value=bank_id))


def field_is(key: str, value: Any) -> models.FieldCondition:
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


def field_in(key: str, values: Iterable[Any]) -> models.FieldCondition:
    return models.FieldCondition(key=key, match=models.MatchAny(any=list(dict.fromkeys(values))))


def _time_window(time_range: TimeRange) -> models.FieldCondition | None:
    if time_range.start is None and time_range.end is None:
        return None
    return models.FieldCondition(
        key="time_ts",
        range=models.Range(
            gte=time_range.start.timestamp() if time_range.start else None,
            lt=time_range.end.timestamp() if time_range.end else None,
        ),
    )


SUPERSEDED = field_is("current", False)
"""Excluded rather than ``current`` required: points written before validity existed count as current."""


def search_filter(
    bank_id: str, time_range: TimeRange, options: SearchOptions, subjects: Sequence[str] = ()
) -> models.Filter:
    """The bank, plus every filter the options ask for; current records only unless history is asked.

    Validity bounds are written as exclusions, so a point without them (older payloads) is valid always.
    """
    must: list[models.Condition] = [of_bank(bank_id)]
    must_not: list[models.Condition] = []
    if (window := _time_window(time_range)) is not None:
        must.append(window)
    if options.kinds:
        must.append(field_in("kind", sorted(kind.value for kind in options.kinds)))
    if options.tags:
        must.append(field_in("tags", options.tags))
    if subjects:
        must.append(field_in("subject_key", [key_of(subject) for subject in subjects]))
    if options.valid_at is not None:
        moment = options.valid_at.timestamp()
        must_not.append(models.FieldCondition(key="valid_from_ts", range=models.Range(gt=moment)))
        must_not.append(models.FieldCondition(key="valid_to_ts", range=models.Range(lte=moment)))
    elif not options.include_history:
        must_not.append(SUPERSEDED)
    return models.Filter(must=must, must_not=must_not)
