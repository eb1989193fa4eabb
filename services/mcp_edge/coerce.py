"""Near-miss argument types for MCP tools: coerced and logged, everything else refused naming the field.

MCP clients (and the models driving them) often send ``"3"`` for 3, ``"true"`` for true or
``"a, b"`` for a list. Those are read as meant and logged, so a client bug is visible without failing
the agent; the published JSON schema stays strict (integer, boolean, array, with its limits: the
validators go last in ``Annotated`` so the limits still reach the schema), and any other mismatch is a
validation error that names the field.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from pydantic import BeforeValidator, ValidationInfo

log = logging.getLogger(__name__)

_INTEGER = re.compile(r"\s*[+-]?\d+\s*")
_NUMBER = re.compile(r"\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*")
_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}


def _coerced(info: ValidationInfo, value: Any, result: Any) -> Any:
    log.info(
        "coerced a tool argument",
        extra={"field": info.field_name or "?", "sent": repr(value)[:80], "read_as": repr(result)[:80]},
    )
    return result


def _int(value: Any, info: ValidationInfo) -> Any:
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        return _coerced(info, value, int(value))
    if isinstance(value, float) and value.is_integer():
        return _coerced(info, value, int(value))
    return value


def _float(value: Any, info: ValidationInfo) -> Any:
    if isinstance(value, str) and _NUMBER.fullmatch(value):
        return _coerced(info, value, float(value))
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)  # JSON has one number type: an integer for a number field is no mistake
    return value


def _bool(value: Any, info: ValidationInfo) -> Any:
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return _coerced(info, value, value.strip().lower() in _TRUE)
    if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
        return _coerced(info, value, bool(value))
    return value


def _list(value: Any, info: ValidationInfo) -> Any:
    if isinstance(value, str):
        return _coerced(info, value, [item.strip() for item in value.split(",") if item.strip()])
    return value


AS_INT = BeforeValidator(_int)
"""Put last on an integer type (with ``Field(strict=True)``): ``"3"`` and ``3.0`` are read as 3."""
AS_FLOAT = BeforeValidator(_float)
"""Put last on a number type: ``"0.5"`` is read as 0.5."""
AS_BOOL = BeforeValidator(_bool)
"""Put last on a boolean type: ``"true"``, ``"yes"``, ``"1"`` (and their opposites) are read as meant."""
SPLIT_COMMAS = BeforeValidator(_list)
"""Put last on a list type: ``"a, b"`` is read as ``["a", "b"]``."""
