"""Facts from turns by the configured LLM: one schema-constrained call per Upsert batch.

The answer names the turn each fact came from by its number in the prompt, so every fact keeps its
source turn ids. A failed or late answer raises: the pass is queued work and is tried again
(:mod:`.llm_passes`); the rules' facts are written meanwhile, so an LLM is never needed for the write
path to work.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from hindsight.runtime.llm import LLMClient, LLMError
from hindsight.semantic.extract import Extraction, entities_of_fact, fact_record
from hindsight.semantic.records import RecordKind, SemanticRecord

log = logging.getLogger(__name__)

LLM_CONFIDENCE = 0.75
MAX_TURN_CHARS = 1_000

_SYSTEM = (
    "You read conversation turns and write down the lasting facts they state: who someone is (name, "
    "age, home, origin, job, employer), what they like or dislike, their plans, events with their dates, "
    "and relations between people (sister, husband, friend, colleague, boss...). Use the speaker's name as "
    "the subject for first-person statements. attribute is a short snake_case property such as lives_in, "
    "works_at, likes, plans, event, or the relation's name when the value is a person. text is one short "
    "sentence stating the fact in the language of the turn. Leave out small talk and questions; an empty "
    "list is a fine answer."
)
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "maxItems": 40,
            "items": {
                "type": "object",
                "properties": {
                    "turn": {"type": "integer", "minimum": 1},
                    "kind": {"type": "string", "enum": ["fact", "preference", "rule"]},
                    "subject": {"type": "string", "maxLength": 80},
                    "attribute": {"type": "string", "maxLength": 40},
                    "value": {"type": "string", "maxLength": 200},
                    "text": {"type": "string", "maxLength": 300},
                },
                "required": ["turn", "kind", "subject", "attribute", "value", "text"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["facts"],
    "additionalProperties": False,
}


class LLMExtractor:
    """Asks the LLM for the facts of a batch of turns (see the module docstring)."""

    def __init__(self, client: LLMClient, timeout_seconds: float, max_turns: int = 50) -> None:
        self._client = client
        self._timeout = timeout_seconds
        self._max_turns = max_turns

    async def extract(self, bank_id: str, turns: Sequence[SemanticRecord]) -> Extraction:
        """The facts; LLMError or TimeoutError when the LLM gives no usable answer in time."""
        batch = list(turns)[: self._max_turns]
        lines = [
            f"{n}. [{t.meta.time.date().isoformat() if t.meta.time else 'undated'}] "
            f"{t.speaker or 'user'}: {t.text[:MAX_TURN_CHARS]}"
            for n, t in enumerate(batch, start=1)
        ]
        try:
            answer = await asyncio.wait_for(
                self._client.complete_json(
                    "semantic_facts", _SYSTEM, "Turns:\n" + "\n".join(lines), _SCHEMA, max_tokens=2048
                ),
                self._timeout,
            )
        except (LLMError, TimeoutError) as exc:
            log.warning("llm fact extraction failed", extra={"error": repr(exc), "bank_id": bank_id})
            raise
        return _parse(answer, batch)


def _parse(answer: dict[str, Any], turns: Sequence[SemanticRecord]) -> Extraction:
    """Fact records from the answer; facts that name no turn of the batch, or say nothing, are dropped."""
    kinds = {"fact": RecordKind.FACT, "preference": RecordKind.PREFERENCE, "rule": RecordKind.RULE}
    result = Extraction()
    for fact in answer.get("facts", []):
        index = int(fact.get("turn", 0)) - 1
        subject, attribute = str(fact.get("subject", "")).strip(), str(fact.get("attribute", "")).strip()
        value, text = str(fact.get("value", "")).strip(), str(fact.get("text", "")).strip()
        if not 0 <= index < len(turns) or not (subject and attribute and value and text):
            continue
        turn = turns[index]
        attribute = "_".join(attribute.lower().split())
        result.facts.append(
            fact_record(
                turn,
                subject,
                attribute,
                value,
                kinds.get(fact.get("kind"), RecordKind.FACT),
                text,
                None,
                LLM_CONFIDENCE,
            )
        )
        result.entities.extend(entities_of_fact(subject, attribute, value, turn.speaker))
    return result
