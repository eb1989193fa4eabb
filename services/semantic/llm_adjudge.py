"""An LLM's judgement on a correction, when one is configured and asked for
(``HINDSIGHT_SEMANTIC_CORRECTIONS_LLM``): does a later turn answer the same question as an earlier one, with
another value, as a statement of what holds now?

It sees what the rules cannot: paraphrased questions ("My rent is 900 euros" / "I pay 950 for the flat
now"), values stated as verbs, modality in unusual words. It is asked only about the few nearest candidates
of a turn that asserts something (:mod:`.by_meaning`); when it fails or times out, the offline decision
stands, so retain never depends on it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from hindsight.runtime.llm import LLMClient, LLMError

log = logging.getLogger(__name__)

ASKED_PER_TURN = 2
"""Candidates of one retained turn put to the LLM at most (the nearest ones)."""

_SYSTEM = (
    "You compare two statements from one person's conversation with an assistant. Answer three questions. "
    "same_question: do both statements give a value to the same attribute of the same thing, owned by the "
    "same person (not someone else's, not another attribute of the same thing)? new_value: does the later "
    "statement give a different value? asserts_now: does the later statement assert what holds now (not a "
    "question, a condition, a hypothesis, a plan that was dropped, or a story about another time)?"
)
_SCHEMA = {
    "type": "object",
    "properties": {
        "same_question": {"type": "boolean"},
        "new_value": {"type": "boolean"},
        "asserts_now": {"type": "boolean"},
    },
    "required": ["same_question", "new_value", "asserts_now"],
    "additionalProperties": False,
}


@dataclass
class Adjudicator:
    """Asks the configured LLM whether a later turn supersedes an earlier one."""

    client: LLMClient
    timeout: float = 10.0
    """Seconds one answer may take; past it the offline decision stands."""

    async def supersedes(self, old_text: str, new_text: str) -> bool | None:
        """True or False as the LLM judges; None when it gave no valid answer in time."""
        user = f"Earlier statement: {old_text}\nLater statement: {new_text}"
        try:
            answer = await asyncio.wait_for(
                self.client.complete_json("semantic_corrections", _SYSTEM, user, _SCHEMA, max_tokens=64),
                self.timeout,
            )
        except (LLMError, TimeoutError) as exc:
            log.warning("llm correction judgement failed, the rules decide", extra={"error": repr(exc)})
            return None
        return bool(answer["same_question"] and answer["new_value"] and answer["asserts_now"])
