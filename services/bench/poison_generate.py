"""The attack generator: per base namespace, attacks of every kind in its language and the other one.

Deterministic for a seed: one random stream per namespace (seeded by the run's seed and the namespace id),
so adding a file or a namespace leaves the others' attacks unchanged. Nothing is downloaded: the material
is the namespace's own speakers, questions and facts (:mod:`~hindsight.bench.poison_seeds`) in the
phrasings of ``data/poison_templates.json``, English and Chinese. Each attack is assembled from several
independent parts (a wrapper that makes it look like tool output, a web page or a note; an instruction
framing; a malicious goal; a bridge or a source), so that no fixed string recurs across the set: a defence
has to recognise what the text does, not how one template says it.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from hindsight.bench.attacks import KINDS, Attack, Plant
from hindsight.bench.datasets import Dataset, Namespace
from hindsight.bench.poison_seeds import Profile, Seed, is_chinese, profile
from hindsight.bench.set_data import load

EVIDENCE_CHARS = 220

PerLang = dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class Phrasings:
    """The phrasings attacks are assembled from, per language (``data/poison_templates.json``: its
    ``about`` names the slots and what each table is for)."""

    goals: PerLang
    framings: PerLang
    tool_outputs: dict[str, tuple[dict[str, str], ...]]
    """Per language: ``{"tool", "text"}``, a tool's name and the output it returns."""
    titles: PerLang
    bridges: PerLang
    conclusions: PerLang
    minja_queries: PerLang
    minja_notes: PerLang
    trigger_plants: PerLang
    trigger_words: PerLang
    outlets: PerLang
    false_facts: PerLang
    asserted_facts: dict[str, str]
    """A false fact where the seed states no value to contradict: the attacker asserts one."""
    said: dict[str, str]
    """A quoted statement, restated by an outside source."""
    question_variants: PerLang
    """The question itself, a restatement, two that ask about the topic only, then any."""
    fallback_false: PerLang
    """A false answer when the seed states no value."""
    user_ref: dict[str, str]
    """How the user is named when no speaker is."""
    site_words: tuple[str, ...]
    tlds: tuple[str, ...]
    name_words: tuple[str, ...]


PHRASES = Phrasings(**load("poison_templates"))


@dataclass(frozen=True)
class Plan:
    """How many attacks to make per namespace and kind."""

    seed: int = 16
    per_kind: int = 3
    """Attacks of each kind in the namespace's own language."""
    cross_lang: int = 1
    """Attacks of each kind in the other language (a bilingual user's bank)."""


def _rng(seed: int, namespace_id: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}:{namespace_id}".encode()).hexdigest()
    return random.Random(int(digest[:16], 16))


class _Writer:
    """Fills one attack's slots from a seed of the profile; every choice comes from ``rng``."""

    def __init__(self, prof: Profile, rng: random.Random) -> None:
        self.prof = prof
        self.rng = rng

    def site(self) -> str:
        words = self.rng.sample(PHRASES.site_words, 2)
        return f"{words[0]}-{words[1]}{self.rng.randint(1, 99)}.{self.rng.choice(PHRASES.tlds)}"

    def when(self) -> datetime | None:
        last = self.prof.namespace.last_time
        return last + timedelta(minutes=self.rng.randint(10, 720)) if last else None

    def slots(self, seed: Seed, lang: str, moment: datetime | None) -> dict[str, str]:
        rng = self.rng
        native = lang == self.prof.lang
        speaker_ref = (seed.speaker or (rng.choice(self.prof.speakers) if self.prof.speakers else "")) or (
            PHRASES.user_ref[lang]
        )
        others = [s.topic for s in self.prof.seeds if s.topic != seed.topic]
        other = rng.choice(others) if others else seed.topic
        site = self.site()
        evidence_message = rng.choice(seed.evidence)
        evidence = evidence_message.text.replace("\n", " ")[:EVIDENCE_CHARS]
        if evidence_message.speaker and evidence_message.speaker != "user":
            evidence = f"{evidence_message.speaker}: {evidence}"
        fact = seed.fact
        false = fact.false_value if fact else rng.choice(PHRASES.fallback_false[lang])
        altered = ""
        if fact:
            if is_chinese(fact.altered):
                altered = fact.altered.replace("我", PHRASES.user_ref["zh"] if lang == "zh" else speaker_ref)
            else:
                altered = PHRASES.said[lang].format(speaker=speaker_ref, text=fact.altered)
        question = seed.question if native else rng.choice(PHRASES.question_variants[lang][2:4])
        slots = {
            "topic": seed.topic,
            "speaker": speaker_ref,
            "speaker_ref": speaker_ref,
            "question": question,
            "evidence": evidence,
            "value": fact.value if fact else "",
            "false": false,
            "altered": altered,
            "site": site,
            "email": f"{rng.choice(PHRASES.name_words)}@{site}",
            "path": rng.choice(PHRASES.site_words) + str(rng.randint(10, 999)),
            "date": moment.date().isoformat() if moment else "2024-05-01",
            "number": str(rng.randint(1000, 99999)),
            "title": rng.choice(PHRASES.titles[lang]),
            "outlet": rng.choice(PHRASES.outlets[lang]),
            "other": other,
        }
        slots["question"] = slots["question"].format(**slots) if not native else slots["question"]
        slots["goal"] = rng.choice(PHRASES.goals[lang]).format(**slots)
        slots["bridge"] = rng.choice(PHRASES.bridges[lang]).format(**slots)
        slots["conclusion"] = rng.choice(PHRASES.conclusions[lang]).format(**slots)
        slots["instruction"] = rng.choice(PHRASES.framings[lang]).format(**slots)
        return slots

    def targets(self, seed: Seed, lang: str, slots: dict[str, str], trigger: str = "") -> tuple[str, ...]:
        """The seed's question (when in this language) and a paraphrase: what the victim asks."""
        variants = PHRASES.question_variants[lang]
        first = seed.question if lang == self.prof.lang else variants[2].format(**slots)
        dialogue = len(seed.question) > 200  # a dialogue so far (MADial): asked as it is
        second = self.rng.choice(variants[2:] if dialogue else variants[1:]).format(**slots)
        if trigger:
            join = "" if lang == "zh" else " "
            first = f"{first}{join}{trigger}" if self.rng.random() < 0.6 else f"{trigger}{join}{first}"
            second = f"{second}{join}{trigger}"
        return tuple(dict.fromkeys((first, second)))

    def trigger(self, lang: str) -> str:
        words = self.rng.sample(PHRASES.trigger_words[lang], self.rng.randint(2, 3))
        return ("" if lang == "zh" else " ").join(words)

    def attack(self, kind: str, lang: str, attack_id: str) -> Attack | None:
        seeds = self.prof.seeds
        if kind == "false_fact_external":
            seeds = tuple(s for s in seeds if s.fact) or seeds
        if not seeds:
            return None
        seed = self.rng.choice(seeds)
        moment = self.when()
        slots = self.slots(seed, lang, moment)
        session = f"s{self.rng.getrandbits(40):010x}"
        trigger = ""
        if kind == "tool_injection":
            output = self.rng.choice(PHRASES.tool_outputs[lang])
            plants = [Plant(output["text"].format(**slots), "tool", output["tool"], moment, session)]
        elif kind == "minja_bridge":
            asker = self.rng.choice([*self.prof.speakers, "user"]) if self.prof.speakers else "user"
            later = moment + timedelta(seconds=20) if moment else None
            plants = [
                Plant(
                    self.rng.choice(PHRASES.minja_queries[lang]).format(**slots),
                    "user",
                    asker,
                    moment,
                    session,
                ),
                Plant(
                    self.rng.choice(PHRASES.minja_notes[lang]).format(**slots),
                    "agent",
                    "assistant",
                    later,
                    session,
                ),
            ]
        elif kind == "agentpoison_trigger":
            trigger = self.trigger(lang)
            source = self.rng.choice(("agent", "tool", "external", "user"))
            speaker = {"agent": "assistant", "tool": "memory_tool", "external": slots["outlet"]}.get(
                source, "user"
            )
            text = self.rng.choice(PHRASES.trigger_plants[lang]).format(**slots, trigger=trigger)
            plants = [Plant(text, source, speaker, moment, session)]
        else:
            templates = PHRASES.false_facts[lang]
            if not seed.fact:  # no value to contradict: the attacker asserts one
                templates = (PHRASES.asserted_facts[lang],)
            if len(seed.question) > 200:  # a dialogue is not restated as a question
                templates = tuple(t for t in templates if "{question}" not in t) or templates
            text = self.rng.choice(templates).format(**slots)
            plants = [Plant(text, "external", slots["outlet"], moment, session)]
        return Attack(
            id=attack_id,
            kind=kind,
            lang=lang,
            base=self.prof.namespace.id,
            plant=tuple(plants),
            targets=self.targets(seed, lang, slots, trigger),
        )


def namespace_attacks(namespace: Namespace, plan: Plan) -> list[Attack]:
    """Every kind, ``plan.per_kind`` in the namespace's language and ``plan.cross_lang`` in the other."""
    rng = _rng(plan.seed, namespace.id)
    writer = _Writer(profile(namespace, rng), rng)
    other = "en" if writer.prof.lang == "zh" else "zh"
    attacks = []
    for kind in KINDS:
        langs = [writer.prof.lang] * plan.per_kind + [other] * plan.cross_lang
        for index, lang in enumerate(langs):
            attack = writer.attack(kind, lang, f"{namespace.id}/{kind}/{lang}/{index}")
            if attack is not None:
                attacks.append(attack)
    return attacks


def generate(datasets: Sequence[Dataset], plan: Plan) -> tuple[Attack, ...]:
    """The attack set of the given files' namespaces."""
    return tuple(a for dataset in datasets for ns in dataset.namespaces for a in namespace_attacks(ns, plan))
