"""Facts and entities from turns without an LLM: regular statement shapes in English and Chinese.

Covers what people most often say about themselves and others: identity (name, age, home, origin,
work), preferences, plans, events with dates, and relations between people. Anything else is left
to the turn's own vector (and to the LLM extractor when one is configured). Each fact names the turn
it came from and gets a stable id from (turn, subject, attribute, value), so extracting the same turn
twice gives the same facts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from hindsight.runtime.records import content_id
from hindsight.runtime.timeexpr import find_time_expression
from hindsight.semantic.records import Entity, RecordKind, Relation, SemanticRecord

RULE_CONFIDENCE = 0.6
"""Belief in a fact read by a pattern: right shape, but no understanding behind it."""

MULTI_VALUED = frozenset(
    {
        "likes",
        "dislikes",
        "plans",
        "event",
        "sister",
        "brother",
        "son",
        "daughter",
        "friend",
        "colleague",
        "cousin",
        "child",
        "parent",
        "relative",
    }
)
"""Attributes that hold several values at once: a new value adds to them instead of superseding."""

FAMILY_AND_WORK_RELATIONS = {
    "sister": "sister",
    "brother": "brother",
    "mother": "mother",
    "mom": "mother",
    "mum": "mother",
    "father": "father",
    "dad": "father",
    "wife": "wife",
    "husband": "husband",
    "partner": "partner",
    "girlfriend": "partner",
    "boyfriend": "partner",
    "son": "son",
    "daughter": "daughter",
    "cousin": "cousin",
    "boss": "boss",
    "colleague": "colleague",
    "coworker": "colleague",
    "co-worker": "colleague",
}
"""English words for a relative or a colleague, by the relation they name (shared with entity mentions)."""
_EN_RELATIONS = {
    **FAMILY_AND_WORK_RELATIONS,
    "friend": "friend",
    "best friend": "friend",
    "neighbor": "friend",
    "neighbour": "friend",
    "roommate": "friend",
}
_ZH_RELATIONS = {
    "妹妹": "sister",
    "姐姐": "sister",
    "哥哥": "brother",
    "弟弟": "brother",
    "妻子": "wife",
    "老婆": "wife",
    "太太": "wife",
    "丈夫": "husband",
    "老公": "husband",
    "先生": "husband",
    "儿子": "son",
    "女儿": "daughter",
    "朋友": "friend",
    "好朋友": "friend",
    "妈妈": "mother",
    "母亲": "mother",
    "爸爸": "father",
    "父亲": "father",
    "同事": "colleague",
    "老板": "boss",
    "表姐": "cousin",
    "表妹": "cousin",
    "表哥": "cousin",
    "表弟": "cousin",
}
_PLACE_ATTRIBUTES = frozenset({"lives_in", "from"})
_ORG_ATTRIBUTES = frozenset({"works_at"})


@dataclass(frozen=True)
class Extraction:
    """What one batch of turns said: fact records and the entities they name."""

    facts: list[SemanticRecord] = field(default_factory=list)
    entities: list[Entity] = field(default_factory=list)


def is_multi_valued(attribute: str) -> bool:
    """Whether two different values of ``attribute`` can both be true (so they never conflict)."""
    return attribute in MULTI_VALUED or attribute.endswith(" of")


# ----- English ------------------------------------------------------------------------------------------
_NAME = r"[A-Z][a-z]+(?:\s[A-Z][a-z]+)?"
_VALUE = r"(?P<v>[^,.;!?\n]{2,60}?)"
_END = r"(?=\s*(?:[,.;!?\n]|\band\b|\bbut\b|\bbecause\b|\bsince\b|$))"
_REL = "|".join(sorted(map(re.escape, _EN_RELATIONS), key=len, reverse=True))

_FIRST_PERSON: list[tuple[str, str, RecordKind]] = [
    (r"\bmy name is (?P<v>" + _NAME + r")", "name", RecordKind.FACT),
    (r"\bi(?:'m| am) (?P<v>\d{1,3}) years? old", "age", RecordKind.FACT),
    (
        r"\bi(?: now| currently)? (?:live|am living|'m living) in " + _VALUE + _END,
        "lives_in",
        RecordKind.FACT,
    ),
    (r"\bi(?: just| recently)? (?:moved|relocated) to " + _VALUE + _END, "lives_in", RecordKind.FACT),
    (r"\bi(?:'m| am| come) (?:originally )?from " + _VALUE + _END, "from", RecordKind.FACT),
    (
        r"\bi(?: now| currently)? (?:work|am working|'m working) (?:at|for) " + _VALUE + _END,
        "works_at",
        RecordKind.FACT,
    ),
    (r"\bi work as (?:an? )?" + _VALUE + _END, "job", RecordKind.FACT),
    (r"\bmy job is (?:an? )?" + _VALUE + _END, "job", RecordKind.FACT),
    (r"\bmy favou?rite (?P<a>[a-z]+(?: [a-z]+)?) is " + _VALUE + _END, "favourite", RecordKind.PREFERENCE),
    (
        r"\bi (?:really |also |just )?(?:like|love|enjoy|adore) " + _VALUE + _END,
        "likes",
        RecordKind.PREFERENCE,
    ),
    (
        r"\bi (?:really )?(?:hate|dislike|can't stand|don't like|do not like) " + _VALUE + _END,
        "dislikes",
        RecordKind.PREFERENCE,
    ),
    (r"\bi prefer " + _VALUE + _END, "likes", RecordKind.PREFERENCE),
    (
        r"\bi(?:'m| am) (?:going|planning|hoping|about) to " + _VALUE + _END,
        "plans",
        RecordKind.FACT,
    ),
    (r"\bi (?:plan|intend|want|hope) to " + _VALUE + _END, "plans", RecordKind.FACT),
    (r"\bi(?:'ll| will) " + _VALUE + _END, "plans", RecordKind.FACT),
    (
        r"\bi (?P<verb>went to|visited|started|finished|graduated from|attended|joined|adopted|bought|"
        r"ran|met|painted|signed up for|travell?ed to|took part in|volunteered at|won|lost)\s"
        + _VALUE
        + _END,
        "event",
        RecordKind.FACT,
    ),
]
_THIRD_PERSON: list[tuple[str, str, RecordKind]] = [
    (r"(?P<s>" + _NAME + r") (?:now )?lives in " + _VALUE + _END, "lives_in", RecordKind.FACT),
    (r"(?P<s>" + _NAME + r") (?:just )?moved to " + _VALUE + _END, "lives_in", RecordKind.FACT),
    (r"(?P<s>" + _NAME + r") (?:is|comes) from " + _VALUE + _END, "from", RecordKind.FACT),
    (r"(?P<s>" + _NAME + r") (?:now )?works (?:at|for) " + _VALUE + _END, "works_at", RecordKind.FACT),
    (r"(?P<s>" + _NAME + r") works as (?:an? )?" + _VALUE + _END, "job", RecordKind.FACT),
    (r"(?P<s>" + _NAME + r") is (?P<v>\d{1,3}) years? old", "age", RecordKind.FACT),
    (
        r"(?P<s>" + _NAME + r") (?:really )?(?:likes|loves|enjoys) " + _VALUE + _END,
        "likes",
        RecordKind.PREFERENCE,
    ),
]
_RELATION_PATTERNS = [
    # my sister Beth / my sister is Beth / my sister, Beth, / my sister named Beth
    re.compile(
        r"\b[Mm]y (?P<rel>"
        + _REL
        + r"),? (?:is |named |called |is called |is named )?(?P<o>"
        + _NAME
        + r")\b"
    ),
    # Beth is my sister
    re.compile(r"(?P<o>" + _NAME + r") is my (?P<rel>" + _REL + r")\b"),
    # Alice's sister is Beth / Alice's sister Beth
    re.compile(
        r"(?P<s>" + _NAME + r")'s (?P<rel>" + _REL + r"),? (?:is |named |called )?(?P<o>" + _NAME + r")\b"
    ),
    # Beth is Alice's sister
    re.compile(r"(?P<o>" + _NAME + r") is (?P<s>" + _NAME + r")'s (?P<rel>" + _REL + r")\b"),
]
_EN_TEMPLATES = {
    "name": "{s}'s name is {v}",
    "age": "{s} is {v} years old",
    "lives_in": "{s} lives in {v}",
    "from": "{s} is from {v}",
    "works_at": "{s} works at {v}",
    "job": "{s} works as {v}",
    "likes": "{s} likes {v}",
    "dislikes": "{s} dislikes {v}",
    "plans": "{s} plans to {v}",
    "event": "{s} {v}",
}
_NOT_NAMES = frozenset(
    {"I", "The", "This", "That", "It", "He", "She", "We", "They", "My", "Our", "You", "And"}
)

# ----- Chinese ------------------------------------------------------------------------------------------
_ZH_STOP = r"\uff0c,。\uff01\uff1f!?\uff1b;\s"
_ZH_VALUE = rf"(?P<v>[^{_ZH_STOP}]{{1,20}})"
_ZH_NAME = rf"(?P<o>[\u4e00-\u9fffA-Za-z]{{1,4}}?)(?=[{_ZH_STOP}]|$|住|在|是|今年|喜欢|也|很|和)"
_ZH_REL = "|".join(sorted(map(re.escape, _ZH_RELATIONS), key=len, reverse=True))
_ZH_PATTERNS: list[tuple[str, str, RecordKind]] = [
    (
        r"我(?:的名字)?(?:叫|是)(?P<v>[\u4e00-\u9fff]{2,3})(?=[\uff0c,。\uff01\uff1f!?\uff1b;\s]|$)",
        "name",
        RecordKind.FACT,
    ),
    (r"我今年(?P<v>\d{1,3}|[一二三四五六七八九十]{1,3})岁", "age", RecordKind.FACT),
    (r"我(?:现在|目前)?住在" + _ZH_VALUE, "lives_in", RecordKind.FACT),
    (r"我(?:刚|最近)?搬到了?" + _ZH_VALUE, "lives_in", RecordKind.FACT),
    (r"我来自" + _ZH_VALUE, "from", RecordKind.FACT),
    (
        r"我(?:现在|目前)?在(?P<v>[^\uff0c,。\uff01\uff1f!?\uff1b;\s]{1,20}?)(?:工作|上班)",
        "works_at",
        RecordKind.FACT,
    ),
    (r"我是(?:一名|一个|一位)" + _ZH_VALUE, "job", RecordKind.FACT),
    (
        r"我最喜欢的(?P<a>[^\uff0c,。\uff01\uff1f!?\uff1b;\s]{1,6}?)是" + _ZH_VALUE,
        "favourite",
        RecordKind.PREFERENCE,
    ),
    (r"我(?:不喜欢|讨厌|不爱)" + _ZH_VALUE, "dislikes", RecordKind.PREFERENCE),
    (r"我(?:很|非常|特别|也|最)?(?:喜欢|爱)(?!的)" + _ZH_VALUE, "likes", RecordKind.PREFERENCE),
    (r"我(?:打算|计划|准备|将要|将会|想要|要)" + _ZH_VALUE, "plans", RecordKind.FACT),
    (
        r"(?P<d>昨天|前天|今天|上周末?|上个月|去年|\d{1,2}月\d{1,2}[日号])?[\uff0c,]?我(?:去了|参加了|开始了|买了|完成了)"
        + _ZH_VALUE,
        "event",
        RecordKind.FACT,
    ),
]
_ZH_RELATION_PATTERNS = [
    re.compile(r"我的?(?P<rel>" + _ZH_REL + r")(?:叫|是|名叫)" + _ZH_NAME),
]
_CJK = re.compile(r"[\u4e00-\u9fff]")


def _sentences(text: str) -> Iterator[str]:
    for part in re.split(r"(?<=[.!?。\uff01\uff1f\uff1b;])\s*|\n+", text):
        if part.strip():
            yield part.strip()


_TRAILING_TIME = re.compile(
    r"(?:\s+(?:yesterday|today|tonight|now|soon|again|(?:last|this|next)\s+(?:week|weekend|month|year|night)|"
    r"\d+\s+(?:days?|weeks?|months?|years?)\s+ago|on\s+\w+(?:\s+\d{1,2})?|in\s+\d{4}))+$",
    re.IGNORECASE,
)


def _clean(value: str) -> str:
    """A captured value without quotes around it or a time expression after it."""
    value = value.strip().strip(" \"'\u201c\u201d\u2018\u2019()")
    return _TRAILING_TIME.sub("", value).strip() or value


def _english_date(sentence: str, said: datetime | None) -> datetime | None:
    """The day an English sentence puts its event on, relative to when it was said (its first day)."""
    return _event_day(sentence, said)


def _chinese_date(marker: str | None, said: datetime | None) -> datetime | None:
    """The day a Chinese time word ("昨天", "3月31日") puts an event on, relative to when it was said."""
    return _event_day(marker or "", said)


def _event_day(text: str, said: datetime | None) -> datetime | None:
    """The first day of the first time expression in ``text``, read in the zone of ``said``."""
    if said is None or not text:
        return None
    found = find_time_expression(text, said)
    return found.start if found is not None else None


@dataclass(frozen=True)
class _Found:
    subject: str
    attribute: str
    value: str
    kind: RecordKind
    text: str
    when: datetime | None = None


class RuleExtractor:
    """The deterministic extractor (see the module docstring)."""

    def extract(self, turns: Sequence[SemanticRecord]) -> Extraction:
        """Facts from every turn, in turn order; entities named by them, with their relations."""
        result = Extraction()
        for turn in turns:
            subject = turn.speaker.strip() or "user"
            found = list(self._english(turn, subject)) + list(self._chinese(turn, subject))
            seen: set[tuple[str, str, str]] = set()
            for item in found:
                key = (item.subject.casefold(), item.attribute, item.value.casefold())
                if key in seen or not item.value:
                    continue
                seen.add(key)
                result.facts.append(
                    fact_record(
                        turn, item.subject, item.attribute, item.value, item.kind, item.text, item.when
                    )
                )
                result.entities.extend(_entities_of(item, turn.speaker.strip()))
        return result

    def _english(self, turn: SemanticRecord, subject: str) -> Iterator[_Found]:
        said = turn.meta.time
        for sentence in _sentences(turn.text):
            if _CJK.search(sentence):
                continue
            when = _english_date(sentence, said)
            for pattern, attribute, kind in _FIRST_PERSON:
                for match in re.finditer(pattern, sentence, flags=re.IGNORECASE):
                    value = _clean(match.group("v"))
                    name = attribute
                    if attribute == "favourite":
                        name = "favourite_" + match.group("a").lower().replace(" ", "_")
                        text = f"{subject}'s favourite {match.group('a').lower()} is {value}"
                    elif attribute == "event":
                        value = f"{match.group('verb').lower()} {value}"
                        text = f"{subject} {value}" + (f" (on {when.date().isoformat()})" if when else "")
                    else:
                        text = _EN_TEMPLATES[attribute].format(s=subject, v=value)
                    yield _Found(subject, name, value, kind, text, when if attribute == "event" else None)
            for pattern, attribute, kind in _THIRD_PERSON:
                for match in re.finditer(pattern, sentence):
                    other = match.group("s")
                    if other.split()[0] in _NOT_NAMES:
                        continue
                    value = _clean(match.group("v"))
                    yield _Found(
                        other, attribute, value, kind, _EN_TEMPLATES[attribute].format(s=other, v=value)
                    )
            for relation in _RELATION_PATTERNS:
                for match in relation.finditer(sentence):
                    groups = match.groupdict()
                    owner = groups.get("s") or subject
                    other = match.group("o")
                    if other.split()[0] in _NOT_NAMES or owner.split()[0] in _NOT_NAMES:
                        continue
                    rel = _EN_RELATIONS[match.group("rel").lower()]
                    yield _Found(owner, rel, other, RecordKind.FACT, f"{owner}'s {rel} is {other}")

    def _chinese(self, turn: SemanticRecord, subject: str) -> Iterator[_Found]:
        said = turn.meta.time
        for sentence in _sentences(turn.text):
            if not _CJK.search(sentence):
                continue
            for pattern, attribute, kind in _ZH_PATTERNS:
                for match in re.finditer(pattern, sentence):
                    value = _clean(match.group("v"))
                    name = attribute
                    span = match.group(0)
                    text = subject + span[span.index("我") + 1 :] if "我" in span else span
                    when = None
                    if attribute == "favourite":
                        name = "favourite_" + match.group("a")
                    elif attribute == "event":
                        when = _chinese_date(match.groupdict().get("d"), said)
                    yield _Found(subject, name, value, kind, text, when)
            for relation in _ZH_RELATION_PATTERNS:
                for match in relation.finditer(sentence):
                    rel = _ZH_RELATIONS[match.group("rel")]
                    other = match.group("o")
                    yield _Found(
                        subject, rel, other, RecordKind.FACT, f"{subject}的{match.group('rel')}是{other}"
                    )


def fact_record(
    turn: SemanticRecord,
    subject: str,
    attribute: str,
    value: str,
    kind: RecordKind,
    text: str,
    when: datetime | None = None,
    confidence: float = RULE_CONFIDENCE,
) -> SemanticRecord:
    """A fact from one turn: its source, trust, session and tags are the turn's; its provenance is the turn
    first, then what the turn cites (an update's new version cites the version it replaced)."""
    return SemanticRecord(
        id="fact-" + content_id(turn.id, subject.casefold(), attribute, value.casefold()),
        text=text,
        kind=kind,
        speaker=turn.speaker,
        session_id=turn.session_id,
        meta=replace(turn.meta, source_turn_ids=tuple(dict.fromkeys((turn.id, *turn.meta.source_turn_ids)))),
        lineage=(turn.id,),
        subject=subject,
        attribute=attribute,
        value=value,
        source_episode_ids=turn.source_episode_ids,
        confidence=confidence,
        valid_from=when or turn.meta.time,
    )


def relation_type(attribute: str) -> str | None:
    """The relation an attribute states between two people, or None for a plain property."""
    if attribute in _EN_RELATIONS.values():
        return attribute
    return None


def inverse(relation: str) -> str:
    """The relation seen from the other end: ``sister`` -> ``sister of``."""
    return relation[: -len(" of")] if relation.endswith(" of") else f"{relation} of"


def entities_of_fact(subject: str, attribute: str, value: str, speaker: str = "") -> list[Entity]:
    """The entities a fact names and the relation between them, stored at both ends."""
    owner_type = (
        "person"
        if (speaker and subject == speaker) or subject[:1].isupper() or _CJK.match(subject)
        else "other"
    )
    rel = relation_type(attribute)
    if rel is not None:
        return [
            Entity(subject, owner_type, relations=(Relation(rel, value),)),
            Entity(value, "person", relations=(Relation(inverse(rel), subject),)),
        ]
    if attribute in _PLACE_ATTRIBUTES | _ORG_ATTRIBUTES and len(value.split()) <= 4:
        kind = "place" if attribute in _PLACE_ATTRIBUTES else "organisation"
        return [
            Entity(subject, owner_type, relations=(Relation(attribute, value),)),
            Entity(value, kind, relations=(Relation(inverse(attribute), subject),)),
        ]
    if attribute == "name" and subject != "user":
        return [Entity(subject, owner_type, aliases=(value,))]
    if subject != "user":
        return [Entity(subject, owner_type)]
    return []


def _entities_of(item: _Found, speaker: str) -> list[Entity]:
    return entities_of_fact(item.subject, item.attribute, item.value, speaker)
