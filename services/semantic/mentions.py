"""Who and what a turn mentions, without an LLM: the speaker, names in the text, and relatives.

A turn always mentions its speaker (``I``, ``my``, ``我``, ``我的`` are the speaker). Besides, in English,
capitalised word runs inside a sentence are names (a sentence's first word only when the name is already
known: a speaker, or an entity of the bank), except words that are capitalised for other reasons
(``I``, greetings, months, weekdays) and names used to address someone (``Thanks, Mel!``, ``Hey
Caroline,``): in a dialogue those name the listener, not what the turn is about. In Chinese, known names
are found as substrings, and new ones in shapes that introduce a person (``李明辉是我的同事``,
``和王芳一起``). ``my sister`` / ``我的妹妹`` is a relative of the speaker: the entity ``<speaker>'s sister``
/ ``<speaker>的妹妹``. A short form of exactly one known person's name (``Mel`` for Melanie) is that person.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

from hindsight.runtime.text import key_of
from hindsight.semantic.extract import FAMILY_AND_WORK_RELATIONS

PERSON = "person"
OTHER = "other"
ADDRESSED = "addressed"
"""How a name used to address the listener is "mentioned": it only teaches another name of theirs."""
MIN_SHORT_FORM = 2
"""Characters a short form of a name needs (``Jo`` for Joanna)."""


@dataclass(frozen=True)
class Mention:
    """An entity a turn mentions: its name, its kind, and how (spoke, named, relative; or addressed)."""

    name: str
    type: str = OTHER
    how: str = "named"
    said: str = ""
    """The form the turn used when it is not the name itself (``Mel`` for Melanie): an alias."""

    @property
    def key(self) -> str:
        """The name in the compared form of the entity graph."""
        return key_of(self.name)


_NOT_NAMES = frozenset(
    """
    i i'm i've i'll i'd im ive ill id ok okay oh ohh hey hi hello hiya thanks thank thx yes yeah yep yup
    no nope nah sure wow whoa aw aww awww congrats congratulations haha hahaha lol omg omw btw fyi ps
    dear great good nice cool sorry please well so and but or the a an this that these those it its
    he she we they you your my our his her their me us them what when where who why how which there
    here mr mrs ms dr st yesterday today tonight tomorrow
    january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec
    monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun
    """.split()
)
"""Words written with a capital for reasons other than being a name."""

_ADDRESS_OPENERS = (
    r"(?:hey|hi|hello|hiya|yo|thanks|thank you|thank u|thx|wow|whoa|oh|ohh|aw+|yeah|yes|yep|no|nope|"
    r"sure|sorry|congrats|congratulations|great|cool|nice|ok|okay|bye|goodbye|dear|morning|good morning|"
    r"good night|night|haha+|lol|omg|love you|miss you|cheers|see you|take care|welcome)"
)
_NAME_RUN = re.compile(r"(?<![\w'\u2019])[A-Z][\w'\u2019-]*(?:\s+[A-Z][\w'\u2019-]*)*")
_POSSESSIVE = re.compile(r"['\u2019]s?$")
_SENTENCE = re.compile(r"[^.!?\n\u3002\uff01\uff1f]+[.!?\n\u3002\uff01\uff1f]*")

_EN_RELATIVES = {
    **FAMILY_AND_WORK_RELATIONS,
    "kids": "kids",
    "children": "kids",
    "family": "family",
    "parents": "parents",
    "grandma": "grandmother",
    "grandmother": "grandmother",
    "grandpa": "grandfather",
    "grandfather": "grandfather",
    "aunt": "aunt",
    "uncle": "uncle",
    "manager": "boss",
    "best friend": "best friend",
    "roommate": "roommate",
    "neighbor": "neighbour",
    "neighbour": "neighbour",
    "dog": "dog",
    "cat": "cat",
    "pet": "pet",
}
_ANIMALS = frozenset({"dog", "cat", "pet"})
_ZH_RELATIVES = (
    "妹妹 姐姐 哥哥 弟弟 妻子 老婆 太太 丈夫 老公 儿子 女儿 孩子 朋友 好朋友 闺蜜 妈妈 母亲 "
    "爸爸 父亲 爷爷 奶奶 外公 外婆 叔叔 阿姨 舅舅 姑姑 同事 老板 上司 领导 下属 同学 "
    "室友 邻居 表姐 表妹 表哥 表弟 堂哥 堂姐 堂弟 堂妹 男朋友 女朋友"
).split()
_EN_RELATIVE = re.compile(
    r"\bmy (?P<rel>" + "|".join(sorted(map(re.escape, _EN_RELATIVES), key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)
_ZH_RELATIVE = re.compile(r"我(?:的)?(?P<rel>" + "|".join(sorted(_ZH_RELATIVES, key=len, reverse=True)) + ")")
_ZH_SURNAMES = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范"
    "金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤"
)
_ZH_NAME = rf"(?P<name>(?:[{_ZH_SURNAMES}][\u4e00-\u9fff]{{1,2}})|(?:[小老阿][\u4e00-\u9fff]))"
_ZH_PERSON_SHAPES = [
    re.compile(_ZH_NAME + r"(?=是我的?(?:" + "|".join(_ZH_RELATIVES) + "))"),
    re.compile(
        r"(?:和|跟|与|同|给|告诉|问|约|陪|见到|遇到|认识)"
        + _ZH_NAME
        + r"(?=一起|说|聊|去|来|吃|见|玩|的|\uff0c|,|\u3002|$)"
    ),
    re.compile(_ZH_NAME + r"(?=(?:跟我|对我|告诉我|和我|说|今天|昨天|最近))"),
]
_CJK = re.compile(r"[\u4e00-\u9fff]")
_GENERIC_SPEAKERS = frozenset({"", "assistant", "system", "tool"})
"""Speakers that are roles, not someone the memories are about."""


def _is_name(words: list[str]) -> bool:
    return bool(words) and not all(word.lower().rstrip("'\u2019s") in _NOT_NAMES for word in words)


def _trim(words: list[str]) -> list[str]:
    while words and words[0].lower() in _NOT_NAMES:
        words = words[1:]
    while words and words[-1].lower() in _NOT_NAMES:
        words = words[:-1]
    return words


def _addressed(sentence: str, start: int, end: int) -> bool:
    """Whether the name at ``start:end`` addresses the listener: alone between the sentence's start (or an
    opener such as "thanks", "hey") and a comma or an end mark, or after a comma at the sentence's end."""
    before = sentence[:start].strip().lower().rstrip(",")
    after = sentence[end:].lstrip()
    closes = not after or after[0] in ",!?.;:)" or after.startswith(("-", "\u2014"))
    if not before or re.fullmatch(_ADDRESS_OPENERS + r"(?:[,!]?\s*(?:so much|again|a lot|guys))?", before):
        return closes
    return bool(sentence[:start].rstrip().endswith(",")) and not after.strip(" .!?)")


class Gazetteer:
    """Names already known in a bank (speakers, entities of its graph), by key, with their kinds.

    Two writes of one bank may read turns on worker threads at once: changes and the reads that walk the
    names hold a lock."""

    def __init__(self, known: Mapping[str, tuple[str, str]] | None = None, complete: bool = True) -> None:
        self.complete = complete
        """Whether every name of the bank is here (a cache of a large bank holds only some)."""
        self._lock = threading.Lock()
        self._known: dict[str, tuple[str, str]] = {}
        self._people: dict[str, set[str]] = {}
        """First names of known people by their first two letters: where a short form is looked up."""
        self._cjk: re.Pattern[str] | None = None
        for key, (name, kind) in (known or {}).items():
            self.add(key, kind, name)

    def add(self, name: str, kind: str, canonical: str = "") -> None:
        """Learn a name, or another name of ``canonical`` (a known kind beats "other")."""
        key = key_of(name)
        if not key:
            return
        with self._lock:
            held = self._known.get(key)
            if held is not None and (held[1] != OTHER or kind == OTHER):
                return
            self._known[key] = (canonical or name if held is None else held[0], kind)
            if _CJK.search(name):
                self._cjk = None
            if kind == PERSON and not _CJK.search(key):
                first = key.split()[0]
                self._people.setdefault(first[:MIN_SHORT_FORM], set()).add(first)

    def __len__(self) -> int:
        return len(self._known)

    def get(self, name: str) -> tuple[str, str] | None:
        """(canonical name, kind) of a known name, or None."""
        return self._known.get(key_of(name))

    def short_form(self, word: str) -> tuple[str, str] | None:
        """The one known person whose first name begins with ``word`` (``Mel`` -> Melanie), or None."""
        lowered = word.casefold()
        if len(lowered) < MIN_SHORT_FORM or lowered in _NOT_NAMES:
            return None
        with self._lock:
            firsts = list(self._people.get(lowered[:MIN_SHORT_FORM], ()))
        longer = [first for first in firsts if first.startswith(lowered) and first != lowered]
        return self._known.get(longer[0]) if len(longer) == 1 else None

    def cjk_names(self, text: str) -> Iterator[tuple[str, str, str]]:
        """Known Chinese names (two characters or more) that ``text`` contains: (name, kind, the form used
        when it is another name of the entity)."""
        pattern = self._cjk
        if pattern is None:
            with self._lock:
                keys = list(self._known)
            names = sorted((key for key in keys if _CJK.search(key) and len(key) >= 2), key=len, reverse=True)
            pattern = re.compile("|".join(map(re.escape, names))) if names else re.compile(r"(?!x)x")
            self._cjk = pattern
        for match in pattern.finditer(text):
            held = self.get(match.group(0))
            if held is not None:
                said = match.group(0)
                yield held[0], held[1], said if key_of(said) != key_of(held[0]) else ""


def speaker_entity(speaker: str) -> str:
    """The entity a turn's speaker is ("" when the speaker is a role, such as the assistant)."""
    name = " ".join(speaker.split())
    return "" if name.casefold() in _GENERIC_SPEAKERS else name


def relative_name(owner: str, relation: str, chinese: bool) -> str:
    """``Melanie's kids`` / ``user的妹妹``: someone known through their relation to ``owner``."""
    return f"{owner}的{relation}" if chinese else f"{owner}'s {relation}"


def mentions_of(text: str, speaker: str, known: Gazetteer) -> list[Mention]:
    """The entities a turn mentions, each once, speaker first (see the module docstring)."""
    found: dict[str, Mention] = {}

    def note(mention: Mention) -> None:
        held = found.get(mention.key)
        if mention.key and (held is None or (held.how == ADDRESSED and mention.how != ADDRESSED)):
            found[mention.key] = mention if held is None or mention.said else replace(mention, said=held.said)

    owner = speaker_entity(speaker)
    if owner:
        note(Mention(owner, PERSON, "spoke"))
    for mention in _english(text, known):
        note(mention)
    for mention in _chinese(text, known):
        note(mention)
    if owner:
        for match in _EN_RELATIVE.finditer(text):
            relation = _EN_RELATIVES[match.group("rel").lower()]
            kind = OTHER if relation in _ANIMALS else PERSON
            note(Mention(relative_name(owner, relation, False), kind, "relative"))
        for match in _ZH_RELATIVE.finditer(text):
            note(Mention(relative_name(owner, match.group("rel"), True), PERSON, "relative"))
    return list(found.values())


def _english(text: str, known: Gazetteer) -> Iterator[Mention]:
    for sentence_match in _SENTENCE.finditer(text):
        sentence = sentence_match.group(0)
        if _CJK.search(sentence):
            continue
        first = len(sentence) - len(sentence.lstrip())
        for match in _NAME_RUN.finditer(sentence):
            words = [_POSSESSIVE.sub("", word) for word in match.group(0).split()]
            if match.start() == first and words and known.get(words[0]) is None:
                words = words[1:]  # a sentence's first word is capitalised anyway
            words = _trim(words)
            if not _is_name(words):
                continue
            name = " ".join(words)
            start = match.start() + match.group(0).find(words[0])
            held = known.get(name)
            if held is None and len(words) == 1:
                held = known.short_form(name)
            said = name if held is not None and key_of(name) != key_of(held[0]) else ""
            if _addressed(sentence, start, start + len(name)):
                if held is not None and said:  # not a mention, but it tells what the listener is called
                    yield Mention(held[0], held[1], ADDRESSED, said)
            elif held is None:
                yield Mention(name)
            else:
                yield Mention(held[0], held[1], said=said)


def _chinese(text: str, known: Gazetteer) -> Iterator[Mention]:
    if not _CJK.search(text):
        return
    for name, kind, said in known.cjk_names(text):
        yield Mention(name, kind, said=said)
    for shape in _ZH_PERSON_SHAPES:
        for match in shape.finditer(text):
            name = match.group("name")
            held = known.get(name)
            yield Mention(held[0], held[1]) if held else Mention(name, PERSON)
