"""Segmentation: a session's turns cut where the topic shifts or the talk pauses, each segment an episode.

The default is deterministic. Each gap between two turns is scored by the similarity of the turns on
either side of it (a window of two each way, so that one short reply does not cut a topic): turn
embeddings from the inference layer when it is configured, else shared words. A gap scoring under
the threshold and no higher than its neighbours (a valley), or a pause longer than the gap setting,
ends a segment (segments hold at least a
minimum and at most a maximum of turns). The last segment stays open until the session ends.

Each finished segment becomes an episode: by the LLM when one is configured (JSON with the fixed
fields situation, action, outcome, lesson, tags), else by rules over the turns.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta

from hindsight.episodic import cpu
from hindsight.episodic.models import Episode, Outcome
from hindsight.runtime.llm import LLMClient, LLMError
from hindsight.runtime.offload import off_loop
from hindsight.runtime.records import RecordMeta, Role, Source, Turn
from hindsight.runtime.text import terms

log = logging.getLogger(__name__)

WINDOW = 2
"""Turns on each side of a gap that decide whether the topic shifted there."""
MAX_FIELD_CHARS = 600
MAX_TAGS = 5
_EPISODE_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "hindsight:episodic:segment")
_FAILURE_CUES = frozenset(
    "error errors failed fail fails failure broken crash crashed exception timeout wrong denied".split()
    + "失败 错误 报错 异常".split()
)
_SUCCESS_CUES = frozenset(
    "works worked working fixed solved done success succeeded passed resolved thanks".split()
    + "成功 解决 完成 好了 谢谢".split()
)

Embed = Callable[[str, Sequence[str]], Awaitable[list[list[float]]]]
"""Embeds a bank's texts: one vector per text."""


@dataclass(frozen=True)
class SegmentRules:
    """Where segments end."""

    threshold: float
    """Similarity under which the topic shifted."""
    gap: timedelta
    min_turns: int
    max_turns: int


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def _counter_cosine(a: Counter[str], b: Counter[str]) -> float:
    dot = sum(count * b[term] for term, count in a.items() if term in b)
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    return dot / norm if norm else 0.0


def lexical_similarities(turns: Sequence[Turn]) -> list[float]:
    """For each gap (before turn i, i >= 1): word overlap of the windows on either side."""
    bags = [Counter(terms(f"{turn.speaker} {turn.text}")) for turn in turns]
    result = []
    for i in range(1, len(turns)):
        left: Counter[str] = sum((bags[j] for j in range(max(0, i - WINDOW), i)), Counter())
        right: Counter[str] = sum((bags[j] for j in range(i, min(len(turns), i + WINDOW))), Counter())
        result.append(_counter_cosine(left, right))
    return result


def vector_similarities(vectors: Sequence[Sequence[float]]) -> list[float]:
    """For each gap: cosine of the mean vectors of the windows on either side."""
    result = []
    for i in range(1, len(vectors)):
        left = [sum(column) for column in zip(*vectors[max(0, i - WINDOW) : i], strict=True)]
        right = [sum(column) for column in zip(*vectors[i : min(len(vectors), i + WINDOW)], strict=True)]
        result.append(_cosine(left, right))
    return result


def _valley(similarities: Sequence[float], gap: int) -> bool:
    """Whether the similarity at ``gap`` is no higher than at the gaps beside it: a shift is cut where the
    topics differ most, not at the first gap that dips under the threshold while the windows overlap it."""
    here = similarities[gap]
    left = similarities[gap - 1] if gap > 0 else math.inf
    right = similarities[gap + 1] if gap + 1 < len(similarities) else math.inf
    return here <= left and here <= right


def split(turns: Sequence[Turn], similarities: Sequence[float], rules: SegmentRules) -> list[list[Turn]]:
    """Cut ``turns`` (in time order) into segments at topic shifts, pauses and the size limit."""
    if not turns:
        return []
    segments: list[list[Turn]] = [[turns[0]]]
    for i in range(1, len(turns)):
        current = segments[-1]
        before, here = turns[i - 1].meta.time, turns[i].meta.time
        paused = before is not None and here is not None and here - before > rules.gap
        shifted = (
            len(current) >= rules.min_turns
            and similarities[i - 1] < rules.threshold
            and _valley(similarities, i - 1)
        )
        if paused or shifted or len(current) >= rules.max_turns:
            segments.append([turns[i]])
        else:
            current.append(turns[i])
    return segments


def _clip(text: str, limit: int = MAX_FIELD_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def episode_id(bank_id: str, session_id: str, first_turn_id: str) -> str:
    """A segment's episode id: the same segment always gets the same id."""
    return uuid.uuid5(_EPISODE_NAMESPACE, f"{bank_id}\x1f{session_id}\x1f{first_turn_id}").hex


def _result_of(turns: Sequence[Turn]) -> Outcome:
    """How the task ended, from success and failure words in the last turn (or the one before it)."""
    for turn in reversed(turns[-2:]):
        words = Counter(terms(turn.text))
        failed = sum(words[cue] for cue in _FAILURE_CUES)
        succeeded = sum(words[cue] for cue in _SUCCESS_CUES)
        if failed != succeeded:
            return Outcome.FAILURE if failed > succeeded else Outcome.SUCCESS
    return Outcome.UNSPECIFIED


def _keywords(turns: Sequence[Turn]) -> tuple[str, ...]:
    counts = Counter(
        term for turn in turns for term in terms(turn.text) if len(term) > 2 or not term.isascii()
    )
    single_cjk = {term for term in counts if len(term) == 1}
    return tuple(term for term, _ in counts.most_common(MAX_TAGS * 3) if term not in single_cjk)[:MAX_TAGS]


def _base_episode(bank_id: str, turns: Sequence[Turn]) -> Episode:
    """The episode's identity, tools, result and metadata, common to both extractions."""
    first = turns[0]
    tools = tuple(dict.fromkeys(turn.speaker or "tool" for turn in turns if turn.role is Role.TOOL))
    meta = RecordMeta(
        source_turn_ids=tuple(turn.id for turn in turns),
        source=Source.AGENT,
        trust=min(turn.meta.trust for turn in turns),
        time=turns[-1].meta.time,
        importance=max(turn.meta.importance for turn in turns),
    )
    return Episode(
        id=episode_id(bank_id, first.session_id, first.id),
        session_id=first.session_id,
        tools=tools,
        result=_result_of(turns),
        meta=meta,
    )


def rule_episode(bank_id: str, turns: Sequence[Turn]) -> Episode:
    """An episode by rules: what the user raised, what the agent did, how it ended."""
    base = _base_episode(bank_id, turns)
    asked = [turn for turn in turns if turn.role is Role.USER] or list(turns[:1])
    done = [turn for turn in turns if turn.role in (Role.ASSISTANT, Role.TOOL)] or list(turns[1:2])
    situation = _clip(asked[0].text)
    action = _clip(" ".join(turn.text for turn in done[:2])) if done else ""
    outcome = _clip(turns[-1].text) if len(turns) > 1 else ""
    return replace(
        base,
        situation=situation,
        action=action,
        outcome=outcome,
        meta=replace(base.meta, tags=_keywords(turns)),
    )


EXTRACTION_SCHEMA = {
    "type": "object",
    "properties": {
        "situation": {"type": "string", "description": "The situation or task the agent faced."},
        "action": {"type": "string", "description": "What the agent did."},
        "outcome": {"type": "string", "description": "What came of it."},
        "lesson": {"type": "string", "description": "What to do (or avoid) next time; empty if none."},
        "tags": {"type": "array", "items": {"type": "string"}, "description": "A few topic keywords."},
    },
    "required": ["situation", "action", "outcome", "lesson", "tags"],
    "additionalProperties": False,
}
_SYSTEM = (
    "You turn one segment of a conversation between a user, an agent and its tools into an episode "
    "record. Answer with JSON only. Use the conversation's language. Be brief and factual; never invent "
    "what the transcript does not say."
)


async def llm_episode(llm: LLMClient, bank_id: str, turns: Sequence[Turn], max_tokens: int) -> Episode:
    """An episode by the LLM; raises :class:`LLMError` when it gives no usable answer."""
    base = _base_episode(bank_id, turns)
    transcript = "\n".join(
        f"[{index}] {turn.role.value}{f' ({turn.speaker})' if turn.speaker else ''}: {_clip(turn.text, 1000)}"
        for index, turn in enumerate(turns, start=1)
    )
    answer = await llm.complete_json("episode", _SYSTEM, transcript, EXTRACTION_SCHEMA, max_tokens)
    situation = _clip(str(answer.get("situation", "")))
    action = _clip(str(answer.get("action", "")))
    if not situation and not action:
        raise LLMError("episode: the answer has neither situation nor action")
    tags = tuple(dict.fromkeys(str(tag).strip() for tag in answer.get("tags", []) if str(tag).strip()))
    return replace(
        base,
        situation=situation,
        action=action,
        outcome=_clip(str(answer.get("outcome", ""))),
        lesson=_clip(str(answer.get("lesson", ""))),
        meta=replace(base.meta, tags=tags[:MAX_TAGS]),
    )


@dataclass(frozen=True)
class Extraction:
    """Episodes of finished segments and the method that made them ("llm" when the LLM made any)."""

    episodes: list[Episode]
    method: str


async def extract(
    llm: LLMClient | None, bank_id: str, segments: Sequence[Sequence[Turn]], max_tokens: int
) -> Extraction:
    """An episode of each segment: by the LLM when configured (rules where it fails), else by rules (in a
    thread when there are many turns: about 0.05 ms each)."""
    if llm is None:
        size = sum(len(segment) for segment in segments)
        rules = await off_loop(
            lambda: [rule_episode(bank_id, segment) for segment in segments], size, cpu.MIN_TURNS
        )
        return Extraction(rules, "similarity")
    episodes = []
    used_llm = False
    for segment in segments:
        try:
            episodes.append(await llm_episode(llm, bank_id, segment, max_tokens))
            used_llm = True
            continue
        except LLMError as exc:
            log.warning("llm episode extraction failed; using the rules", extra={"error": str(exc)})
        episodes.append(rule_episode(bank_id, segment))
    return Extraction(episodes, "llm" if used_llm else "similarity")
