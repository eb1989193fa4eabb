"""Query understanding without an LLM: time expressions, entities, keywords and a few rewrites.

Agents ask "what did we decide last Tuesday?" or "上周三我们讨论了什么?": the time words are not what
the memory says, they say *when*. They are read here, relative to a reference time (injectable, so tests
and benchmarks can fix "now"), into a time range the engine uses as a filter or a boost; the rest of the
query gives keywords and entities, and a few rewrites of it are searched and merged.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hindsight.runtime.records import TimeRange
from hindsight.runtime.text import terms

DAY = timedelta(days=1)

_MONTHS = {name: index for index, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name[:3]: index for name, index in list(_MONTHS.items())})
_MONTHS["Sept"] = 9
_WEEKDAYS = {name.lower(): index for index, name in enumerate(calendar.day_name)}
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "few": 3,
}  # fmt: skip
_CN_DIGITS = {
    "零": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_CN_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "末": 5}

_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WEEKDAY_RE = "|".join(calendar.day_name)
_COUNT_RE = r"\d+|a couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_CN_NUM_RE = r"[0-9]+|[零一二两三四五六七八九十]+"


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


def _day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _days(start: datetime, count: int = 1) -> TimeRange:
    return TimeRange(start, start + count * DAY)


def _month(year: int, month: int) -> TimeRange:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + 1, 1, 1, tzinfo=UTC) if month == 12 else datetime(year, month + 1, 1, tzinfo=UTC)
    return TimeRange(start, end)


def _year(year: int) -> TimeRange:
    return TimeRange(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))


def _week_start(moment: datetime) -> datetime:
    """Monday 00:00 of the week holding ``moment`` (weeks start on Monday, as in Chinese usage)."""
    day = _day(moment)
    return day - day.weekday() * DAY


def _shift_month(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + delta
    return index // 12, index % 12 + 1


def _cn_number(text: str) -> int:
    """A Chinese or Arabic numeral up to 99 ("三", "十二", "二十", "12")."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, units = text.partition("十")
        return (_CN_DIGITS.get(tens, 1) if tens else 1) * 10 + (_CN_DIGITS.get(units, 0) if units else 0)
    return _CN_DIGITS.get(text, 0)


def _count(text: str) -> int:
    text = text.lower()
    return int(text) if text.isdigit() else _NUMBER_WORDS.get(text.removeprefix("a ").strip(), 1)


def _ago(unit: str, count: int, now: datetime) -> TimeRange:
    """The day, week, month or year that lies ``count`` units before ``now``."""
    unit = unit.lower().rstrip("s")
    if unit in {"day", "天"}:
        return _days(_day(now) - count * DAY)
    if unit in {"week", "周", "星期", "个星期", "礼拜", "个礼拜"}:
        return _days(_week_start(now) - count * 7 * DAY, 7)
    if unit in {"month", "个月", "月"}:
        return _month(*_shift_month(now.year, now.month, -count))
    return _year(now.year - count)


def _relative_unit(which: str, unit: str, now: datetime) -> TimeRange:
    """ "last/this/next week|month|year" (and 上/本/下 in Chinese)."""
    delta = {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1}.get(which.lower(), 0)
    unit = unit.lower()
    if unit == "week":
        return _days(_week_start(now) + delta * 7 * DAY, 7)
    if unit == "month":
        return _month(*_shift_month(now.year, now.month, delta))
    return _year(now.year + delta)


def _latest(year: int | None, month: int, day: int | None, now: datetime) -> TimeRange:
    """A month or a day without a year: the latest one that is not in the future."""
    if year is None:
        year = now.year
        if (month, day or 1) > (now.month, now.day):
            year -= 1
    if day is None:
        return _month(year, month)
    return _days(datetime(year, month, day, tzinfo=UTC))


Handler = Callable[[re.Match[str], datetime], TimeRange | None]


def _en_weekday(match: re.Match[str], now: datetime) -> TimeRange:
    which, name = match.group(1).lower(), match.group(2).lower()
    target = _WEEKDAYS[name]
    today = _day(now)
    if which == "this":
        return _days(_week_start(now) + target * DAY)
    back = (today.weekday() - target) % 7 or 7  # "last Tuesday" on a Tuesday is a week ago
    return _days(today - back * DAY)


def _en_weekend(match: re.Match[str], now: datetime) -> TimeRange:
    delta = -7 if match.group(1).lower() == "last" else 0
    return _days(_week_start(now) + (5 + delta) * DAY, 2)


def _en_month_day_year(match: re.Match[str], now: datetime) -> TimeRange | None:
    month = _MONTHS[match.group("month")]
    day = int(match.group("day")) if match.group("day") else None
    year = int(match.group("year")) if match.group("year") else None
    if day is not None and not 1 <= day <= calendar.monthrange(year or now.year, month)[1]:
        return None
    return _latest(year, month, day, now)


def _en_day_month_year(match: re.Match[str], now: datetime) -> TimeRange | None:
    month, day = _MONTHS[match.group("month")], int(match.group("day"))
    year = int(match.group("year")) if match.group("year") else None
    if not 1 <= day <= calendar.monthrange(year or now.year, month)[1]:
        return None
    return _latest(year, month, day, now)


def _iso_date(match: re.Match[str], now: datetime) -> TimeRange | None:
    try:
        return _days(datetime(int(match.group(1)), int(match.group(2)), int(match.group(3)), tzinfo=UTC))
    except ValueError:
        return None


def _cn_week(match: re.Match[str], now: datetime) -> TimeRange:
    delta = {"上": -1, "本": 0, "这": 0, "下": 1}[match.group(1)]
    start = _week_start(now) + delta * 7 * DAY
    day = match.group(2)
    if not day:
        return _days(start, 7)
    if day == "末":
        return _days(start + 5 * DAY, 2)
    return _days(start + _CN_WEEKDAYS[day] * DAY)


def _cn_date(match: re.Match[str], now: datetime) -> TimeRange | None:
    year = int(match.group("year")) if match.group("year") else None
    month = _cn_number(match.group("month")) if match.group("month") else None
    day = _cn_number(match.group("day")) if match.group("day") else None
    if month is None:
        return _year(year) if year else None
    if not 1 <= month <= 12:
        return None
    if day is not None and not 1 <= day <= calendar.monthrange(year or now.year, month)[1]:
        return None
    return _latest(year, month, day, now)


_PATTERNS: list[tuple[re.Pattern[str], Handler]] = [
    (re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"), _iso_date),
    (
        re.compile(
            rf"\b(?P<month>{_MONTH_RE})\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(?P<year>\d{{4}}))?\b"
        ),
        _en_month_day_year,
    ),
    (
        re.compile(
            rf"\b(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<month>{_MONTH_RE})(?:,?\s+(?P<year>\d{{4}}))?\b"
        ),
        _en_day_month_year,
    ),
    # A month name alone is only a time when a year follows or a preposition precedes ("May" is also a verb).
    (
        re.compile(rf"\b(?P<month>{_MONTH_RE})(?P<day>)\s+(?P<year>\d{{4}})\b"),
        _en_month_day_year,
    ),
    (
        re.compile(
            rf"\b(?:[Ii]n|[Dd]uring|[Ss]ince|of|early|late|mid)\s+(?P<month>{_MONTH_RE})(?P<day>)(?:,?\s+(?P<year>\d{{4}}))?\b"
        ),
        _en_month_day_year,
    ),
    (re.compile(r"\b(?:in|during|of)\s+(\d{4})\b", re.IGNORECASE), lambda m, now: _year(int(m.group(1)))),
    (re.compile(r"\bthe day before yesterday\b", re.IGNORECASE), lambda m, now: _days(_day(now) - 2 * DAY)),
    (re.compile(r"\byesterday\b", re.IGNORECASE), lambda m, now: _days(_day(now) - DAY)),
    (re.compile(r"\btoday\b|\bthis morning\b|\btonight\b", re.IGNORECASE), lambda m, now: _days(_day(now))),
    (
        re.compile(rf"\b({_COUNT_RE})\s+(day|week|month|year)s?\s+ago\b", re.IGNORECASE),
        lambda m, now: _ago(m.group(2), _count(m.group(1)), now),
    ),
    (
        re.compile(
            r"\b(?:in\s+the\s+)?(?:last|past)\s+(\d+|two|three|four|five|six|seven|ten)\s+days\b", re.I
        ),
        lambda m, now: TimeRange(_day(now) - (_count(m.group(1)) - 1) * DAY, _day(now) + DAY),
    ),
    (re.compile(rf"\b(last|this)\s+({_WEEKDAY_RE})\b", re.IGNORECASE), _en_weekday),
    (re.compile(r"\b(last|this)\s+weekend\b", re.IGNORECASE), _en_weekend),
    (
        re.compile(r"\b(last|past|previous|this|next)\s+(week|month|year)\b", re.IGNORECASE),
        lambda m, now: _relative_unit(m.group(1), m.group(2), now),
    ),
    # Chinese.
    (
        re.compile(
            rf"(?:(?P<year>\d{{4}})年)?(?:(?P<month>{_CN_NUM_RE})月(?:(?P<day>{_CN_NUM_RE})[日号])?)?"
        ),
        _cn_date,
    ),
    (re.compile(r"大前天"), lambda m, now: _days(_day(now) - 3 * DAY)),
    (re.compile(r"前天"), lambda m, now: _days(_day(now) - 2 * DAY)),
    (re.compile(r"昨天|昨日|昨晚"), lambda m, now: _days(_day(now) - DAY)),
    (re.compile(r"今天|今日|今晚|今早"), lambda m, now: _days(_day(now))),
    (
        re.compile(rf"({_CN_NUM_RE})\s*(天|周|个星期|星期|个礼拜|礼拜|个月|年)前"),
        lambda m, now: _ago(m.group(2), _cn_number(m.group(1)), now),
    ),
    (re.compile(r"([上本这下])(?:个)?(?:周|星期|礼拜)([一二三四五六日天末])?"), _cn_week),
    (re.compile(r"上个?月"), lambda m, now: _month(*_shift_month(now.year, now.month, -1))),
    (re.compile(r"这个月|本月"), lambda m, now: _month(now.year, now.month)),
    (re.compile(r"前年"), lambda m, now: _year(now.year - 2)),
    (re.compile(r"去年"), lambda m, now: _year(now.year - 1)),
    (re.compile(r"今年"), lambda m, now: _year(now.year)),
]


def find_time(query: str, now: datetime) -> TimeHint | None:
    """The first (then longest) time expression in ``query``, read relative to ``now``; None when none."""
    best: tuple[int, int, TimeRange] | None = None
    for pattern, handler in _PATTERNS:
        for match in pattern.finditer(query):
            start, end = match.span()
            if end <= start:
                continue
            if best is not None and (
                start > best[0] or (start == best[0] and end - start <= best[1] - best[0])
            ):
                continue
            window = handler(match, now)
            if window is not None:
                best = (start, end, window)
    if best is None:
        return None
    start, end, window = best
    return TimeHint(query[start:end].strip(), window, (start, end))


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
    calendar_words = {w.lower() for w in (*_MONTHS, *calendar.day_name)}
    for match in _ENTITY.finditer(query):
        words = match.group(0).split()
        while words and (words[0].lower() in _NOT_NAMES or words[0].lower() in calendar_words):
            words.pop(0)
        while words and words[-1].lower() in {"of", "de", "van", "von"}:
            words.pop()
        if words and not all(w.lower() in calendar_words for w in words):
            found.append(" ".join(words).rstrip("'\u2019s").rstrip("'\u2019"))
    return tuple(dict.fromkeys(item for item in found if item))


def understand(query: str, now: datetime, max_rewrites: int = 2) -> QueryPlan:
    """Read ``query`` relative to ``now``: its time expression, entities, keywords and rewrites."""
    hint = find_time(query, now)
    rest = query if hint is None else (query[: hint.span[0]] + " " + query[hint.span[1] :])
    rest = " ".join(re.sub(r"^['\u2019]s\b|\s['\u2019]s\b", " ", rest).split())
    keywords = tuple(dict.fromkeys(terms(rest)))
    entities = find_entities(rest)
    candidates = [query]
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
