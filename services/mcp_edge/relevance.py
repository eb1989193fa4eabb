"""Scores that mean relevance: one calibrated 0..1 scale for every layer, the floor, and lessons first.

Fusion orders memories by how the layers ranked them; its scores say where a memory stood, not whether
it is about the request, so every layer's best guess used to look relevant. Each candidate therefore also
gets a relevance between 0 and 1, a logistic of four pieces of evidence:

- **meaning**: its cosine similarity to the query, as the semantic layer found it. A memory that only a
  keyword list returned (episodic, working memory, the entity channel) is taken at the lowest cosine the
  semantic layer returned: it was not among the closest by meaning, so one shared word ("Suggest a board
  game" and "the quarterly board report") cannot make it look as relevant as a memory both lists agree on;
- **words**: the share of the query's evidence terms (:func:`~hindsight.runtime.text.evidence_terms`:
  stemmed English words, Chinese bigrams; single Chinese characters say too little) that its text holds,
  best over the query and its rewrites;
- **what the bank holds near the request**: the tenth-best cosine among the semantic layer's hits. A
  question about the people and events a bank is about has many memories close to it, and the turns
  around its answer are useful context; an everyday request against a small bank of unrelated facts has
  none, and there a memory must stand on its own evidence;
- **its lead**, for the one memory that scores best on the evidence above: how far ahead of the second it
  is. A question answered by meaning alone ("Which dog did she get?" against "I adopted a golden
  retriever puppy") may have a modest cosine, but one memory clearly ahead of the rest is the answer.
  The lead can only ever admit that one memory.

A correction ("Actually, it's staging-2") is about what it corrects, whatever its own words: it is at
least as relevant as the statement it replaced, so the two come back together.

A lesson's relevance is the reflect layer's own calibration (:mod:`hindsight.reflect.matching`). A
memory's relevance is the best over the layers that returned it, and is the ``score`` a recall reports;
0.5 is the default floor. The coefficients were chosen on dev data only: the three dev files of the
retrieval bench (every query: the floor may not cost recall@10) and the dev split of the lessons bench
(unrelated requests, questions about the bank's everyday facts), see docs/retrieval.md.

The floor (``HINDSIGHT_RELEVANCE_FLOOR``, and a recall's ``min_score`` when higher) decides what enters
the result: a request with nothing above it gets nothing, and by default every memory must clear it on
its own. ``HINDSIGHT_RELEVANCE_SUPPORT`` below the floor lets, once a memory cleared the floor, others
down to that level in as its context. Lessons above the floor are placed first, before the cut to
``top_k``, at most ``HINDSIGHT_MAX_LESSONS`` of them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from hindsight.mcp_edge.domain import Candidate, LayerName, RecalledMemory
from hindsight.runtime.text import evidence_terms

MEANING = 6.0
WORDS = 6.0
DENSITY = 12.0
LEAD = 9.0
INTERCEPT = -2.82
"""Per unit of cosine, of term share, of the tenth-best cosine and of the lead. The direction and the cut
(0.5 at ``cosine + share + 2 x density + 1.5 x lead = 0.47``) were chosen on dev data: the retrieval
bench's dev files lose at most 0.002 recall@10 to the floor, unrelated requests in the lessons bench's
dev banks return as little as that allows. The slope (6 per unit) keeps scores apart: the one a logistic
fit of gold against unrelated memories gives (13) put most answers at 1.0000, so that a ``min_score``
could not tell them apart.
``LEAD`` (1.5 times the others) is about the smallest that lets a memory clearly ahead of the rest by
meaning alone (cosine 0.32, the second 0.19) clear the floor; the dev figures do not move with it, as it
adds at most one memory to an answer."""
CORRECTION_DEPTH = 3
"""How many corrections in a row pass on the relevance of what they corrected."""
DENSITY_RANK = 10
"""Which best cosine tells how much the bank holds near the request (fewer hits: none)."""


@dataclass(frozen=True)
class Evidence:
    """What says one memory is about a request."""

    cosine: float
    """Its cosine to the query, or the lowest the semantic layer returned when that layer did not."""
    share: float
    """Share of the query's evidence terms its text holds (best phrasing)."""
    density: float
    """The request's tenth-best cosine in the bank (0 with fewer semantic hits)."""
    lead: float = 0.0
    """For the memory with the best evidence: how far ahead of the best other memory (one not drawn from
    the same turn, nor a reply read with it) it is, in units of cosine; 0 for every other memory."""


def _logistic(value: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, value))))


def memory_relevance(evidence: Evidence) -> float:
    """Calibrated relevance (0..1) of a memory that is not a lesson."""
    return _logistic(_weight(evidence) + LEAD * evidence.lead + INTERCEPT)


def _weight(evidence: Evidence) -> float:
    """The evidence every memory has (all but the lead)."""
    return MEANING * evidence.cosine + WORDS * evidence.share + DENSITY * evidence.density


def term_share(wanted: frozenset[str], text: str) -> float:
    """Share of the query's distinct evidence terms (``wanted``) that ``text`` holds."""
    if not wanted:
        return 0.0
    return len(wanted & evidence_terms(text)) / len(wanted)


def _cosine(candidate: Candidate) -> float | None:
    """The semantic layer's cosine for its own hits (None for any other list)."""
    if candidate.layer is LayerName.SEMANTIC and not candidate.channel:
        return candidate.similarity or candidate.layer_score  # a layer older than ``similarity``
    return None


def knows_meaning(lists: Iterable[Sequence[Candidate]]) -> bool:
    """Whether any list holds the semantic layer's cosines (else meaning is measured at the edge)."""
    return any(_cosine(candidate) is not None for candidates in lists for candidate in candidates)


def relevance_of(
    queries: Sequence[str],
    lists: Iterable[Sequence[Candidate]],
    measured: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Per record id, its relevance (``queries``: the query and its rewrites; ``lists``: every list a
    layer or channel returned). A lesson keeps the reflect layer's score; any other memory is scored
    from its evidence (:class:`Evidence`), its share taken at the best of its texts; the best of them
    gets its lead over the second. ``measured``: cosines measured at the edge (:mod:`.meaning`), used
    when no list holds the semantic layer's."""
    lists = [list(candidates) for candidates in lists]
    wanted = [evidence_terms(query) for query in queries]
    cosines: dict[str, float] = {}
    for candidates in lists:
        for candidate in candidates:
            cosine = _cosine(candidate)
            if cosine is not None:
                cosines[candidate.id] = max(cosine, cosines.get(candidate.id, cosine))
    if not cosines and measured:
        cosines = dict(measured)
    ranked = sorted(cosines.values(), reverse=True)
    lowest = ranked[-1] if ranked else 0.0
    density = ranked[DENSITY_RANK - 1] if len(ranked) >= DENSITY_RANK else 0.0
    lessons: dict[str, float] = {}
    evidence: dict[str, Evidence] = {}
    sources: dict[str, set[str]] = {}
    replaced: dict[str, set[str]] = {}
    for candidates in lists:
        for candidate in candidates:
            if candidate.layer is LayerName.REFLECT:
                score = min(1.0, max(0.0, candidate.layer_score))
                lessons[candidate.id] = max(score, lessons.get(candidate.id, score))
                continue
            drawn = sources.setdefault(candidate.id, {candidate.id})
            drawn.update(candidate.meta.source_turn_ids)
            if candidate.replies_to:  # its vector reads that turn: found by the same words
                drawn.add(candidate.replies_to)
            replaced.setdefault(candidate.id, set()).update(candidate.supersedes)
            if candidate.successor:
                replaced.setdefault(candidate.successor, set()).add(candidate.id)
            share = max((term_share(words, candidate.text) for words in wanted), default=0.0)
            found = Evidence(cosines.get(candidate.id, lowest), share, density)
            if candidate.id not in evidence or _weight(found) > _weight(evidence[candidate.id]):
                evidence[candidate.id] = found
    ranked_ids = sorted(evidence, key=lambda rid: -_weight(evidence[rid]))
    if ranked_ids:  # the second is the best other memory: not one drawn from the same turn (a fact of
        # it, or a reply whose vector reads it)
        leader = ranked_ids[0]
        others = [rid for rid in ranked_ids[1:] if not sources[rid] & sources[leader]]
        if others:
            lead = (_weight(evidence[leader]) - _weight(evidence[others[0]])) / MEANING
            evidence[leader] = dataclasses.replace(evidence[leader], lead=lead)
    scores = {rid: memory_relevance(item) for rid, item in evidence.items()}
    for _ in range(CORRECTION_DEPTH):  # a correction is about what it corrects: at least as relevant
        for rid, earlier in replaced.items():
            inherited = max((scores.get(old, 0.0) for old in earlier), default=0.0)
            if rid in scores and inherited > scores[rid]:
                scores[rid] = inherited
    return {**scores, **lessons}


@dataclass(frozen=True)
class Cut:
    """How a recall's result is cut: the floor, the support level, ``top_k`` and the lessons."""

    floor: float
    support: float
    top_k: int
    max_lessons: int
    lessons_first: bool = True


def select(
    head: Sequence[RecalledMemory],
    pool: Sequence[RecalledMemory],
    relevance: dict[str, float],
    cut: Cut,
) -> list[RecalledMemory]:
    """The result: lessons of ``pool`` (the whole fused list) above the floor first, then ``head`` (the
    fused and reranked head, in its order) down to the floor, or to the support level once a memory
    other than a lesson cleared the floor; at most ``top_k``. Every memory's score becomes its relevance."""

    def scored(memory: RecalledMemory) -> RecalledMemory:
        return dataclasses.replace(memory, score=round(relevance.get(memory.id, 0.0), 4))

    lessons: list[RecalledMemory] = []
    if cut.lessons_first and cut.max_lessons > 0:
        ranked = sorted(
            (scored(m) for m in pool if m.kind == "lesson"), key=lambda m: -m.score
        )  # stable: equal relevance keeps the fused order
        lessons = [m for m in ranked if m.score >= cut.floor][: cut.max_lessons]
    placed = {m.id for m in lessons}
    rest = [scored(m) for m in head if m.id not in placed]
    cleared = any(m.score >= cut.floor for m in rest if m.kind != "lesson")  # a lesson vouches for no other
    level = min(cut.floor, cut.support) if cleared else cut.floor
    rest = [m for m in rest if m.score >= (cut.floor if m.kind == "lesson" else level)]
    return (lessons + rest)[: cut.top_k]
