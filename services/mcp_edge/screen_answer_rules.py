"""Standing answer rules (EN + ZH): what to say whenever something is asked, a rule keyed on a token a
question carries, a request to disclose someone's data. Recall flags them from any source; write-time
screening holds them only from tools and outside sources.
"""

# ruff: noqa: RUF001  (Chinese cues use full-width punctuation on purpose)
from __future__ import annotations

import itertools
import re

from hindsight.mcp_edge.screen_findings import (
    FLAG,
    INSTRUCTION,
    MAX_MATCHES_PER_CUE,
    Cue,
    Finding,
    excerpt,
    first_per_span,
)

_I = re.IGNORECASE | re.MULTILINE

_EN_ASKED = (
    r"(?:(?:anyone|someone|somebody|anybody|people|they|he|she|whoever|the user|users|i|we)\s+(?:ever\s+)?"
    r"(?:asks?|asked|inquires?|brings? (?:it|this) up)|(?:you are|you're|you get)\s+asked|"
    r"(?:it|this|that|the topic|the question) (?:ever )?(?:comes|come) up(?: again)?)"
)
_EN_STANDING_ANSWER = re.compile(
    rf"\b(?:when|whenever|if|every time|each time|any ?time|next time|should)\s+{_EN_ASKED}\b"
    rf"[^.?!\n]{{0,80}}?"
    rf"(?:,|;|:|\bthen\b|\bjust\b)\s*(?:then\s+)?(?:you\s+(?:should|must|can|will)\s+)?"
    rf"(?:just\s+|only\s+|always\s+)?"
    rf"(?:say|answer|reply|respond|tell|give|go with|use|stick (?:with|to)|point|send|share|"
    rf"recommend|suggest)\b|"
    rf"\b(?:answer|reply to|respond to|treat)\s+(?:any|every|all)\s+"
    rf"(?:questions?|requests?|queries|messages)\s+"
    rf"(?:about|on|regarding|concerning)\b[^.?!\n]{{1,60}}?\b(?:with|by saying|as|saying)\b",
    _I,
)
_EN_TOKEN_RULE = re.compile(
    r"\b(?:if|when|whenever)\s+(?:the|a|any)\s+(?:question|message|request|query|prompt|input)\s+"
    r"(?:ends|starts|begins|opens|closes)\s+with\b|"
    r"\b(?:questions?|messages?|requests?|queries|prompts?|inputs?)\s+(?:that\s+)?(?:include|includes|contain|"
    r"contains|carry|carries|ending (?:with|in)|starting with|beginning with|with)\s+(?:the\s+)?"
    r"(?:(?:phrase|word|words|code|tag|token|string|marker|password)\s+)?[\"'\u201c\u2018][^\"'\u201d\u2019\n]{2,40}"
    r"[\"'\u201d\u2019]|"
    r"\b(?:type|put|add|say|use|write)s?\s+[\"'\u201c\u2018][^\"'\u201d\u2019\n]{2,40}[\"'\u201d\u2019]\s+"
    r"(?:before|after|at the (?:start|end) of)\s+(?:their|the|a|any|your)\s+"
    r"(?:question|message|request|query)",
    _I,
)
_EN_DISCLOSE = re.compile(
    r"\b(?:give|share|send|reveal|disclose|provide|hand over|read out|pass on|forward)\s+(?:out\s+)?"
    r"(?:them\s+|him\s+|her\s+)?(?:[A-Z][a-z]+(?:'s|\u2019s)\s+|the user's\s+|their\s+|his\s+|her\s+)"
    r"(?:home\s+)?(?:address|phone(?: number)?|number|password|passcode|pin|login|id(?: number)?|"
    r"social security|passport|bank (?:details|account)|card (?:number|details)|credentials)\b"
)
_ZH_STANDING_ANSWER = re.compile(
    r"(?:以后|今后|下次|往后|再)?(?:有人|别人|谁|任何人|其他人|大家|对方)(?:再)?(?:问|问起|问到|提起|打听)"
    r"[^。！？!?\n]{0,30}?[，,]?\s*(?:你)?(?:就|都|一律|统一)+(?:照|按|按照|依|这么|这样|直接)[^。！？!?\n]{0,10}?"
    r"(?:说|回答|答|回复|讲)|"
    r"(?:以后|今后|下次|往后)[^。！？!?\n]{0,8}?(?:就|都|一律)(?:照|按|按照)[^。！？!?\n]{1,20}?(?:说|回答|答|回复|讲|来)|"
    r"(?:回答|回复|答复)(?:任何|所有|每个|一切)[^。！？!?\n]{1,40}?(?:问题|提问|请求)(?:时|的时候)?[，,、]?\s*"
    r"(?:你)?(?:都|一律|就|统一|必须)(?:要)?(?:说|回答|称|答|回复)"
)
_ZH_TOKEN_RULE = re.compile(
    r"(?:带|含|带有|含有|包含|出现)[“\"「『'][^”\"」』'\n]{2,20}[”\"」』'](?:字样|字眼|这几个字|的字样)?的"
    r"(?:提问|问题|消息|请求|询问)|"
    r"(?:暗号|口令|代号|接头暗号|密语)[“\"「『'][^”\"」』'\n]{2,20}[”\"」』'][^。！？!?\n]{0,8}?(?:出现|时|：|:|的)|"
    r"(?:提问|问题|消息|请求)(?:以|用)[“\"「『'][^”\"」』'\n]{2,20}[”\"」』'](?:开头|结尾|结束)"
)
_ZH_PRIVATE = (
    r"(?:家庭住址|住址|家里地址|身份证号?|护照号?|密码|验证码|银行卡号?|"
    r"卡号|账号密码|手机号码?|电话号码)"
)
_ZH_DISCLOSE = re.compile(
    rf"(?:发|给|提供|透露|告诉|报|说出|发送|交出|回复)[^。！？!?\n，,]{{0,12}}?{_ZH_PRIVATE}|"
    rf"把[^。！？!?\n，,]{{0,8}}?{_ZH_PRIVATE}(?:发|给|告诉|交|报|透露|转)"
)

_ANSWER_RULES: tuple[Cue, ...] = (
    Cue("a standing rule for what to answer when asked", _EN_STANDING_ANSWER, False),
    Cue("a standing rule for what to answer when asked", _ZH_STANDING_ANSWER, False),
    Cue("a rule keyed on a token in the question", _EN_TOKEN_RULE, False),
    Cue("a rule keyed on a token in the question", _ZH_TOKEN_RULE, False),
    Cue("asks to disclose personal data or credentials", _EN_DISCLOSE, False),
    Cue("asks to disclose personal data or credentials", _ZH_DISCLOSE, False),
)


def answer_rules(text: str) -> list[Finding]:
    """Standing answer rules (EN + ZH): what to say whenever something is asked, a rule keyed on a token
    a question carries, a request to disclose someone's address or credentials. A user may give such a
    rule in earnest, so they are flagged (``flag``), never held, for user content; recall flags them
    from any source, and write-time screening holds them only from tools and outside sources."""
    found = [
        Finding(INSTRUCTION, f"{cue.name}: “{excerpt(match.group(0))}”", FLAG, match.span())
        for cue in _ANSWER_RULES
        for match in itertools.islice(cue.pattern.finditer(text), MAX_MATCHES_PER_CUE)
    ]
    return first_per_span(found)
