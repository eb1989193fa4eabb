"""The template tables of the generated sets, read from the JSON files in ``data/`` shipped with the package.

One file per set, named after the module that builds the set (``data/corrections_set.json`` for
:mod:`~hindsight.bench.corrections_set`, ...); each file's ``about`` says what its tables hold and how an
entry's position decides its template and split. The files are package data, read through
:mod:`importlib.resources`, so they are found wherever the package is installed.
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any


def _frozen(value: Any) -> Any:
    """``value`` with every list made a tuple (the tables are constants, and keep the tuples they had)."""
    if isinstance(value, list):
        return tuple(_frozen(item) for item in value)
    if isinstance(value, dict):
        return {key: _frozen(item) for key, item in value.items()}
    return value


def load(name: str) -> dict[str, Any]:
    """The tables of ``data/<name>.json``, lists as tuples, without the file's ``about``."""
    text = (files("hindsight.bench") / "data" / f"{name}.json").read_text(encoding="utf-8")
    tables: dict[str, Any] = _frozen(json.loads(text))
    tables.pop("about", None)
    return tables
