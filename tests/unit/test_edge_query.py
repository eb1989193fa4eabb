"""Query understanding: time expressions in English and Chinese, entities, keywords and rewrites."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from hindsight.mcp_edge.query import find_entities, find_time, questions_only, understand

NOW = datetime(2026, 11, 30, 15, 30, tzinfo=UTC)  # a Monday


def _days(query: str, now: datetime = NOW) -> tuple[str, date, date]:
    hint = find_time(query, now)
    assert hint is not None, query
    assert hint.time_range.start is not None and hint.time_range.end is not None
    return hint.expression, hint.time_range.start.date(), hint.time_range.end.date()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did we decide last Tuesday?", ("last Tuesday", date(2026, 11, 24), date(2026, 11, 25))),
        ("上周三我们讨论了什么", ("上周三", date(2026, 11, 25), date(2026, 11, 26))),
        ("What happened in May 2023?", ("in May 2023", date(2023, 5, 1), date(2023, 6, 1))),
        ("the deploy yesterday", ("yesterday", date(2026, 11, 29), date(2026, 11, 30))),
        ("3 days ago the build broke", ("3 days ago", date(2026, 11, 27), date(2026, 11, 28))),
        ("two weeks ago", ("two weeks ago", date(2026, 11, 16), date(2026, 11, 23))),
        ("我昨天在北京大学见了王老师", ("昨天", date(2026, 11, 29), date(2026, 11, 30))),
        ("2023年5月8日的会议", ("2023年5月8日", date(2023, 5, 8), date(2023, 5, 9))),
        ("三天前", ("三天前", date(2026, 11, 27), date(2026, 11, 28))),
        ("上个月的账单", ("上个月", date(2026, 10, 1), date(2026, 11, 1))),
        ("去年的旅行", ("去年", date(2025, 1, 1), date(2026, 1, 1))),
        ("on 8 May 2023", ("8 May 2023", date(2023, 5, 8), date(2023, 5, 9))),
        ("notes from 2024-02-29", ("2024-02-29", date(2024, 2, 29), date(2024, 3, 1))),
        ("this week", ("this week", date(2026, 11, 30), date(2026, 12, 7))),
        ("last weekend hike", ("last weekend", date(2026, 11, 28), date(2026, 11, 30))),
        ("上周末", ("上周末", date(2026, 11, 28), date(2026, 11, 30))),
    ],
)
def test_time_expressions_become_ranges_relative_to_the_reference_time(
    query: str, expected: tuple[str, date, date]
) -> None:
    assert _days(query) == expected


def test_a_month_without_a_year_is_the_latest_one_not_in_the_future() -> None:
    assert _days("Where did Melanie move in June?")[1:] == (date(2026, 6, 1), date(2026, 7, 1))
    assert _days("what happened in December", NOW)[1:] == (date(2025, 12, 1), date(2026, 1, 1))


def test_last_weekday_on_that_weekday_means_a_week_ago() -> None:
    monday = datetime(2026, 11, 30, tzinfo=UTC)
    assert _days("last Monday", monday)[1] == date(2026, 11, 23)


def test_words_that_only_look_like_dates_are_not_time_expressions() -> None:
    assert find_time("May I ask about Biscuit?", NOW) is None
    assert find_time("When did Caroline go to the LGBTQ support group?", NOW) is None
    assert find_time("February 30 2023", NOW) is None


def test_entities_are_names_and_quoted_phrases_not_question_words_or_dates() -> None:
    assert find_entities("When did Caroline go to the LGBTQ support group?") == ("Caroline", "LGBTQ")
    assert find_entities('What did "blue notebook" mean to Dana Scully?') == ("blue notebook", "Dana Scully")
    assert find_entities("Which Tuesday in May?") == ()


def test_rewrites_leave_out_the_time_words_and_keep_names_and_content_words() -> None:
    plan = understand("What did Melanie say about Lisbon last Tuesday?", NOW)
    assert plan.time is not None and plan.time.expression == "last Tuesday"
    assert plan.rewrites[0] == "What did Melanie say about Lisbon last Tuesday?"
    assert "last Tuesday" not in plan.rewrites[1] and "Lisbon" in plan.rewrites[1]
    assert plan.entities == ("Melanie", "Lisbon")
    assert {"melanie", "lisbon", "say"} <= set(plan.keywords)
    assert len(plan.rewrites) <= 3


def test_rewrites_that_search_the_same_terms_are_searched_once() -> None:
    assert understand("Biscuit", NOW).rewrites == ("Biscuit",)
    assert understand("Where is Biscuit?", NOW, max_rewrites=0).rewrites == ("Where is Biscuit?",)


def test_the_questions_of_a_query_with_remarks_around_them_are_searched_alone_too() -> None:
    query = "今天天气真好，公园里的花都开了。我真正想问的是：我参观的公园怎么样？"
    assert questions_only(query) == "我真正想问的是：我参观的公园怎么样？"
    assert understand(query, NOW).rewrites[:2] == (query, "我真正想问的是：我参观的公园怎么样？")
    dialogue = "I finally got a puppy! Do you remember what breed I said I wanted? I can't recall."
    assert questions_only(dialogue) == "Do you remember what breed I said I wanted?"
    assert questions_only("Where does Caroline live?") == ""  # all question: nothing to leave out
    assert questions_only("I moved to Denver last month.") == ""  # no question at all


def test_month_ends_are_read_as_they_are_written() -> None:
    assert _days("what did we ship on March 31?") == ("March 31", date(2026, 3, 31), date(2026, 4, 1))
    assert _days("3月31日的发布") == ("3月31日", date(2026, 3, 31), date(2026, 4, 1))


def test_the_range_is_the_zone_local_day_given_in_utc() -> None:
    late = datetime(2026, 11, 30, 16, 30, tzinfo=UTC)  # already 1 December in Shanghai
    utc = find_time("what happened yesterday", late)
    shanghai = understand("what happened yesterday", late, zone="Asia/Shanghai").time
    assert utc is not None and shanghai is not None
    assert utc.time_range.start == datetime(2026, 11, 29, tzinfo=UTC)
    assert shanghai.time_range.start == datetime(2026, 11, 29, 16, tzinfo=UTC)
    assert shanghai.time_range.end == datetime(2026, 11, 30, 16, tzinfo=UTC)
    assert shanghai.time_range.start.tzinfo is UTC


@pytest.mark.parametrize(
    ("query", "expression"),
    [
        # talk around the question says when the talk happened, not what to remember
        ("今天天气真好，很适合出去玩。对了，那个在苏州的活动规模是什么？", None),
        ("I went out today. Do you remember what Melanie painted?", None),
        ("We deployed yesterday. What broke?", None),
        ("今天天气真好。上周三我们讨论了什么？", "上周三"),
        ("昨天买的牛奶放冰箱了吗？对了，我居住的小区怎么样？", None),  # the last question is the one asked
        ("What happened yesterday? Tell me everything.", "yesterday"),
        ("Lovely day! What did Dr. Smith say on Jan. 5, 2024?", "Jan. 5, 2024"),
        ("We deployed yesterday, what broke?", "yesterday"),
        ("notes from last week", "last week"),  # no question: all of it
    ],
)
def test_only_the_last_question_of_a_query_says_when_to_look(query: str, expression: str | None) -> None:
    hint = find_time(query, NOW)
    assert (hint.expression if hint else None) == expression
    if hint is not None:
        assert query[hint.span[0] : hint.span[1]] == hint.expression
