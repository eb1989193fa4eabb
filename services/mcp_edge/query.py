"""Query understanding without an LLM: time expressions, entities, keywords and a few rewrites.

Agents ask "what did we decide last Tuesday?" or "上周三我们讨论了什么?": the time words are not what
the memory says, they say *when*. They are read by the shared parser (:mod:`hindsight.runtime.timeexpr`),
relative to a reference time (the recall's "now": injectable, so tests and benchmarks can fix it) in the
caller's time zone, into a time range the engine uses as a filter or a boost; the rest of the query
gives keywords and entities, and a few rewrites of it are searched and merged.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo

from hindsight.runtime.records import TimeRange
from hindsight.runtime.text import terms
from hindsight.runtime.timeexpr import find_time_expression

_CALENDAR_WORDS = frozenset(
    word.lower() for word in (*calendar.month_name[1:], *calendar.month_abbr[1:], "Sept", *calendar.day_name)
)


@dataclass(frozen=True)
class TimeHint:
    """A time expression found in a query and the range it stands for."""

    expression: str
    time_range: TimeRange
    span: tuple[int, int]
    """Where the expression is in the query (start, end), so rewrites can leave it out."""


@dataclass(frozen=True)
class QueryPlan:
    """What query understanding read from one query."""

    query: str
    time: TimeHint | None
    entities: tuple[str, ...]
    keywords: tuple[str, ...]
    rewrites: tuple[str, ...]
    """Every query to search, the original first."""


_SENTENCE_END = re.compile(
    r"[!?\n\u3002\uff01\uff1f]|(?<!\b[A-Z][a-z])(?<!\b[A-Z][a-z]{2})(?<!\bSept)\.(?=\s)"
)
"""Where a sentence ends: "!", "?", a line break, their full-width forms, or a full stop (not "Jan. 5")."""
_QUESTION_MARKS = "?\uff1f"


def _sentences(query: str) -> Iterator[tuple[int, int, bool]]:
    """Each sentence of ``query`` as (start, end, whether it asks): up to each sentence end, then the rest."""
    start = 0
    for end in _SENTENCE_END.finditer(query):
        yield start, end.end(), query[end.start()] in _QUESTION_MARKS
        start = end.end()
    if start < len(query):
        yield start, len(query), False


def _scope(query: str) -> tuple[int, int]:
    """Where to look for the time a query asks about: its last question when it has one, else all of it.

    Queries an agent passes often carry talk before the question (a remark on today's weather, a
    dialogue so far whose earlier questions were answered): a time word there says when the talk
    happened, not what to remember now.
    """
    asked = [(start, end) for start, end, question in _sentences(query) if question]
    return asked[-1] if asked else (0, len(query))


def questions_only(query: str) -> str:
    """The query's questions without the talk around them, or "" when it is all question or has none.

    A request that carries remarks before or between its questions ("天气真好……我真正想问的是…", a
    dialogue so far) matches what the remarks say as much as what is asked; searched alone, the questions
    find their answer without that noise.
    """
    said = [(query[start:end].strip(), question) for start, end, question in _sentences(query)]
    kept = [sentence for sentence, question in said if sentence and question]
    if not kept or len(kept) == sum(1 for sentence, _ in said if sentence):
        return ""
    return " ".join(kept)


def find_time(query: str, now: datetime, zone: tzinfo | str | None = UTC) -> TimeHint | None:
    """The first (then longest) time expression of the query's question, relative to ``now`` in ``zone``."""
    start, end = _scope(query)
    found = find_time_expression(query[start:end], now, zone)
    if found is None:
        return None
    window = TimeRange(found.start.astimezone(UTC), found.end.astimezone(UTC))
    return TimeHint(found.text, window, (start + found.span[0], start + found.span[1]))


_ENTITY = re.compile(r"\b[A-Z][\w'\u2019-]*(?:\s+(?:[A-Z][\w'\u2019-]*|of|de|van|von))*")
_QUOTED = re.compile(r"[\"\u201c\u300c\u300e]([^\"\u201d\u300d\u300f]{2,80})[\"\u201d\u300d\u300f]")
_NOT_NAMES = frozenset(
    {
        "what", "when", "where", "who", "whom", "why", "how", "which", "did", "does", "do", "is", "are",
        "was", "were", "can", "could", "would", "should", "will", "have", "has", "had", "i", "the", "a",
        "an", "tell", "remind", "please", "find", "show", "list", "give", "any", "my", "our", "we", "it",
        "last", "this", "next", "in", "on", "at", "yesterday", "today",
    }
)  # fmt: skip


def find_entities(query: str) -> tuple[str, ...]:
    """Capitalised names (leading question words and month or weekday names left out) and quoted phrases."""
    found: list[str] = [m.group(1).strip() for m in _QUOTED.finditer(query)]
    for match in _ENTITY.finditer(query):
        words = match.group(0).split()
        while words and (words[0].lower() in _NOT_NAMES or words[0].lower() in _CALENDAR_WORDS):
            words.pop(0)
        while words and words[-1].lower() in {"of", "de", "van", "von"}:
            words.pop()
        if words and not all(w.lower() in _CALENDAR_WORDS for w in words):
            found.append(" ".join(words).rstrip("'\u2019s").rstrip("'\u2019"))
    return tuple(dict.fromkeys(item for item in found if item))


def understand(
    query: str, now: datetime, max_rewrites: int = 2, zone: tzinfo | str | None = UTC
) -> QueryPlan:
    """Read ``query`` relative to ``now`` in ``zone``: its time expression, entities, keywords, rewrites."""
    hint = find_time(query, now, zone)
    rest = query if hint is None else (query[: hint.span[0]] + " " + query[hint.span[1] :])
    rest = " ".join(re.sub(r"^['\u2019]s\b|\s['\u2019]s\b", " ", rest).split())
    keywords = tuple(dict.fromkeys(terms(rest)))
    entities = find_entities(rest)
    candidates = [query]
    asked = questions_only(query)
    if asked:
        candidates.append(asked)  # the questions alone, without the remarks around them
    if hint is not None and rest and len(terms(rest)) > 0:
        candidates.append(rest)  # the time words match nothing the memory said; the rest does
    named = {word.lower() for entity in entities for word in entity.split()}
    latin = [k for k in keywords if k.isascii() and len(k) > 1 and k not in named]
    focus = " ".join([*entities, *latin])
    if focus:
        candidates.append(focus)  # names and content words alone, for the keyword and vector channels
    rewrites: list[str] = []
    seen: set[tuple[str, ...]] = set()
    for text in candidates:
        key = tuple(sorted(terms(text))) or (text,)
        if key in seen:
            continue
        seen.add(key)
        rewrites.append(text)
    return QueryPlan(query, hint, entities, keywords, tuple(rewrites[: 1 + max(0, max_rewrites)]))
