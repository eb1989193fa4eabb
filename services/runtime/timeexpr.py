"""Time expressions in English and Chinese, read relative to a reference time in a time zone.

One parser for every place that reads time words: the edge reads them in a query ("what did we decide
last Tuesday?", "上周三我们讨论了什么"), the semantic layer in a statement ("I went there yesterday").
Each expression becomes a half-open range of whole local days, so "March 31" is the 31st (never
clamped), "February 29" needs a leap year, and "yesterday" at 00:30 in Shanghai is a different day
than in UTC. Absolute dates, relative ones ("two weeks ago", "三天前", "去年三月") and ranges
("between May and July", "from 3 to 5 June", "五月到七月") are understood; a month or day without a
year is the latest one that is not in the future, as memories are about the past.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from enum import StrEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from hindsight.runtime.errors import InvalidArgument

DAY = timedelta(days=1)
MAX_ZONE_NAME = 64


class Granularity(StrEnum):
    """The unit an expression names: a range of months is still read at month granularity."""

    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    YEAR = "year"


_FINEST = (Granularity.DAY, Granularity.WEEK, Granularity.MONTH, Granularity.YEAR)


@dataclass(frozen=True)
class TimeExpression:
    """A time expression found in a text and the local days it stands for."""

    text: str
    span: tuple[int, int]
    """Where the expression is in the text (start, end)."""
    start: datetime
    """Midnight of its first day, in the zone it was read in."""
    end: datetime
    """Midnight after its last day (exclusive)."""
    granularity: Granularity


class UnknownTimeZone(ValueError):
    """A time zone name that the IANA database does not know."""


def time_zone(name: str) -> tzinfo:
    """The IANA zone called ``name`` ("Asia/Shanghai"); empty or "UTC" is UTC."""
    name = name.strip()
    if not name or name.upper() == "UTC":
        return UTC
    if len(name) > MAX_ZONE_NAME or name.startswith(("/", ".")) or ".." in name:
        raise UnknownTimeZone(f"{name!r} is not an IANA time zone name")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise UnknownTimeZone(f"{name!r} is not an IANA time zone name") from exc


def checked_time_zone(name: str, field_name: str = "time_zone") -> str:
    """``name`` stripped, or INVALID_ARGUMENT naming ``field_name`` when it is not a known zone."""
    try:
        time_zone(name)
    except UnknownTimeZone:
        raise InvalidArgument(field_name, "is not an IANA time zone name (like 'Asia/Shanghai')") from None
    return name.strip()


# ----- Days -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Days:
    first: date
    end: date
    granularity: Granularity


def _day(day: date, count: int = 1) -> _Days:
    return _Days(day, day + count * DAY, Granularity.DAY)


def _week(monday: date) -> _Days:
    return _Days(monday, monday + 7 * DAY, Granularity.WEEK)


def _month(year: int, month: int) -> _Days:
    following = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
    return _Days(date(year, month, 1), following, Granularity.MONTH)


def _year(year: int) -> _Days | None:
    if not 1 <= year < 9999:
        return None
    return _Days(date(year, 1, 1), date(year + 1, 1, 1), Granularity.YEAR)


def _week_start(day: date) -> date:
    """The Monday of ``day``'s week (weeks start on Monday, as in Chinese usage and ISO 8601)."""
    return day - day.weekday() * DAY


def _shift_month(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + delta
    return index // 12, index % 12 + 1


def _last_n(today: date, unit: str, count: int) -> _Days:
    """The last ``count`` days, weeks or months up to and including today."""
    if unit.startswith("month"):
        year, month = _shift_month(today.year, today.month, -count)
        day = min(today.day, calendar.monthrange(year, month)[1])
        return _Days(date(year, month, day) + DAY, today + DAY, Granularity.DAY)
    days = count * 7 if unit.startswith("week") else count
    return _Days(today - (days - 1) * DAY, today + DAY, Granularity.DAY)


def _ago(unit: str, count: int, today: date) -> _Days | None:
    """The day, week, month or year that lies ``count`` units before today."""
    if unit in {"day", "天"}:
        return _day(today - count * DAY)
    if unit in {"week", "周", "星期", "个星期", "礼拜", "个礼拜"}:
        return _week(_week_start(today) - count * 7 * DAY)
    if unit in {"month", "个月", "月"}:
        return _month(*_shift_month(today.year, today.month, -count))
    return _year(today.year - count)


def _relative_unit(delta: int, unit: str, today: date) -> _Days | None:
    """The week, month or year ``delta`` units from this one (-1: last, 0: this, 1: next)."""
    if unit == "week":
        return _week(_week_start(today) + delta * 7 * DAY)
    if unit == "month":
        return _month(*_shift_month(today.year, today.month, delta))
    return _year(today.year + delta)


def _weekday(target: int, today: date, which: str) -> _Days:
    """ "last": the latest one before today; "next": the first after today; "this": this week's."""
    if which == "this":
        return _day(_week_start(today) + target * DAY)
    if which == "next":
        return _day(today + ((target - today.weekday()) % 7 or 7) * DAY)
    return _day(today - ((today.weekday() - target) % 7 or 7) * DAY)


# ----- Partial dates (a year, a month, a day, any of them left out) -----------------------------------


@dataclass(frozen=True)
class _Partial:
    year: int | None = None
    month: int | None = None
    day: int | None = None

    @property
    def empty(self) -> bool:
        return self.year is None and self.month is None and self.day is None


def _valid(year: int, month: int, day: int) -> bool:
    return 1 <= year < 9999 and 1 <= month <= 12 and 1 <= day <= calendar.monthrange(year, month)[1]


def _resolve(part: _Partial, today: date) -> _Days | None:
    """The days a partial date names; without a year, the latest such month or day not after today."""
    if part.month is None:
        return _year(part.year) if part.year is not None and part.day is None else None
    if not 1 <= part.month <= 12:
        return None
    if part.day is None:
        year = part.year if part.year is not None else today.year - (part.month > today.month)
        return _month(year, part.month) if 1 <= year < 9999 else None
    if part.year is not None:
        return (
            _day(date(part.year, part.month, part.day)) if _valid(part.year, part.month, part.day) else None
        )
    for year in range(today.year, today.year - 9, -1):  # February 29 waits for a leap year
        if _valid(year, part.month, part.day) and date(year, part.month, part.day) <= today:
            return _day(date(year, part.month, part.day))
    return None


def _order(part: _Partial) -> tuple[int, int]:
    return part.month or 1, part.day or 1


def _resolve_range(low: _Partial, high: _Partial, today: date) -> _Days | None:
    """Both ends of "from low to high": each side lends the other the month or year it leaves out."""
    if low.empty or high.empty:
        return None
    if low.month is None and low.day is not None:  # "from 3 to 5 June"
        if high.month is None:
            return None
        low = replace(low, month=high.month, year=low.year if low.year is not None else high.year)
    if high.month is None and high.day is not None:  # "from June 3 to 5"
        if low.month is None:
            return None
        high = replace(high, month=low.month, year=high.year if high.year is not None else low.year)
    if low.year is None and high.year is None:
        latest = _resolve(high, today)
        if latest is None:
            return None
        high = replace(high, year=latest.first.year)
    if low.year is None and high.year is not None:  # "from December to February 2024": December 2023
        low = replace(low, year=high.year - (_order(low) > _order(high)))
    if high.year is None and low.year is not None:
        high = replace(high, year=low.year + (_order(high) < _order(low)))
    first, last = _resolve(low, today), _resolve(high, today)
    if first is None or last is None or last.end <= first.first:
        return None
    finest = min(first.granularity, last.granularity, key=_FINEST.index)
    return _Days(first.first, last.end, finest)


# ----- Words and numbers ------------------------------------------------------------------------------

_MONTHS = {name: index for index, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name[:3]: index for name, index in list(_MONTHS.items())})
_MONTHS["Sept"] = 9
_WEEKDAYS = {name.lower(): index for index, name in enumerate(calendar.day_name)}
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3,
}  # fmt: skip
_CN_DIGITS = dict(zip("零〇一二两三四五六七八九", (0, 0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9), strict=True))
_CN_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_CN_RELATIVE_YEARS = {"前年": -2, "去年": -1, "今年": 0, "明年": 1}
_CN_RELATIVE = {"上": -1, "本": 0, "这": 0, "下": 1}

_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))  # capitalised only: "may" is a verb
_WEEKDAY_RE = "|".join(calendar.day_name)
_COUNT_RE = r"\d{1,3}|a couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_ORDINAL = r"(?:st|nd|rd|th)?"
_CN_NUM = r"[0-9]{1,2}|[零〇一二两三四五六七八九十]{1,3}"
_CN_YEAR = r"[0-9]{4}|[零〇一二三四五六七八九]{4}"


def _count(text: str) -> int:
    text = " ".join(text.lower().split())
    return int(text) if text.isdigit() else _NUMBER_WORDS.get(text, 1)


def _cn_number(text: str) -> int:
    """A Chinese or Arabic numeral below 100 ("三", "十二", "二十", "三十一", "12")."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, units = text.partition("十")
        return (_CN_DIGITS.get(tens, 1) if tens else 1) * 10 + (_CN_DIGITS.get(units, 0) if units else 0)
    return _CN_DIGITS.get(text, 0) if len(text) == 1 else -1


def _cn_year(text: str) -> int:
    """A four-digit year, in Arabic or Chinese digits ("2023", "二〇二三")."""
    return int(text) if text.isdigit() else int("".join(str(_CN_DIGITS[c]) for c in text))


def _int(value: str | None) -> int | None:
    return int(value) if value else None


# ----- English ----------------------------------------------------------------------------------------


def _en_side(prefix: str) -> str:
    """One end of an English range: an ISO date, "June 3", "3 June", "June", "2023", or a bare day."""
    p = prefix
    return (
        rf"(?:(?P<{p}iy>\d{{4}})[-/.](?P<{p}im>\d{{1,2}})[-/.](?P<{p}id>\d{{1,2}})"
        rf"|(?P<{p}mm>{_MONTH_RE})\.?(?:\s+(?P<{p}md>\d{{1,2}}){_ORDINAL}(?!\d))?(?:,?\s+(?P<{p}my>\d{{4}}))?"
        rf"|(?P<{p}y>\d{{4}})(?!\d)"
        rf"|(?:the\s+)?(?P<{p}dd>\d{{1,2}}){_ORDINAL}(?!\d)"
        rf"(?:\s+(?:of\s+)?(?P<{p}dm>{_MONTH_RE})(?:,?\s+(?P<{p}dy>\d{{4}}))?)?)"
    )


def _en_partial(match: re.Match[str], p: str) -> _Partial:
    group = match.group
    if group(p + "iy"):
        return _Partial(int(group(p + "iy")), int(group(p + "im")), int(group(p + "id")))
    if group(p + "mm"):
        return _Partial(_int(group(p + "my")), _MONTHS[group(p + "mm")], _int(group(p + "md")))
    if group(p + "y"):
        return _Partial(int(group(p + "y")))
    month = group(p + "dm")
    return _Partial(_int(group(p + "dy")), _MONTHS[month] if month else None, _int(group(p + "dd")))


def _en_range(match: re.Match[str], today: date) -> _Days | None:
    return _resolve_range(_en_partial(match, "a"), _en_partial(match, "b"), today)


def _en_date(match: re.Match[str], today: date) -> _Days | None:
    groups = match.groupdict()
    day = _int(groups.get("day"))
    return _resolve(_Partial(_int(groups.get("year")), _MONTHS[groups["month"]], day), today)


def _en_iso(match: re.Match[str], today: date) -> _Days | None:
    year, month, day = (int(match.group(i)) for i in (1, 2, 3))
    return _day(date(year, month, day)) if _valid(year, month, day) else None


def _en_month_of_year(match: re.Match[str], today: date) -> _Days | None:
    delta = {"last": -1, "this": 0, "next": 1}[match.group(2).lower()]
    return _month(today.year + delta, _MONTHS[match.group(1)])


def _en_weekday(match: re.Match[str], today: date) -> _Days:
    which = match.group(1).lower()
    return _weekday(_WEEKDAYS[match.group(2).lower()], today, "last" if which == "on" else which)


def _en_weekend(match: re.Match[str], today: date) -> _Days:
    delta = {"last": -1, "this": 0, "next": 1}[match.group(1).lower()]
    return _day(_week_start(today) + (5 + 7 * delta) * DAY, 2)


_RELATIVE_WORDS = {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1}
_I = re.IGNORECASE
Handler = Callable[[re.Match[str], date], _Days | None]

_ENGLISH: list[tuple[re.Pattern[str], Handler]] = [
    (
        re.compile(
            rf"\b(?i:from|between)\s+{_en_side('a')}(?:\s*[-\u2013]\s*|\s+(?i:to|and|until|till|through)\s+)"
            rf"{_en_side('b')}(?![\w-])"
        ),
        _en_range,
    ),
    (re.compile(r"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})\b"), _en_iso),
    (
        re.compile(
            rf"\b(?P<month>{_MONTH_RE})\.?\s+(?P<day>\d{{1,2}}){_ORDINAL}(?!\d)(?:,?\s+(?P<year>\d{{4}}))?\b"
        ),
        _en_date,
    ),
    (
        re.compile(
            rf"\b(?P<day>\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?(?P<month>{_MONTH_RE})(?:,?\s+(?P<year>\d{{4}}))?\b"
        ),
        _en_date,
    ),
    # A month name alone is a time only with a year after it or a preposition before it ("May I ask").
    (re.compile(rf"\b(?P<month>{_MONTH_RE})\s+(?P<year>\d{{4}})\b"), _en_date),
    (
        re.compile(
            rf"\b(?i:in|during|since|of|early|late|mid|by|until)[\s-]+(?P<month>{_MONTH_RE})"
            rf"(?:\.?\s+(?P<day>\d{{1,2}}){_ORDINAL}(?!\d))?(?:,?\s+(?P<year>\d{{4}}))?\b"
        ),
        _en_date,
    ),
    (re.compile(rf"\b({_MONTH_RE})\s+(?i:of\s+)?(?i:(last|this|next))\s+(?i:year)\b"), _en_month_of_year),
    (re.compile(r"\b(?:in|during|of|since)\s+(\d{4})\b", _I), lambda m, today: _year(int(m.group(1)))),
    (re.compile(r"\bthe day before yesterday\b", _I), lambda m, today: _day(today - 2 * DAY)),
    (re.compile(r"\bthe day after tomorrow\b", _I), lambda m, today: _day(today + 2 * DAY)),
    (re.compile(r"\byesterday\b|\blast night\b", _I), lambda m, today: _day(today - DAY)),
    (re.compile(r"\btomorrow\b", _I), lambda m, today: _day(today + DAY)),
    (
        re.compile(r"\btoday\b|\btonight\b|\bthis (?:morning|afternoon|evening)\b", _I),
        lambda m, today: _day(today),
    ),
    (
        re.compile(rf"\b({_COUNT_RE})\s+(day|week|month|year)s?\s+ago\b", _I),
        lambda m, today: _ago(m.group(2).lower(), _count(m.group(1)), today),
    ),
    (
        re.compile(rf"\b(?:in\s+the\s+)?(?:last|past)\s+({_COUNT_RE})\s+(days|weeks|months)\b", _I),
        lambda m, today: _last_n(today, m.group(2).lower(), _count(m.group(1))),
    ),
    (re.compile(rf"\b(last|this|next|on)\s+({_WEEKDAY_RE})\b", _I), _en_weekday),
    (re.compile(r"\b(last|this|next)\s+weekend\b", _I), _en_weekend),
    (
        re.compile(r"\b(last|past|previous|this|next)\s+(week|month|year)\b", _I),
        lambda m, today: _relative_unit(_RELATIVE_WORDS[m.group(1).lower()], m.group(2).lower(), today),
    ),
]


# ----- Chinese ----------------------------------------------------------------------------------------


def _cn_side(prefix: str) -> str:
    """One end of a Chinese date: "2023年", "去年", "3月", "三月份", "5日", in any combination."""
    p = prefix
    return (
        rf"(?:(?P<{p}y>{_CN_YEAR})年|(?P<{p}ry>前年|去年|今年|明年))?"
        rf"(?:(?P<{p}m>{_CN_NUM})月份?)?(?:(?P<{p}d>{_CN_NUM})[日号])?"
    )


def _cn_partial(match: re.Match[str], p: str, today: date) -> _Partial | None:
    year_text, relative = match.group(p + "y"), match.group(p + "ry")
    month_text, day_text = match.group(p + "m"), match.group(p + "d")
    year = _cn_year(year_text) if year_text else None
    if relative:
        year = today.year + _CN_RELATIVE_YEARS[relative]
    month = _cn_number(month_text) if month_text else None
    day = _cn_number(day_text) if day_text else None
    if (month is not None and not 1 <= month <= 12) or (day is not None and not 1 <= day <= 31):
        return None
    return _Partial(year, month, day)


def _cn_date(match: re.Match[str], today: date) -> _Days | None:
    part = _cn_partial(match, "a", today)
    if part is None or (part.month is None and part.day is not None):  # "3号" alone is a house number
        return None
    return _resolve(part, today)


def _cn_range(match: re.Match[str], today: date) -> _Days | None:
    low, high = _cn_partial(match, "a", today), _cn_partial(match, "b", today)
    if low is None or high is None:
        return None
    return _resolve_range(low, high, today)


def _cn_week(match: re.Match[str], today: date) -> _Days:
    back = 2 if match.group(1) == "上上" else 0
    start = _week_start(today) + (_CN_RELATIVE.get(match.group(1), 0) * 7 - back * 7) * DAY
    day = match.group(2)
    if not day:
        return _week(start)
    if day == "末":
        return _day(start + 5 * DAY, 2)
    return _day(start + _CN_WEEKDAYS[day] * DAY)


def _cn_month_day(match: re.Match[str], today: date) -> _Days | None:
    year, month = _shift_month(today.year, today.month, _CN_RELATIVE[match.group(1)])
    day = _cn_number(match.group(2))
    return _day(date(year, month, day)) if _valid(year, month, day) else None


_CN_UNITS = r"天|周|个星期|星期|个礼拜|礼拜|个月|年"
_CN_SPANS = {"天": "days", "周": "weeks", "个星期": "weeks", "个月": "months"}
_CN_DATE_AHEAD = rf"(?=(?:{_CN_YEAR})年|前年|去年|今年|明年|(?:{_CN_NUM})(?:月|日|号))"
"""A Chinese date starts here: its year, month or day is next (so a range never starts empty)."""


def _cn_ago(match: re.Match[str], today: date) -> _Days | None:
    count = _cn_number(match.group(1))
    return _ago(match.group(2), count, today) if count > 0 else None


def _cn_last_n(match: re.Match[str], today: date) -> _Days | None:
    count = _cn_number(match.group(1))
    return _last_n(today, _CN_SPANS[match.group(2)], count) if count > 0 else None


_CHINESE: list[tuple[re.Pattern[str], Handler]] = [
    (
        re.compile(
            rf"从?{_CN_DATE_AHEAD}{_cn_side('a')}\s*(?:到|至|~|\uff5e|\uff0d|\u2014|-)\s*{_CN_DATE_AHEAD}{_cn_side('b')}"
        ),
        _cn_range,
    ),
    (re.compile(_CN_DATE_AHEAD + _cn_side("a")), _cn_date),
    (re.compile(rf"([上本这下])个?月({_CN_NUM})[日号]"), _cn_month_day),
    (re.compile(r"大前天"), lambda m, today: _day(today - 3 * DAY)),
    (re.compile(r"前天"), lambda m, today: _day(today - 2 * DAY)),
    (re.compile(r"昨天|昨日|昨晚|昨夜"), lambda m, today: _day(today - DAY)),
    (re.compile(r"今天|今日|今晚|今早|今夜"), lambda m, today: _day(today)),
    (re.compile(r"明天|明日|明早|明晚"), lambda m, today: _day(today + DAY)),
    (re.compile(r"后天"), lambda m, today: _day(today + 2 * DAY)),
    (re.compile(rf"({_CN_NUM})\s*({_CN_UNITS})之?前"), _cn_ago),
    (re.compile(rf"(?:最近|过去|近)的?({_CN_NUM})\s*(天|周|个星期|个月)"), _cn_last_n),
    (re.compile(r"(上上|[上本这下])个?(?:周|星期|礼拜)([一二三四五六日天末])?"), _cn_week),
    (
        re.compile(r"([上这本下])个?月"),
        lambda m, today: _relative_unit(_CN_RELATIVE[m.group(1)], "month", today),
    ),
]
_EN_TRIGGER = re.compile(
    rf"\d|{_MONTH_RE}|(?i:{_WEEKDAY_RE}|yesterday|today|tonight|tomorrow|night|day|week|month|year|morning"
    r"|afternoon|evening)"
)
"""A word every English expression holds: text without one is not read further (most sentences)."""
_CN_TRIGGER = re.compile(r"[年月日号天周晚早夜]|星期|礼拜")
"""The same for Chinese."""


def find_time_expression(
    text: str, reference: datetime, zone: tzinfo | str | None = None
) -> TimeExpression | None:
    """The first (then longest) time expression in ``text``, read relative to ``reference`` in ``zone``.

    ``zone`` (a tzinfo or an IANA name) decides which local day ``reference`` falls on and where the
    days start; None means the reference's own zone, UTC for a naive one. None when nothing is found.
    """
    if isinstance(zone, str):
        zone = time_zone(zone)
    if zone is None:
        zone = reference.tzinfo or UTC
    moment = reference if reference.tzinfo else reference.replace(tzinfo=UTC)
    today = moment.astimezone(zone).date()
    patterns = (_ENGLISH if _EN_TRIGGER.search(text) else []) + (_CHINESE if _CN_TRIGGER.search(text) else [])
    best: tuple[int, int, _Days] | None = None
    for pattern, handler in patterns:
        for match in pattern.finditer(text):
            start, end = match.span()
            if end <= start:
                continue
            if best is not None and (
                start > best[0] or (start == best[0] and end - start <= best[1] - best[0])
            ):
                continue
            days = handler(match, today)
            if days is not None:
                best = (start, end, days)
    if best is None:
        return None
    start, end, days = best
    while end > start and text[end - 1].isspace():
        end -= 1
    return TimeExpression(
        text=text[start:end],
        span=(start, end),
        start=datetime.combine(days.first, time(), tzinfo=zone),
        end=datetime.combine(days.end, time(), tzinfo=zone),
        granularity=days.granularity,
    )
