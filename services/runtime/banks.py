"""Calls that name several banks at once (a recall over an agent's own and its team's banks): which banks,
and the one check that the caller may use each of them.

Every front and every layer checks a multi-bank call here, so what a caller needs on each bank is decided
in one place; a call is refused whole when one bank is not granted, never narrowed to the granted ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hindsight.runtime.auth import Caller
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.permissions import Operation
from hindsight.runtime.validation import check_bank_id

MAX_BANKS = 16
"""Most banks one call may name (each costs the layers a search)."""


def requested_banks(
    bank_id: str, bank_ids: Sequence[str], field: str = "bank_ids", single_field: str = "bank_id"
) -> tuple[str, ...]:
    """The banks a request names: its one ``bank_id`` or its ``bank_ids`` (exactly one of the two), each
    checked and named by its field on error; repeats are dropped, order kept."""
    if not bank_ids:
        return (check_bank_id(bank_id, single_field),)
    if bank_id:
        raise InvalidArgument(field, f"give {single_field} or {field}, not both")
    if len(bank_ids) > MAX_BANKS:
        raise InvalidArgument(field, f"at most {MAX_BANKS} banks per call (got {len(bank_ids)})")
    return tuple(dict.fromkeys(check_bank_id(bank, f"{field}[{i}]") for i, bank in enumerate(bank_ids)))


def require_banks(caller: Caller, banks: Iterable[str], operation: Operation = Operation.READ) -> None:
    """PERMISSION_DENIED, naming the first bank it lacks, unless ``caller`` may do ``operation`` (a multi-bank
    call reads) on every one of ``banks``."""
    for bank in banks:
        caller.require(bank, operation)
