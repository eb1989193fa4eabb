"""What screening says about a text: findings (what, why, what to do, where), the actions and which wins, a
bank's policy, and the helpers every family of cues shares (one finding per span, short excerpts).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

QUARANTINE = "quarantine"
REDACT = "redact"
REFUSE = "refuse"
FLAG = "flag"
ACTION_RANK = {"": 0, FLAG: 1, REDACT: 2, QUARANTINE: 3, REFUSE: 4}
"""Which action wins when a text has several findings."""
SECRET_POLICIES = (REDACT, REFUSE, QUARANTINE)

INSTRUCTION = "instruction"
TOOL_IMPERATIVE = "tool_imperative"
SECRET = "secret"

MAX_MATCHES_PER_CUE = 3
"""Matches of one cue family reported per text: enough to show a reviewer, and a text repeating a cue a
million times costs no more to report than one that says it three times."""


@dataclass(frozen=True)
class Finding:
    """One thing screening found: what, why (naming the cue), what to do, and where (character span)."""

    kind: str
    reason: str
    action: str
    span: tuple[int, int] | None = None


@dataclass(frozen=True)
class ScreeningPolicy:
    """What screening does: on or off, and how a bank treats secrets."""

    enabled: bool = True
    secrets: str = REDACT
    """``redact`` (store with the secret replaced), ``refuse`` (store nothing) or ``quarantine``."""
    instructions: str = QUARANTINE
    """What an instruction aimed at the agent gets: ``quarantine`` or ``flag``."""

    def __post_init__(self) -> None:
        if self.secrets not in SECRET_POLICIES:
            raise ValueError(f"secret policy must be one of {', '.join(SECRET_POLICIES)}")
        if self.instructions not in {QUARANTINE, FLAG}:
            raise ValueError("instruction policy must be 'quarantine' or 'flag'")


@dataclass(frozen=True)
class ScreenResult:
    """The findings, the text to store (secrets redacted where the policy redacts) and the action."""

    findings: list[Finding] = field(default_factory=list)
    text: str = ""

    @property
    def action(self) -> str:
        """The strongest action of the findings: refuse > quarantine > redact > flag > ""."""
        return max((f.action for f in self.findings), key=ACTION_RANK.__getitem__, default="")

    def main(self) -> Finding | None:
        """The finding behind the action (the first of the strongest), for one-line reports."""
        action = self.action
        return next((f for f in self.findings if f.action == action), None) if action else None


@dataclass(frozen=True)
class Cue:
    """One cue family: a pattern, whether it is strong, and the words a reviewer reads."""

    name: str
    pattern: re.Pattern[str]
    strong: bool
    check: Callable[[re.Match[str]], bool] | None = None


def excerpt(text: str, limit: int = 60) -> str:
    """``text`` on one line, cut to ``limit`` characters: what a reviewer reads of a match."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def first_per_span(findings: Iterable[Finding]) -> list[Finding]:
    """Findings in text order, dropping one that lies inside a kept one of the same kind that is at least as
    strong (a strong cue inside a weak one's match is kept)."""
    kept: list[Finding] = []
    for item in sorted(findings, key=lambda f: (-ACTION_RANK[f.action], (f.span or (0, 0))[0])):
        span = item.span or (0, 0)
        if any(
            k.kind == item.kind
            and ACTION_RANK[k.action] >= ACTION_RANK[item.action]
            and k.span
            and k.span[0] <= span[0]
            and span[1] <= k.span[1]
            for k in kept
        ):
            continue
        kept.append(item)
    return sorted(kept, key=lambda f: (f.span or (0, 0))[0])
