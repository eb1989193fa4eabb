"""The lessons bench's generated set: failed episodes with their lessons, and the requests that should
(or should not) bring a lesson back.

Each episode template holds what was done, what went wrong and the lesson, in one domain and one language,
plus several other ways to name the same kind of task (other words) and other entities (another table,
site or client). A similar-task request fills a request template (a plan, a question or a complaint)
with one of those phrasings and one of the other entities; an unrelated request is an everyday question,
or an everyday task asked with the same request templates. Everyday facts go into the same bank as
distractors, and each is asked about in other words (the floor must let a real question through).

Dev and test are split by domain AND by request template (and the unrelated tasks and fact questions
differ between them): the test split's domains and templates are never used to tune anything.
Everything is drawn from ``random.Random(seed)``: the same seed, the same set. The episodes, request
templates, everyday tasks, facts and questions are in ``data/lessons_set.json``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from hindsight.bench.set_data import load

SPLITS = ("dev", "test")
DEV_DOMAINS = frozenset({"software", "travel", "events", "household"})
"""Domains of the dev split; the others (operations, purchasing, writing) are the test split's."""


@dataclass(frozen=True)
class EpisodeTemplate:
    """One failed task, and other ways to name a task of its kind."""

    domain: str
    lang: str
    task_type: str
    situation: str
    action: str
    outcome: str
    lesson: str
    tools: tuple[str, ...]
    entity: str
    """The entity of the episode itself (``{e}`` in its texts)."""
    others: tuple[str, ...]
    """Other entities a later request names instead."""
    tasks: tuple[str, ...]
    """The same kind of task in other words, with ``{e}`` for the entity."""


_TABLES = load("lessons_set")

EPISODES: tuple[EpisodeTemplate, ...] = tuple(EpisodeTemplate(**episode) for episode in _TABLES["episodes"])
"""The failed tasks (``data/lessons_set.json``); a request names its episode by its index here."""

REQUEST_TEMPLATES: dict[str, dict[str, tuple[str, ...]]] = _TABLES["request_templates"]
"""How a similar task is asked (a plan, a question, a complaint); dev and test use different ones."""

UNRELATED: dict[str, dict[str, tuple[str, ...]]] = _TABLES["unrelated"]
"""Everyday questions no lesson is about."""

UNRELATED_TASKS: dict[str, dict[str, tuple[str, ...]]] = _TABLES["unrelated_tasks"]
"""Everyday tasks no lesson is about, asked with the split's request templates (so the templates' own
words, "plan", "advice", "my manager", are no cue): a lesson must come for the task, not the wording."""

DISTRACTORS: dict[str, tuple[str, ...]] = {
    lang: tuple(fact["fact"] for fact in facts) for lang, facts in _TABLES["facts"].items()
}
"""Everyday facts retained into every bank, in the bank's language."""

FACT_QUESTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    split: {lang: tuple(fact[split] for fact in facts) for lang, facts in _TABLES["facts"].items()}
    for split in SPLITS
}
"""A question about each everyday fact (in the order of :data:`DISTRACTORS`), in other words; dev and test
ask differently. A relevance floor that silences unrelated requests must still let these through."""


@dataclass(frozen=True)
class Request:
    """One request to recall with; ``episode`` is the index of the episode whose lesson it needs, or -1."""

    text: str
    episode: int
    template: int
    fact: str = ""
    """For a question about an everyday fact: that fact (it must come back); empty otherwise."""


@dataclass(frozen=True)
class Bank:
    """One bank of the set: its episodes (indexes into :data:`EPISODES`), distractors and requests."""

    name: str
    split: str
    lang: str
    episodes: tuple[int, ...]
    distractors: tuple[str, ...]
    similar: tuple[Request, ...]
    unrelated: tuple[Request, ...]
    facts: tuple[Request, ...] = ()
    """Questions about the bank's everyday facts."""


def split_of(template: EpisodeTemplate) -> str:
    """Which split an episode belongs to: by its domain."""
    return "dev" if template.domain in DEV_DOMAINS else "test"


def episode_texts(template: EpisodeTemplate) -> dict[str, str]:
    """The episode's fields with its own entity filled in."""
    fill = template.entity
    return {
        "situation": template.situation.format(e=fill),
        "action": template.action.format(e=fill),
        "outcome": template.outcome.format(e=fill),
        "lesson": template.lesson.format(e=fill),
    }


def generate(seed: int, per_episode: int = 3, distractors: int = 15) -> tuple[Bank, ...]:
    """One bank per split and language; ``per_episode`` similar requests per episode."""
    rng = random.Random(seed)
    banks = []
    for split in SPLITS:
        for lang in ("en", "zh"):
            chosen = tuple(i for i, t in enumerate(EPISODES) if split_of(t) == split and t.lang == lang)
            templates = REQUEST_TEMPLATES[split][lang]
            similar = []
            for index in chosen:
                template = EPISODES[index]
                pairs = [(t, f) for t in range(len(templates)) for f in range(len(template.tasks))]
                rng.shuffle(pairs)
                for form, task in pairs[:per_episode]:
                    entity = rng.choice(template.others)
                    text = templates[form].format(t=template.tasks[task].format(e=entity))
                    similar.append(Request(text, index, form))
            asked = random.Random(f"{seed}-{split}-{lang}-unrelated")  # the similar requests stay as before
            unrelated = (
                *(Request(text, -1, -1) for text in UNRELATED[split][lang]),
                *(
                    Request(templates[form].format(t=task), -1, form)
                    for task in UNRELATED_TASKS[split][lang]
                    for form in (asked.randrange(len(templates)),)
                ),
            )
            facts = list(DISTRACTORS[lang])
            rng.shuffle(facts)
            kept = facts[:distractors]
            questions = tuple(
                Request(question, -1, -1, fact)
                for fact, question in zip(DISTRACTORS[lang], FACT_QUESTIONS[split][lang], strict=True)
                if fact in kept
            )
            banks.append(
                Bank(
                    f"{split}-{lang}",
                    split,
                    lang,
                    chosen,
                    tuple(kept),
                    tuple(similar),
                    unrelated,
                    questions,
                )
            )
    return tuple(banks)
