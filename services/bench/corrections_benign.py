"""Benign look-alikes for the defences: legitimate content that shares surface features with attacks.

Hard negatives, in English and Chinese, in five kinds:

- ``benign_own_change``: a user changing or correcting their own preferences ("forget what I said about
  tea", "ignore my earlier request for metric units"), after stating the old one.
- ``benign_in_domain``: tool and outside content that talks about instructions inside its own domain (a
  recipe's "always preheat", a README's "ignore the linter warnings", a ticket quoting a policy).
- ``benign_retraction``: a message that retracts itself ("cancel it. Actually no, keep it").
- ``benign_agent_correction``: the agent correcting its own earlier answer, or reporting what it did.
- ``benign_unique_terms``: a user's note, a tool's output or a page that is the only memory holding the
  question's distinctive words (a code name, a ticket number, a product): what a planted trigger looks like
  from the outside.

Each case is in the corrections format (``corrections_set``): everyday turns, the look-alike (with
its source), more everyday turns, and a question whose answer is the look-alike; it is shown when a memory
holding ``expect`` is in the top 5 unflagged. Split by template: every third item of a kind and language
is in the test split. The items are in ``data/corrections_benign.json``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from hindsight.bench.corrections_facts import DISTRACTORS
from hindsight.bench.corrections_set import BASE_TIME, Case, CaseTurn, split_of
from hindsight.bench.set_data import load

FILLERS = 9
"""Everyday turns around each look-alike, at least: enough that a recall weighs ten or more candidates,
as the recall-time checks (triggers, consensus) need to say anything."""


@dataclass(frozen=True)
class Lookalike:
    """One look-alike, what comes before it, and the question its memory answers."""

    before: str
    """An earlier statement, retained first (empty: none)."""
    text: str
    question: str
    expect: str
    """What the shown memory must hold."""
    source: str
    """Where the look-alike comes from: user, agent, tool or external."""


def _lookalikes(table: dict[str, Any]) -> dict[str, tuple[Lookalike, ...]]:
    """A kind's look-alikes per language; an item's own ``source`` wins over the kind's."""
    default = {"source": table["source"]} if "source" in table else {}
    return {
        lang: tuple(Lookalike(**(default | item)) for item in items) for lang, items in table["items"].items()
    }


KINDS = {kind: _lookalikes(table) for kind, table in load("corrections_benign").items()}
"""Kind -> language -> its look-alikes (``data/corrections_benign.json``); an item's position in its list is
its template, and decides its split."""


def _case(kind: str, lang: str, index: int, item: Lookalike, rng: random.Random) -> Case:
    source = item.source
    start = BASE_TIME + timedelta(days=rng.randrange(0, 200), hours=rng.randrange(0, 9))
    fillers = rng.sample(DISTRACTORS[lang], rng.randint(FILLERS, FILLERS + 2))
    turns: list[CaseTurn] = []
    moment = start
    if item.before:
        turns.append(
            CaseTurn(item.before, "assistant" if source == "agent" else "user", moment, "s1", source)
        )
    for filler in fillers[: len(fillers) // 2]:
        moment += timedelta(minutes=rng.randint(1, 6))
        turns.append(CaseTurn(filler, "user", moment, "s1"))
    moment += timedelta(minutes=rng.randint(1, 6))
    speaker = {"user": "user", "agent": "assistant"}.get(source, source)
    turns.append(CaseTurn(item.text, speaker, moment, "s1", source))
    for filler in fillers[len(fillers) // 2 :]:
        moment += timedelta(minutes=rng.randint(1, 6))
        turns.append(CaseTurn(filler, "user", moment, "s1"))
    return Case(
        id=f"{kind}-{lang}-t{index}",
        kind=kind,
        lang=lang,
        turns=tuple(turns),
        question=item.question,
        now=moment + timedelta(hours=1),
        expect=item.expect,
        reject="",
        split=split_of(index),
        template=f"{kind}-{lang}-t{index}",
        subject=kind.removeprefix("benign_"),
    )


def generate_benign(seed: int = 31) -> list[Case]:
    """Every benign look-alike as a case (the same seed, the same turns and times)."""
    rng = random.Random(seed)
    return [
        _case(kind, lang, index, item, rng)
        for kind, items in KINDS.items()
        for lang, entries in items.items()
        for index, item in enumerate(entries)
    ]
