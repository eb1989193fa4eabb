"""Same question, new answer: whether a later statement gives a new value to what an earlier one stated.

Both texts are cut into clauses; each pair of clauses is aligned token by token (:mod:`.value_spans`) and
what differs is read as the values:

- the frames (the aligned, equal tokens) must carry the question: enough shared content on both sides;
- every differing span must be a value (a number, date, time, amount, version, name, place, language) or,
  when it is the only difference, a short free-text span; a differing span that names another owner ("my
  brother's"), negates, or changes a word of the question while a typed value changes too (another
  attribute: "leaves at 9" against "lands at 11") means the clauses ask different questions;
- at least one value must be replaced (an added detail is not a new answer);
- a name replaced on the subject's side (before the copula) and then another value names whose value it
  is ("the owner for ServiceA is Priya" against "the owner for ServiceB is Tom", "our Berlin office opens
  at 9" against "our Munich office opens at 10"): another subject, not a correction.

:func:`match` returns the best clause pair with its strength (0 to 1), or None. Whether the later
statement asserts a current state is :mod:`.modality`'s question.
"""

# ruff: noqa: RUF001, RUF002, RUF003  (Chinese examples use full-width punctuation on purpose)
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from hindsight.semantic.value_spans import (
    CALENDAR_WORDS,
    ZH_TIME,
    Token,
    negation,
    owner_word,
    tokens,
    value_kind,
    zh_language,
)

_ZH_TIME = ZH_TIME
_CALENDAR = CALENDAR_WORDS

MIN_SHARED = 1.2
"""Content the two frames must share at least: English words count 1, Chinese characters 0.6."""
ZH_WEIGHT = 0.6
FULL_FRAME = 3.0
"""Shared content from which a frame counts as whole (three English words, five Chinese characters)."""
MAX_FREE_WORDS = 4
"""Longest free-text value (in English words) read as a value when nothing typed differs."""
MAX_FREE_CHARS = 8
"""Longest free-text value in Chinese characters."""

_CLAUSES = re.compile(
    r"(?<=[.!?;:])\s+|[\u3002\uff01\uff1f\uff1b\uff1a\uff0c\u3001]\s*|\n+|,\s+|\s+(?:but|and|because|so)\s+|[.!?]$"
)


@dataclass(frozen=True)
class Match:
    """Two clauses that ask the same question with different values."""

    old_clause: str
    new_clause: str
    old_values: tuple[str, ...]
    new_values: tuple[str, ...]
    strength: float
    """How much of the two frames is shared, weighted by what typed the values (0 to 1)."""


_ASIDE = re.compile(r"\[[^\]]*\]|\([^)]*\)|\uff08[^\uff09]*\uff09")


_SENTENCES = re.compile(r"(?<=[.!?])\s+|(?<=[\u3002\uff01\uff1f])|\n+")
_KEYWORD = re.compile(r"[a-z0-9][a-z0-9'-]{2,}|[\u4e00-\u9fff]")
_STOP = frozenset("the and but for with you your are was were have has had that this not just really".split())


def sentences(text: str) -> list[str]:
    """The text's sentences."""
    return [s.strip() for s in _SENTENCES.split(text) if s and s.strip()]


def keywords(text: str) -> set[str]:
    """Words of three letters or more (without the commonest) and Chinese characters: a cheap first test
    that two texts may share a question."""
    return {w for w in _KEYWORD.findall(text.casefold()) if w not in _STOP}


def clauses(text: str) -> list[str]:
    """The text's clauses (sentences cut at commas and joining words, asides in brackets left out), short
    ones dropped."""
    return [c.strip() for c in _CLAUSES.split(_ASIDE.sub(" ", text)) if c and len(c.strip()) >= 4]


def _segment_text(segment: list[Token]) -> str:
    if all(t.chinese for t in segment):
        return "".join(t.text for t in segment)
    return " ".join(t.text for t in segment)


NOT_FIRST = -(10**6)
"""A segment start that is never the clause's first token."""


def kinds(segment: list[Token], start: int) -> list[str]:
    """Each token's value kind (:func:`value_kind`; ``start``: the segment's place in its clause). A word
    after a capitalised possessive belongs to the name ("Jo's flat"). In a Chinese word that is not all
    numerals and units ("三亚", "九寨沟") a numeral is part of a name."""
    found = [value_kind(t, first=start + i == 0) for i, t in enumerate(segment)]
    for i in range(1, len(segment)):  # "Jo's flat", "Mia's house": a named owner's place is one name
        before, token = segment[i - 1], segment[i]
        if found[i - 1] == "name" and before.key.endswith("'s") and not found[i] and not token.chinese:
            found[i] = "name"
    chinese = [k for t, k in zip(segment, found, strict=True) if t.chinese and len(t.text) == 1]
    if chinese and "" in chinese and "number" in chinese:
        return ["" if t.chinese and len(t.text) == 1 else k for t, k in zip(segment, found, strict=True)]
    return found


def _typed(segment: list[Token], first: int, start: int) -> bool:
    """Whether the segment holds a typed value (``start``: its position; ``first``: the first token's)."""
    return any(kinds(segment, start)) or zh_language(segment)


def _weight(found: list[Token]) -> float:
    return sum(0.0 if t.link else ZH_WEIGHT if t.chinese else 1.0 for t in found)


def _mixed(before: list[Token], after: list[Token], start: tuple[int, int]) -> bool:
    """A replaced span that changes a word of the question beside a value ("leaves at 9" against
    "lands at 11"): both sides hold untyped words and one of them a typed value."""
    kinds_before, kinds_after = kinds(before, start[0]), kinds(after, start[1])
    typed = any(kinds_before) or any(kinds_after)
    untyped_before = {t.key for t, kind in zip(before, kinds_before, strict=True) if not kind}
    untyped_after = {t.key for t, kind in zip(after, kinds_after, strict=True) if not kind}
    return typed and bool(untyped_before) and bool(untyped_after) and untyped_before != untyped_after


_VERB_FORM = re.compile(r"^[a-z]{3,}(?:ed|ing)$")
_PARTICIPLES = frozenset(
    "taken given written eaten driven chosen broken spoken forgotten hidden done paid".split()
)


def _verbish(words: set[str]) -> bool:
    return any(_VERB_FORM.match(w) or w in _PARTICIPLES for w in words)


def _predicate(before: list[Token], after: list[Token]) -> bool:
    """A replaced span that swaps a value for a predicate or for another kind of value ("is lisinopril"
    against "is taken with dinner", "is with Starling" against "pays 4.25% interest", "在十一点四十开"
    against "在茶水间开"): a word of the question before a typed value on one side only, a verb form on one
    side only, or a number on one side where the other holds no typed value."""
    kinds_before, kinds_after = kinds(before, NOT_FIRST), kinds(after, NOT_FIRST)

    def leads(kinds: list[str], side: list[Token]) -> bool:
        """An untyped (non-Chinese) word comes before the side's first typed token."""
        first = next((i for i, kind in enumerate(kinds) if kind), None)
        return first is not None and first > 0

    def words(kinds: list[str], side: list[Token]) -> set[str]:
        return {t.key for t, kind in zip(side, kinds, strict=True) if not kind}

    if (leads(kinds_before, before) and not words(kinds_after, after)) or (
        leads(kinds_after, after) and not words(kinds_before, before)
    ):
        return True
    if ("number" in kinds_before and not any(kinds_after)) or (
        "number" in kinds_after and not any(kinds_before)
    ):
        return not zh_language(before) and not zh_language(after)
    english = (
        {w for w in words(kinds_before, before) if w.isascii()},
        {w for w in words(kinds_after, after) if w.isascii()},
    )
    return _verbish(english[0]) != _verbish(english[1])


def _merged(
    opcodes: Sequence[tuple[str, int, int, int, int]], old: list[Token]
) -> list[tuple[str, int, int, int, int]]:
    """Opcodes with two differences joined when one Chinese character between them matched by chance
    ("何医生" against "河畔动物医院" share "医"): one value, not two."""
    out: list[tuple[str, int, int, int, int]] = []
    for op in opcodes:
        if (
            len(out) >= 2
            and op[0] != "equal"
            and out[-1][0] == "equal"
            and out[-1][2] - out[-1][1] == 1
            and old[out[-1][1]].chinese
            and out[-2][0] != "equal"
        ):
            _, a0, _, b0, _ = out[-2]
            out[-2:] = [("replace", a0, op[2], b0, op[4])]
            continue
        out.append(op)
    return [
        ("replace", a0, a1, b0, b1) if tag != "equal" and a1 > a0 and b1 > b0 else (tag, a0, a1, b0, b1)
        for tag, a0, a1, b0, b1 in out
    ]


def _plain(segment: list[Token]) -> str:
    """A value in compared form: ordinal endings and separators do not count ("the 5th" is "5")."""
    text = "".join(t.key for t in segment)
    return re.sub(r"(?<=\d)(?:st|nd|rd|th)\b|[,.:'\s]", "", text)


_ANAPHORA = frozenset(
    "it its he him his she her hers they them their theirs this these those which who whom whose you your "
    "yours one ones 他 她 它 你 这 那 其 该".split()
)
"""Words whose referent lies outside the clause: a frame holding one cannot say whose value it is."""
_JUDGEMENTS = frozenset(
    (
        "happy sad anxious angry upset excited proud glad nervous worried scared afraid lonely calm relaxed "
        "connected grateful thankful bored tired stressed frustrated disappointed surprised amazed relieved "
        "good great awesome amazing nice cool fine bad terrible awful lovely beautiful fun funny hard easy "
        "very really so extremely incredibly super quite pretty too more most less least important special "
        "interesting"
    ).split()
)
"""Feelings, judgements and degrees: they describe, they are not the value of an attribute."""
_WEAK = frozenset(
    "i me my 我 们 = not gonna going make get got do doing thing things something lot way".split()
)
"""Shared words that name no subject: a free-text value needs more of a frame than these."""
MIN_FREE_FRAME = 2.0
"""Shared content (beyond :data:`_WEAK`) a free-text value needs: two English words (or two Chinese
characters)."""
_ADJECTIVE = re.compile(r"^[a-z]{3,}(?:ful|ous|ive|able|ible|less|ish|some|ed|ing)$")


_NOT_A_VALUE = frozenset(
    (
        "i me myself others everyone someone make do get go gonna help love like want need have can could "
        "will would take give pay keep show share add expand try put start stop feel think know see look "
        "come let end"
    ).split()
)
"""Verbs and pronouns: a free-text span holding one is a predicate, not a value."""


def _judgement(token: Token) -> bool:
    """A feeling, judgement or degree ("happy", "stressful"); nouns in "-fish" ("shellfish") only look
    like "selfish"."""
    return token.key in _JUDGEMENTS or (bool(_ADJECTIVE.match(token.key)) and not token.key.endswith("fish"))


MAX_FREE_CLAUSE = 10
"""Longest clause (weighed as :data:`MIN_SHARED`) whose free-text difference is read as a value: in a long
clause it is chance."""

_SPEAKER_OWN = frozenset({"my", "我", "们"})
"""The speaker's own possessive: said or left out, the same thing."""


def _before_language(side: list[Token], end: int) -> bool:
    """The span ending at ``end`` is followed by "语" or "文": it names a language."""
    return end < len(side) and side[end].text in {"语", "文"}


LINK_ANCHOR = 2
VERB_ANCHOR = 1
VERB_ANCHORED_STRENGTH = 0.45
"""The most a match whose free-text value follows only a shared Chinese verb can weigh: enough for a
correction said with a cue ("纠正一下，我家的猫吃鸡肉罐头"), not for a statement without one, since
"我将要参加X" then "我将要参加Y" are two events, not one value replaced (``by_meaning``: 0.4 with a cue,
0.5 without)."""


def _anchored(
    old: list[Token], new: list[Token], a0: int, b0: int, frame: float, content: float = 0.0
) -> int:
    """A free-text value must follow what links it to the question on both sides: the copula marker
    ("is", "是", "在", "changed to"; in Chinese of one sort on both sides, "是" saying what a thing is, "在"
    where or when), or, in English, a frame of three words or more ("my cat eats ..."), or, in Chinese, the
    same verb or preposition right before it and three characters of frame besides "我" ("我家的猫吃...",
    "我对...过敏"; ``content``: the frame's weight without such words), which is weaker
    (:data:`VERB_ANCHORED_STRENGTH`). :data:`LINK_ANCHOR`, :data:`VERB_ANCHOR`, or 0."""
    if a0 and b0 and old[a0 - 1].link and new[b0 - 1].link:
        # "是X" / "在X": what it is, where it is
        return LINK_ANCHOR if old[a0 - 1].place_link == new[b0 - 1].place_link else 0
    if not (a0 > 0 and b0 > 0):
        return 0
    if not any(t.chinese for t in (*old, *new)):
        return LINK_ANCHOR if frame >= FULL_FRAME else 0
    before_old, before_new = old[a0 - 1], new[b0 - 1]
    if any(t.link for t in old[a0 : a0 + 1] + new[b0 : b0 + 1]):
        return 0  # "是PostgreSQL" against "每晚备份一次": a link on one side only
    verb = (
        before_old.chinese
        and before_old.key == before_new.key
        and before_old.key not in _WEAK
        and content >= 3 * ZH_WEIGHT - 1e-9
    )
    return VERB_ANCHOR if verb else 0


def _name_swap(before: list[Token], after: list[Token], start: tuple[int, int]) -> bool:
    """One name replaced by another ("uses Teams" / "uses Slack"): a value, though a name may look like
    an owner word; a possessive ("Tom's") still names an owner."""
    if not before or not after or any(t.key.endswith("'s") for t in (*before, *after)):
        return False
    return all(k == "name" for k in kinds(before, start[0])) and all(
        k == "name" for k in kinds(after, start[1])
    )


def _subject_side(old: list[Token], new: list[Token], a1: int, b1: int) -> bool:
    """Spans ending at ``a1`` / ``b1`` lie on the subject's side: before the copula marker on both sides, or
    anywhere in clauses without one ("our Berlin office opens at 9")."""
    links = any(t.link for t in old) or any(t.link for t in new)
    return not links or (any(t.link for t in old[a1:]) and any(t.link for t in new[b1:]))


def _owned_attribute(shared: list[Token]) -> bool:
    """The frame is the speaker's own thing ("my allergy", "我的..."): its noun names the question."""
    return any(t.key == "my" for t in shared) or any(t.text == "我" for t in shared)


_TIME_UNITS = frozenset("号 日 月 年 点 时 分 秒 刻 周 星期 礼拜 am pm".split())
_AMOUNT_UNITS = frozenset(
    (
        "元 块 钱 岁 公里 斤 克 百 千 万 亿 euro pound dollar yen yuan rmb km kg mile gb mb mbp mbps percent "
        "hundred thousand million"
    ).split()
)
_ORDINAL_OR_CLOCK = re.compile(r"^\d+(?:st|nd|rd|th)$|^\d{1,2}:\d{2}$|^\d{1,2}(?:am|pm)$")


def _quantity(segment: list[Token]) -> str:
    """Whether a typed value is a date or time ("27号", "the 5th", "9:15", "Tuesday") or an amount ("四千二",
    "60 pounds", "35 km"), or "" when it does not say."""
    for token in segment:
        key = token.key
        word = key.rstrip("s") if key.isalpha() else key  # "pounds", "mondays"
        if (
            _ZH_TIME.fullmatch(token.text)
            or token.text in _TIME_UNITS
            or key in _CALENDAR
            or word in _CALENDAR
            or _ORDINAL_OR_CLOCK.match(key)
        ):
            return "time"
        if token.text in _AMOUNT_UNITS or word in _AMOUNT_UNITS or token.text[:1] in "$\u00a3\u20ac\u00a5":
            return "amount"
        if re.search(r"\d(?:km|kg|gb|mb|%)$", key):
            return "amount"
    return ""


@dataclass(frozen=True)
class _Frame:
    """What two clauses share (the question) and how they differ (their alignment's opcodes)."""

    shared: list[Token]
    weight: float
    """The shared content's weight (:func:`_weight`)."""
    content: float
    """The same without words that name no subject (:data:`_WEAK`)."""
    opcodes: list[tuple[str, int, int, int, int]]
    last_replace: int
    """The index of the last replaced span in ``opcodes``: a word of the question that comes or goes
    before it means another question."""


@dataclass
class _Values:
    """The replaced values read off an alignment, and what weakens the match."""

    replaced: list[tuple[list[Token], list[Token], bool]] = field(default_factory=list)
    """Each replaced span as (old tokens, new tokens, whether the value is typed)."""
    verb_anchored: bool = False
    """A free-text value follows only a shared Chinese verb (:data:`VERB_ANCHOR`)."""
    trailing_words: float = 0.0
    """The weight of free text added or dropped after the values: it dilutes the frame."""


def _frame(old: list[Token], new: list[Token]) -> _Frame | None:
    """The clauses aligned token by token, or None when they share too little to ask one question, or
    nothing of one is replaced by something of the other."""
    matcher = SequenceMatcher(a=[t.key for t in old], b=[t.key for t in new], autojunk=False)
    shared = [old[i] for block in matcher.get_matching_blocks() for i in range(block.a, block.a + block.size)]
    weight = _weight(shared)
    content = _weight([t for t in shared if t.key not in _WEAK])
    if weight < MIN_SHARED or any(t.key in _ANAPHORA for t in shared):
        return None  # too little in common, or a frame whose subject is elsewhere ("it", "your", "which")
    opcodes = _merged(matcher.get_opcodes(), old)
    last_replace = max((i for i, op in enumerate(opcodes) if op[0] == "replace"), default=-1)
    if last_replace < 0:
        return None  # nothing replaced: an added detail is not a new answer
    return _Frame(shared, weight, content, opcodes, last_replace)


def _values(old: list[Token], new: list[Token], frame: _Frame) -> _Values | None:
    """The differing spans read as values, in order, or None when one of them shows the clauses ask
    different questions (another owner, a denial, a word of the question changed, another subject)."""
    values = _Values()
    keyed_by_name = False  # a name replaced before another value: it may name whose value it is
    for index, (op, a0, a1, b0, b1) in enumerate(frame.opcodes):
        if op == "equal":
            continue
        before = [t for t in old[a0:a1] if not t.link]
        after = [t for t in new[b0:b1] if not t.link]
        if not before and not after:
            continue  # only the copula came or went ("is on Saturday", "moved to Thursday")
        if op != "replace" and all(t.key in _SPEAKER_OWN for t in (*before, *after)):
            continue  # "our boiler" and "the boiler", said by the same person
        trailing = a1 == len(old) and b1 == len(new)  # the value's place: "at Jo's flat", "is my sister"
        owner = (
            not trailing
            and not _name_swap(before, after, (a0, b0))
            and (owner_word(before) or owner_word(after))
        )
        if owner or negation(before) != negation(after):
            return None  # someone else's value, or a denial (read by the statement parser)
        typed = _typed(before, 0, a0) or _typed(after, 0, b0)
        if op != "replace" or not before or not after:
            if typed:
                continue  # a value added beside the one replaced ("at 7pm" -> "at 8pm sharp")
            if index < frame.last_replace:
                return None  # a word of the question came or went before the value: another question
            values.trailing_words += _weight(before) + _weight(after)
            continue
        language = _before_language(old, a1) and _before_language(new, b1)  # "日语" -> "法语"
        if not language and (_mixed(before, after, (a0, b0)) or _predicate(before, after)):
            return None
        typed = typed or language
        both_typed = language or (_typed(before, 0, a0) and _typed(after, 0, b0))
        if not both_typed:
            anchor = _anchored(old, new, a0, b0, frame.weight, frame.content)
            if not anchor:
                return None
            values.verb_anchored = values.verb_anchored or anchor == VERB_ANCHOR
        if both_typed and _quantity(before) and _quantity(after) and _quantity(before) != _quantity(after):
            return None  # a date against an amount ("每月27号交" / "每月四千二"): two questions
        if keyed_by_name:
            return None  # "the owner for ServiceA is Priya" / "... for ServiceB is Tom": another subject
        keyed_by_name = _name_swap(before, after, (a0, b0)) and _subject_side(old, new, a1, b1)
        values.replaced.append((before, after, typed))
    return values


def _free_value(
    old: list[Token], new: list[Token], shared: list[Token], before: list[Token], after: list[Token]
) -> bool:
    """Whether the one untyped replacement reads as a value: not a feeling or a predicate, in a short
    clause, with enough of a frame to hold it, and short itself."""
    if max(_weight(old), _weight(new)) > MAX_FREE_CLAUSE:
        return False
    if any(_judgement(t) or t.key in _NOT_A_VALUE or t.key in _ANAPHORA for t in (*before, *after)):
        return False  # a feeling or a judgement describes a moment, it is not a value
    frame = [t for t in shared if t.key not in _WEAK]
    least = 2 * ZH_WEIGHT if all(t.chinese for t in frame) else MIN_FREE_FRAME
    if _owned_attribute(shared):  # "my allergy is to ...": the speaker's own thing names the question
        least = min(least, 1.0)
    if _weight(frame) < least:
        return False  # "I'm working on ..." against "I'm turning ...": no subject to hold a value
    size = max(len(before), len(after))
    limit = MAX_FREE_CHARS if all(t.chinese for t in (*before, *after)) else MAX_FREE_WORDS
    return size <= limit


def _strength(frame: _Frame, values: _Values, any_typed: bool) -> float:
    """How much of the two frames is shared, diluted by trailing free text, less for free-text values, and
    capped when a value is anchored only by a shared Chinese verb."""
    purity = frame.weight / (frame.weight + values.trailing_words)
    size_share = min(1.0, frame.weight / FULL_FRAME)
    strength = purity * (0.6 + 0.4 * size_share) * (1.0 if any_typed else 0.9)
    if values.verb_anchored:
        strength = min(strength, VERB_ANCHORED_STRENGTH)
    return strength


def _compare(old: list[Token], new: list[Token]) -> Match | None:
    """The two clauses' alignment read as frame and values (see the module docstring)."""
    if not old or not new:
        return None
    frame = _frame(old, new)
    if frame is None:
        return None
    values = _values(old, new, frame)
    if values is None:
        return None
    replaced = values.replaced
    if not replaced or all(_plain(b) == _plain(a) for b, a, _ in replaced):
        return None  # nothing replaced, or the same value written another way ("5th", "5")
    any_typed = any(typed for _, _, typed in replaced)
    untyped = [(b, a) for b, a, typed in replaced if not typed]
    if any_typed and untyped:
        return None  # a word of the question changed with the value: another attribute
    if not any_typed and (len(untyped) > 1 or not _free_value(old, new, frame.shared, *untyped[0])):
        return None
    return Match(
        old_clause="",
        new_clause="",
        old_values=tuple(_segment_text(b) for b, _, _ in replaced),
        new_values=tuple(_segment_text(a) for _, a, _ in replaced),
        strength=_strength(frame, values, any_typed),
    )


def comparable_values(old_value: str, new_value: str) -> bool:
    """Whether two values parsed for the same attribute name can answer the same question: not a value
    against a predicate or another kind of value ("due on the 27th" / "1,200 euros a month", "lisinopril" /
    "taken with dinner", "硝苯地平" / "每天早上吃")."""
    before, after = tokens(old_value), tokens(new_value)
    if not before or not after:
        return True
    return not (_mixed(before, after, (NOT_FIRST, NOT_FIRST)) or _predicate(before, after))


MAX_CLAUSES = 24
"""Clauses of a text compared at most (a long document is not one statement of a current value)."""
MAX_CLAUSE_TOKENS = 80
"""Longer clauses are not compared: alignment is quadratic in their length, and a new answer to a question is
stated in a short clause."""


SPEAKER = ("<speaker>",)
"""The subject of a clause that speaks of the speaker's own things ("my", "我")."""


_FIRST_PERSON = frozenset({"i", "me", "my", "我"})


def _subjects(clause_tokens: list[list[Token]]) -> list[tuple[str, ...] | None]:
    """Whose value each clause (as :func:`tokens`) states, where the text says so: the speaker for a clause
    with a first-person word; for one without, the subject a clause just before it introduced
    ("李梓涵是我的同事，其年龄是37岁", "Tom is my uncle, age 60": the words before that clause's copula); None
    when nothing says."""
    found: list[tuple[str, ...] | None] = []
    previous: list[Token] = []
    for current in clause_tokens:
        if any(t.key in _FIRST_PERSON for t in current):
            found.append(SPEAKER)
        else:
            link = next((i for i, t in enumerate(previous) if t.link), 0)
            named = tuple(t.key for t in previous[:link] if t.key not in _SPEAKER_OWN)
            found.append(named or (SPEAKER if link else None))
        previous = current
    return found


def _statements(text: str) -> list[tuple[str, list[Token], tuple[str, ...] | None]]:
    """The clauses of ``text`` short enough to state one value, each with its tokens and its subject
    (:func:`_subjects` reads every clause, so a long one still introduces the subject of the next).
    A statement of one value is short; aligning long runs of text costs quadratic time."""
    read = [(clause, tokens(clause)) for clause in clauses(text)[:MAX_CLAUSES]]
    subjects = _subjects([found for _, found in read])
    return [
        (clause, found, subject)
        for (clause, found), subject in zip(read, subjects, strict=True)
        if len(found) <= MAX_CLAUSE_TOKENS
    ]


def match(old_text: str, new_text: str) -> Match | None:
    """The best pair of clauses of ``old_text`` and ``new_text`` that ask the same question with
    different values, or None. Two clauses whose subjects the texts name differently (:func:`_subjects`)
    are about two people or things, whatever their frames share."""
    best: Match | None = None
    old_clauses = _statements(old_text)
    for new_clause, new_tokens, new_subject in _statements(new_text):
        for old_clause, old_tokens, old_subject in old_clauses:
            if old_subject is not None and new_subject is not None and old_subject != new_subject:
                continue  # "李梓涵是我的同事，其年龄是37岁" / "王宇轩是我的叔叔，其年龄是60岁": two people
            found = _compare(old_tokens, new_tokens)
            if found is not None and (best is None or found.strength > best.strength):
                best = Match(old_clause, new_clause, found.old_values, found.new_values, found.strength)
    return best
