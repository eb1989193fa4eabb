"""A request about the current state of the asker's own things is answered by an assertion of it first.

A bank often holds look-alikes of a statement: a later question about it ("is my favourite opera Tosca
now?"), a hypothetical, a plan called off, a story about another time, or someone else's value ("my
brother's favourite opera is Tosca"). They share the statement's words and are newer, so recency and
term overlap can rank them above it, though none of them says what holds now. The shared modality reading
(:mod:`hindsight.runtime.modality`) tells them apart. A memory that speaks of the same thing but holds no
value of the kind the request asks for ("What time is our stand-up?" against "our stand-up happens in the
kitchen area"; :mod:`hindsight.runtime.answer_kind`) does not answer either.

Such a memory yields its place to a later candidate of the returned head (that one moves up to it; what
lies between keeps its order) only when that one is an assertion about as relevant to the request: its
calibrated relevance (the score a recall reports, the same scale for every layer) is at least
``LOOK_ALIKE_YIELD`` of the look-alike's, or it is relevant by itself (:data:`ANSWER_RELEVANCE`) and speaks
of a subject the look-alike speaks of. Fused scores say where a memory stood in each layer's list, not how
well it answers: the first of two near-equal hits can score three times the second. The head's
membership never changes (only order within ``top_k``), so what a recall returns stays the same set; a
request about another time, a hypothetical or someone else's value is left alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hindsight.mcp_edge.authority import is_subject_term, sequence
from hindsight.mcp_edge.domain import RecalledMemory
from hindsight.runtime.answer_kind import asked_kind, holds_kind
from hindsight.runtime.modality import asks_current_state, look_alike

LOOK_ALIKE_YIELD = 0.9
"""How close (share of its relevance) an assertion must come for a look-alike above it to yield its place."""
ANSWER_RELEVANCE = 0.5
"""Relevance at which an assertion that shares a subject word with the look-alike takes its place however
close the look-alike's relevance is: a question repeats the request's form ("Do you think my allergy is to
peanuts?" for "What am I allergic to?"), so it can be far more similar to it than the answer it doubts."""


def _subject(text: str) -> frozenset[str]:
    return frozenset(t for t in sequence(text) if not t.isdigit() and is_subject_term(t))


def _answers(memory: RecalledMemory, query: str, kind: str) -> bool:
    """Lessons always stand; a memory answers when it is no look-alike and holds a value of the kind asked."""
    if memory.kind == "lesson":
        return True
    return not look_alike(query, memory.text) and holds_kind(memory.text, kind, query)


def prefer_assertions(
    fused: Sequence[RecalledMemory],
    query: str,
    top_k: int,
    ratio: float = LOOK_ALIKE_YIELD,
    relevance: Mapping[str, float] | None = None,
) -> list[RecalledMemory]:
    """``fused`` with each look-alike of its first ``top_k`` giving its place to the first later assertion
    whose relevance (``relevance`` by id; a memory's score where it has none) is at least ``ratio`` of its
    own, or at least :data:`ANSWER_RELEVANCE` with a subject word of the look-alike (see the module
    docstring), and only from the look-alike's own bank; unchanged when the request does not ask about the
    current state, or ``ratio`` is above 1 (the signal is off)."""
    if top_k <= 1 or ratio > 1.0 or not query.strip() or not asks_current_state(query):
        return list(fused)
    head, rest = list(fused[:top_k]), list(fused[top_k:])
    kind = asked_kind(query)
    marks = {m.id: not _answers(m, query, kind) for m in head}
    if not any(marks.values()) or all(marks.values()):
        return head + rest

    def score(memory: RecalledMemory) -> float:
        return relevance.get(memory.id, memory.score) if relevance is not None else memory.score

    def close(answer: RecalledMemory, look: RecalledMemory) -> bool:
        if answer.bank_id != look.bank_id:  # across banks the caller's bank weights keep the order
            return False
        if score(answer) >= ratio * score(look):
            return True
        return score(answer) >= ANSWER_RELEVANCE and bool(_subject(answer.text) & _subject(look.text))

    ordered: list[RecalledMemory] = []
    placed: set[str] = set()
    for index, memory in enumerate(head):
        if memory.id in placed:
            continue
        if marks[memory.id]:  # the first later assertion that comes close enough takes its place
            answer = next(
                (
                    later
                    for later in head[index + 1 :]
                    if not marks[later.id] and later.id not in placed and close(later, memory)
                ),
                None,
            )
            if answer is not None:
                ordered.append(answer)
                placed.add(answer.id)
        ordered.append(memory)
        placed.add(memory.id)
    return ordered + rest
