"""Corrections found by meaning: a retained turn supersedes the earlier turns that answer the same question.

The statement parser (:mod:`hindsight.runtime.statements`) needs "my X is Y"; most ways people state a
thing ("Our rent is due on the 5th", "公司年会在三亚办") fit no attribute name. This step needs none:

1. **candidates**: the bank's current turns nearest the new one by vector (at most :data:`CANDIDATES`),
   plus the earlier turns of the same write, kept when they share a keyword with it;
2. **decision** (:func:`judge`): the two compared with their values masked (:mod:`.same_question`), said
   by the same person (:mod:`.speakers`), the new one an assertion of a current state (:mod:`.modality`),
   strong enough (a cue lowers the bar; it is not needed); said later, with no less trust, and never a
   tool's or a page's value over a trusted one.

Runs inside the bank's lock, in the write path of each Upsert (one vector search per turn).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hindsight.runtime.modality import (
    asserts_now,
    both_told_events,
    past_against_present,
    past_event,
    why_not_current,
)
from hindsight.runtime.records import TimeRange
from hindsight.runtime.statements import has_cue
from hindsight.semantic.llm_adjudge import ASKED_PER_TURN, Adjudicator
from hindsight.semantic.records import EmbeddedRecord, RecordKind, SearchOptions, SemanticRecord
from hindsight.semantic.same_question import Match, keywords, match, sentences
from hindsight.semantic.speakers import SpeakerPolicy
from hindsight.semantic.store import VectorStore
from hindsight.semantic.trust import may_replace

CANDIDATES = 8
"""Earlier turns read per retained turn (nearest by vector): bounds the added retain latency."""
MIN_KEYWORDS = 1
"""Words (or Chinese characters) a candidate must share with the turn; the frame comparison does the rest."""
MAX_REPLACED = 3
"""Earlier turns one turn supersedes at most."""
MIN_SIMILARITY = 0.2
"""Cosine below which an earlier turn is not a candidate."""
STRENGTH = 0.5
"""How much of the two frames must be shared for a statement without a cue to supersede."""
CUED_STRENGTH = 0.4
"""The same with a correction cue ("actually", "改成"): the speaker says an earlier value is replaced."""
MULTI_VALUED_WORDS = frozenset(
    (
        "like love enjoy hate dislike have own visit visited went met bought read watched play collect "
        "also too another"
    ).split()
)
"""Frames about things that hold several values at once ("I like jazz" does not end "I like rock")."""
_ZH_MULTI = ("喜欢", "爱", "讨厌", "去过", "买了", "看了", "还有", "也")


@dataclass(frozen=True)
class Verdict:
    """Whether a new turn supersedes an earlier one, and why."""

    supersedes: bool
    reason: str
    found: Match | None = None


def judge(old: SemanticRecord, new: SemanticRecord) -> Verdict:
    """Whether ``new``'s text gives a new value to the question ``old``'s text answered (text only: the
    caller checks speakers, times and trust)."""
    found = match(old.text, new.text)
    if found is None:
        return Verdict(False, "not the same question with another value")
    cue = has_cue(new.text)
    if found.strength < (CUED_STRENGTH if cue else STRENGTH):
        return Verdict(False, f"weak match ({found.strength:.2f})", found)
    if why := why_not_current(new.text, found.new_clause):
        return Verdict(False, why, found)
    if past_against_present(found.old_clause, found.new_clause):
        return Verdict(False, "another time", found)
    if why_not_current(old.text, found.old_clause) == "question":
        return Verdict(False, "the earlier turn asked, it asserted nothing", found)
    if not cue and past_event(found.new_clause):
        return Verdict(False, "an event told in the past, not a state", found)
    if not cue and both_told_events(found.old_clause, found.new_clause):
        return Verdict(False, "two events told in the past, not one state changing", found)
    words = set(found.new_clause.casefold().split())
    if not cue and (words & MULTI_VALUED_WORDS or any(w in found.new_clause for w in _ZH_MULTI)):
        return Verdict(False, "a value among several", found)
    return Verdict(True, "same question, new value", found)


@dataclass
class Finder:
    """Candidates and decisions for one write (see the module docstring)."""

    speakers: SpeakerPolicy
    guarded: bool = True
    adjudicator: Adjudicator | None = None
    """The LLM's judgement, when configured and asked for (:mod:`.llm_adjudge`); else the rules alone."""
    adjudicator_limit: int = ASKED_PER_TURN

    def eligible(self, bank_id: str, new: SemanticRecord, old: SemanticRecord) -> bool:
        """Said earlier by the same person, current, no more trusted, and replaceable by ``new``'s source."""
        if old.id == new.id or old.kind is not RecordKind.TURN or not old.current:
            return False
        if new.meta.time and old.meta.time and old.meta.time > new.meta.time:
            return False
        if int(new.meta.trust) < int(old.meta.trust):
            return False
        if self.guarded and not may_replace(new.meta.source, old.meta.source):
            return False
        return self.speakers.same_person(bank_id, new, old)

    @staticmethod
    def asserts_something(record: SemanticRecord) -> bool:
        """Whether any sentence of the turn asserts what holds now (else it supersedes nothing: no search)."""
        return any(asserts_now(sentence) for sentence in sentences(record.text))

    async def nearest(
        self, store: VectorStore, bank_id: str, items: Sequence[EmbeddedRecord]
    ) -> dict[str, list[tuple[float, SemanticRecord]]]:
        """Per turn that asserts something, the nearest current turns stored (one batched search)."""
        asking = [item for item in items if self.asserts_something(item.record)]
        if not asking:
            return {}
        options = SearchOptions(kinds=frozenset({RecordKind.TURN}))
        found = await store.search_many(bank_id, [i.vector for i in asking], CANDIDATES, TimeRange(), options)
        return {
            item.record.id: [(hit.score, hit.record) for hit in hits if hit.score >= MIN_SIMILARITY]
            for item, hits in zip(asking, found, strict=True)
        }

    def candidates(
        self,
        item: EmbeddedRecord,
        stored: Sequence[tuple[float, SemanticRecord]],
        earlier: Sequence[EmbeddedRecord],
    ) -> list[SemanticRecord]:
        """The nearest of the stored hits and of the earlier turns of this write, at most
        :data:`CANDIDATES`, that share words with the turn (the keyword side of the candidates; with an
        LLM to judge, paraphrases sharing none stay in)."""
        least = 0 if self.adjudicator is not None else MIN_KEYWORDS
        scored = list(stored)
        if earlier:
            matrix = np.asarray([held.vector for held in earlier], dtype=np.float32)
            scores = matrix @ np.asarray(item.vector, dtype=np.float32)
            scored += [
                (float(score), held.record)
                for score, held in zip(scores, earlier, strict=True)
                if score >= MIN_SIMILARITY
            ]
        scored.sort(key=lambda pair: -pair[0])
        words = keywords(item.record.text)
        seen: set[str] = set()
        found: list[SemanticRecord] = []
        for _, record in scored:
            if record.id in seen or record.id == item.record.id:
                continue
            seen.add(record.id)
            if len(words & keywords(record.text)) >= least:
                found.append(record)
            if len(found) == CANDIDATES:
                break
        return found

    def replaced(
        self, bank_id: str, new: SemanticRecord, candidates: Sequence[SemanticRecord]
    ) -> list[SemanticRecord]:
        """The candidates ``new`` supersedes by the rules (at most the few strongest)."""
        chosen: list[tuple[float, SemanticRecord]] = []
        for old in candidates:
            if not self.eligible(bank_id, new, old):
                continue
            verdict = judge(old, new)
            if verdict.supersedes and verdict.found is not None:
                chosen.append((verdict.found.strength, old))
        chosen.sort(key=lambda pair: -pair[0])
        return [old for _, old in chosen[:MAX_REPLACED]]

    async def adjudged(
        self, bank_id: str, new: SemanticRecord, candidates: Sequence[SemanticRecord]
    ) -> list[SemanticRecord]:
        """The candidates ``new`` supersedes: the LLM judges the nearest eligible ones (when the turn
        asserts something now); where it gives no answer, the rules decide."""
        if self.adjudicator is None or why_not_current(new.text):
            return self.replaced(bank_id, new, candidates)
        by_rules = {old.id for old in self.replaced(bank_id, new, candidates)}
        eligible = [old for old in candidates if self.eligible(bank_id, new, old)]
        asked = eligible[: self.adjudicator_limit]
        answers = [await self.adjudicator.supersedes(old.text, new.text) for old in asked]
        chosen = [
            old
            for old, answer in zip(asked, answers, strict=True)
            if answer or (answer is None and old.id in by_rules)
        ]
        chosen += [old for old in eligible[len(asked) :] if old.id in by_rules]
        return chosen[:MAX_REPLACED]
