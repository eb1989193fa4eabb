"""Modality: whether a statement asserts what holds now (English and Chinese, no LLM).

Only such an assertion supersedes an earlier value. These do not: a question ("Is the standup at 10
now?"), a conditional or hypothetical ("if we moved it to 10 ...", "如果改到周五"), a wish or a plan
being weighed ("thinking about switching to Rust", "我在考虑换成"), a plan called off ("we were going to
move it to Friday but cancelled", "本来打算改到周五,后来取消了"), and a story about another time ("back
in college my favourite band was ...", "小时候我住在成都") unless the same sentence says what holds now.
Cue words ("actually", "now", "其实", "改成") are read elsewhere: they raise confidence, they are not needed.
"""

# ruff: noqa: RUF001  (Chinese cues use full-width punctuation on purpose)
from __future__ import annotations

import re

from hindsight.runtime.statements import _ZH_PERSONS

_EN_QUESTION_START = re.compile(
    r"^(?:(?:so|and|but|oh|hey|wait|ok|okay|um|hmm)[\s,]+)*(?:is|are|am|was|were|do|does|did|can|could|"
    r"should|shall|will|would|have|has|had|may|might|what|when|where|which|who|whom|whose|why|how)\b",
    re.IGNORECASE,
)
_ZH_QUESTION = re.compile(
    r"吗|是不是|要不要|会不会|有没有|能不能|对不对|什么|哪|谁|几点|多少|怎么|为何|为什么"
)
_EN_HYPOTHETICAL = re.compile(
    r"\b(?:if|unless|would|could|might|maybe|perhaps|possibly|suppose|supposing|imagine|assuming|"
    r"in case|what if|wish|hopefully|hoping|thinking (?:about|of)|considering|consider|debating|"
    r"wondering|might|may be|should we|shall we|in theory|hypothetically|ideally|someday|one day|"
    r"(?:had|'d) hoped|hoped|(?:once|when|after|as soon as) (?:i|we|they|he|she) (?:get|move|retire|finish|"
    r"start|switch|change|find|buy|sell|leave|have)|once the|(?:the )?(?:idea|plan|proposal|thought) was "
    r"(?:that|to))\b",
    re.IGNORECASE,
)
_ZH_HYPOTHETICAL = re.compile(
    r"如果|假如|假设|要是|万一|的话|可能|也许|或许|说不定|考虑|在想|想着|希望|但愿|打算|准备|想要|想把|"
    r"要不|如若|倘若|假使|若是|是否|到时候|将来|(?:^|[，,。：:])\s*等(?:到)?[^，,。！？]{0,10}(?:了|以后|之后|后|时候)[^，,。！？]{0,8}[，,]"
)
_EN_CALLED_OFF = re.compile(
    r"\b(?:(?:was|were) (?:going|planning|supposed|about) to|had planned|planned to|(?:was|were) thinking|"
    r"called (?:it )?off|cancel(?:l)?ed|scrapped|dropped (?:the|that) (?:idea|plan)|never mind|nevermind|"
    r"decided (?:not|against)|fell through|didn't happen|did not happen|not going to happen|ended up not|"
    r"on hold|postponed indefinitely|backed out|changed (?:my|our) mind|rejected|turned down|voted down|"
    r"vetoed|shelved|abandoned|withdrawn|never happened|didn't go through|did not go through|"
    r"fell apart|was dropped|were dropped|(?:is|'s|was) off(?: now)?|didn't work out|did not work out|"
    r"never came to|came to nothing|went nowhere|was shot down|got shot down|ruled out|scrapped|"
    r"nothing came of it|(?:didn't|did not|never) go ahead|not going ahead|pulled the plug|"
    r"(?:was|got) reversed|"
    r"(?:was|were) meant to)\b",
    re.IGNORECASE,
)
_ZH_CALLED_OFF = re.compile(
    r"本来|原本|原来打算|原计划|取消|算了|作罢|作废|放弃|没改成|不改了|没换成|没去成|搁置|泡汤|黄了|没通过|"
    r"被否|没成|没批|驳回|撤回|没实现|落空|不了了之|没下文|告吹|流产|没弄成|没搞成|没定|否了"
)
_EN_OTHER_TIME = re.compile(
    r"\b(?:back (?:in|when|then)|when i was|when we were|as a (?:kid|child|teenager|student)|growing up|"
    r"in (?:high school|college|university|grad school|my (?:twenties|thirties|teens|youth))|"
    r"used to|years ago|decades ago|long ago|(?:months|weeks|days) ago|at the time|in the past|once upon|"
    r"before (?:i|we|they|he|she) (?:\w+ed|left|got|went|had|began|became)|when (?:i|we) (?:lived|was|were|"
    r"worked|had|started)|back then|in those days|"
    r"(?:in|during|since) (?:19|20)\d\d|last (?:year|decade|summer|winter)|my childhood|as kids|"
    r"(?:at|in) my (?:old|previous|last|first) (?:job|school|flat|house|place|company)|in my (?:\w+ )?days|"
    r"when i was (?:younger|little|small|a \w+)|at uni|in school)\b|"
    r"^(?:\w+,?\s+){0,2}before (?:the|my|our|covid|\w+ing)\b[^,]{0,40},",
    re.IGNORECASE,
)
_ZH_OTHER_TIME = re.compile(
    r"小时候|以前|从前|当年|那时|那会儿|上大学|大学时|大学的时候|读书时|上学时|高中时|年轻时|"
    r"曾经|过去|前几年|去年|早年|童年|那几年|(?:19|20)\d\d年|年前|那会|当时|的时候|搬家前|搬家之前|"
    r"结婚前|毕业前|毕业那|上学那|上一份工作|读书那|^[^，,。]{1,8}(?:之前|以前)[，,]|"
    r"^(?!平时|有时|同时|随时|按时|准时|及时|暂时|到时)[^，,。]{1,10}(?:时|那阵子|那段时间|期间)[，,]"
)
_EN_NOW = re.compile(
    r"\b(?:now|currently|these days|nowadays|today|at the moment|anymore|any more|no longer|from now on|"
    r"going forward|starting|from next|as of)\b",
    re.IGNORECASE,
)
_ZH_NOW = re.compile(r"现在|目前|如今|当前|从下|以后|今后|现已|已经改|不再")


def _sentence_of(text: str, clause: str) -> str:
    """The sentence of ``text`` that holds ``clause`` (the text itself when not found)."""
    for sentence in re.split(r"(?<=[.!?\u3002\uff01\uff1f])\s*|\n+", text):
        if clause and clause in sentence:
            return sentence
    return text


_EN_SAID_BEFORE = re.compile(
    r"\b(?:what|as|that) (?:i|we) (?:said|told you|mentioned|wrote)(?: (?:before|earlier|previously))?|"
    r"\b(?:got|had) (?:that|it) wrong(?: earlier| before)?|\bearlier\b",
    re.IGNORECASE,
)
_ZH_SAID_BEFORE = re.compile(r"(?:之前|刚才|以前|上次|前面)(?:说|讲|提|写|告诉你)的?|说错了?|记错了?")
_ZH_DENIAL_OPENING = re.compile(
    r"^\s*(?:(?:不对|不是|错了|不)[\s，,、！!。.：:]*)+(?=[，,、！!。.：:]|$)[\s，,、！!。.：:]*"
)
"""A denial that opens a correction ("不对不对，...", "不是不是，..."): the speaker says no, it asks nothing
(a tag question, "...，对不对？", comes last)."""
"""A correction's reference to what was said before ("what I told you earlier", "之前说的"): not a story
about another time."""
_EN_PAST_FRAME = re.compile(r"\b(?:was|were|had|used|did)\b", re.IGNORECASE)
_EN_PRESENT_FRAME = re.compile(r"\b(?:is|are|am|has|have|does|do)\b|'s\b|'re\b", re.IGNORECASE)


_EN_PAST_EVENT = re.compile(
    r"\b(?:went|saw|had|did|made|took|got|gave|came|found|met|bought|ate|drank|ran|read|wrote|told|said|"
    r"felt|left|won|lost|spent|sent|brought|began|started|visited|tried|enjoyed|played|watched|attended|"
    r"received|shared|learned|learnt|discovered|painted|cooked|baked|joined|finished|decided|participated)\b",
    re.IGNORECASE,
)


def past_event(clause: str) -> bool:
    """An English clause that tells an event in the past ("Bart went to the zoo and saw ..."): something
    that happened, not a state that holds (a change verb such as "moved" or "switched" is a state)."""
    return bool(_EN_PAST_EVENT.search(clause)) and not _EN_NOW.search(clause)


_AUXILIARIES = frozenset(
    {"is", "are", "am", "was", "were", "be", "been", "being", "has", "have", "had", "get", "got", "gets"}
)
"""Before a participle these make a state or a passive ("is scheduled", "has finished"), not a told event."""
_CHANGE_VERBS = frozenset(
    {
        "moved", "switched", "changed", "renamed", "rescheduled", "relocated", "upgraded", "downgraded",
        "updated", "replaced", "shifted", "transferred", "postponed", "delayed", "raised", "increased",
        "decreased", "reduced", "lowered", "extended", "converted", "married", "retired", "promoted",
        "reassigned", "migrated", "adopted", "started", "stopped", "quit", "joined",
    }
)  # fmt: skip
"""Past forms that report a new state ("moved to Thursday"), so a clause of them may well be a correction."""
_WORD = re.compile(r"[a-z][a-z']+")


def _told_in_past(clause: str) -> bool:
    """An event told in the past: an irregular past form, or a regular "-ed" verb that no auxiliary makes a
    state, which is not a verb of change."""
    if _EN_NOW.search(clause):
        return False
    if _EN_PAST_EVENT.search(clause):
        return True
    words = _WORD.findall(clause.casefold())
    return any(
        word.endswith("ed") and len(word) > 4 and word not in _CHANGE_VERBS
        and (index == 0 or words[index - 1] not in _AUXILIARIES)
        for index, word in enumerate(words)
    )  # fmt: skip


def both_told_events(old_clause: str, new_clause: str) -> bool:
    """Both clauses tell events in the past ("rotated key 2 on db-2", "rotated key 3 on db-3"): two
    things that happened, not one state whose value changed."""
    return _told_in_past(old_clause) and _told_in_past(new_clause)


def past_against_present(old_clause: str, new_clause: str) -> bool:
    """The later clause tells the same thing in the past tense where the earlier one used the present
    ("my plan cost 18 euros" after "my plan costs 39 euros"), with nothing saying it holds now."""
    if _EN_NOW.search(new_clause):
        return False
    return bool(_EN_PAST_FRAME.search(new_clause)) and not _EN_PAST_FRAME.search(old_clause)


def why_not_current(text: str, clause: str = "") -> str:
    """Why the sentence of ``text`` holding ``clause`` does not assert a current state ("question",
    "hypothetical", "called off", "another time"), or "" when it does."""
    sentence = _ZH_DENIAL_OPENING.sub("", _sentence_of(text, clause).strip())
    sentence = _ZH_SAID_BEFORE.sub(" ", _EN_SAID_BEFORE.sub(" ", sentence)).strip()
    if not sentence:
        return "empty"
    if sentence.endswith(("?", "\uff1f")) or _EN_QUESTION_START.match(sentence):
        return "question"
    if _ZH_QUESTION.search(sentence) and not re.search(r"[a-zA-Z]{3}", sentence):
        return "question"
    return _frame(sentence, clause)


def _frame(sentence: str, clause: str) -> str:
    """What, apart from asking, keeps ``sentence`` from asserting a current state, or ""."""
    if _EN_CALLED_OFF.search(sentence) or _ZH_CALLED_OFF.search(sentence):
        return "called off"
    if _EN_HYPOTHETICAL.search(sentence) or _ZH_HYPOTHETICAL.search(sentence):
        return "hypothetical"
    other_time = _EN_OTHER_TIME.search(sentence) or _ZH_OTHER_TIME.search(sentence)
    now_here = _EN_NOW.search(clause or sentence) or _ZH_NOW.search(clause or sentence)
    if other_time and not now_here:
        return "another time"
    return ""


def asserts_now(text: str, clause: str = "") -> bool:
    """Whether the sentence of ``text`` holding ``clause`` asserts what holds now."""
    return not why_not_current(text, clause)


_TERM = re.compile(r"[a-z0-9]{3,}|[\u4e00-\u9fff]")
"""Words long enough to tie a sentence to a request (a Chinese character counts alone)."""

# Whose value a sentence gives ------------------------------------------------------------------------------
_EN_POSSESSOR = re.compile(
    r"(?:\b([a-z][\w-]*)\s+|(?:^|(?<=[:;,.!?(\u2014-]))\s*)([a-z][\w-]*?)(?:'s|\u2019s|s'|\u2019)(?=\s)",
    re.IGNORECASE,
)
"""A possessor and the word before it ("our team's" -> ("our", "team"), "my wife's" -> ("my", "wife")), or
none at the start of a clause ("Interesting: Greg's ..." -> ("", "greg"))."""
_EN_NOT_POSSESSORS = frozenset(
    "it that there here he she what who where how let this i you we they one everyone everything".split()
)
"""Words before "'s" that are contractions ("it's", "what's"), not owners."""
_EN_PLACE_WORDS = frozenset(
    "at in on to from with by for of near into over under than as about like via".split()
)
"""Words that put a possessive in a value or a place ("meets at Jo's flat"), not before the owner."""
_ZH_KIN = ("爸", "妈", "哥", "姐", "弟", "妹", "老爸", "老妈", "公公", "婆婆", "岳父", "岳母", "侄子", "侄女",
           "外甥", "外甥女", "孙子", "孙女", "闺蜜", "师傅", "老板娘", "合伙人", "客户")  # fmt: skip
"""Short kin words ("我爸的", "我姐"), beside the statement parser's people."""
_ZH_PEOPLE = "|".join(sorted({*_ZH_PERSONS, *_ZH_KIN}, key=len, reverse=True))
_ZH_OTHER_OWNER = re.compile(rf"(?:我|我们)的?(?:{_ZH_PEOPLE})|他的|她的|他们的|她们的")


def _possessors(text: str) -> set[tuple[str, str]]:
    return {
        (before.casefold(), owner.casefold())
        for before, owner in _EN_POSSESSOR.findall(text)
        if owner.casefold() not in _EN_NOT_POSSESSORS and before.casefold() not in _EN_PLACE_WORDS
    }


def names_other_owner(text: str, query: str = "") -> bool:
    """Whether ``text`` gives the value of an owner ``query`` does not name: someone's thing in English
    ("my brother's", "our client's", "the sales team's" against a request about "our team's"), a relative,
    friend or colleague, or him or her, in Chinese ("我哥哥", "他的")."""
    if _possessors(text) - _possessors(query):
        return True
    return bool(_ZH_OTHER_OWNER.search(text)) and not _ZH_OTHER_OWNER.search(query)


_EN_PRECAUTION = re.compile(r",?\s*\bin case (?:it|this|that) (?:comes up|matters|helps)\b", re.IGNORECASE)
"""A trailing "in case it comes up" says why something is told, it puts no condition on it."""


_EN_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|we|us|our|ours)\b", re.IGNORECASE)
_ZH_FIRST_PERSON = re.compile(r"我")


def asks_current_state(query: str) -> bool:
    """Whether a request asks what holds now: in the present tense (English), not itself about another
    time, a hypothetical or a plan ("when did Anna go to Rome?" asks about an event, not a state)."""
    if _EN_PAST_FRAME.search(query) and not _EN_NOW.search(query):
        return False
    return not _frame(query, "")


def asks_own(query: str) -> bool:
    """Whether a request asks about the asker's own things ("my", "our", "我")."""
    return bool(_EN_FIRST_PERSON.search(query) or _ZH_FIRST_PERSON.search(query))


def look_alike(query: str, text: str) -> str:
    """Why ``text`` should not answer a request about the current state of the asker's own things
    (``query``): its sentences that share a word with the request all ask, suppose, call off or tell of
    another time ("not current"), or, for a request about the asker's own things, it gives the value of an
    owner the request does not name ("other owner"); "" otherwise (also when the request itself is not
    about the current state)."""
    if not asks_current_state(query):
        return ""
    if asks_own(query) and names_other_owner(text, query):
        return "other owner"
    text = _EN_PRECAUTION.sub("", text)
    wanted = set(_TERM.findall(query.casefold()))
    sentences = [s for s in re.split(r"(?<=[.!?\u3002\uff01\uff1f])\s*|\n+", text) if s.strip()]
    related = [s for s in sentences if wanted & set(_TERM.findall(s.casefold()))] or sentences
    if related and all(why_not_current(s) for s in related):
        return "not current"
    return ""
