"""Reflection with an LLM: the episodes go into a prompt, lessons come back as schema-constrained JSON.

The prompt asks the three questions of a review (what went well, what to improve, what to do next
time in a similar situation) for each lesson. Episodes are shown under short labels (E1, E2, ...) that
the model cites as sources; the answer is checked beyond the schema (every lesson must cite a shown
episode and say what to do), and an answer with no usable lesson is asked for again, up to a setting.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hindsight.reflect.derive import action_key, group_of, lesson_id, lesson_meta
from hindsight.reflect.domain import Episode, Lesson, Method, Result
from hindsight.runtime.llm import LLMClient, LLMError

log = logging.getLogger(__name__)

OPERATION = "reflect"
FIELD_CHARS = 300
"""Most characters of one episode field shown to the model."""
MIN_CONFIDENCE = 0.3
MAX_CONFIDENCE = 0.95

SYSTEM = (
    "You review the finished work of an AI agent and write lessons it should remember. "
    "For each lesson answer three questions: what went well, what should be improved, and what to do "
    "next time in a similar situation. A lesson names the concrete action that failed and the fix that "
    "worked, when the episodes show one. Cite the episodes (E1, E2, ...) each lesson comes from. "
    "stance is 'do' when the lesson recommends its action, 'avoid' when it warns against it. "
    "confidence (0 to 1) is how sure the episodes make you. Answer only with JSON matching the schema."
)


def lesson_schema(max_lessons: int, labels: Sequence[str] = ()) -> dict[str, Any]:
    """The answer's shape; sizes are capped so that a small model stays within its token allowance.

    With ``labels``, a lesson may cite only those episodes, and must cite one: servers that enforce the
    schema by grammar (llama.cpp) then cannot produce an uncited lesson.
    """
    cite: dict[str, Any] = (
        {"type": "string", "enum": list(labels)} if labels else {"type": "string", "maxLength": 8}
    )

    def text(limit: int) -> dict[str, Any]:
        return {"type": "string", "maxLength": limit}

    item = {
        "type": "object",
        "properties": {
            "situation": text(200),
            "action": text(200),
            "outcome": text(200),
            "went_well": text(200),
            "to_improve": text(200),
            "next_time": {"type": "string", "minLength": 1, "maxLength": 300},
            "stance": {"type": "string", "enum": ["do", "avoid"]},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "tags": {"type": "array", "items": text(40), "maxItems": 4},
            "episodes": {"type": "array", "items": cite, "minItems": 1, "maxItems": 10},
        },
        "required": [
            "situation", "action", "outcome", "went_well", "to_improve", "next_time", "stance",
            "confidence", "tags", "episodes",
        ],
    }  # fmt: skip
    return {
        "type": "object",
        "properties": {"lessons": {"type": "array", "items": item, "maxItems": max_lessons}},
        "required": ["lessons"],
    }


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= FIELD_CHARS else flat[: FIELD_CHARS - 1] + "…"


def prompt(episodes: Sequence[Episode]) -> str:
    """The user message: one labelled line per episode, oldest first."""
    lines = ["Episodes of the finished work, oldest first:"]
    for index, episode in enumerate(episodes, 1):
        parts = [f"E{index} [{episode.result.value}]"]
        for name, value in (
            ("task", episode.task_type),
            ("situation", episode.situation),
            ("action", episode.action),
            ("outcome", episode.outcome),
            ("stated lesson", episode.lesson),
            ("tools", ", ".join(episode.tools)),
        ):
            if value.strip():
                parts.append(f"{name}: {_short(value)}")
        lines.append("; ".join(parts))
    lines.append(
        "Write the lessons: for each, what went well, what to improve, and what to do next time in a "
        "similar situation."
    )
    return "\n".join(lines)


@dataclass
class LLMReflector:
    """Asks the LLM for lessons about a batch of episodes."""

    client: LLMClient
    max_episodes: int
    max_lessons: int
    max_tokens: int
    attempts: int

    async def reflect(self, bank_id: str, episodes: Sequence[Episode]) -> list[Lesson] | None:
        """Lessons about the newest ``max_episodes`` episodes; None when the LLM gave no usable answer."""
        shown = sorted(episodes, key=lambda e: (e.moment, e.id))[-self.max_episodes :]
        if not shown:
            return []
        schema = lesson_schema(self.max_lessons, [f"E{index}" for index in range(1, len(shown) + 1)])
        for attempt in range(1, self.attempts + 1):
            try:
                answer = await self.client.complete_json(
                    OPERATION, SYSTEM, prompt(shown), schema, self.max_tokens
                )
            except LLMError as exc:
                log.warning("llm reflection failed", extra={"error": str(exc), "attempt": attempt})
                return None
            lessons = lessons_from_answer(bank_id, shown, answer)
            if lessons:
                return lessons
            log.warning("llm reflection had no usable lesson", extra={"attempt": attempt})
        return None


def lessons_from_answer(bank_id: str, shown: Sequence[Episode], answer: dict[str, Any]) -> list[Lesson]:
    """The usable lessons of an answer: each cites at least one shown episode and says what to do."""
    by_label = {f"E{index}": episode for index, episode in enumerate(shown, 1)}
    lessons: dict[str, Lesson] = {}
    for item in answer.get("lessons", []):
        sources = [
            by_label[label.strip().upper()] for label in item["episodes"] if label.strip().upper() in by_label
        ]
        text = " ".join(item["next_time"].split())
        if not sources or not text:
            continue
        sources = list(dict.fromkeys(sources))
        group = group_of(sources[0])
        action = item["action"].strip() or sources[-1].action
        review = "; ".join(
            part
            for part in (
                item["outcome"].strip(),
                f"went well: {item['went_well'].strip()}" if item["went_well"].strip() else "",
                f"to improve: {item['to_improve'].strip()}" if item["to_improve"].strip() else "",
            )
            if part
        )
        meta = lesson_meta(sources)
        tags = tuple(dict.fromkeys([*meta.tags, *(t.strip() for t in item["tags"] if t.strip())]))
        key = lesson_id(bank_id, group, text)
        lessons[key] = Lesson(
            id=key,
            situation=item["situation"].strip() or sources[0].situation,
            action=action,
            outcome=review,
            lesson=text,
            confidence=round(min(MAX_CONFIDENCE, max(MIN_CONFIDENCE, float(item["confidence"]))), 4),
            source_episode_ids=tuple(e.id for e in sources),
            meta=dataclasses.replace(meta, tags=tags),
            method=Method.LLM,
            topic=group,
            action_key=action_key(action),
            stance=1 if item["stance"] == "do" else -1,
        )
    return sorted(lessons.values(), key=lambda lesson: (-lesson.confidence, lesson.id))


def has_results(episodes: Sequence[Episode]) -> bool:
    """Whether anything in the batch ended (a reflection on unfinished work teaches nothing)."""
    return any(e.result is not Result.UNKNOWN or e.lesson.strip() for e in episodes)
