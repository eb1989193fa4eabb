"""Matching lessons to a task: by what the task is about, not only by its words.

A request for a similar task rarely repeats the episode's words ("renew the TLS certificate on the
payments gateway" against "the certificate of the web shop expired"). So a lesson is matched on several
facets, each embedded on its own: the kind of task (its topic), the situation, the lesson itself, and
what was done and what happened. The query's vector is compared with each facet; the mean cosine over
the facets (the task must be close on all of them, not on one), with the share of the query's evidence
terms the lesson holds (:func:`~hindsight.runtime.text.evidence_terms`: stemmed words, Chinese bigrams;
a shared single character such as 周 or 要 is no evidence), goes through a logistic calibration into a
relevance between 0 and 1: roughly the chance that the lesson is about this task, with equal priors.

The coefficients were fitted on the dev split of ``hindsight bench lessons`` (seed 30) only, with the
classes balanced, so 0.5 (the edge's default relevance floor) means even odds. The best single facet's
cosine, the share of single characters and an IDF-weighted share were measured there too and left out:
none helped on dev. Without an inference service, relevance comes from the term share alone (its own
fit on dev rows).
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from hindsight.reflect.domain import Lesson
from hindsight.runtime.text import evidence_terms

MEAN_COSINE = 44.78
TERM_SHARE = 12.86
INTERCEPT = -7.345
"""Fitted on the dev split: every (request, lesson) pair, the lessons as the rules derive them from the
split's episodes; a pair is positive when the lesson comes from the request's episode (classes balanced)."""
TERMS_ONLY_SHARE = 15.833
TERMS_ONLY_INTERCEPT = -0.89
"""The same fit with the term share alone: the calibration without an inference service."""
CACHE_ENTRIES = 20_000
"""Facet vectors kept (about 2 KiB each for a 512-d model)."""


class FacetEmbedder(Protocol):
    """Embeds texts (L2-normalised vectors)."""

    async def embed(self, bank_id: str, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text."""
        ...


def facets(lesson: Lesson) -> tuple[str, ...]:
    """What a lesson is matched on: its task kind, situation, the lesson, and what was done and happened."""
    done = " ".join(part for part in (lesson.situation, lesson.action, lesson.outcome) if part)
    found = (lesson.topic, lesson.situation, lesson.lesson, done)
    return tuple(dict.fromkeys(text.strip() for text in found if text and text.strip()))


def term_share(query: str, lesson: Lesson) -> float:
    """Share of the query's distinct evidence terms that the lesson's facets hold (0..1)."""
    wanted = evidence_terms(query)
    if not wanted:
        return 0.0
    return len(wanted & evidence_terms(" ".join(facets(lesson)))) / len(wanted)


def _logistic(value: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, value))))


def calibrated(mean: float, share: float) -> float:
    """Relevance 0..1 from the mean facet cosine and the term share."""
    return _logistic(MEAN_COSINE * mean + TERM_SHARE * share + INTERCEPT)


def calibrated_terms_only(share: float) -> float:
    """Relevance 0..1 from the term share alone (no vectors)."""
    return _logistic(TERMS_ONLY_SHARE * share + TERMS_ONLY_INTERCEPT)


@dataclass
class LessonMatcher:
    """Scores lessons against a query by their facets' vectors; facet vectors are cached by text."""

    embedder: FacetEmbedder
    capacity: int = CACHE_ENTRIES

    def __post_init__(self) -> None:
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    async def _vectors(self, bank_id: str, texts: Sequence[str]) -> dict[str, np.ndarray]:
        keys = {text: hashlib.sha256(text.encode()).hexdigest() for text in texts}
        found: dict[str, np.ndarray] = {}
        for text in texts:  # taken before anything is added: an insert below may evict it
            if keys[text] in self._cache:
                self._cache.move_to_end(keys[text])
                found[text] = self._cache[keys[text]]
        missing = [text for text in dict.fromkeys(texts) if text not in found]
        if missing:
            for text, vector in zip(missing, await self.embedder.embed(bank_id, missing), strict=True):
                found[text] = np.asarray(vector, dtype=np.float32)
                self._cache[keys[text]] = found[text]
                if len(self._cache) > self.capacity:
                    self._cache.popitem(last=False)
        return found

    async def relevance(
        self, bank_id: str, queries: Sequence[str], lessons: Sequence[Lesson]
    ) -> dict[str, float]:
        """Per lesson id, its best relevance over ``queries`` (the query and its rewrites)."""
        if not lessons or not queries:
            return {}
        texts = {lesson.id: facets(lesson) for lesson in lessons}
        vectors = await self._vectors(bank_id, [*queries, *(t for ts in texts.values() for t in ts)])
        scores: dict[str, float] = {}
        for lesson in lessons:
            matrix = np.stack([vectors[text] for text in texts[lesson.id]]) if texts[lesson.id] else None
            best = 0.0
            for query in queries:
                share = term_share(query, lesson)
                if matrix is None:
                    value = calibrated_terms_only(share)
                else:
                    value = calibrated(float((matrix @ vectors[query]).mean()), share)
                best = max(best, value)
            scores[lesson.id] = best
        return scores


def terms_only_relevance(queries: Sequence[str], lessons: Sequence[Lesson]) -> dict[str, float]:
    """Per lesson id, its relevance from the term share alone (best over ``queries``)."""
    return {
        lesson.id: max((calibrated_terms_only(term_share(query, lesson)) for query in queries), default=0.0)
        for lesson in lessons
    }
