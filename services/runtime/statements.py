"""Statements: what a text says about whom, read without an LLM (English and Chinese).

Pure text reading, shared by the semantic layer (corrections supersede what they replace) and the edge
(recall-time consensus compares what the candidates for a query state):

- a **statement**: an owner (the speaker, or a person named with a possessive), a normalised attribute
  ("deploy target", "lives_in", "上司邮箱地址") and its value, from copular shapes ("my X is Y", "Alice's X
  is Y", "我的X是Y", "我同事的X是Y") and change shapes ("my X changed to Y", "X改成了Y");
- **denied values**: what the text says is no longer, or not, the value ("not X but Y", "Y, not X",
  "no longer X", "不是X而是Y", "已经不X了");
- a **cue**: whether the text announces a correction ("actually", "correction", "其实", "更正", ...).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from hindsight.runtime.text import key_of

TURN_KEY_PREFIX = "turn:"
"""Subjects of the semantic layer's turn records start with it (the owner follows), so a turn's chain never
mixes with the facts' chains; the edge strips it to read the owner."""

USER = "user"
"""The owner of statements about the user that do not name them ("the user's X", "用户的X")."""

ANONYMOUS = frozenset({"", "user", "assistant", "agent", "system", "tool", "me", "i"})
"""Speaker names that name a role, not a person."""

# ----- cues ---------------------------------------------------------------------------------------------
_EN_CUE = re.compile(
    r"(?:n't|\bnot)\b[^.;!?]{0,60}?\bany ?more\b|"
    r"\b(?:actually|correction|to correct|i meant|i mis(?:spoke|typed)|scratch that|rather|instead|"
    r"no longer|(?:changed|switched|updated)\b[^.;!?]{0,40}?\bto\b|not (?!only\b)[^.;!?]{1,60}?\bbut\b|"
    r"my (?:mistake|bad)|i (?:got|had) (?:that|it) wrong|i was wrong|that(?:'s| is| was) (?:wrong|not right|"
    r"incorrect)|let me (?:fix|correct)|correct(?:ing)? (?:myself|what i)|oops|(?:small|quick) fix|"
    r"update to what i (?:said|told you))",
    re.IGNORECASE,
)
_ZH_CUE = re.compile(
    r"其实|更正|纠正|改成|改为|换成|变成|已经不|不再|说错|实际上|而是|记错|不对|搞错|口误|修正|改一下|错了|"
    r"(?:之前|刚才|上次)(?:说|讲)的(?:不对|有误|错)"
)


@functools.lru_cache(maxsize=32768)
def has_cue(text: str) -> bool:
    """Whether ``text`` announces that it corrects or replaces something said before (cached by text: the
    edge asks it of the same stored turns on every recall)."""
    return bool(_EN_CUE.search(text) or _ZH_CUE.search(text))


# ----- what a turn states -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Statement:
    """One thing a turn states: ``owner``'s ``attribute`` is ``value`` (empty when it only denies)."""

    owner: str
    attribute: str
    value: str = ""
    denied: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        """How statements about the same thing are matched."""
        return (key_of(self.owner), self.attribute)


@dataclass(frozen=True)
class Reading:
    """What one turn says: its statements, values it denies without naming the attribute, and a cue."""

    statements: tuple[Statement, ...] = ()
    loose_denials: tuple[str, ...] = ()
    """Values corrected away by a turn that names no attribute ("Actually it's B, not A")."""
    cue: bool = False

    @property
    def empty(self) -> bool:
        """Nothing to compare with earlier turns."""
        return not self.statements and not self.loose_denials


_ARTICLES = re.compile(r"^(?:the|a|an|my|our|its|his|her|their)\s+", re.IGNORECASE)
_PUNCT = re.compile(r"[\s\"'\u201c\u201d\u2018\u2019()\[\]`.,;:!?\uff0c\u3002\uff01\uff1f\uff1b\uff1a]+")


def value_key(value: str) -> str:
    """A value in compared form: no articles, punctuation, case or spaces."""
    return _PUNCT.sub("", _ARTICLES.sub("", value.strip())).casefold()


def same_value(first: str, second: str) -> bool:
    """Equal, or one contains the other (a restatement or an elaboration, not a new value)."""
    a, b = value_key(first), value_key(second)
    return bool(a) and bool(b) and (a == b or a in b or b in a)


# English -------------------------------------------------------------------------------------------------
_EN_PERSONS = frozenset(
    (
        "sister brother mother mom mum father dad wife husband partner son daughter friend boss colleague "
        "coworker co-worker girlfriend boyfriend cousin neighbor neighbour roommate kid kids child children "
        "parent parents family aunt uncle niece nephew grandma grandpa grandmother grandfather baby team "
        "manager teacher doctor mentor student students fiance fiancee dog cat pet"
    ).split()
)
"""Nouns that name someone: "my sister is a nurse" describes her, it gives no single value."""
_EN_EVALUATIVE = frozenset(
    (
        "so very really pretty super quite too such just always never also still even kind sort like that "
        "to what how why where when gonna going getting being doing feeling a-bit all not no"
    ).split()
)
"""First words of a predicate that describes rather than gives a value ("is so good", "is going well")."""
_EN_STATE_WORDS = frozenset("new current old latest actual real updated correct present usual".split())
"""Words before an attribute that say which of its values is meant, not which attribute."""
_EN_PREPOSITIONS = frozenset("about for with of like into from by over under than as".split())
_EN_LEAD = re.compile(
    r"^(?:(?:correction|update|actually|oops|sorry|no|wait|well|in fact|to be clear|i meant|i mean|"
    r"scratch that|ok|okay)\b[\s,:;!.\u2014-]*)+",
    re.IGNORECASE,
)
_EN_WORD = r"[a-z][a-z0-9'\u2019-]*"
_EN_ATTR = rf"(?P<attr>{_EN_WORD}(?:\s{_EN_WORD}){{0,3}}?)"
_EN_OWNER = r"(?P<owner>\b(?:[Mm]y|[Oo]ur)|\b(?:[Tt]he )?[Uu]ser(?:'s|\u2019s)|\b[A-Z][a-z]+(?:'s|\u2019s))"
_EN_USER = re.compile(r"^(?:the )?user(?:'s|\u2019s)$", re.IGNORECASE)
"""A statement about "the user's X": its owner is the user, whoever speaks (a tool or a page about them)."""
_EN_NOT_OWNERS = frozenset(
    (
        "it that there here he she what who where how let this life today tomorrow yesterday everyone "
        "everything nothing something someone somebody nobody one mine yours everybody anyone anything"
    ).split()
)
"""Capitalised words before "'s" that name no one ("It's", "That's", "Everyone's")."""
_EN_COPULA = re.compile(
    _EN_OWNER
    + r"\s"
    + _EN_ATTR
    + r"\s(?:is|'s|\u2019s)(?P<neg>n't|n\u2019t|\s+not)?\s+(?:now\s+|actually\s+|currently\s+)?(?P<rest>.+)"
)
_EN_CHANGED = r"(?:changed|switched|moved|updated|changes|switches|set|reset)"
_EN_CHANGE = re.compile(
    r"(?:"
    + _EN_OWNER
    + r"\s"
    + _EN_ATTR
    + r"\s(?:has\s+|have\s+)?(?:been\s+|now\s+|just\s+)?"
    + _EN_CHANGED
    + r"|\b[Ii](?:'ve|\u2019ve| have)?\s+(?:just\s+|now\s+)?"
    + _EN_CHANGED
    + r"\s+(?P<owner2>my|our)\s+"
    + _EN_ATTR.replace("attr", "attr2")
    + r")(?:\s+from\s+(?P<old>.+?))?\s+to\s+(?P<rest>.+)"
)
_EN_NOT_BUT = re.compile(
    r"^not\s+(?P<old>.+?),?\s+but\s+(?:rather\s+|actually\s+)?(?P<new>.+)$", re.IGNORECASE
)
_EN_BUT_NOT = re.compile(
    r"^(?P<new>.+?),?\s+(?:and\s+)?not\s+(?P<old>[^,;]+?)(?:\s+any ?more)?$", re.IGNORECASE
)
_EN_NO_LONGER = re.compile(
    r"^(?:no longer|not)\s+(?P<old>[^,;]+?)(?:\s+any ?more)?"
    r"(?:[,;]\s*(?:it'?s|it is|but|now(?: it'?s)?)\s+(?:now\s+)?(?P<new>.+))?$",
    re.IGNORECASE,
)
_EN_STOP = re.compile(
    r"\s*(?:[,;!?]|\.(?:\s|$)|\s(?:and|but|because|since|so|which|who|though|although)\s|$)"
)
_EN_LOOSE = re.compile(
    r"\b(?:it'?s|it is|that'?s|that is)\s+(?P<new>[^,;.!?]+?),?\s+not\s+(?P<old>[^,;.!?]+?)(?=[,;.!?]|$)",
    re.IGNORECASE,
)
_EN_DENIED_VERB = re.compile(
    r"\b(?P<i>i)(?:'m| am)?\s+(?:no longer|don't|do not|not)\s+(?P<pred>[^,;.!?]+?)"
    r"(?:\s+any ?more)?(?=[,;.!?]|$)",
    re.IGNORECASE,
)


def _cut(rest: str) -> str:
    """A value: up to the first clause boundary, without quotes or trailing time words."""
    match = _EN_STOP.search(rest)
    value = rest[: match.start()] if match else rest
    return value.strip().strip("\"'\u201c\u201d\u2018\u2019()").strip()


def _english_attribute(raw: str) -> str | None:
    """The attribute of "my <raw> is ...", or None when it names a person or several things."""
    words = raw.casefold().replace("\u2019", "'").split()
    if not words or any(w in {"and", "or", "own"} for w in words):
        return None
    head = words[-1]
    if head in _EN_PERSONS:
        return None
    if head.endswith("s") and not head.endswith(("ss", "us", "is")):
        return None  # plural: "my plans are", "my kids" hold several values
    words = ["favourite" if w in {"favorite", "fave", "fav"} else w for w in words]
    while len(words) > 1 and words[0] in _EN_STATE_WORDS:
        words = words[1:]  # "my new phone number" is "my phone number"
    return "_".join(words)


def _english_value(rest: str) -> tuple[str, tuple[str, ...]]:
    """The value and the denied values of what follows the copula."""
    rest = rest.strip()
    if match := _EN_NOT_BUT.match(rest):
        return _cut(match.group("new")), (_cut(match.group("old")),)
    head = _EN_STOP.split(rest, maxsplit=1)[0] if rest else ""
    clause = re.split(r"[.!?](?:\s|$)", rest, maxsplit=1)[0].rstrip(" ,;")
    if match := _EN_NO_LONGER.match(clause):
        return _cut(match.group("new") or ""), (_cut(match.group("old")),)
    if match := _EN_BUT_NOT.match(clause):
        return _cut(match.group("new")), (_cut(match.group("old")),)
    return _cut(head), ()


_EN_PRONOUNS = frozenset("i me my mine we us our you your he him his she her they them their it".split())
_EN_ADJECTIVE = re.compile(r"(?:ful|ous|ive|able|ible|less|ish|some)$")
_EN_JUDGEMENTS = frozenset(
    (
        "good great awesome amazing nice cool fine bad terrible awful sweet cute key important "
        "interesting fun funny hard easy tough crazy wild busy happy sad tired open closed ready "
        "done over big small huge tiny new old best worst better worse perfect lovely beautiful "
        "gorgeous incredible fantastic excellent wonderful horrible weird strange special different "
        "same right wrong true false real okay ok sick late early crucial essential tricky messy "
        "full empty quiet loud hot cold warm safe free boring exciting inspiring stressful"
    ).split()
)
"""Words that judge rather than name a value ("the gym is awesome", "balance is key")."""


def _good_english_value(value: str) -> bool:
    """A value names something (a name, a number, a thing); a predicate that describes does not:
    "is important to me", "is about expressing my story", "is so good", "is going well"."""
    words = value.replace("\u2019", "'").split()
    folded = [w.casefold().strip(",.!?") for w in words]
    if not words or len(words) > 8 or folded[0] in _EN_EVALUATIVE or folded[0] in _EN_PREPOSITIONS:
        return False
    if any(w in _EN_PRONOUNS for w in folded):
        return False
    if len(words) <= 2 and words[0].islower() and folded[-1] in _EN_JUDGEMENTS:
        return False
    if len(words) == 1 and words[0].islower() and _EN_ADJECTIVE.search(folded[0]):
        return False
    return not folded[0].endswith("ing") and folded[0] not in {"was", "were", "been", "being"}


def _english(sentence: str, owner: str) -> Iterator[Statement]:
    text = _EN_LEAD.sub("", sentence.strip())
    for pattern in (_EN_CHANGE, _EN_COPULA):
        matches = list(pattern.finditer(text))
        for match in matches:
            groups = match.groupdict()
            who, raw = (
                groups.get("owner") or groups.get("owner2") or "",
                groups.get("attr") or groups["attr2"],
            )
            if who[:-2].casefold() in _EN_NOT_OWNERS:
                continue
            subject = owner if who.casefold() in {"my", "our"} else who[:-2]
            if _EN_USER.match(who):
                subject = USER
            attribute = _english_attribute(raw)
            if attribute is None:
                continue
            rest = match.group("rest")
            value, denied = _english_value("not " + rest if groups.get("neg") else rest)
            if pattern is _EN_CHANGE and match.group("old"):
                denied = (*denied, _cut(match.group("old")))
            if value and not _good_english_value(value):
                continue
            if value or denied:
                yield Statement(subject, attribute, value, tuple(d for d in denied if d))
        if matches:
            break  # "my X changed to Y" is not also "my X ... is"


# Chinese -------------------------------------------------------------------------------------------------
_ZH_PERSONS = (
    "妹妹 姐姐 哥哥 弟弟 妻子 老婆 太太 丈夫 老公 先生 儿子 女儿 朋友 好朋友 妈妈 母亲 爸爸 父亲 "
    "同事 老板 表姐 表妹 表哥 表弟 上司 领导 下属 叔叔 阿姨 婶婶 舅舅 舅妈 姑姑 姑父 伯伯 伯母 "
    "爷爷 奶奶 外公 外婆 姥姥 姥爷 孩子 室友 同学 老师 邻居 男朋友 女朋友 对象 家人 父母 经理 "
    "团队 宝宝 小狗 小猫 宠物"
).split()
_ZH_PERSON = "|".join(sorted(_ZH_PERSONS, key=len, reverse=True))
_ZH_STOP = "\uff0c,。\uff01\uff1f!?\uff1b;\\s"
_ZH_ATTR_CHARS = r"[\u4e00-\u9fffA-Za-z0-9的]"
_ZH_ADVERB = r"(?:现在|目前|如今|其实|实际上|已经|早就|也|就|都)?"
_ZH_CHANGE_VERB = r"(?:改成|改为|换成|变成|变为|改到|换到|更改为|调整为|更新为|搬到)了?"
_ZH_OWNERED = re.compile(
    rf"(?P<who>我|用户)(?P<de>的)?(?:(?P<rel>{_ZH_PERSON})的?)?(?P<attr>{_ZH_ATTR_CHARS}{{0,8}}?)"
    rf"{_ZH_ADVERB}(?P<verb>不再是|已经不是|不是|是|为|叫|在|{_ZH_CHANGE_VERB}|从)"
)
_ZH_BA = re.compile(
    rf"我(?:已经|刚|刚刚)?把(?:我的?)?(?:(?P<rel>{_ZH_PERSON})的?)?(?P<attr>{_ZH_ATTR_CHARS}{{1,8}}?)"
    rf"{_ZH_CHANGE_VERB}(?P<v>[^{_ZH_STOP}]{{1,24}})"
)
_ZH_STATE = re.compile(r"^(?:最新|新|现在|目前|现)")
"""Words before an attribute that say which of its values is meant ("我的新手机号" is "我的手机号")."""
_ZH_FROM_TO = re.compile(rf"^(?P<old>[^{_ZH_STOP}]{{1,24}}?){_ZH_CHANGE_VERB}(?P<v>[^{_ZH_STOP}]{{1,24}})")
_ZH_NOT_BUT = re.compile(
    rf"^(?P<old>[^{_ZH_STOP}]{{1,24}}?)[\uff0c,]?(?:而是|是)(?P<v>[^{_ZH_STOP}]{{1,24}})"
)
_ZH_IS_NOT = re.compile(rf"^(?P<v>[^{_ZH_STOP}]{{1,24}}?)[\uff0c,](?:而)?不是(?P<old>[^{_ZH_STOP}]{{1,24}})")
_ZH_PARTICLES = re.compile(r"(?:了|呢|啊|哦|呀|吧|啦|哈)+$")
_ZH_NOT_ATTR = re.compile(
    r"他|她|它|这|那|觉得|想|要|会|去|有|没|喜欢|爱|讨厌|打算|计划|准备|最近|今天|昨天|明天|刚|一直|们|说|知道|认为"
)
_ZH_LOOSE = re.compile(
    rf"(?:不是(?P<old>[^{_ZH_STOP}]{{1,24}}?)[\uff0c,]?而是(?P<new>[^{_ZH_STOP}]{{1,24}}))"
)
_ZH_DENIED_VERB = re.compile(
    rf"我(?:已经|早就)?(?:不再|已经不|早就不)(?P<pred>[^{_ZH_STOP}]{{1,24}}?)了?(?=[{_ZH_STOP}]|$)"
)


_ZH_TOPIC = re.compile(
    rf"(?P<topic>[\u4e00-\u9fffA-Za-z0-9]{{2,16}}?)的(?P<attr>[\u4e00-\u9fffA-Za-z0-9]{{1,8}}?)"
    rf"(?:是|为)(?P<v>[^{_ZH_STOP}]{{1,24}})"
)
_ZH_TOPIC_LEAD = re.compile(r"^.*(?:我|你|他|她|它|说|觉得|认为|知道|听|关于|对于|注意|提醒)")
"""What comes before a topic ("我觉得", "关于") and is no part of it."""
_ZH_QUESTION = re.compile(r"什么|哪|谁|多少|几|怎么|如何|吗")


def _zh_topics(sentence: str) -> Iterator[Statement]:
    """ "X的Y是V" about a named thing (an event, a place, a project): X's Y is V. Read only when asked
    (recall-time consensus), not by the semantic layer's corrections."""
    for match in _ZH_TOPIC.finditer(sentence):
        topic = _ZH_TOPIC_LEAD.sub("", match.group("topic"))
        attr = _ZH_STATE.sub("", match.group("attr").replace("的", ""))
        value = _zh_clean(match.group("v"))
        if (
            len(topic) < 2
            or topic.startswith("用户")
            or not attr
            or attr in _ZH_PERSONS
            or _ZH_NOT_ATTR.search(attr)
            or not value
            or _ZH_QUESTION.search(value)
        ):
            continue
        yield Statement(topic, attr, value)


def _zh_clean(value: str) -> str:
    return _ZH_PARTICLES.sub("", value.strip()).strip()


def _chinese(sentence: str, owner: str) -> Iterator[Statement]:
    for match in _ZH_BA.finditer(sentence):  # "我把部署目标改成了staging-2"
        attr = _ZH_STATE.sub("", (match.group("attr") or "").replace("的", ""))
        value = _zh_clean(match.group("v"))
        if attr and value and attr not in _ZH_PERSONS and not _ZH_NOT_ATTR.search(attr):
            yield Statement(owner, f"{match.group('rel') or ''}{attr}", value)
    for match in _ZH_OWNERED.finditer(sentence):
        rel, attr, verb = match.group("rel") or "", match.group("attr") or "", match.group("verb")
        if not match.group("de") and not rel:
            continue  # "我是..." / "我在...": the rule extractor's shapes, or no attribute at all
        attr = _ZH_STATE.sub("", attr.replace("的", ""))
        if not attr or attr in _ZH_PERSONS or _ZH_NOT_ATTR.search(attr):
            continue  # "我的上司是个程序员" describes a person; it gives no single value
        attribute = f"{rel}{attr}" if rel else attr
        whose = USER if match.group("who") == "用户" else owner  # "用户的X是Y": about the user
        rest = sentence[match.end() :]
        value = ""
        denied: tuple[str, ...] = ()
        if verb == "从":
            if found := _ZH_FROM_TO.match(rest):
                value, denied = found.group("v"), (found.group("old"),)
        elif verb in {"不是"}:
            if found := _ZH_NOT_BUT.match(rest):
                value, denied = found.group("v"), (found.group("old"),)
            elif found := re.match(rf"[^{_ZH_STOP}]{{1,24}}", rest):
                denied = (found.group(0),)
        elif verb in {"不再是", "已经不是"}:
            if found := re.match(rf"[^{_ZH_STOP}]{{1,24}}", rest):
                denied = (found.group(0),)
        elif found := _ZH_IS_NOT.match(rest):
            value, denied = found.group("v"), (found.group("old"),)
        elif found := re.match(rf"[^{_ZH_STOP}]{{1,24}}", rest):
            value = found.group(0)
        value = _zh_clean(value)
        denied = tuple(d for d in (_zh_clean(d) for d in denied) if d)
        if value or denied:
            yield Statement(whose, attribute, value, denied)


# ----- reading a turn -----------------------------------------------------------------------------------
_CJK = re.compile(r"[\u4e00-\u9fff]")


def _sentences(text: str) -> Iterator[str]:
    for part in re.split(r"(?<=[.!?\u3002\uff01\uff1f\uff1b;])\s*|\n+", text):
        if part.strip():
            yield part.strip()


def anonymous(owner: str) -> bool:
    """An owner that names a role, not a person."""
    return key_of(owner) in ANONYMOUS


def parse(text: str, owner: str, seed: Iterable[Statement] = (), topics: bool = False) -> Reading:
    """What ``text``, said by ``owner``, states and denies; ``seed`` holds statements known already (the
    rule extractor's single-valued facts), which a sentence that denies something refines. ``topics``: also
    what it says about named things ("设计前沿论坛的持续时间是三天": the forum's duration is three days)."""
    found: dict[tuple[str, str], Statement] = {}
    for statement in seed:
        found.setdefault(statement.key, statement)
    loose: list[str] = []
    for sentence in _sentences(text):
        reader = _chinese if _CJK.search(sentence) else _english
        read = list(reader(sentence, owner))
        if topics and reader is _chinese:
            read += [t for t in _zh_topics(sentence) if t.key not in found]
        for statement in read:
            known = found.get(statement.key)
            if known is None or (statement.denied and not known.denied):
                found[statement.key] = replace(
                    statement, value=statement.value or (known.value if known else "")
                )
        for pattern in (_EN_LOOSE, _ZH_LOOSE):
            for match in pattern.finditer(sentence):
                loose.append(match.group("old").strip())
    return Reading(tuple(found.values()), tuple(d for d in loose if d), has_cue(text))


def affirmatives(text: str) -> list[str]:
    """Sentences a denial presupposes: "I no longer live in Paris" -> "I live in Paris",
    "我已经不在腾讯工作了" -> "我在腾讯工作"; fed to the rule extractor to find the facts they end."""
    found = [f"I {m.group('pred')}" for m in _EN_DENIED_VERB.finditer(text)]
    found += [f"我{m.group('pred')}" for m in _ZH_DENIED_VERB.finditer(text)]
    return found
