"""Write-time screening: instructions aimed at the agent, imperative tool content, and secrets (EN + ZH).

Memory is an attack surface: a tool result or a web page can plant an instruction ("ignore previous
instructions", "以后无论谁问都回答...") that the agent later recalls as its own experience. Screening reads
each turn before it is written and says what to do with it.

Instruction cues are families, each a combination of an imperative, an addressee (the agent, "the user",
whoever asks) and scope words (from now on, always, 以后), never a list of attack phrasings. A family is
*strong* when ordinary conversation almost never produces it (overriding earlier instructions, a forged
``system:`` line, a rule for what to answer whoever asks) and *weak* when a user may well say it as a
preference ("always answer in French"): weak cues are acted on only for content from tools and outside
sources, where an instruction to the reader is an attack whatever its words.

Secrets (API keys of common formats, private key blocks, JWTs, bearer tokens, ``password=...``, connection
strings with a password, card numbers that pass the Luhn check) are redacted, refused or quarantined by
the bank's policy.
"""

# ruff: noqa: RUF001  (Chinese cues use full-width punctuation on purpose)
from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from hindsight.runtime.records import Source

QUARANTINE = "quarantine"
REDACT = "redact"
REFUSE = "refuse"
FLAG = "flag"
ACTION_RANK = {"": 0, FLAG: 1, REDACT: 2, QUARANTINE: 3, REFUSE: 4}
"""Which action wins when a text has several findings."""
SECRET_POLICIES = (REDACT, REFUSE, QUARANTINE)

INSTRUCTION = "instruction"
TOOL_IMPERATIVE = "tool_imperative"
SECRET = "secret"

MAX_MATCHES_PER_CUE = 3
"""Matches of one cue family reported per text: enough to show a reviewer, and a text repeating a cue a
million times costs no more to report than one that says it three times."""

UNTRUSTED = frozenset({Source.TOOL, Source.EXTERNAL})
"""Sources whose instructions to the reader are attacks, whatever their words."""


@dataclass(frozen=True)
class Finding:
    """One thing screening found: what, why (naming the cue), what to do, and where (character span)."""

    kind: str
    reason: str
    action: str
    span: tuple[int, int] | None = None


@dataclass(frozen=True)
class ScreeningPolicy:
    """What screening does: on or off, and how a bank treats secrets."""

    enabled: bool = True
    secrets: str = REDACT
    """``redact`` (store with the secret replaced), ``refuse`` (store nothing) or ``quarantine``."""
    instructions: str = QUARANTINE
    """What an instruction aimed at the agent gets: ``quarantine`` or ``flag``."""

    def __post_init__(self) -> None:
        if self.secrets not in SECRET_POLICIES:
            raise ValueError(f"secret policy must be one of {', '.join(SECRET_POLICIES)}")
        if self.instructions not in {QUARANTINE, FLAG}:
            raise ValueError("instruction policy must be 'quarantine' or 'flag'")


@dataclass(frozen=True)
class ScreenResult:
    """The findings, the text to store (secrets redacted where the policy redacts) and the action."""

    findings: list[Finding] = field(default_factory=list)
    text: str = ""

    @property
    def action(self) -> str:
        """The strongest action of the findings: refuse > quarantine > redact > flag > ""."""
        return max((f.action for f in self.findings), key=ACTION_RANK.__getitem__, default="")

    def main(self) -> Finding | None:
        """The finding behind the action (the first of the strongest), for one-line reports."""
        action = self.action
        return next((f for f in self.findings if f.action == action), None) if action else None


# ----- instruction cues ---------------------------------------------------------------------------------
_I = re.IGNORECASE | re.MULTILINE


@dataclass(frozen=True)
class _Cue:
    """One cue family: a pattern, whether it is strong, and the words a reviewer reads."""

    name: str
    pattern: re.Pattern[str]
    strong: bool
    check: Callable[[re.Match[str]], bool] | None = None


_STRONG_QUALIFIERS = re.compile(
    r"\b(previous|prior|above|earlier|preceding|former|original|system|your|all|any)\b|"
    r"之前|以前|先前|此前|上面|上述|前面|原来|原有|所有|全部|一切|系统|你的|任何",
    re.IGNORECASE,
)

_OWN = re.compile(r"\b(?:my|our)\b", re.IGNORECASE)
"""A first-person owner of the overridden instructions: the speaker revising their own words."""
_REVISES_OWN = "revises the speaker's own earlier instructions"
"""Weak: a user changing their mind ("ignore my earlier request for metric units"); from a tool or an
outside source, which has no earlier instructions of its own to revise, it is held like any weak cue."""
_EN_OVERRIDE = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass|circumvent|discard|abandon)\s+"
    r"(?P<q>(?:(?:all|any|every|the|your|my|our|of|these|those|previous|prior|above|earlier|preceding|former|"
    r"original|existing|system|safety|other|current)\s+){1,4})"
    r"(?:instructions?|directions?|rules?|guidelines?|prompts?|directives?|commands?|guardrails?|"
    r"polic(?:y|ies)|constraints?|restrictions?|programming|context|messages?|memor(?:y|ies))\b",
    _I,
)
_ZH_OVERRIDE = re.compile(
    r"(?:忽略|无视|忽视|忘记|忘掉|不要理会|别理会|不用理会|跳过|推翻|抛开|作废)(?:掉)?"
    r"(?P<q>(?:你|之前|以前|先前|此前|上面|上述|前面|原来|原有|所有|全部|一切|系统|任何|的){1,6})"
    r"(?:(?:关于|有关)[^，。！？,\n]{1,60}?的(?:所有|全部|一切|任何)?)?"
    r"(?:指令|指示|规则|提示词?|设定|要求|命令|约束|限制|说明|对话|记忆)"
)
_ROLE_MARKER = re.compile(
    r"(?:^|\n)\s*(?:\[|<\|?|【|#+\s*)?\s*(?:system|developer|system prompt|系统|系统提示|系统指令|系统消息)"
    r"\s*(?:\]|\|?>|】)?\s*[:：]|<\|im_start\|>|\[/?INST\]|\bbegin (?:system|new) (?:prompt|instructions)\b|"
    r"(?:^|\n)\s*(?:new|updated|revised) instructions?\s*[:：]|(?:^|\n)\s*新的?(?:指令|指示)\s*[:：]",
    _I,
)
_ASKERS_EN = (
    r"(?:someone|anyone|somebody|anybody|a user|the user|users|any user|people|others|a customer|customers|"
    r"the customer|a visitor|visitors|whoever|a person|they)"
)
_ANSWER_VERBS_EN = (
    r"(?:say|answer|respond|reply|tell|claim|state|recommend|suggest|direct|insist|report|ask|forward|send|"
    r"add|include|advise|sign|copy|mention|deny|redirect|link|share|email|give|provide|warn|quietly|"
    r"always|never|do not|don't|point (?:them|him|her|people) to|refer (?:them|him|her|people) to)"
)
_EN_RULE = re.compile(
    rf"\b(?:when|whenever|if|every time|each time|any ?time)\s+(?:(?:{_ASKERS_EN}\s+(?:ever\s+)?"
    rf"(?:asks?|inquires?|wants? to know|questions?)|(?:you are|you're|you get|you're ever|you are ever)\s+"
    rf"asked|asked)\b)[^.?!\n]{{0,160}}?(?:,|;|:|\bthen\b)\s*(?:then\s+)?(?:you\s+(?:should|must|will|shall|"
    rf"need to|have to)\s+)?(?:always\s+|only\s+|just\s+)?{_ANSWER_VERBS_EN}\b",
    _I,
)
_EN_WHOEVER = re.compile(
    rf"\b(?:no matter who|whoever|regardless of who|whoever it is that)\s+asks?\b[^.?!\n]{{0,80}}?"
    rf"\b{_ANSWER_VERBS_EN}\b|\b{_ANSWER_VERBS_EN}\b[^.?!\n]{{0,80}}?\b(?:no matter who|whoever|regardless "
    rf"of who)\s+(?:asks?|is asking)\b",
    _I,
)
_EN_ADDRESS = re.compile(
    r"\b(?:tell|inform|notify|advise|convince|remind|assure|warn|persuade)\s+(?:the|any|every|all|each)\s+"
    r"(?:users?|customers?|callers?|visitors?|readers?)\b|"
    r"\b(?:dear|attention|note to|message to|instructions? (?:to|for)|reminder (?:to|for))\s+(?:the\s+)?"
    r"(?:ai|assistant|agent|model|llm|chatbot|bot|language model)\b|"
    r"\b(?:the|this)\s+(?:ai|assistant|agent|model|llm|chatbot|language model)\s+"
    r"(?:must|should|shall|needs? to|has to|is (?:required|instructed|supposed) to)\s+(?:always\s+|now\s+)?"
    r"(?:say|answer|respond|reply|tell|recommend|claim|state|ignore|forget|output|include|mention|refer)\b|"
    r"\byou\s+(?:must|should|shall|need to|have to|are (?:required|instructed|supposed) to)\s+"
    r"(?:always\s+|now\s+)?(?:tell|inform|answer|say to|respond to|reply to|recommend to)\s+"
    r"(?:the|any|every|all)\s+(?:users?|customers?)\b",
    _I,
)
_ZH_ASKERS = r"(?:有人|任何人|别人|其他人|其它人|用户|客户|谁|大家|对方|人家|提问者|访客)"
_ZH_ANSWER = (
    r"(?:回答|回复|答复|说|答|告诉|推荐|建议|声称|表示|称|介绍|让用户|要求用户|把|发送|转发|附上|提供|开通|取消|"
    r"先让|悄悄|直接)"
)
_ZH_RULE = re.compile(
    rf"(?:当|如果|若|要是|假如|每当|一旦|只要|凡是)?{_ZH_ASKERS}(?:再|以后|今后)?"
    rf"(?:问|询问|问到|问起|提到|提起|咨询|打听)(?!我)[^。！？!?\n]{{0,60}}?[，,、：:]?\s*"
    rf"(?:你)?(?:就|都|则|便|请|一律|务必|必须|要|应该|统一)+(?:要|先)?{_ZH_ANSWER}"
)
_ZH_WHOEVER = re.compile(r"(?:无论|不管|不论)(?:是)?(?:谁|任何人|什么人|哪个人|哪位)(?:来)?(?:问|询问)")
_ZH_ADDRESS = re.compile(
    rf"(?:告诉|通知|提醒|劝|说服|转告|忽悠)(?:所有|每个|每位|任何|全部)?(?:的)?(?:用户|客户|使用者|提问者|访客)|"
    rf"(?:助手|AI|人工智能|模型|智能体|机器人|大模型)(?:你)?(?:必须|应该|应当|务必|需要|要|请)"
    rf"(?:始终|一直|总是|永远)?{_ZH_ANSWER}|"
    rf"(?:给|致)(?:AI|助手|模型|智能体|机器人)的(?:说明|提示|指令|留言|话)",
    re.IGNORECASE,
)
_SCOPE_EN = (
    r"(?:from now on|from this point (?:on|forward)|henceforth|going forward|hereafter|in (?:all )?future "
    r"(?:conversations|answers|responses|sessions|chats)|for all future|always|never again|every time|"
    r"permanently|forever)"
)
_EN_PERSIST = re.compile(
    rf"\b{_SCOPE_EN}\b[^.?!\n]{{0,60}}?\b(?:answer|respond|reply|say|tell|recommend|suggest|state|claim|"
    rf"refer|output|mention|include|address|call)\b|"
    rf"\b(?:remember|memori[sz]e|keep in mind|store|save|note)\s+(?:this|that|the following|it)?\s*[:,]?"
    rf"[^.?!\n]{{0,40}}?\b(?:from now on|for (?:all )?future|forever|permanently|henceforth)\b",
    _I,
)
_ZH_PERSIST = re.compile(
    r"(?:以后|今后|从现在起|从现在开始|从今以后|从今往后|此后|往后|将来|永远|每次|每当|下次|始终)"
    r"[^。！？!?\n]{0,20}?(?:都|一律|总是|始终|必须|务必|要|请|就)[^。！？!?\n]{0,10}?"
    r"(?:回答|回复|说|告诉|推荐|建议|声称|称|答|提到|介绍)|"
    r"记住[^。！？!?\n]{0,6}?(?:以后|今后|从现在起|永远|每次|下次)|"
    r"(?:以后|今后|从现在起|往后|下次)[^。！？!?\n]{0,6}?(?:别|不要|不许|不准)(?:再)?(?:说|提|回答|讲)"
)


_AI_READER_EN = (
    r"(?:ai|automated|artificial|llm|language|virtual)?\s*(?:assistants?|agents?|models?|llms?|"
    r"bots?|chatbots?)"
)
_EN_AI_READER = re.compile(
    r"\bif you(?:'re| are) (?:an? )?(?:ai|artificial intelligence|llm|large language model|language model|"
    r"assistant|agent|chatbot|bot|automated system)\b|"
    rf"\b(?:notes?|messages?|instructions?|reminders?|notice|memo)\s+(?:for|to)\s+(?:the\s+|all\s+|"
    rf"any\s+)?{_AI_READER_EN}\b|"
    rf"\b(?:for|to)\s+(?:the\s+)?(?:ai|automated|llm)\s+(?:assistants?|agents?|models?|systems?)\b|"
    rf"\b{_AI_READER_EN}\s+(?:that (?:is|are)\s+)?(?:reading|processing|summari[sz]ing|parsing|seeing|"
    rf"handling|"
    r"browsing|indexing) (?:this|these|the following)\b|"
    r"<!--\s*(?:assistant|ai|agent|system|model|llm|instruction|note)\b|"
    r"\b(?:notes?|messages?|reminders?|instructions?)\s+(?:for|to)\s+"
    r"(?:whoever|anyone|the next (?:person|reader|agent|assistant))\s+(?:who\s+)?"
    r"(?:reads|reading|sees|processes|opens|handles)\s+this\b",
    _I,
)
_ZH_AI_READER = re.compile(
    r"(?:致|给|对|告)(?:所有|各位)?(?:AI|人工智能|自动)?(?:助手|模型|智能体|机器人|大模型)|"
    r"如果你是(?:一个|一名)?(?:正在[^，。,]{0,12})?(?:AI|人工智能|语言模型|大模型|助手|智能体|模型|机器人)|"
    r"(?:读取|处理|阅读|总结|浏览|解析)(?:这条|此|本|该|这个)[^，。,]{0,8}的(?:AI|助手|智能体|模型|机器人)|"
    r"仅供(?:自动)?(?:AI|助手|模型|智能体|机器人)(?:阅读|参考|使用)|"
    r"<!--\s*(?:助手|AI|系统|模型|智能体)",
    re.IGNORECASE,
)
_EN_CONCEAL = re.compile(
    r"\b(?:do not|don't|never|without)\s+(?:ever\s+)?(?:mention|tell|reveal|show|disclose|inform|telling|"
    r"mentioning|informing|notifying|asking)\s+(?:(?:this|these|the|any|about)\s+)?(?:(?:note|notes|"
    r"instructions?|"
    r"message|rule|change|policy|earlier|previous|prior|other)\s*)+(?:statements?|records?|answers?|notes?|"
    r"versions?)?\s*(?:to (?:the )?users?)?|"
    r"\b(?:do not|don't|never)\s+(?:let|tell|inform)\s+(?:the )?users?\s+(?:know|about|that)\b|"
    r"\bwithout (?:asking|telling|informing|notifying) (?:the )?users?\b|\bwithout asking (?:first|them)\b",
    _I,
)
_ZH_CONCEAL = re.compile(
    r"(?:不要|别|切勿|不得|不可|千万别)(?:向|对|跟|给)?(?:用户|对方|客户)?(?:提起|透露|提到|说起|说明|展示|告知)"
    r"(?:这条|此|本|该|之前|以前|先前|其他|任何)|"
    r"不经(?:用户)?(?:确认|同意|允许|询问)|瞒着用户|不让用户知道|"
    r"(?:不要|别|切勿|不得|千万别)(?:告诉|通知|让)(?:用户|对方|客户)(?:知道)?"
)
_EN_INPUT_TRIGGER = re.compile(
    r"\b(?:whenever|when|if|every time)\s+(?:a|the|any)\s+(?:message|request|query|question|prompt|input|"
    r"text)\s+"
    r"(?:contains|includes|mentions|has)\b|"
    r"\b(?:a|any|every) (?:request|message|query|question|prompt) (?:mentioning|containing|including|"
    r"with the words?|that (?:mentions|contains|includes))\b[^.?!\n]{1,60}?\b(?:is|are|gets?|must|should)\b|"
    r"\bwhen (?:answering|replying to|responding to) (?:any |all )?(?:questions?|requests?|queries) "
    r"(?:about|on|regarding)\b|"
    rf"\bfor (?:any |all |every )?(?:requests?|questions?|queries|messages|inquiries|tasks) (?:tagged|marked|"
    rf"labell?ed|flagged|containing|mentioning|with|about|on|"
    rf"regarding|"
    rf"concerning|related to) [^,.;:\n]{{1,80}}[,:;]\s*(?:always\s+|just\s+|simply\s+)?{_ANSWER_VERBS_EN}\b",
    _I,
)
_ZH_INPUT_TRIGGER = re.compile(
    r"(?:只要|如果|若|一旦|每当)(?:消息|请求|问题|提问|输入|对话)(?:里|中)?(?:出现|包含|含有|提到)|"
    r"(?:带有|含有|包含|提到)[^，。！？,\n]{1,30}的(?:请求|消息|提问|问题)(?:已|都|一律|会|将)|"
    r"(?:消息|请求|问题|提问|输入|对话)(?:里|中)(?:出现|包含|含有|提到|带着|带有|有)[^，。！？,\n]{1,20}?(?:时|的时候)|"
    r"凡是(?:关于|涉及)[^，。,]{1,60}的(?:请求|问题|提问|咨询)[，,]?(?:都|一律)"
)
_BRACKET_MARKER = re.compile(
    r"[\[【(（]\s*(?:system|system note|system message|admin|sudo|系统|系统消息|系统提示|管理员)\s*[\]】)）]",
    _I,
)
_EN_MEMORY_DIRECTIVE = re.compile(
    r"\b(?:keep (?:that|this|it) in mind|keep in mind|please note|note to self|just so you know|"
    r"for future reference|remember|bear in mind|"
    r"don't forget|make a note)\s*(?:that\b|this\b|[,:;-])|\bkeep (?:that|this|it) in mind\b",
    _I,
)
_ZH_MEMORY_DIRECTIVE = re.compile(
    r"(?:请记住|记住|要记得|请注意|给自己的备注|备注一下|以后记得|请永久记住|永久记住)"
)
_EN_ANSWER_SET = re.compile(
    r"\b(?:the|your)\s+(?:right|correct|real|true|proper|only|accurate|official)\s+(?:answer|reply|response|"
    r"way to (?:answer|handle|respond|reply)|thing to say)\b|"
    r"\b(?:answer|reply|respond)\s+(?:with|only with)\s+[\"“']|\bI should (?:tell|say|answer|recommend|"
    r"forward|"
    r"send|ask|advise|add|sign|copy|quietly)\b|"
    r"\bthe (?:\w+ )?(?:answer|reply|response) (?:about|to|for|on|regarding) [^.?!\n,;]{1,80}? (?:is|was|"
    r"should be)\b|"
    r"\bthe only (?:reliable|trusted|trustworthy|official|correct|safe|valid) (?:place|source|site|"
    r"website|way|answer)\b",
    _I,
)
_ZH_ANSWER_SET = re.compile(
    r"正确(?:的)?(?:答案|回答|回复|处理方式|做法|说法)|(?:回答|回复)[^，。,]{0,20}(?:时|的时候)?应该|(?:回答|回复)(?:说|称)|我应该"
    r"(?:告诉|回答|推荐|转发|发送|建议|让|把|悄悄|先)|唯一(?:可靠|正确)的?(?:渠道|来源|答案)"
)
_EN_DISCREDIT = re.compile(
    r"\b(?:the\s+)?(?:earlier|old|older|first|previous|prior|original)\s+(?:entry|entries|record|records|note|"
    r"notes|information|memory|memories|statement|data|figure|value|number|answer|claim|report|version|date)\b"
    r"[^.?!\n]{0,60}?\b(?:was|were|is|are|came|described|"
    r"got)\s+(?:wrong|outdated|incorrect|mixed up|from an outdated|about someone else|someone else|"
    r"superseded|replaced|obsolete|invalid)|"
    r"\b(?:corrected|changed|updated) (?:this|that|it) later\b|\bwas mixed up with\b|"
    r"\bthere (?:is|was) no (?:record|memory|mention|trace) of\b|"
    r"\bcorrected (?:record|entry|version|figure)\b|"
    r"(?:^|(?<=[.!?\n]))\s*(?:small |quick |minor |a )?correction\s*(?:on [^:.\n]{1,60})?[:\-]",
    _I,
)
_ZH_DISCREDIT = re.compile(
    r"(?:之前|以前|最早|原来|旧的?|先前|早先)(?:那条|的)?(?:关于[^，。,]{1,30}的)?(?:记录|笔记|信息|说法|条目|记忆|资料)"
    r"[^，。,]{0,20}?(?:弄混|搞混|有误|错了|过时|作废|说的是另一个人|不准确|不对)|后来[^，。,]{0,16}更正|"
    r"(?:根本)?没有(?:关于[^，。,]{1,30}的)?(?:任何)?(?:记录|记忆|相关信息)|"
    r"(?:之前|以前|原来|先前|此前)(?:说的|提到的|记录的|记的|写的)[^，。,]{0,20}?(?:是错的|有误|不对|不准确|错了|过时了)|"
    r"(?:^|(?<=[。！？\n]))\s*(?:小|一点)?(?:更正|纠正|勘误)\s*[：:]|已更正为"
)
_EN_AGENT_GOAL = re.compile(
    r"\b(?:tell|ask|advise|remind|warn|inform|convince)\s+(?:the\s+)?user\b|"
    r"\bthe user'?s\s+(?:account\s+)?(?:password|credentials|contact details|login|card|bank details)\b|"
    r"\b(?:to|in|into|with)\s+every\s+(?:answer|reply|response|message)\b|"
    r"\b(?:forward|send|copy|email|upload|leak)\s+(?:\w+\s+){0,6}?(?:conversation|chat|history|"
    r"contact details|"
    r"contacts|credentials|passwords?|messages)\b",
    _I,
)
_ZH_AGENT_GOAL = re.compile(
    r"(?:告诉|提醒|要求|劝|建议)用户|让用户(?:先)?(?:提供|输入|确认|登录|点击|访问|转账|支付|付款|下载)|用户的?(?:账号|密码|联系方式|银行卡|身份证|登录)|每次回答|"
    r"每一次回复|"
    r"(?:转发|发送|复制|上传)(?:到|给)?[^，。,]{0,12}(?:对话|聊天记录|联系方式|密码)|(?:对话|聊天记录|联系方式)[^，。,]{0,12}"
    r"(?:转发|发送|复制)(?:到|给)"
)

_SECRET_WORDS_EN = (
    r"(?:password|passcode|credentials|login details|pin|verification code|one-time code|security code|"
    r"card number|"
    r"cvv|bank details|account details)"
)
_EN_PHISH = re.compile(
    r"\b(?:ask|request|require|prompt|get|have|make)\s+(?:the\s+)?(?:user|users|them|customers?|him|her)\s+"
    rf"(?:to\s+|for\s+)?[^.?!\n]{{0,40}}?\b{_SECRET_WORDS_EN}\b",
    _I,
)
_ZH_PHISH = re.compile(
    r"(?:让|要求|请|叫)(?:用户|客户|对方)(?:先)?(?:提供|输入|确认|告知|报出|发送)[^，。,]{0,10}?(?:密码|验证码|账号|银行卡号|身份证号|安全码)"
)
_EXFIL_DATA_EN = (
    r"(?:conversation|conversations|chat|chats|history|contact details|contacts|credentials|passwords?|"
    r"messages|"
    r"personal data|personal details|address book|files)"
)
_EN_EXFIL = re.compile(
    rf"\b(?:forward|send|copy|email|upload|post|leak|share|transmit|"
    rf"cc)\b[^.?!\n]{{0,80}}?\b{_EXFIL_DATA_EN}\b"
    r"[^.?!\n]{0,60}?(?:\b[\w.+-]+@[\w-]+\.[\w.]+|https?://\S+)",
    _I,
)
_ZH_EXFIL = re.compile(
    r"(?:转发|发送|复制|上传|抄送|发给|发到)[^。！？\n]{0,60}?(?:[\w.+-]+@[\w-]+\.[\w.]+|https?://\S+)|"
    r"(?:对话|聊天记录|联系方式|密码|通讯录)[^。！？\n]{0,30}?(?:转发|发送|复制|上传|发)(?:到|给)"
)
_FORGED_DIALOGUE = re.compile(
    r"(?:\buser|用户|human|人类)\s*[:：][^\n]{1,300}?(?:\bassistant|助手|\bai|\bbot|机器人)\s*[:：]", _I
)
_EN_AGENT_NOTE = re.compile(
    r"(?:^|(?<=[.!?\n]))\s*(?:reasoning|working memory|note to self|lesson learned|lessons learned|past case|"
    r"experience log|example dialogue|step 1|internal note|memory update|agent note|reflection|plan|"
    r"noted for later|note for later|for later|updated understanding|conclusion|takeaway)\s*[:.\-–—]",
    _I,
)
_ZH_AGENT_NOTE = re.compile(
    r"(?:^|(?<=[。！？\n]))\s*(?:推理|工作记忆|给自己的备注|经验总结|历史案例|经验记录|示例对话|第一步|内部备注|记忆更新|"
    r"已更新理解|更新理解|结论|计划|反思|备忘|留待以后|经验|心得)\s*[：:。.—\-]"
)
_DOMAIN = r"(?:https?://\S+|www\.\S+|\b[\w-]+\.(?:com|io|org|net|cn|info|co|app|site|xyz|biz)\b)"
_EN_LINK_RULE = re.compile(
    r"\b(?:when|whenever|each time|every time|any ?time|if)\b[^.?!\n]{0,60}?\b(?:asks?|asked|mentions?|"
    r"mentioned|talks? about|talked about|brings? up|brought up|raises?|comes? up|came up)\b[^.?!\n]{0,140}?"
    + _DOMAIN,
    _I,
)
_ZH_LINK_RULE = re.compile(
    r"(?:每当|每次|只要|一旦|如果|当)[^。！？\n]{0,40}?(?:问|提到|提起|说起|聊到|谈到)[^。！？\n]{0,60}?"
    r"(?:推荐|建议|介绍|引导|让[^。！？\n]{0,6}去|访问|打开|前往)[^。！？\n]{0,30}?" + _DOMAIN
)
_EN_LINK = re.compile(
    r"\b(?:recommend|suggest|suggestion of|point (?:them|him|her|people|users?) to|"
    r"direct (?:them|him|her|people) to|refer (?:them|him|her|people) to|send (?:them|him|her|people) to|"
    r"visit|go to)\b[^.?!\n]{0,60}?" + _DOMAIN,
    _I,
)
_ZH_LINK = re.compile(r"(?:推荐|建议|访问|登录|打开|前往|去|使用|引导)[^。！？\n]{0,30}?" + _DOMAIN)
_EN_MY_RULE = re.compile(
    r"\b(?:when|whenever|if|every time)\s+I\s+ask\b[^.?!\n]{0,80}?[,;]?\s*(?:just\s+)?"
    r"(?:say|answer|tell me|reply)\b",
    _I,
)
_ZH_MY_RULE = re.compile(
    r"(?:以后|今后|下次|每次|只要|如果)?我(?:再)?问[^。！？\n]{0,30}?(?:你)?(?:就|都|直接)+(?:直接)?(?:说|回答|答|告诉我)|"
    r"应(?:该|当)?(?:回答|答复|回复|说)(?:为|是|成)|(?:应为|应该是|应当是)|(?:其实|实际上)(?:她|他|它|那|这)?(?:是|在)"
)
_EN_ACTUALLY = re.compile(r"\b(?:is|was|were|are)\s+actually\b|\bactually\s+(?:is|was|were|are)\b", _I)
_EN_VOCATIVE = re.compile(r"(?:^|(?<=[.!?\n]))\s*(?:hey\s+)?(?:assistant|AI|agent|bot|chatbot)\s*[,:]", _I)
_ZH_VOCATIVE = re.compile(
    r"(?:^|(?<=[。！？\n：:]))\s*(?:-\s*)?(?:助手|AI|智能体|机器人)[，,：:]", re.IGNORECASE
)
_EN_TOPIC_RULE = re.compile(
    r"\bbefore (?:you )?(?:answer|answering|respond|responding to|reply|replying to) (?:any|a|every|all)\s+"
    r"(?:questions?|requests?|queries|messages) (?:about|on|regarding|concerning)\b|"
    r"\bthe (?:correct|right|real|true|actual|official) (?:answer|reply|response) (?:about|to|for|on|"
    r"regarding) "
    r"[^.?!\n,;]{1,80}? (?:is|was|should be)\b|"
    r"\b(?:to|in|into|with|at the end of) every (?:answer|reply|response|message)\b[^.?!\n]{0,80}?"
    r"(?:https?://|www\.)|(?:https?://|www\.)\S+[^.?!\n]{0,60}?\b(?:to|in|into) every (?:answer|reply|"
    r"response)\b",
    _I,
)
_ZH_TOPIC_RULE = re.compile(
    r"在(?:你)?(?:回答|回复|答复)(?:任何|所有|每个)?(?:关于|有关|涉及)[^，。！？,\n]{1,60}?的(?:问题|请求|提问)(?:之前|时|的时候)|"
    r"关于[^，。！？,\n]{1,60}?的(?:正确|真正|真实)的?(?:答案|回答|说法)(?:是|应该是|其实是)|"
    r"每次(?:回答|回复)[^。！？\n]{0,30}?(?:链接|https?://|网址)|"
    r"(?:回答|回复|答复)[^，。！？,\n]{1,40}?(?:相关)?的?问题(?:时|的时候)[，,、]?\s*(?:你)?(?:应该|应当|要|请|一律|都|必须)"
)

_CUES: tuple[_Cue, ...] = (
    _Cue(
        "overrides earlier instructions",
        _EN_OVERRIDE,
        True,
        lambda m: bool(_STRONG_QUALIFIERS.search(m.group("q"))) and not _OWN.search(m.group("q")),
    ),
    _Cue(_REVISES_OWN, _EN_OVERRIDE, False, lambda m: bool(_OWN.search(m.group("q")))),
    _Cue(
        "overrides earlier instructions",
        _ZH_OVERRIDE,
        True,
        lambda m: bool(_STRONG_QUALIFIERS.search(m.group("q"))),
    ),
    _Cue("forges a system or instruction header", _ROLE_MARKER, True),
    _Cue("sets what to answer when someone asks", _EN_RULE, True),
    _Cue("sets what to answer when someone asks", _ZH_RULE, True),
    _Cue("sets an answer for whoever asks", _EN_WHOEVER, True),
    _Cue("sets an answer for whoever asks", _ZH_WHOEVER, True),
    _Cue("addresses the agent or tells it what to tell users", _EN_ADDRESS, True),
    _Cue("addresses the agent or tells it what to tell users", _ZH_ADDRESS, True),
    _Cue("addresses an AI reader of the content", _EN_AI_READER, True),
    _Cue("addresses an AI reader of the content", _ZH_AI_READER, True),
    _Cue("hides something from the user", _EN_CONCEAL, True),
    _Cue("hides something from the user", _ZH_CONCEAL, True),
    _Cue("a rule keyed on what a message contains", _EN_INPUT_TRIGGER, True),
    _Cue("a rule keyed on what a message contains", _ZH_INPUT_TRIGGER, True),
    _Cue("forges a system or instruction header", _BRACKET_MARKER, True),
    _Cue("forges a dialogue with the assistant", _FORGED_DIALOGUE, True),
    _Cue("sets how to answer about a topic", _EN_TOPIC_RULE, True),
    _Cue("sets how to answer about a topic", _ZH_TOPIC_RULE, True),
    _Cue("asks the user for credentials", _EN_PHISH, True),
    _Cue("asks the user for credentials", _ZH_PHISH, True),
    _Cue("sends the user's data to an address", _EN_EXFIL, True),
    _Cue("sends the user's data to an address", _ZH_EXFIL, True),
    _Cue("steers answers about a topic to a link", _EN_LINK_RULE, True),
    _Cue("steers answers about a topic to a link", _ZH_LINK_RULE, True),
    _Cue("a standing order (from now on, always, remember)", _EN_PERSIST, False),
    _Cue("a standing order (from now on, always, remember)", _ZH_PERSIST, False),
    _Cue("tells memory what to keep", _EN_MEMORY_DIRECTIVE, False),
    _Cue("tells memory what to keep", _ZH_MEMORY_DIRECTIVE, False),
    _Cue("sets the answer", _EN_ANSWER_SET, False),
    _Cue("sets the answer", _ZH_ANSWER_SET, False),
    _Cue("discredits earlier records", _EN_DISCREDIT, False),
    _Cue("discredits earlier records", _ZH_DISCREDIT, False),
    _Cue("an action on the user or their data", _EN_AGENT_GOAL, False),
    _Cue("an action on the user or their data", _ZH_AGENT_GOAL, False),
    _Cue("recommends a link", _EN_LINK, False),
    _Cue("recommends a link", _ZH_LINK, False),
    _Cue("sets what to answer when I ask", _EN_MY_RULE, False),
    _Cue("sets what to answer when I ask", _ZH_MY_RULE, False),
    _Cue("sets what to answer when I ask", _EN_ACTUALLY, False),
    _Cue("claims to be the agent's own notes or past cases", _EN_AGENT_NOTE, False),
    _Cue("claims to be the agent's own notes or past cases", _ZH_AGENT_NOTE, False),
    _Cue("speaks to the agent", _EN_VOCATIVE, False),
    _Cue("speaks to the agent", _ZH_VOCATIVE, False),
)


_FRAMINGS = frozenset(
    {
        _REVISES_OWN,
        "a standing order (from now on, always, remember)",
        "tells memory what to keep",
        "speaks to the agent",
        "claims to be the agent's own notes or past cases",
    }
)
"""Weak cues that frame a request (a user's preference is framed the same way); a text is held for weak
cues only when one of them says what to do (sets an answer, discredits records, acts on the user)."""


def _excerpt(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def instruction_cues(text: str) -> list[Finding]:
    """Cues (EN + ZH) of instructions aimed at the agent, one finding per match, in text order.

    A strong cue's action is ``quarantine``; a weak one's (a standing order a user may give as a
    preference) is ``flag``: callers act on weak cues only for untrusted content. Pure: no I/O.
    """
    found: list[Finding] = []
    weak: dict[str, re.Match[str]] = {}
    for cue in _CUES:
        matches = (m for m in cue.pattern.finditer(text) if cue.check is None or cue.check(m))
        for match in itertools.islice(matches, MAX_MATCHES_PER_CUE):
            if not cue.strong:
                weak.setdefault(cue.name, match)
            found.append(
                Finding(
                    INSTRUCTION,
                    f"{cue.name}: “{_excerpt(match.group(0))}”",
                    QUARANTINE if cue.strong else FLAG,
                    match.span(),
                )
            )
    content = [name for name in weak if name not in _FRAMINGS]
    if content and len(weak) >= 2:  # what to do, framed or twice: an instruction, whoever wrote it
        (first, a), (second, b) = sorted(weak.items(), key=lambda item: item[1].start())[:2]
        found.append(
            Finding(
                INSTRUCTION,
                f"{first} and {second}: “{_excerpt(a.group(0), 30)}” … “{_excerpt(b.group(0), 30)}”",
                QUARANTINE,
                (a.start(), max(a.end(), b.end())),
            )
        )
    return _first_per_span(found)


# ----- standing answer rules (recall: any source) --------------------------------------------------------
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

_ANSWER_RULES: tuple[_Cue, ...] = (
    _Cue("a standing rule for what to answer when asked", _EN_STANDING_ANSWER, False),
    _Cue("a standing rule for what to answer when asked", _ZH_STANDING_ANSWER, False),
    _Cue("a rule keyed on a token in the question", _EN_TOKEN_RULE, False),
    _Cue("a rule keyed on a token in the question", _ZH_TOKEN_RULE, False),
    _Cue("asks to disclose personal data or credentials", _EN_DISCLOSE, False),
    _Cue("asks to disclose personal data or credentials", _ZH_DISCLOSE, False),
)


def answer_rules(text: str) -> list[Finding]:
    """Standing answer rules (EN + ZH): what to say whenever something is asked, a rule keyed on a token
    a question carries, a request to disclose someone's address or credentials. A user may give such a
    rule in earnest, so they are flagged (``flag``), never held, for user content; recall flags them
    from any source, and write-time screening holds them only from tools and outside sources."""
    found = [
        Finding(INSTRUCTION, f"{cue.name}: “{_excerpt(match.group(0))}”", FLAG, match.span())
        for cue in _ANSWER_RULES
        for match in itertools.islice(cue.pattern.finditer(text), MAX_MATCHES_PER_CUE)
    ]
    return _first_per_span(found)


def _first_per_span(findings: Iterable[Finding]) -> list[Finding]:
    """Findings in text order, dropping one that lies inside a kept one of the same kind that is at least as
    strong (a strong cue inside a weak one's match is kept)."""
    kept: list[Finding] = []
    for item in sorted(findings, key=lambda f: (-ACTION_RANK[f.action], (f.span or (0, 0))[0])):
        span = item.span or (0, 0)
        if any(
            k.kind == item.kind
            and ACTION_RANK[k.action] >= ACTION_RANK[item.action]
            and k.span
            and k.span[0] <= span[0]
            and span[1] <= k.span[1]
            for k in kept
        ):
            continue
        kept.append(item)
    return sorted(kept, key=lambda f: (f.span or (0, 0))[0])


# ----- imperative content from tools and outside sources ------------------------------------------------
_SENTENCE_START = (
    r"(?:^|(?<=[.!?;:\n。！？；：])\s*|\b(?:important|note|attention|warning|notice|nb)\s*[:!-]\s*)"
)
_AGENT_VERBS = (
    r"(?:tell|say|answer|respond|reply|recommend|inform|ignore|disregard|forget|send|forward|reveal|disclose|"
    r"output|print|remember|store|save|include|mention|refer|direct|claim|insist|"
    r"transfer|pay|approve|grant)"
)
_FETCHED = (
    r"[^.;\n]{0,80}?(?:https?://|www\.|\b[\w-]+\.(?:com|io|org|net|cn|info|co|app|site|xyz|biz|shop|ru|sh)\b|"
    r"\b(?:curl|wget|iwr|invoke-webrequest)\b|\|\s*(?:ba|z)?sh\b)"
)
"""What makes running, clicking, opening or downloading an attack: something fetched from elsewhere (a link, a
domain, a download piped into a shell). "Run npm audit fix", "click Save", "run the tests before committing"
are the content's own procedure (a build log, a README, a manual), not an order aimed at the agent."""
_OWNED = (
    r"(?:the|all|every|their|your|his|her|this|these|those|whole|entire|full|complete|user'?s|users'|"
    r"customer'?s|customers')"
)
_USER_DATA = (
    r"(?:conversations?|chats?|(?:chat |conversation )?history|messages|contacts?|contact details|"
    r"credentials|passwords?|files|data|personal \w+|account details|logs|records|notes|address book)"
)
"""What a ``send``/``forward`` aimed at the agent moves: the user's data. Sending "a reset link" or "the
invoice" is the content's own business."""
_EN_IMPERATIVE = re.compile(
    rf"{_SENTENCE_START}(?:please\s+|kindly\s+|now\s+|immediately\s+|always\s+|never\s+|do not\s+|don't\s+)*"
    r"(?:(?:ignore|disregard|forget)\s+(?:(?:all|any|the|your|previous|prior|above|earlier|these|those)\s+)*"
    r"(?:instructions?|rules?|guidelines?|prompts?|context|everything|what)|"
    r"(?:tell|inform|notify|remind|advise|warn)\s+(?:the\s+|all\s+|any\s+|every\s+)?"
    r"(?:users?|customers?|them|everyone|people|readers?|visitors?)\b|"
    r"(?:say|answer|respond|reply|claim|state|insist)\s+(?:that|with|only|:|\"|“)|"
    r"(?:recommend|suggest)\s+\w+|"
    r"(?:reveal|disclose|leak|output|print|transfer|wire|pay)\s+\w+|"
    rf"(?:send|forward|email|copy|upload)\s+(?:{_OWNED}\s+)*{_USER_DATA}\b|"
    r"(?:send|forward|email|copy|upload)\s+[^.;\n]{0,60}?\bto\s+(?:[\w.+-]+@[\w-]+\.\w+|https?://)|"
    r"(?:remember|memori[sz]e|store|save|note)\s+(?:that|this|the following|to\s+\w+|:)|"
    rf"(?:click|download|execute|run|navigate to|open|install)\s+{_FETCHED}|"
    r"visit\s+(?:https?://|www\.)\S+)|"
    rf"\byou\s+(?:must|should|need to|have to|are (?:required|instructed|supposed) to|will now|shall)\s+"
    rf"(?:always\s+|now\s+|never\s+|also\s+)?(?:{_AGENT_VERBS}\b|"
    rf"(?:visit|click|run|execute|open|download|install)\s+{_FETCHED})",
    re.MULTILINE | re.IGNORECASE,
)
_EN_HEADER = re.compile(
    r"\b(?:IMPORTANT|ATTENTION|INSTRUCTIONS?|NOTE TO (?:THE )?(?:AI|ASSISTANT|AGENT|MODEL))\s*[:!]"
)
_ZH_IGNORE_RULES = (
    r"(?:忽略|无视)(?:掉)?[^。！？!?\n，,]{0,12}?(?:指令|指示|规则|提示|设定|要求|命令|约束|限制|说明|内容|对话|记忆|"
    r"一切|信息)"
)
"""Ignoring aimed at the agent: its instructions, what came before. Ignoring "the old calendar invite" or
"section C" is the content's own business."""
_ZH_IMPERATIVE = re.compile(
    r"(?:^|(?<=[。！？；：.!?;:\n]))\s*(?:重要|注意|提示|警告)?[：:]?\s*"
    r"(?:请|务必|必须|一定要|记得|记住|立即|马上|你(?:必须|应该|需要|要|得)|请你)+\s*"
    r"(?:立即|马上|务必|一定)?(?:把[^。！？!?\n]{0,20}?)?"
    r"(?:告诉|推荐|建议|通知|发送|转发|分享|透露|泄露|输出|打印|记住|保存|更新|删除|转账|汇款|"
    r"支付|联系|批准|说|称|相信|(?:访问|点击|打开|下载|执行|运行|安装)"
    r"[^。！？!?；;\n]{0,80}?(?:https?://|www\.|[\w-]+\.(?:com|io|org|net|cn|info|co|app|site|xyz|biz|shop|ru|sh)\b|"
    r"\b(?:curl|wget)\b|链接|网址|网站)|"
    rf"{_ZH_IGNORE_RULES}|(?:回答|回复)(?:说|称|[:：“\"「]))|"
    rf"(?:^|(?<=[。！？；.!?;\n]))\s*(?:{_ZH_IGNORE_RULES}|告诉用户|转告|透露|泄露|转账|汇款)"
)


def tool_imperatives(text: str) -> list[Finding]:
    """Imperatives aimed at the reader (EN + ZH): in content from a tool or an outside source, an attack."""
    found = []
    for pattern in (_EN_IMPERATIVE, _EN_HEADER, _ZH_IMPERATIVE):
        for match in itertools.islice(pattern.finditer(text), MAX_MATCHES_PER_CUE):
            words = match.group(0).strip()
            if not words:
                continue
            found.append(
                Finding(
                    TOOL_IMPERATIVE,
                    f"an imperative to the reader in untrusted content: “{_excerpt(words)}”",
                    QUARANTINE,
                    match.span(),
                )
            )
    return _first_per_span(found)[:5]


# ----- secrets ---------------------------------------------------------------------------------------------
_SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private key block",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)"
        ),
    ),
    ("AWS access key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b")),
    (
        "AWS secret key",
        re.compile(r"(?i)\baws_?secret_?(?:access_?)?key\b\s*[:=]\s*[\"']?[A-Za-z0-9/+=]{40}\b"),
    ),
    ("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b")),
    ("GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b")),
    ("API key (sk-...)", re.compile(r"\bsk-(?:[A-Za-z0-9]+-){0,3}[A-Za-z0-9_]{20,}\b")),
    ("Stripe key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}\b")),
    ("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("bearer token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*")),
    (
        "connection string with a password",
        re.compile(r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]{1,100}:[^\s@/]{1,200}@[^\s/]+", re.IGNORECASE),
    ),
    (
        "password or secret value",
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|passcode|pass_?phrase|secret|api[_-]?key|access[_-]?token|"
            r"auth[_-]?token|client[_-]?secret|private[_-]?key)\b\s*(?:[:=]|\bis\b)\s*"
            r"(?P<value>[\"']?[^\s\"',;]{4,}[\"']?)"
        ),
    ),
    (
        "password or secret value",
        re.compile(
            r"(?:密码|口令|密钥|秘钥|令牌|支付密码|登录密码)(?:是|为|：|:|=)\s*"
            r"(?P<value>[A-Za-z0-9!@#$%^&*._+\-=/]{4,})"
        ),
    ),
)
_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_CARD_PREFIX = re.compile(r"^(?:4|5[1-5]|2[2-7]|3[47]|6(?:011|5|4[4-9]|2))")
_CARD_LENGTHS = frozenset({13, 15, 16, 19})


def luhn_ok(digits: str) -> bool:
    """Whether a digit string passes the Luhn check (card numbers do; most other numbers do not)."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _needs_digit_or_mark(value: str) -> bool:
    """``password is strong`` names no password; a value with a digit or a mark may be one."""
    return bool(re.search(r"[\d!@#$%^&*_+=/\\.-]", value))


def secrets(text: str, action: str = REDACT) -> list[Finding]:
    """Credentials and card numbers in ``text``, each with the action the bank's policy gives."""
    found: list[Finding] = []
    for name, pattern in _SECRET_PATTERNS:
        for match in pattern.finditer(text):
            span = match.span()
            if "value" in pattern.groupindex:
                value = match.group("value").strip("\"'").rstrip(".,;:!?)")
                said = re.search(r"\bis\s*$", text[match.start() : match.start("value")], re.IGNORECASE)
                if value.lower() in _NOT_SECRETS or (said and not _needs_digit_or_mark(value)):
                    continue
                raw = match.group("value")
                start = match.start("value")
                span = (start, start + len(raw.rstrip(".,;:!?)")))
            found.append(Finding(SECRET, f"{name} (redacted)", action, span))
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group(0))
        if len(digits) in _CARD_LENGTHS and _CARD_PREFIX.match(digits) and luhn_ok(digits):
            found.append(Finding(SECRET, "card number (passes the Luhn check)", action, match.span()))
    return _merge_spans(found)


_NOT_SECRETS = frozenset({"none", "null", "empty", "unknown", "required", "optional", "hidden", "redacted"})


def _merge_spans(findings: list[Finding]) -> list[Finding]:
    """One finding per overlapping region (the first found names it)."""
    kept: list[Finding] = []
    for item in sorted(findings, key=lambda f: (f.span or (0, 0))[0]):
        if kept and item.span and kept[-1].span and item.span[0] < kept[-1].span[1]:
            last = kept[-1]
            if last.span is not None:
                kept[-1] = Finding(
                    last.kind, last.reason, last.action, (last.span[0], max(last.span[1], item.span[1]))
                )
            continue
        kept.append(item)
    return kept


def redact(text: str, findings: Iterable[Finding]) -> str:
    """``text`` with each redacted finding's span replaced by a marker naming what was there."""
    spans = sorted((f.span, f.reason) for f in findings if f.action == REDACT and f.span is not None)
    out: list[str] = []
    position = 0
    for (start, end), reason in spans:
        if start < position:
            continue
        out.append(text[position:start])
        out.append(f"[redacted {reason.removesuffix(' (redacted)').split(' (')[0]}]")
        position = end
    out.append(text[position:])
    return "".join(out)


# ----- the screen ---------------------------------------------------------------------------------------
def screen(text: str, source: Source, *, policy: ScreeningPolicy) -> ScreenResult:
    """What to do with one turn's text from ``source`` under ``policy``.

    Strong instruction cues are acted on for every source; weak ones (standing orders) and imperatives
    to the reader only for tools and outside sources. Secrets always, by the policy's secret action.
    """
    if not policy.enabled or not text:
        return ScreenResult([], text)
    untrusted = source in UNTRUSTED
    findings: list[Finding] = []
    for cue in instruction_cues(text):
        if cue.action == QUARANTINE or untrusted:
            findings.append(Finding(cue.kind, cue.reason, policy.instructions, cue.span))
    if untrusted and not findings:
        findings += [Finding(f.kind, f.reason, policy.instructions, f.span) for f in answer_rules(text)]
    if untrusted and not findings:
        findings += [Finding(f.kind, f.reason, policy.instructions, f.span) for f in tool_imperatives(text)]
    found_secrets = secrets(text, policy.secrets)
    findings += found_secrets
    return ScreenResult(findings, redact(text, found_secrets))
