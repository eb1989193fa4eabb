"""One pass of the lessons bench against one edge: build each bank, reflect, ask, score.

Per bank: retain the everyday facts, write each failed episode (with its lesson), reflect (which writes
the lessons), then recall every request with ``top_k`` 3 the way an agent would, through the edge's
``MemoryService``. A similar request hits when a lesson drawn from its episode is in the top 3; it is
first in the context when the context's first memory is such a lesson. An unrelated request is clean
when no lesson is in its top 3; it is quiet when a recall with ``top_k`` 10 returns at most one memory
(everything else fell below the relevance floor). A question about one of the everyday facts hits when
that fact (its turn, or a memory drawn from it) is in the top 3: the floor must not silence a real
question.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from hindsight.bench.lessons_set import EPISODES, Bank, Request, episode_texts
from hindsight.client.aio import AsyncMemoryClient
from hindsight.client.types import Episode, RecallResult, Role, Turn

TOP_K = 3
QUIET_TOP_K = 10
TIMEOUT = 120.0


@dataclass(frozen=True)
class Outcome:
    """One request's result."""

    bank: str
    split: str
    lang: str
    request: str
    similar: bool
    ok: bool
    """Similar: a lesson of its episode in the top 3. Unrelated: no lesson in the top 3. Fact: the fact
    in the top 3."""
    first: bool = False
    """Similar: the context starts with a lesson of its episode."""
    returned: int = 0
    """Unrelated: memories a top-10 recall returned."""
    top: tuple[str, ...] = ()
    """The top memories' kinds and texts (shortened), for reading failures."""
    fact: bool = False
    """A question about an everyday fact (``similar`` is then False)."""


@dataclass
class PassResult:
    outcomes: list[Outcome] = field(default_factory=list)
    lessons: int = 0
    episodes: int = 0
    distractors: int = 0


def _shown(result: RecallResult, count: int) -> tuple[str, ...]:
    return tuple(f"{m.kind} {m.score:.2f}: {m.text[:70]}" for m in result.memories[:count])


async def _build(
    client: AsyncMemoryClient, bank_id: str, bank: Bank, result: PassResult
) -> dict[int, set[str]]:
    """Fill the bank; per episode index, the ids of the lessons reflection drew from it."""
    turns = [
        Turn(id=f"fact-{i}", text=text, session_id="everyday", role=Role.USER)
        for i, text in enumerate(bank.distractors)
    ]
    await client.retain(bank_id, turns, timeout=TIMEOUT)
    ids: dict[str, int] = {}
    for index in bank.episodes:
        template = EPISODES[index]
        texts = episode_texts(template)
        written = await client.write_episode(
            bank_id,
            Episode(
                situation=texts["situation"],
                action=texts["action"],
                outcome=texts["outcome"],
                lesson=texts["lesson"],
                task_type=template.task_type,
                tools=template.tools,
                success=False,
                session_id=f"task-{index}",
            ),
            timeout=TIMEOUT,
        )
        ids[written.id] = index
    reflection = await client.reflect(bank_id, timeout=TIMEOUT)
    lessons: dict[int, set[str]] = {}
    for lesson in reflection.lessons:
        for episode_id in lesson.source_episode_ids:
            if episode_id in ids:
                lessons.setdefault(ids[episode_id], set()).add(lesson.id)
    result.lessons += len(reflection.lessons)
    result.episodes += len(bank.episodes)
    result.distractors += len(bank.distractors)
    return lessons


async def _similar(
    client: AsyncMemoryClient,
    bank_id: str,
    bank: Bank,
    request: Request,
    wanted: set[str],
    layers: Sequence[str] = (),
) -> Outcome:
    found = await client.recall(bank_id, request.text, top_k=TOP_K, layers=layers, timeout=TIMEOUT)
    top = found.memories[:TOP_K]
    hit = any(m.kind == "lesson" and m.id in wanted for m in top)
    first = bool(found.context_ids) and found.context_ids[0] in wanted
    return Outcome(bank.name, bank.split, bank.lang, request.text, True, hit, first, top=_shown(found, TOP_K))


async def _unrelated(
    client: AsyncMemoryClient, bank_id: str, bank: Bank, request: Request, layers: Sequence[str] = ()
) -> Outcome:
    found = await client.recall(bank_id, request.text, top_k=TOP_K, layers=layers, timeout=TIMEOUT)
    clean = not any(m.kind == "lesson" for m in found.memories[:TOP_K])
    wide = await client.recall(bank_id, request.text, top_k=QUIET_TOP_K, layers=layers, timeout=TIMEOUT)
    return Outcome(
        bank.name, bank.split, bank.lang, request.text, False, clean,
        returned=len(wide.memories), top=_shown(wide, QUIET_TOP_K),
    )  # fmt: skip


async def _fact(
    client: AsyncMemoryClient, bank_id: str, bank: Bank, request: Request, layers: Sequence[str] = ()
) -> Outcome:
    turn = f"fact-{bank.distractors.index(request.fact)}"
    found = await client.recall(bank_id, request.text, top_k=TOP_K, layers=layers, timeout=TIMEOUT)
    top = found.memories[:TOP_K]
    hit = any(m.id == turn or turn in m.meta.source_turn_ids for m in top)
    return Outcome(
        bank.name, bank.split, bank.lang, request.text, False, hit,
        returned=len(found.memories), top=_shown(found, TOP_K), fact=True,
    )  # fmt: skip


async def run_pass(
    address: str,
    token: str,
    banks: Sequence[Bank],
    run_id: str,
    progress: bool = False,
    layers: Sequence[str] = (),
) -> PassResult:
    """Every bank through one edge; bank ids are fresh (named after ``run_id``); every recall asks
    ``layers`` (empty: all)."""
    result = PassResult()
    async with AsyncMemoryClient(address, token, timeout=TIMEOUT) as client:
        for bank in banks:
            bank_id = f"lessons-{run_id}-{bank.name}"
            if progress:
                print(f"[lessons] {bank.name}", file=sys.stderr, flush=True)
            lessons = await _build(client, bank_id, bank, result)
            for request in bank.similar:
                wanted = lessons.get(request.episode, set())
                result.outcomes.append(await _similar(client, bank_id, bank, request, wanted, layers))
            for request in bank.unrelated:
                result.outcomes.append(await _unrelated(client, bank_id, bank, request, layers))
            for request in bank.facts:
                result.outcomes.append(await _fact(client, bank_id, bank, request, layers))
    return result


def _share(hits: int, cases: int) -> float:
    return round(hits / cases, 4) if cases else 0.0


def figures(outcomes: Sequence[Outcome]) -> dict[str, object]:
    """The metrics of some outcomes (one split, or one split and language)."""
    similar = [o for o in outcomes if o.similar]
    unrelated = [o for o in outcomes if not o.similar and not o.fact]
    facts = [o for o in outcomes if o.fact]
    return {
        "similar": {"cases": len(similar), "hit_at_3": _share(sum(o.ok for o in similar), len(similar))},
        "unrelated": {
            "cases": len(unrelated),
            "clean_at_3": _share(sum(o.ok for o in unrelated), len(unrelated)),
            "at_most_one_returned": _share(sum(o.returned <= 1 for o in unrelated), len(unrelated)),
        },
        "first_in_context": _share(sum(o.first for o in similar), len(similar)),
        "facts": {"cases": len(facts), "hit_at_3": _share(sum(o.ok for o in facts), len(facts))},
    }
