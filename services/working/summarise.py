"""Summaries of groups of old turns: extractive by default, from the configured LLM when there is one.

The extractive summariser scores sentences (numbers, names, instructions, decisions and open tasks
score high; greetings low), keeps the best in their original order, and then lists every number and
name the kept sentences missed, so that compression never silently drops a figure or a person. A
summary is never longer than its source: if it would be, the source itself (whitespace folded) is kept.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any, Protocol

from hindsight.runtime.llm import LLMClient
from hindsight.runtime.offload import off_loop
from hindsight.working.entries import Entry, is_greeting, is_instruction

log = logging.getLogger(__name__)

EXTRACTIVE = "extractive"
LLM = "llm"

_SENTENCE = re.compile("[^.!?\u3002\uff01\uff1f\n]+(?:[.!?\u3002\uff01\uff1f]+|\n|$)")
_NUMBER = re.compile(r"(?<![0-9A-Za-z.])[-+]?\d[\d,.:/%]*\d%?|(?<![0-9A-Za-z.])\d%?")
_NAME = re.compile(r"\b[A-Z][a-zA-Z0-9'\-]*(?:\s+[A-Z][a-zA-Z0-9'\-]*)*")
_DECISION = re.compile(
    r"\b(?:decided|decide|agreed|agree|chose|choose|will|going to|plan|planned|deadline|due|budget|"
    r"limit|must|cannot|can't|won't|only|at most|at least|confirmed|approved|rejected|because)\b"
    r"|决定|同意|计划|截止|预算|必须|只能|不能|确认",
    re.IGNORECASE,
)
_OPEN_TASK = re.compile(
    r"\b(?:todo|to do|next|pending|still need|need to|follow up|open question|later|tomorrow|remaining)\b"
    r"|\?|待办|下一步|还需要|稍后|明天",
    re.IGNORECASE,
)
_COMMON_CAPITALISED = frozenset(
    """
A An And As At But By For From He Her His How I If In Is It Its My No Not Of On Or Our She So That The
Their Then There These They This Those To We What When Where Which Who Why With Yes You Your Also Just
Oh Ok Okay Hey Hi Hello Thanks Thank Well Sure Yeah Wow Great Good Nice Sounds Let Let's I'm I've I'd
I'll It's That's Don't Can't Won't Did Do Does Have Has Had Was Were Are Be Been Will Would Could Should
""".split()
)
"""Capitalised words that start sentences rather than name things."""
SUMMARISE_OFF_LOOP_CHARS = 2_000
"""Source characters from which an extractive summary (~1 us per character) is written on a worker thread."""


class Summariser(Protocol):
    """Writes the summary of a group of window entries, at most ``max_chars`` characters long."""

    @property
    def name(self) -> str:
        """ "extractive" or "llm": reported with each compression."""
        ...

    async def summarise(self, entries: Sequence[Entry], max_chars: int) -> str:
        """A summary of ``entries`` (oldest first) keeping decisions, numbers, constraints and open tasks."""
        ...


def entry_line(entry: Entry) -> str:
    """How an entry reads in a summary's source: ``speaker: text`` (or the role when no name)."""
    who = entry.turn.speaker or entry.turn.role.value
    return f"{who}: {' '.join(entry.turn.text.split())}"


def source_text(entries: Sequence[Entry]) -> str:
    """The text a summary replaces; its length bounds the summary's."""
    return "\n".join(entry_line(entry) for entry in entries)


def numbers(text: str) -> list[str]:
    """Numbers as written ("42", "3.5", "2024-05-01", "15%")."""
    return [match.group(0).rstrip(".,:/") for match in _NUMBER.finditer(text)]


def names(text: str) -> list[str]:
    """Capitalised words and runs of them that are not sentence openers ("Caroline", "New York")."""
    found: list[str] = []
    for match in _NAME.finditer(text):
        words = [word for word in match.group(0).split() if word not in _COMMON_CAPITALISED]
        found.extend(word.strip("'-") for word in words if len(word.strip("'-")) > 1)
    return found


def _score(sentence: str, importance: float) -> float:
    if is_greeting(sentence):
        return 0.05
    score = 1.0
    score += 1.5 * min(len(numbers(sentence)), 3)
    score += 1.0 * min(len(names(sentence)), 3)
    score += 2.0 if is_instruction(sentence) else 0.0
    score += 1.5 if _DECISION.search(sentence) else 0.0
    score += 1.5 if _OPEN_TASK.search(sentence) else 0.0
    return score * (0.5 + importance)


class ExtractiveSummariser:
    """Deterministic, offline: sentence scoring plus a list of numbers and names not otherwise kept."""

    name = EXTRACTIVE

    def __init__(self, keep_ratio: float = 0.35) -> None:
        self.keep_ratio = keep_ratio

    async def summarise(self, entries: Sequence[Entry], max_chars: int) -> str:
        return await off_loop(
            lambda: self.summarise_now(entries, max_chars),
            size=sum(len(entry.turn.text) for entry in entries),
            threshold=SUMMARISE_OFF_LOOP_CHARS,
        )

    def summarise_now(self, entries: Sequence[Entry], max_chars: int) -> str:
        """The summary, computed synchronously."""
        source = source_text(entries)
        limit = min(max_chars, len(source))
        candidates: list[tuple[float, int, str]] = []
        for entry in entries:
            who = entry.turn.speaker or entry.turn.role.value
            for match in _SENTENCE.finditer(entry.turn.text):
                sentence = " ".join(match.group(0).split())
                if sentence:
                    line = f"{who}: {sentence}"
                    candidates.append((_score(sentence, entry.turn.meta.importance), len(candidates), line))
        budget = max(int(len(source) * self.keep_ratio), 1)
        chosen: list[tuple[int, str]] = []
        used = 0
        for _, order, line in sorted(candidates, key=lambda item: (-item[0], item[1])):
            if used + len(line) + 1 > budget and chosen:
                continue
            chosen.append((order, line))
            used += len(line) + 1
        kept = " ".join(line for _, line in sorted(chosen))
        missing = _missing(source, kept)
        summary = f"{kept} [also: {', '.join(missing)}]" if missing else kept
        if len(summary) > limit:
            folded = " ".join(source.split())
            return folded[:limit]
        return summary


def _missing(source: str, kept: str) -> list[str]:
    """Numbers and names of ``source`` that ``kept`` does not contain, each once, in order."""
    found = dict.fromkeys(numbers(source) + names(source))
    return [item for item in found if item and item not in kept]


_LLM_SYSTEM = (
    "You compress the oldest part of an agent's working memory. Write a summary of the turns that keeps "
    "every decision, number, name, constraint and open task, and drops small talk. Write in the language of "
    "the turns, in plain sentences, and never longer than the limit you are given."
)


class LlmSummariser:
    """Summaries from the configured LLM (schema-constrained JSON); the engine checks the length and
    falls back to the extractive summariser when the answer fails or is too long."""

    name = LLM

    def __init__(self, client: LLMClient) -> None:
        self._client = client

    async def summarise(self, entries: Sequence[Entry], max_chars: int) -> str:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {"summary": {"type": "string", "maxLength": max(max_chars, 1)}},
            "required": ["summary"],
        }
        user = f"Limit: {max_chars} characters.\n\nTurns, oldest first:\n{source_text(entries)}"
        answer = await self._client.complete_json(
            "working_summary", _LLM_SYSTEM, user, schema, max_tokens=max(64, max_chars // 2)
        )
        return str(answer.get("summary", "")).strip()
