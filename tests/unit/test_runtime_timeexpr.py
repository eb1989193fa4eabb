"""The one time-expression parser: English and Chinese, absolute, relative and ranges, in a time zone."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.timeexpr import (
    Granularity,
    UnknownTimeZone,
    checked_time_zone,
    find_time_expression,
    time_zone,
)

NOW = datetime(2026, 11, 30, 15, 30, tzinfo=UTC)  # a Monday
D, W, M, Y = Granularity.DAY, Granularity.WEEK, Granularity.MONTH, Granularity.YEAR


def _read(text: str, now: datetime = NOW, zone: str | None = None) -> tuple[str, date, date, Granularity]:
    found = find_time_expression(text, now, zone)
    assert found is not None, text
    assert text[found.span[0] : found.span[1]] == found.text
    return found.text, found.start.date(), found.end.date(), found.granularity


ENGLISH = [
    # absolute dates: month ends and leap days are kept, never clamped
    ("on March 31", "March 31", date(2026, 3, 31), date(2026, 4, 1), D),
    ("31 March 2023", "31 March 2023", date(2023, 3, 31), date(2023, 4, 1), D),
    ("2023-03-31 standup", "2023-03-31", date(2023, 3, 31), date(2023, 4, 1), D),
    ("the 14th of March", "14th of March", date(2026, 3, 14), date(2026, 3, 15), D),
    ("October 13, 2023", "October 13, 2023", date(2023, 10, 13), date(2023, 10, 14), D),
    ("by July 10, 2022", "by July 10, 2022", date(2022, 7, 10), date(2022, 7, 11), D),
    ("notes from 2024-02-29", "2024-02-29", date(2024, 2, 29), date(2024, 3, 1), D),
    ("February 29", "February 29", date(2024, 2, 29), date(2024, 3, 1), D),  # the latest leap day
    ("December 31", "December 31", date(2025, 12, 31), date(2026, 1, 1), D),
    ("What happened in May 2023?", "in May 2023", date(2023, 5, 1), date(2023, 6, 1), M),
    ("in December", "in December", date(2025, 12, 1), date(2026, 1, 1), M),  # not in the future
    ("during 2019", "during 2019", date(2019, 1, 1), date(2020, 1, 1), Y),
    ("March of last year", "March of last year", date(2025, 3, 1), date(2025, 4, 1), M),
    # relative to the reference time
    ("the deploy yesterday", "yesterday", date(2026, 11, 29), date(2026, 11, 30), D),
    ("the day before yesterday", "the day before yesterday", date(2026, 11, 28), date(2026, 11, 29), D),
    ("tomorrow", "tomorrow", date(2026, 12, 1), date(2026, 12, 2), D),
    ("What did we decide last Tuesday?", "last Tuesday", date(2026, 11, 24), date(2026, 11, 25), D),
    ("last Monday", "last Monday", date(2026, 11, 23), date(2026, 11, 24), D),  # on a Monday: a week ago
    ("next Friday", "next Friday", date(2026, 12, 4), date(2026, 12, 5), D),
    ("on Sunday", "on Sunday", date(2026, 11, 29), date(2026, 11, 30), D),
    ("3 days ago the build broke", "3 days ago", date(2026, 11, 27), date(2026, 11, 28), D),
    ("two weeks ago", "two weeks ago", date(2026, 11, 16), date(2026, 11, 23), W),
    ("a month ago", "a month ago", date(2026, 10, 1), date(2026, 11, 1), M),
    ("in the past 3 days", "in the past 3 days", date(2026, 11, 28), date(2026, 12, 1), D),
    ("this week", "this week", date(2026, 11, 30), date(2026, 12, 7), W),
    ("last weekend hike", "last weekend", date(2026, 11, 28), date(2026, 11, 30), D),
    ("last month", "last month", date(2026, 10, 1), date(2026, 11, 1), M),
    ("this year", "this year", date(2026, 1, 1), date(2027, 1, 1), Y),
    # ranges: each end lends the other its month or year
    ("between May and July", "between May and July", date(2026, 5, 1), date(2026, 8, 1), M),
    ("from 3 to 5 June", "from 3 to 5 June", date(2026, 6, 3), date(2026, 6, 6), D),
    ("from June 3 to 5", "from June 3 to 5", date(2026, 6, 3), date(2026, 6, 6), D),
    ("between August 11 and August 15 2023", "between August 11 and August 15 2023",
     date(2023, 8, 11), date(2023, 8, 16), D),
    ("from December to February 2024", "from December to February 2024",
     date(2023, 12, 1), date(2024, 3, 1), M),
    ("between 2019 and 2021", "between 2019 and 2021", date(2019, 1, 1), date(2022, 1, 1), Y),
]  # fmt: skip

CHINESE = [
    ("3月31日开会", "3月31日", date(2026, 3, 31), date(2026, 4, 1), D),
    ("2023年5月8日的会议", "2023年5月8日", date(2023, 5, 8), date(2023, 5, 9), D),
    ("二〇二三年十二月", "二〇二三年十二月", date(2023, 12, 1), date(2024, 1, 1), M),
    ("十二月三十一日", "十二月三十一日", date(2025, 12, 31), date(2026, 1, 1), D),
    ("2月29日", "2月29日", date(2024, 2, 29), date(2024, 3, 1), D),
    ("去年三月", "去年三月", date(2025, 3, 1), date(2025, 4, 1), M),
    ("去年的旅行", "去年", date(2025, 1, 1), date(2026, 1, 1), Y),
    ("有几个人在9月份过生日", "9月份", date(2026, 9, 1), date(2026, 10, 1), M),
    ("上周三我们讨论了什么", "上周三", date(2026, 11, 25), date(2026, 11, 26), D),
    ("上上周", "上上周", date(2026, 11, 16), date(2026, 11, 23), W),
    ("下周四", "下周四", date(2026, 12, 10), date(2026, 12, 11), D),
    ("上周末", "上周末", date(2026, 11, 28), date(2026, 11, 30), D),
    ("前天", "前天", date(2026, 11, 28), date(2026, 11, 29), D),
    ("我昨天在北京见了王老师", "昨天", date(2026, 11, 29), date(2026, 11, 30), D),
    ("三天前", "三天前", date(2026, 11, 27), date(2026, 11, 28), D),
    ("两个月前", "两个月前", date(2026, 9, 1), date(2026, 10, 1), M),
    ("最近三天", "最近三天", date(2026, 11, 28), date(2026, 12, 1), D),
    ("上个月的账单", "上个月", date(2026, 10, 1), date(2026, 11, 1), M),
    ("上个月5号", "上个月5号", date(2026, 10, 5), date(2026, 10, 6), D),
    ("今年", "今年", date(2026, 1, 1), date(2027, 1, 1), Y),
    ("五月到七月", "五月到七月", date(2026, 5, 1), date(2026, 8, 1), M),
    ("从5月3日到5日", "从5月3日到5日", date(2026, 5, 3), date(2026, 5, 6), D),
    ("2023年3月至5月", "2023年3月至5月", date(2023, 3, 1), date(2023, 6, 1), M),
]


@pytest.mark.parametrize(("text", "expression", "start", "end", "granularity"), ENGLISH + CHINESE)
def test_expressions_become_local_days_relative_to_the_reference_time(
    text: str, expression: str, start: date, end: date, granularity: Granularity
) -> None:
    assert _read(text) == (expression, start, end, granularity)


@pytest.mark.parametrize(
    "text",
    [
        "May I ask about Biscuit?",
        "When did Caroline go to the LGBTQ support group?",
        "February 29 2023",  # 2023 has no leap day
        "June 31",
        "April 31st",
        "from 3 to 5",  # numbers, not dates
        "3号楼",  # a house number
        "13月",
        "between 2 and 3 people",
    ],
)
def test_words_that_only_look_like_dates_are_not_time_expressions(text: str) -> None:
    assert find_time_expression(text, NOW) is None


def test_the_first_expression_wins_then_the_longest() -> None:
    assert _read("yesterday, or was it last Tuesday?")[0] == "yesterday"
    assert _read("the week of March 31 2025")[0] == "of March 31 2025"


def test_the_zone_decides_which_day_it_is_near_midnight() -> None:
    late = datetime(2026, 11, 30, 16, 30, tzinfo=UTC)  # 00:30 on 1 December in Shanghai
    assert _read("yesterday", late) == ("yesterday", date(2026, 11, 29), date(2026, 11, 30), D)
    found = find_time_expression("yesterday", late, "Asia/Shanghai")
    assert found is not None
    shanghai = ZoneInfo("Asia/Shanghai")
    assert (found.start, found.end) == (
        datetime(2026, 11, 30, tzinfo=shanghai),
        datetime(2026, 12, 1, tzinfo=shanghai),
    )
    assert found.start.astimezone(UTC) == datetime(2026, 11, 29, 16, tzinfo=UTC)
    assert _read("上周三", late, "Asia/Shanghai")[1] == date(2026, 11, 25)  # Shanghai's week began on 30 Nov


def test_the_reference_zone_is_the_default_and_a_naive_reference_is_utc() -> None:
    tokyo_evening = datetime(2026, 11, 30, 23, 30, tzinfo=timezone(timedelta(hours=9)))
    assert _read("today", tokyo_evening)[1] == date(2026, 11, 30)
    assert _read("today", tokyo_evening, "UTC")[1] == date(2026, 11, 30)
    assert _read("today", datetime(2026, 11, 30, 23, 30))[1] == date(2026, 11, 30)


def test_a_month_range_ends_at_the_real_end_of_its_last_month() -> None:
    assert _read("between January and February 2024")[1:3] == (date(2024, 1, 1), date(2024, 3, 1))
    assert _read("from 30 to 31 December 2023")[1:3] == (date(2023, 12, 30), date(2024, 1, 1))


def test_time_zones_are_iana_names_and_bad_names_name_the_field() -> None:
    assert time_zone("") is UTC and time_zone("utc") is UTC
    assert time_zone("Asia/Shanghai") == ZoneInfo("Asia/Shanghai")
    for bad in ("Mars/Olympus_Mons", "../../etc/passwd", "x" * 80):
        with pytest.raises(UnknownTimeZone):
            time_zone(bad)
    assert checked_time_zone(" Europe/Paris ") == "Europe/Paris"
    with pytest.raises(InvalidArgument) as caught:
        checked_time_zone("Nowhere/Special")
    assert caught.value.field == "time_zone"
