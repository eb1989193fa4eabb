"""Value spans: the parts of a statement that answer its question, told from the parts that ask it.

"Invoices go out on the 1st" asks "when do invoices go out?" and answers "the 1st". Two statements ask the
same question when what is left after their values are masked is the same frame; this module gives the
pieces for that comparison (English and Chinese, no LLM):

- :func:`tokens` splits a clause into comparable tokens (English words, lightly stemmed; Chinese characters
  one by one; numbers whole), dropping the words that only say a value changed or holds now ("actually",
  "now", "changed to", "from next month", "其实", "现在", "改成"): they are not part of the question;
- :func:`value_kind` types a token as a value: a number, date, time, amount or version (a digit, a Chinese
  numeral, a month or weekday, an ordinal), a name or place (capitalised in the original text), a
  language; anything else is free text, which may still be a value when it is the only thing that differs;
- :func:`owner_word` finds the words that change whose value it is (a relative, a pronoun, someone's
  name with a possessive), so that "my brother's favourite opera" never asks what "my favourite opera" asks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CJK = re.compile(r"[\u4e00-\u9fff]")
_ZH_TIME_WORDS = (
    "(?:[上下这本每]个?)?(?:周末|星期[一二三四五六日天]|礼拜[一二三四五六日天]|周[一二三四五六日])|"
    "[零一二两三四五六七八九十]{1,3}月(?:初|底|中旬|上旬|下旬|中|[零一二两三四五六七八九十]{1,3}[号日])?|"
    "上午|下午|晚上|早上|早晨|中午|凌晨|傍晚|夜里|半夜|工作日|每天|每周|每月|每年|隔周|月初|月底|月中|年初|"
    "年底|下周|上周|本周|这周|下个月|上个月|这个月|明年|今年|后年|春节|国庆节?|中秋节?|元旦|端午节?|清明节?|"
    "圣诞节?|除夕|元宵节?|寒假|暑假"
)
"""Times and dates read as one token: a weekday with "next"/"this" ("下周六"), a month with its part
("五月中旬", "四月初"), parts of the day, holidays ("国庆节")."""
_TOKEN = re.compile(
    "=|[\ue000\ue001]|(?:" + _ZH_TIME_WORDS + ")|"
    r"[$\u00a3\u20ac\u00a5]?\d[\d,.:/-]*(?:[a-z%]+)?|[A-Za-z][A-Za-z0-9'\u2019.+#-]*[A-Za-z0-9+#]|[A-Za-z]"
    r"|[\u4e00-\u9fff]"
)

# ----- what only says that a value changed or holds now --------------------------------------------------
_EN_CHANGE_PHRASES = re.compile(
    r"\b(?:(?:starting|from|as of|beginning|effective|since)\s+(?:next|this|the)?\s*"
    r"(?:week|month|year|quarter|term|today|tomorrow|now|monday|tuesday|wednesday|thursday|friday|saturday"
    r"|sunday|on)\b(?:\s+on)?|from now on|going forward|these days|nowadays|at the moment|right now|"
    r"for now|any ?more|no longer|it turns out|turns out|to be (?:clear|precise|honest)|"
    r"(?:i|we)\s+(?:just\s+)?(?:realised|realized|noticed|found out|learned|checked)(?:\s+that)?|"
    r"(?:has|have|had)\s+(?:just\s+)?(?:been\s+)?|(?:got|been|was|were)\s+(?=(?:changed|moved|switched|"
    r"updated|pushed|bumped|rescheduled)\b))",
    re.IGNORECASE,
)
_EN_OPENERS = re.compile(
    r"^\s*(?:(?:please\s+)?(?:note|remember|keep in mind|bear in mind|be aware|don't forget)(?:\s+that)?|"
    r"fyi|btw|by the way|for the record|just so you know|for your (?:notes|information|info)|heads[- ]up|"
    r"as a reminder|just a reminder|quick (?:note|update|fix|heads[- ]up)|to be clear|"
    r"i (?:think|guess|believe|reckon|suppose)(?:\s+that)?)\b[\s,:;-]*",
    re.IGNORECASE,
)
"""A clause's opening that only frames what follows ("Note that ...", "FYI ..."): no part of its question."""
_EN_FILLERS = frozenset(
    (
        "actually correction update updated oh oops sorry wait well so ok okay hey hmm no yes just now "
        "currently presently today recently lately instead rather anyway though also still already new "
        "change changed changes switch switched switches move moved moves reschedule rescheduled push "
        "pushed bump bumped set reset shift shifted swap swapped replace replaced update updates is are "
        "am be been being was were will 's 're 'm the a an this that these those it to really fact in "
        "of on at for by from with into onto"
    ).split()
)
"""Words that carry no part of the question once the values are masked: cues, change verbs, copulas,
articles and the prepositions that move with a changed value ("moved to", "lives in")."""
_ZH_CHANGE_PHRASES = re.compile(
    r"从(?:下|这|本|明|今)?(?:个)?(?:周|星期|礼拜|月|年|季度|天)(?:[一二三四五六日天]|初|底)?(?:开始|起)|"
    r"(?:下|这|本)(?:个)?(?:周|星期|月|年)(?:开始|起)|从现在(?:开始|起)|以后|今后|目前|现在|如今|其实|"
    r"实际上|事实上|已经|刚刚|刚|最近|更正一下|更正|纠正一下|纠正|说错了|记错了|搞错了|不好意思|抱歉|"
    r"了|呢|啊|哦|呀|吧|啦|哈|嗯|的"
)
_ZH_LINKS = re.compile(
    r"改成|改为|改到|改在|换成|换到|换为|变成|变为|更改为|调整为|调整到|更新为|搬到|挪到|推迟到|提前到|"
    r"是|为|叫|在"
)
_ZH_PLACE_LINKS = frozenset("改到 改在 换到 调整到 搬到 挪到 推迟到 提前到 在".split())
"""Chinese links that put a value in a place or at a time ("在三亚", "改到周五"); the others say what a
thing is ("是氨氯地平", "换成硝苯地平"). "我的降压药是X" and "我的降压药在晚饭后吃" ask two questions."""
_IDENTITY_MARK, _PLACE_MARK = "\ue000", "\ue001"
COPULA = "="
"""The token that stands for what links a frame to its value: "is", "changed to", "是", "改成", "在"."""
_EN_LINKS = frozenset(
    (
        "is are am be been being was were 's 're 'm become became becomes change changed changes switch "
        "switched switches move moved moves reschedule rescheduled push pushed bump bumped set reset shift "
        "shifted swap swapped update updated"
    ).split()
)
_ZH_TIME = re.compile(_ZH_TIME_WORDS)
ZH_TIME = _ZH_TIME
"""A Chinese time or date word, read as one token."""
_ZH_FILLERS = frozenset("到成改换变搬挪把将被")
"""Characters that move with a change ("改", "成")."""

# ----- what a value looks like ---------------------------------------------------------------------------
_MONTHS = frozenset(
    (
        "january february march april may june july august september october november december jan feb "
        "mar apr jun jul aug sep sept oct nov dec"
    ).split()
)
_WEEKDAYS = frozenset(
    (
        "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat "
        "sun mondays tuesdays wednesdays thursdays fridays saturdays sundays weekday weekend weekends"
    ).split()
)
CALENDAR_WORDS = _MONTHS | _WEEKDAYS
"""Months and weekdays: a value that is a date."""
_NUMBER_WORDS = frozenset(
    (
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty hundred thousand million "
        "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth fifteenth "
        "twentieth thirtieth half quarter noon midnight morning afternoon evening night daily weekly "
        "monthly yearly annually biweekly fortnightly dozen"
    ).split()
)
_LANGUAGES = frozenset(
    (
        "english spanish french german italian portuguese dutch russian polish chinese mandarin cantonese "
        "japanese korean arabic hindi turkish greek swedish norwegian danish finnish hebrew thai "
        "vietnamese indonesian python rust go golang java javascript typescript kotlin swift ruby php "
        "scala haskell elixir c++ c# sql"
    ).split()
)
_ZH_NUMERALS = frozenset("零一二两三四五六七八九十百千万亿半")
_ZH_UNITS = frozenset("号日月年点时分秒刻元块钱岁")
_ZH_LANGUAGE = re.compile(r"[\u4e00-\u9fff]{1,3}[语文]$")

# ----- whose value it is ---------------------------------------------------------------------------------
_EN_OWNERS = frozenset(
    (
        "sister brother mother mom mum father dad wife husband partner son daughter friend boss colleague "
        "coworker co-worker girlfriend boyfriend cousin neighbor neighbour roommate kid kids child children "
        "parent parents aunt uncle niece nephew grandma grandpa grandmother grandfather baby manager "
        "teacher mentor fiance fiancee he she they him her them his hers their theirs you your yours "
        "client clients customer landlord tenant team wife's husband's"
    ).split()
)
_ZH_OWNERS = re.compile(
    r"妹妹|姐姐|哥哥|弟弟|妻子|老婆|太太|丈夫|老公|儿子|女儿|朋友|妈妈|母亲|爸爸|父亲|同事|老板|表姐|表妹|"
    r"表哥|表弟|上司|领导|叔叔|阿姨|舅舅|姑姑|爷爷|奶奶|外公|外婆|孩子|室友|同学|老师|邻居|男朋友|女朋友|"
    r"对象|他|她|你|客户|房东"
)
_EN_NEGATIONS = frozenset("not n't never no none nobody nothing neither nor cannot".split())
_ZH_NEGATIONS = frozenset("不没别未")


@dataclass(frozen=True)
class Token:
    """One comparable piece of a clause: its compared form and its text as written."""

    key: str
    text: str

    @property
    def link(self) -> bool:
        """The copula marker (:data:`COPULA`)."""
        return self.key == COPULA

    @property
    def place_link(self) -> bool:
        """A Chinese link that puts the value in a place or at a time ("在", "改到")."""
        return self.link and self.text == _PLACE_MARK

    @property
    def chinese(self) -> bool:
        return bool(_CJK.match(self.text))


def _stem(word: str) -> str:
    """A light English stem, so that "lives" and "live", "invoices" and "invoice" compare equal."""
    word = word.replace("\u2019", "'")
    for suffix in ("'s", "'"):
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            return word[: -len(suffix)] + "'s"
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokens(clause: str) -> list[Token]:
    """The clause's tokens, without the words that only say a value changed or holds now."""
    text = _ZH_LINKS.sub(
        lambda m: f" {_PLACE_MARK if m.group(0) in _ZH_PLACE_LINKS else _IDENTITY_MARK} ",
        _ZH_CHANGE_PHRASES.sub(" ", _EN_CHANGE_PHRASES.sub(" ", _EN_OPENERS.sub("", clause))),
    )
    found: list[Token] = []
    for match in _TOKEN.finditer(text):
        raw = match.group(0)
        if raw in (COPULA, _IDENTITY_MARK, _PLACE_MARK):
            if found and found[-1].key == COPULA:  # "改成在": the last link says how the value is held
                found[-1] = Token(COPULA, raw if raw != COPULA else found[-1].text)
            else:
                found.append(Token(COPULA, raw))
            continue
        if _ZH_TIME.fullmatch(raw):
            found.append(Token(raw, raw))
            continue
        if _CJK.fullmatch(raw):
            if raw not in _ZH_FILLERS:
                found.append(Token(raw, raw))
            continue
        folded = raw.casefold().replace("\u2019", "'").rstrip(".")
        if folded in _EN_LINKS:
            if not found or found[-1].key != COPULA:
                found.append(Token(COPULA, raw))
            continue
        if folded in _EN_FILLERS or not folded:
            continue
        folded = {"our": "my", "we": "i", "us": "me", "mine": "my", "ours": "my"}.get(folded, folded)
        found.append(Token(_stem(folded), raw))
    return found


def value_kind(token: Token, first: bool = False) -> str:
    """What kind of value ``token`` is ("number", "name", "language"), or "" when it types as none
    (``first``: the clause's first token, whose capital says nothing)."""
    text = token.text
    if _ZH_TIME.fullmatch(text):
        return "number"
    if any(ch.isdigit() for ch in text) or text in _ZH_NUMERALS or text in _ZH_UNITS:
        return "number"
    key = token.key.rstrip("'s").removesuffix("'")
    if key in _MONTHS or key in _WEEKDAYS or key.rstrip("s") in _WEEKDAYS or key in _NUMBER_WORDS:
        return "number"
    if key in _LANGUAGES:
        return "language"
    if not token.chinese and text[:1].isupper() and text not in {"I", "I'm", "I've", "I'd"} and not first:
        return "name"
    if re.fullmatch(r"v?\d+(?:\.\d+)+[a-z0-9-]*", token.key):
        return "version"
    return ""


def owner_word(segment: list[Token]) -> bool:
    """Whether a differing segment names whose value it is (a relative, a pronoun, a possessive name)."""
    for token in segment:
        if token.chinese:
            continue
        if token.key in _EN_OWNERS or token.key.removesuffix("'s") in _EN_OWNERS:
            return True
        if token.key.endswith("'s") and token.text[:1].isupper():
            return True  # "Alice's"
    joined = "".join(t.text for t in segment if t.chinese)
    return bool(_ZH_OWNERS.search(joined))


def negation(segment: list[Token]) -> bool:
    """Whether a differing segment negates (a denial is read by the statement parser, not here)."""
    return any(t.key in _EN_NEGATIONS or t.key.endswith("n't") or t.text in _ZH_NEGATIONS for t in segment)


def zh_language(segment: list[Token]) -> bool:
    """A Chinese segment that names a language ("法语", "中文")."""
    joined = "".join(t.text for t in segment)
    return bool(_ZH_LANGUAGE.fullmatch(joined))
