"""What a session window holds: entries (turns, or summaries of older turns) with token accounting.

Also the rules that give a turn its importance when the caller does not: a user instruction matters
most, a greeting least.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from hindsight.runtime.records import RecordMeta, Role, Source, Trust, Turn, content_id

INSTRUCTION_IMPORTANCE = 0.9
TOOL_RESULT_IMPORTANCE = 0.8
ANSWER_IMPORTANCE = 0.6
GREETING_IMPORTANCE = 0.2

_GREETING = re.compile(
    r"^\W*(?:(?:hi|hello|hey|yo|thanks|thank you|thx|ty|ok|okay|k|sure|great|cool|nice|got it|sounds good|"
    r"good (?:morning|afternoon|evening|night)|bye|goodbye|see you|you'?re welcome|no problem|np|yes|yep|"
    r"yeah|no|nope|alright|perfect|awesome|will do|noted|understood|"
    r"你好|您好|嗨|谢谢|多谢|好的|好|嗯|收到|明白|再见|没问题)[\s,.!?~\u3002\uff01\uff1f\uff0c\u2026]*)+\W*$",
    re.IGNORECASE,
)
_IMPERATIVE_CUES = re.compile(
    r"\b(?:please|must|should|shall|need to|needs to|have to|make sure|ensure|don'?t|do not|never|always|"
    r"remember to|let'?s|todo|to do)\b|请|必须|需要|不要|别|务必|记得",
    re.IGNORECASE,
)
IMPERATIVE_VERBS = frozenset(
    """
add answer build call change check choose clean close commit compare create debug delete deploy describe
do document draft edit email explain find fix follow generate get give go help implement install keep list
load make merge move note open plan prepare print put read reduce refactor remember remove rename reply
replace report restart retry review rewrite run save schedule search send set show sort start stop
summarise summarize switch take tell test try update upgrade use verify wait write
""".split()
)
"""Verbs that, first in a sentence, make it an instruction ("Deploy the build", "Send me the list")."""


def is_greeting(text: str) -> bool:
    """A greeting or acknowledgement with nothing else in it ("Thanks!", "ok, got it", "好的")."""
    return len(text) <= 60 and bool(_GREETING.match(text.strip()))


def is_instruction(sentence: str) -> bool:
    """An imperative: starts with a command verb or carries a cue such as "must", "please", "don't"."""
    words = re.findall(r"[A-Za-z']+", sentence[:40])
    if words and words[0].lower() in IMPERATIVE_VERBS:
        return True
    return bool(_IMPERATIVE_CUES.search(sentence))


def default_importance(role: Role, text: str) -> float:
    """Importance by rule: greeting 0.2, user or system instruction 0.9, tool result 0.8, other 0.6."""
    if is_greeting(text):
        return GREETING_IMPORTANCE
    if role is Role.TOOL:
        return TOOL_RESULT_IMPORTANCE
    if role is Role.SYSTEM or (role is Role.USER and is_instruction(text)):
        return INSTRUCTION_IMPORTANCE
    return ANSWER_IMPORTANCE


def with_importance(turn: Turn) -> Turn:
    """The turn with its importance filled by rule when the caller left it at 0."""
    if turn.meta.importance > 0.0:
        return turn
    return replace(turn, meta=replace(turn.meta, importance=default_importance(turn.role, turn.text)))


class EntryKind(enum.Enum):
    """A turn as appended, or a summary that replaced older entries."""

    TURN = "turn"
    SUMMARY = "summary"


@dataclass(frozen=True)
class Entry:
    """One entry of a session window.

    For a summary, ``turn`` is synthesised: role SYSTEM, text the summary, ``meta.source_turn_ids`` the
    turns it replaced (so provenance survives compression).
    """

    kind: EntryKind
    turn: Turn
    token_count: int
    appended_at: float
    """Seconds since the epoch when the entry was written."""
    summary: str = ""
    terms: tuple[str, ...] = field(default=(), compare=False, repr=False)
    """Search terms of the entry, computed once when it is written."""

    @property
    def id(self) -> str:
        return self.turn.id

    @property
    def timestamp_ms(self) -> int:
        return int(self.appended_at * 1000)

    @property
    def source_turn_ids(self) -> tuple[str, ...]:
        """The turns this entry stands for: itself, or every turn a summary replaced."""
        return self.turn.meta.source_turn_ids or (self.turn.id,)


def summary_entry(
    session_id: str, replaced: Sequence[Entry], text: str, token_count: int, now: float
) -> Entry:
    """The entry that replaces ``replaced`` (oldest first) by ``text``."""
    sources = tuple(dict.fromkeys(i for entry in replaced for i in entry.source_turn_ids))
    times = [entry.turn.meta.time for entry in replaced if entry.turn.meta.time is not None]
    meta = RecordMeta(
        source_turn_ids=sources,
        source=Source.AGENT,
        trust=min((entry.turn.meta.trust for entry in replaced), default=Trust.MEDIUM),
        time=max(times) if times else None,
        tags=tuple(dict.fromkeys(tag for entry in replaced for tag in entry.turn.meta.tags)),
        importance=max((entry.turn.meta.importance for entry in replaced), default=ANSWER_IMPORTANCE),
    )
    turn = Turn(
        id=f"summary:{content_id(session_id, *sources)}",
        session_id=session_id,
        text=text,
        role=Role.SYSTEM,
        meta=meta,
    )
    return Entry(EntryKind.SUMMARY, turn, token_count, now, summary=text)
