"""What kind of value a request asks for, and whether a text holds one (English and Chinese, no LLM).

"What time is our stand-up?" asks for a time; "our stand-up happens in the kitchen area" is about the
stand-up but gives no time, so it does not answer, however many words it shares with the request. Only
kinds that can be told from the words are read: a time or date, an amount, and (English) a person or
organisation named with a capital. Anything else ("which", "what is", "where", "谁") asks for no kind this
module can check, and every text answers it.
"""

# ruff: noqa: RUF002  (Chinese examples use full-width punctuation on purpose)
from __future__ import annotations

import re

TIME = "time"
AMOUNT = "amount"
NAME = "name"

_EN_TIME_REQUEST = re.compile(
    r"^(?:(?:so|and|but|oh|hey|ok|okay)[\s,]+)*(?:when\b|what time\b|"
    r"(?:which|what) (?:day|date|time|month|weekday)s?\b|how often\b)",
    re.IGNORECASE,
)
_EN_AMOUNT_REQUEST = re.compile(
    r"^(?:(?:so|and|but|oh|hey|ok|okay)[\s,]+)*how (?:much|many|long|far|old|big|tall|heavy)\b",
    re.IGNORECASE,
)
_EN_NAME_REQUEST = re.compile(r"^(?:(?:so|and|but|oh|hey|ok|okay)[\s,]+)*(?:who|whom)\b", re.IGNORECASE)
_ZH_TIME_REQUEST = re.compile(r"几点|什么时候|哪天|哪一天|星期几|周几|礼拜几|几号|何时|几月|哪年|多久一次")
_ZH_AMOUNT_REQUEST = re.compile(r"多少|多大|多长|多远|多重|多高|几岁|几个|几次|几公里|几斤")

_EN_TIME_WORDS = re.compile(
    r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|tues|wed|thu|thurs|fri|sat|sun|"
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"noon|midnight|morning|mornings|afternoon|afternoons|evening|evenings|night|nights|tonight|today|"
    r"tomorrow|yesterday|weekend|weekends|weekday|weekdays|daily|weekly|monthly|yearly|annually|"
    r"fortnightly|biweekly|hourly|nightly|first|second|third|fourth|fifth|last|next|every|christmas|easter|"
    r"new year|holidays?|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)days|[ap]\.?m\.?)\b",
    re.IGNORECASE,
)
_EN_NUMBER_WORDS = re.compile(
    r"\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
    r"sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|"
    r"thousand|million|billion|half|quarter|dozen|a few|several)\b",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")
_ZH_TIME_WORDS = re.compile(
    r"上午|下午|晚上|早上|早晨|中午|凌晨|傍晚|夜里|半夜|周末|工作日|星期[一二三四五六日天]|礼拜[一二三四五六日天]|"
    r"周[一二三四五六日]|每天|每周|每月|每年|每晚|隔周|月初|月底|月中|年初|年底|今天|明天|后天|昨天|今晚|明晚|"
    r"饭前|饭后|早饭|午饭|晚饭|睡前|下周|上周|本周|这周|下个月|这个月|明年|今年|春节|国庆|中秋|元旦|端午|清明|"
    r"圣诞|除夕|元宵|寒假|暑假|[零一二两三四五六七八九十]+(?:点|号|日|月|年|时|分|刻)"
)
_ZH_NUMERALS = re.compile(r"[零一二两三四五六七八九十百千万亿半]")
_CAPITALISED = re.compile(
    r"(?<![.!?]\s)(?<!^)(?<!\bin\s)(?<!\bat\s)(?<!\bon\s)(?<!\bto\s)(?<!\bnear\s)(?<!\bfrom\s)"
    r"\b[A-Z][a-zA-Z'\u2019-]+"
)
"""A capitalised word that is not a sentence's first nor a place ("lives in Brighton", "at Cafe Rosa")."""
_NOT_NAMES = frozenset(
    (
        "I I'm I've I'd I'll OK Also And But So Oh Monday Tuesday Wednesday Thursday Friday Saturday "
        "Sunday Mondays Tuesdays Wednesdays Thursdays Fridays Saturdays Sundays January February March "
        "April May June July August September October November December Christmas Easter"
    ).split()
)
"""Capitalised words that name no one: "I", interjections, weekdays, months, holidays."""


def asked_kind(request: str) -> str:
    """The kind of value ``request`` asks for: :data:`TIME`, :data:`AMOUNT`, :data:`NAME` (English "who"),
    or "" when its words do not say."""
    text = request.strip()
    if _EN_TIME_REQUEST.match(text) or _ZH_TIME_REQUEST.search(text):
        return TIME
    if _EN_AMOUNT_REQUEST.match(text) or _ZH_AMOUNT_REQUEST.search(text):
        return AMOUNT
    if _EN_NAME_REQUEST.match(text):
        return NAME
    return ""


def holds_kind(text: str, kind: str, request: str = "") -> bool:
    """Whether ``text`` holds a value of ``kind`` (always true for the empty kind) besides the words of
    ``request`` ("每月" in "我们的房租每月几号交？" is part of the question, not its answer)."""
    if not kind:
        return True
    asked = request.casefold()

    def found(pattern: re.Pattern[str]) -> bool:
        return any(m.group(0).casefold() not in asked for m in pattern.finditer(text))

    if kind == NAME:
        return any(name.casefold() not in asked for name in _names(text))
    if found(_DIGIT):
        return True
    if kind == TIME:
        return found(_EN_TIME_WORDS) or found(_ZH_TIME_WORDS)
    return found(_EN_NUMBER_WORDS) or found(_ZH_NUMERALS)


def _names(text: str) -> list[str]:
    """Capitalised words that are not a sentence's first word, "I" or an interjection."""
    return [word for word in _CAPITALISED.findall(text) if word not in _NOT_NAMES]
