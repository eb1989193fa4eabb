"""Keyword terms as PostgreSQL text-search values, for English and Chinese alike.

PostgreSQL's parsers do not segment Chinese, and even ``to_tsvector('simple', ...)`` re-splits terms
by its own locale-dependent rules (``o'neill`` becomes ``o`` and ``neill``). So both sides skip the
parser: documents and queries are analysed once, by :func:`hindsight.runtime.text.terms`, and handed
over as ``tsvector`` / ``tsquery`` literals whose lexemes are taken verbatim. Index and query always
agree, whatever the database locale.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from hindsight.runtime.text import terms

Analyser = Callable[[str], list[str]]

MAX_POSITION = 16383
"""Largest word position a tsvector stores."""
MAX_POSITIONS_PER_LEXEME = 256
"""Most positions a tsvector keeps for one lexeme."""
MAX_LEXEME_BYTES = 2046
"""PostgreSQL refuses lexemes of 2 KiB and more."""


def _quote(lexeme: str) -> str:
    """A lexeme as a quoted tsvector/tsquery literal element."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _usable(lexeme: str) -> bool:
    return bool(lexeme) and len(lexeme.encode()) <= MAX_LEXEME_BYTES


def tsvector_literal(parts: Iterable[str], analyse: Analyser = terms) -> str:
    """The ``tsvector`` literal of the terms of ``parts`` (joined), with word positions for ranking."""
    positions: dict[str, list[int]] = {}
    for index, lexeme in enumerate(analyse(" ".join(part for part in parts if part)), start=1):
        if not _usable(lexeme):
            continue
        seen = positions.setdefault(lexeme, [])
        position = min(index, MAX_POSITION)
        if len(seen) < MAX_POSITIONS_PER_LEXEME and (not seen or seen[-1] != position):
            seen.append(position)
    return " ".join(f"{_quote(lexeme)}:{','.join(map(str, spots))}" for lexeme, spots in positions.items())


def query_terms(query: str, analyse: Analyser = terms) -> list[str]:
    """The distinct terms of a query, in order; empty when it holds only stop words or punctuation."""
    return [lexeme for lexeme in dict.fromkeys(analyse(query)) if _usable(lexeme)]


def tsquery_literal(lexemes: Iterable[str]) -> str | None:
    """A ``tsquery`` literal matching any of ``lexemes`` (OR), or None when there is none."""
    quoted = [_quote(lexeme) for lexeme in dict.fromkeys(lexemes) if _usable(lexeme)]
    return " | ".join(quoted) if quoted else None
