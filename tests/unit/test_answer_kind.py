"""What kind of value a request asks for, and whether a memory holds one besides the request's own words."""

from __future__ import annotations

import pytest

from hindsight.runtime.answer_kind import AMOUNT, NAME, TIME, asked_kind, holds_kind


@pytest.mark.parametrize(
    ("request_text", "kind"),
    [
        ("When is my dentist appointment?", TIME),
        ("What time does the ferry leave?", TIME),
        ("Which day is bin collection?", TIME),
        ("我的钢琴课是什么时候？", TIME),
        ("周会几点开？", TIME),
        ("How much is the parking permit?", AMOUNT),
        ("我每月房租多少钱？", AMOUNT),
        ("Who is our accountant?", NAME),
        ("Which bank is my savings account with?", ""),
        ("What is my dog's name?", ""),
        ("我们的宠物医生是谁？", ""),  # a Chinese name carries no capital to tell it by
    ],
)
def test_the_kind_a_request_asks_for(request_text: str, kind: str) -> None:
    assert asked_kind(request_text) == kind


@pytest.mark.parametrize(
    ("request_text", "text", "holds"),
    [
        ("What time is the choir practice?", "Choir practice is at 7:30.", True),
        ("What time is the choir practice?", "Choir practice happens in the church hall.", False),
        ("When is the book fair?", "The book fair is next Saturday.", True),
        ("Who is our accountant?", "Our accountant is Mira Svensson.", True),
        ("Who is our accountant?", "Our accountant works on Saturdays.", False),  # a weekday names no one
        ("Who is our accountant?", "Our accountant lives in Brighton.", False),  # a place, not a person
        ("How much is the parking permit?", "The parking permit costs forty pounds.", True),
        ("How much is the parking permit?", "The parking permit is renewed online.", False),
        ("我们的水费每月几号交？", "我们的水费每月15号交。", True),
        ("我们的水费每月几号交？", "我们的水费每月一百二。", False),  # "每月" is the request's own word
        ("我姑姑什么时候来？", "我姑姑中秋节来。", True),
        ("我姑姑什么时候来？", "我姑姑从长沙坐火车来。", False),
        ("Tell me about the permit.", "The parking permit is renewed online.", True),  # no kind asked
    ],
)
def test_a_memory_holds_the_kind_asked_for_besides_the_requests_words(
    request_text: str, text: str, holds: bool
) -> None:
    assert holds_kind(text, asked_kind(request_text), request_text) == holds
