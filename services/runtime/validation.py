"""Checks shared by every edge of the system, raising errors that name the field."""

from __future__ import annotations

import re
from collections.abc import Sequence, Sized
from typing import Protocol

from hindsight.runtime.errors import InvalidArgument

_BANK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")


def check_bank_id(bank_id: str, field: str = "bank_id") -> str:
    """A bank id is 1-128 characters of letters, digits and ``._:@-``, starting with a letter or digit."""
    if not bank_id:
        raise InvalidArgument(field, "is required")
    if not _BANK_ID.fullmatch(bank_id):
        raise InvalidArgument(
            field, "must be 1-128 characters of letters, digits and ._:@- starting with a letter or digit"
        )
    return bank_id


def check_limit(value: int, field: str, default: int, maximum: int) -> int:
    """Apply a default for 0 and reject values above ``maximum``."""
    if value < 0:
        raise InvalidArgument(field, "must not be negative")
    if value == 0:
        return default
    if value > maximum:
        raise InvalidArgument(field, f"must be at most {maximum}")
    return value


def check_text(text: str, field: str, max_chars: int = 100_000) -> str:
    """Non-blank text of bounded size."""
    if not text or not text.strip():
        raise InvalidArgument(field, "must not be empty")
    if len(text) > max_chars:
        raise InvalidArgument(field, f"must be at most {max_chars} characters")
    return text


def check_length(value: str, field: str, max_chars: int) -> str:
    """Text that may be empty but not longer than ``max_chars`` characters, returned as given."""
    if len(value) > max_chars:
        raise InvalidArgument(field, f"must be at most {max_chars} characters")
    return value


def check_count(items: Sized, field: str, maximum: int, noun: str) -> None:
    """A request's batch holds at least one item and at most ``maximum`` ``noun``: one wording of the
    refusal for every batch RPC."""
    if not items:
        raise InvalidArgument(field, "must not be empty")
    if len(items) > maximum:
        raise InvalidArgument(field, f"must hold at most {maximum} {noun}")


MAX_NAME_CHARS = 1_000
"""Longest entity name, type or prefix a request may name."""


def check_name(value: str, field: str, max_chars: int = MAX_NAME_CHARS) -> str:
    """An entity name, type or prefix (empty allowed): bounded, outer spaces dropped. One check, so the edge
    refuses exactly what the semantic layer would."""
    return check_length(value, field, max_chars).strip()


class RemovalRequest(Protocol):
    """A forget or purge of one layer's records: ids (in a field of the request's own), a session or the
    whole bank."""

    @property
    def session_id(self) -> str: ...

    @property
    def whole_bank(self) -> bool: ...


def check_removal_scope(
    request: RemovalRequest, ids_field: str, max_ids: int, max_session_chars: int
) -> list[str]:
    """The ids of ``request.<ids_field>`` (``turn_ids``, ``source_ids``...), once the request names ids,
    a session or the whole bank, at most ``max_ids`` ids and a session id of at most
    ``max_session_chars`` characters."""
    ids: Sequence[str] = getattr(request, ids_field)
    if not ids and not request.session_id and not request.whole_bank:
        what = ids_field.replace("_", " ")
        raise InvalidArgument(ids_field, f"give {what}, a session_id or whole_bank")
    if len(ids) > max_ids:
        raise InvalidArgument(ids_field, f"must hold at most {max_ids} ids")
    check_length(request.session_id, "session_id", max_session_chars)
    return list(ids)


MAX_TAGS = 32
"""Tags one filter may name."""
MAX_TAG_CHARS = 200


def check_tags(tags: Sequence[str], field: str = "tags") -> tuple[str, ...]:
    """Tags stripped and deduplicated; an empty or over-long tag is refused naming its index."""
    result = []
    for index, tag in enumerate(tags):
        if not tag.strip() or len(tag) > MAX_TAG_CHARS:
            raise InvalidArgument(f"{field}[{index}]", f"must be 1 to {MAX_TAG_CHARS} characters")
        result.append(tag.strip())
    if len(result) > MAX_TAGS:
        raise InvalidArgument(field, f"at most {MAX_TAGS} tags")
    return tuple(dict.fromkeys(result))
