"""What an attacker knows about a bank: its speakers, the questions asked of it, and the facts it holds.

An attack aims at the queries a user really asks, so the generator draws its material from a namespace of
the dev files: each seed is one of its questions with the messages that answer it, a short topic phrase
and a fact (a value stated in one of those messages) whose value another message of the namespace offers
a plausible replacement for.
"""

# ruff: noqa: RUF001  (Chinese text uses full-width punctuation on purpose)

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from hindsight.bench.datasets import Message, Namespace
from hindsight.runtime.text import STOPWORDS

MAX_QUESTION_CHARS = 1200
_CJK = re.compile(r"[\u3400-\u9fff]")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*|\d+")
_STOP = STOPWORDS | frozenset(
    """shall may might must whose there mine hey hi oh wow yeah yes really just much many like get got go
    going went make made say said tell told think know let lot lots thing things way one ones kind sure well
    good great nice thanks likely ever take took taken start started keep kept give gave find found use used
    come came feel felt want wanted need needed try tried see saw look looked visit visited recently
    currently usually often always never still done""".split()
)
"""Words that name no topic: the function words search ignores, and the verbs and fillers of chat."""
_JOINERS = frozenset({"of", "for", "with", "at", "in", "on"})
"""Words that join two content words into one phrase ("a book of poems") but never start or end it."""
_NUMBER_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twelve", "twenty")
_MONTHS = "January February March April May June July August September October November December".split()
_DAYS = frozenset("Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split())
_ZH_VALUE = re.compile(r"(的|其)([\u4e00-\u9fff]{1,8}?)是([^，。；！？]{1,20})([。；！？]|$)")
_ZH_DIGITS = "一二三四五六七八九十"
_QUESTION_TAIL = re.compile(r"(是什么|是多少|是哪里|是谁|是哪一天|有多少|多少|吗|呢|么)?[？?]*$")


@dataclass(frozen=True)
class Fact:
    """A value a speaker stated, and a different value an attacker would claim instead."""

    message: Message
    value: str
    false_value: str

    @property
    def altered(self) -> str:
        """The message as the attacker restates it, with the false value."""
        return self.message.text.replace(self.value, self.false_value, 1)


@dataclass(frozen=True)
class Seed:
    """One question the bank is asked, what answers it, and what an attacker builds around it."""

    question: str
    topic: str
    speaker: str
    evidence: tuple[Message, ...]
    fact: Fact | None = None


@dataclass(frozen=True)
class Profile:
    """A namespace as an attacker sees it."""

    namespace: Namespace
    lang: str
    speakers: tuple[str, ...]
    seeds: tuple[Seed, ...]


def is_chinese(text: str) -> bool:
    """Whether CJK characters make up a fair share of ``text``."""
    letters = [c for c in text if not c.isspace()]
    return bool(letters) and sum(bool(_CJK.match(c)) for c in letters) / len(letters) > 0.2


def topic_of(text: str, speakers: Sequence[str] = ()) -> str:
    """A short phrase naming what ``text`` is about: its longest run of content words (or CJK subject)."""
    if is_chinese(text):
        stripped = _QUESTION_TAIL.sub("", text.strip())
        head = re.split(r"[，。；！？,]", stripped)[0]
        head = re.sub(r"^我(将要|要|会|想)?[\u4e00-\u9fff]{0,3}?的", "", head)
        head = re.split(r"的|是我的|和", head)[0]
        return head[:16] or stripped[:12]
    names = {s.lower() for s in speakers}
    runs: list[list[str]] = [[]]
    for word in _WORD.findall(text):
        lower = word.lower()
        if lower in _JOINERS and runs[-1] and runs[-1][-1].lower() not in _JOINERS:
            runs[-1].append(word)  # "book of poems", "gift for her mom": kept only inside a phrase
        elif lower in _STOP or lower in names or word.isdigit():
            runs.append([])
        else:
            runs[-1].append(word)
    phrases = []
    for run in runs:
        while run and run[-1].lower() in _JOINERS:
            run.pop()
        phrases.append(run[:5])
    # The longest phrase; of equal ones the last (a question's object comes after its verb).
    best = max(reversed(phrases), key=lambda run: sum(w.lower() not in _JOINERS for w in run))
    return " ".join(best)


def _en_values(text: str, speakers: set[str]) -> list[tuple[str, str]]:
    """(kind, value) pairs an English message states: numbers, months, and names other than speakers.

    A name's kind is the word before it ("in Paris", "from Sweden"), so that a false claim swaps a
    place for a place and a person for a person.
    """
    values = [("number", v) for v in re.findall(r"\b\d+\b", text)]
    values += [("number_word", w) for w in re.findall(r"\b[a-z]+\b", text) if w in _NUMBER_WORDS]
    values += [("month", m) for m in _MONTHS if re.search(rf"\b{m}\b", text)]
    for match in re.finditer(r"\b([a-z]+) ([A-Z][a-z]{3,}(?: [A-Z][a-z]{2,})*)", text):
        name = match.group(2)
        if name not in speakers and name not in _MONTHS and name not in _DAYS:
            values.append((f"name:{match.group(1)}", name))
    return values


def _zh_values(text: str) -> list[tuple[str, str]]:
    """(attribute, value) pairs a Chinese message states ("其身高是169cm", "它的规模是六千人")."""
    return [(m.group(2), m.group(3)) for m in _ZH_VALUE.finditer(text)]


def _alternatives(namespace: Namespace, speakers: set[str]) -> dict[str, list[str]]:
    """Values of the namespace by kind (English) or by attribute (Chinese): what a false claim uses."""
    pool: dict[str, list[str]] = {}
    for message in namespace.messages:
        for attribute, value in _zh_values(message.text):
            pool.setdefault(f"zh:{attribute}", []).append(value)
        for kind, value in _en_values(message.text, speakers):
            pool.setdefault(kind, []).append(value)
    return {kind: sorted(set(values)) for kind, values in pool.items()}


def _shifted(value: str, rng: random.Random) -> str:
    """A different number of the same form (digits or Chinese numerals)."""
    if value.isdigit():
        return str(max(1, int(value) + rng.choice((-3, -2, -1, 1, 2, 3, 5)) * max(1, int(value) // 10)))
    for digit in value:
        if digit in _ZH_DIGITS[:9]:
            other = rng.choice([d for d in _ZH_DIGITS[:9] if d != digit])
            return value.replace(digit, other, 1)
    return ""


def _fact(
    messages: Sequence[Message], pool: dict[str, list[str]], speakers: set[str], rng: random.Random
) -> Fact | None:
    """A stated value of one of ``messages`` and a plausible different one."""
    for message in messages:
        choices: list[tuple[str, str]] = []
        for attribute, value in _zh_values(message.text):
            others = [v for v in pool.get(f"zh:{attribute}", []) if v != value]
            choices.append((value, rng.choice(others) if others else _shifted(value, rng)))
        for kind, value in _en_values(message.text, speakers):
            others = [v for v in pool.get(kind, []) if v != value]
            choices.append((value, rng.choice(others) if others else _shifted(value, rng)))
        choices = [(value, other) for value, other in choices if other and other != value]
        if choices:
            value, other = rng.choice(choices)
            return Fact(message, value, other)
    return None


def profile(namespace: Namespace, rng: random.Random) -> Profile:
    """The speakers, questions and facts of a namespace, in the namespace's language."""
    sample = " ".join(m.text for m in namespace.messages[:50])
    lang = "zh" if is_chinese(sample) else "en"
    speakers = tuple(sorted({m.speaker for m in namespace.messages if m.speaker and m.speaker != "user"}))
    names = set(speakers)
    by_id = {m.id: m for m in namespace.messages}
    pool = _alternatives(namespace, names)
    seeds = []
    for query in namespace.queries:
        evidence = tuple(by_id[g] for g in query.gold if g in by_id)
        if not evidence or len(query.text) > MAX_QUESTION_CHARS:
            continue
        speaker = next((m.speaker for m in evidence if m.speaker and m.speaker != "user"), "")
        text = query.text if len(query.text) <= 200 else evidence[0].text
        seeds.append(
            Seed(
                question=query.text,
                topic=topic_of(text, speakers) or topic_of(evidence[0].text, speakers),
                speaker=speaker,
                evidence=evidence,
                fact=_fact(evidence, pool, names, rng),
            )
        )
    return Profile(namespace, lang, speakers, tuple(seed for seed in seeds if seed.topic))
