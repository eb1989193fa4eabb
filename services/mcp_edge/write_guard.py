"""The write path's defences at the edge: rate limits and screening of every turn before it is written.

One place decides, for both fronts (MCP and gRPC): whether a retain may write at all (rate limits), and
what each of its turns becomes (stored as is, redacted, held for review, or the whole retain refused).
Every decision is audited: quarantines by episodic memory in the transaction that holds the turn, the
rest through the edge's :class:`~hindsight.mcp_edge.audit.AuditQueue`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from hindsight.contracts.common.v1 import common_pb2
from hindsight.mcp_edge.audit import AuditQueue, entry
from hindsight.mcp_edge.domain import Screened
from hindsight.mcp_edge.ratelimit import Limit, WriteLimiter
from hindsight.mcp_edge.screen_findings import QUARANTINE, REFUSE, ScreeningPolicy, ScreenResult
from hindsight.mcp_edge.screening import screen
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime.errors import InvalidArgument, ResourceExhausted
from hindsight.runtime.records import Source, Turn

log = logging.getLogger(__name__)

MAX_REASON = 500


@dataclass(frozen=True)
class GuardedWrite:
    """The turns to write (redacted where the policy redacts), those to hold back, and what was done."""

    turns: list[Turn]
    held: dict[str, common_pb2.Screening] = field(default_factory=dict)
    screened: tuple[Screened, ...] = ()
    audit: tuple[common_pb2.AuditEntry, ...] = ()
    """Decisions to log (quarantines are logged by episodic memory, in the transaction that holds them)."""
    refused: InvalidArgument | None = None
    """Set when a turn is refused: the retain fails with it and nothing is written."""


def _summary(result: ScreenResult) -> tuple[str, str]:
    """The kind and reason a turn's screening is reported with: the strongest finding first, then the
    others' reasons (a turn may be both redacted and held)."""
    main = result.main()
    if main is None:
        return "", ""
    reasons = list(dict.fromkeys([main.reason, *(f.reason for f in result.findings)]))
    reason = "; ".join(reasons)
    return main.kind, reason if len(reason) <= MAX_REASON else reason[: MAX_REASON - 1] + "…"


class WriteGuard:
    """Rate limits and screening, by the edge's settings (``defences`` off: neither)."""

    def __init__(self, settings: EdgeSettings, audit: AuditQueue) -> None:
        self.settings = settings
        self.audit = audit
        self.limiter = WriteLimiter(
            Limit(settings.write_rate_bank, settings.write_burst_bank),
            Limit(settings.write_rate_untrusted, settings.write_burst_untrusted),
        )
        default, banks = settings.secret_policies()
        self._policies = {
            bank: ScreeningPolicy(secrets=policy, instructions=settings.instruction_policy)
            for bank, policy in banks.items()
        }
        self._default = ScreeningPolicy(secrets=default, instructions=settings.instruction_policy)

    def policy(self, bank_id: str) -> ScreeningPolicy:
        """The bank's screening policy (its own secret policy, when one is configured)."""
        if not self.settings.defences:
            return ScreeningPolicy(enabled=False)
        return self._policies.get(bank_id, self._default)

    def admit(self, bank_id: str, turns: Sequence[Turn], actor: str) -> None:
        """Take the write's tokens, or refuse it (RESOURCE_EXHAUSTED naming the limit, audited)."""
        if not self.settings.defences:
            return
        refusal = self.limiter.take(bank_id, [turn.meta.source for turn in turns])
        if refusal is None:
            return
        self.audit.record(
            entry(
                "rate_limit",
                bank_id,
                actor,
                "Retain",
                refusal.reason,
                limit=refusal.limit,
                turns=len(turns),
            )
        )
        log.warning("retain refused by a rate limit", extra={"bank": bank_id, "limit": refusal.limit})
        wait = (
            "" if math.isinf(refusal.retry_after) else f"; retry in {max(refusal.retry_after, 0.001):.3g} s"
        )
        raise ResourceExhausted(f"rate_limit.{refusal.limit}", f"{refusal.reason}{wait}")

    def screen(self, bank_id: str, turns: Sequence[Turn], actor: str) -> GuardedWrite:
        """Screen every turn (pure CPU: callable off the event loop); a refused turn refuses the whole retain
        before anything is written."""
        policy = self.policy(bank_id)
        if not policy.enabled:
            return GuardedWrite(list(turns))
        results = [screen(turn.text, turn.meta.source, policy=policy) for turn in turns]
        for index, (turn, result) in enumerate(zip(turns, results, strict=True)):
            if result.action == REFUSE:
                _, reason = _summary(result)
                field_name = f"turns[{index}].text"
                return GuardedWrite(
                    [],
                    audit=(entry("refuse", bank_id, actor, turn.id, reason, field=field_name),),
                    refused=InvalidArgument(
                        field_name, f"refused by the bank's secret policy: {reason}; nothing was stored"
                    ),
                )
        written: list[Turn] = []
        held: dict[str, common_pb2.Screening] = {}
        screened: list[Screened] = []
        audit: list[common_pb2.AuditEntry] = []
        for turn, result in zip(turns, results, strict=True):
            written.append(replace(turn, text=result.text) if result.text != turn.text else turn)
            if not result.action:
                continue
            kind, reason = _summary(result)
            screened.append(Screened(turn.id, kind, reason, result.action))
            if result.action == QUARANTINE:
                held[turn.id] = common_pb2.Screening(kind=kind, reason=reason, action=QUARANTINE)
            else:
                audit.append(
                    entry(
                        result.action,
                        bank_id,
                        actor,
                        turn.id,
                        reason,
                        kind=kind,
                        source=turn.meta.source.value,
                    )
                )
        return GuardedWrite(written, held, tuple(screened), tuple(audit))

    def screen_update(
        self, bank_id: str, turn_id: str, text: str, source: Source, actor: str
    ) -> GuardedWrite:
        """Screen the new text of an update: redacted as a retain would be; what a retain would hold for
        review or refuse is refused (an update replaces a live memory at once, it cannot wait for review)."""
        policy = self.policy(bank_id)
        result = screen(text, source, policy=policy)
        turn_text = result.text
        if not result.action:
            return GuardedWrite([])
        kind, reason = _summary(result)
        if result.action in (QUARANTINE, REFUSE):
            return GuardedWrite(
                [],
                audit=(entry("refuse", bank_id, actor, turn_id, reason, kind=kind, field="text"),),
                refused=InvalidArgument(
                    "text",
                    f"refused: {reason}; an update replaces a memory at once, so what screening would hold "
                    "for review is refused (retain it as a new turn to have it reviewed)",
                ),
            )
        update = Turn(id=turn_id, session_id="", text=turn_text)
        return GuardedWrite(
            [update],
            screened=(Screened(turn_id, kind, reason, result.action),),
            audit=(entry(result.action, bank_id, actor, turn_id, reason, kind=kind, source=source.value),),
        )
