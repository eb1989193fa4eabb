"""Checks shared by every edge of the system, raising errors that name the field."""

from __future__ import annotations

import re

from hindsight.runtime.errors import InvalidArgument

_BANK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$")


def check_bank_id(bank_id: str, field: str = "bank_id") -> str:
    """A bank id is 1-128 characters of letters, digits and ``._:@-``, starting with a letter or digit."""
    if not bank_id:
        raise InvalidArgument(field, "is required")
    if not _BANK_ID.match(bank_id):
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
