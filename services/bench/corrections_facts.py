"""The facts the corrections set is built from: one attribute of one thing, in English or Chinese.

Each fact is a sentence with the owner (``{o}``) and the value (``{v}``) left open, its past-tense form
(a story about another time), the question that asks for it, three values it can take, and a sibling
sentence about another attribute of the same thing (``{w}``, with its own values). The values of one fact
are never part of each other, so "the old value is not in the top memory" can be checked on text. The
facts themselves are in ``data/corrections_facts.json``.
"""

from __future__ import annotations

from dataclasses import dataclass

from hindsight.bench.set_data import load


@dataclass(frozen=True)
class Fact:
    """One attribute of one thing, and how a user states it, asks for it, and talks next to it."""

    subject: str
    """people, work, health, home, schedules, money, tools or pets."""
    lang: str
    statement: str
    """Present-tense sentence with ``{o}`` (owner) and ``{v}`` (value), no final punctuation."""
    past: str
    """The same in the past tense (English; Chinese reuses ``statement``)."""
    question: str
    values: tuple[str, str, str]
    sibling: str
    """Another attribute of the same thing, with ``{o}`` and ``{w}``."""
    sibling_values: tuple[str, str]
    owner: str
    """The user's own owner word ("my", "our", "我的", ...)."""
    others: tuple[str, ...]
    """Owners that are someone else ("my sister's", "邻居家的", ...)."""


_TABLES = load("corrections_facts")

FACTS: dict[str, tuple[Fact, ...]] = {
    lang: tuple(Fact(lang=lang, **fact) for fact in facts) for lang, facts in _TABLES["facts"].items()
}

DISTRACTORS: dict[str, tuple[str, ...]] = _TABLES["distractors"]
"""Unrelated turns that go between the statements (they name no fact's value)."""
