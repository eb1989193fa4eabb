"""One pass of the corrections bench through the edge's MCP tools, the way an agent would use them.

Each case gets a fresh bank. Its turns are retained one call per turn (with speaker, time, session and
source), then its question is recalled as of the case's ``now``. A corrections case passes when the first
memory holds ``expect`` and not ``reject``; a benign case (the defences' look-alikes) is shown when a
memory holding ``expect`` is among the first ``top_k`` and carries no security flag.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from hindsight.bench.corrections_set import Case, CaseTurn

TOP_K = 3
BENIGN_TOP_K = 5
_ROLES = {"user": "user", "agent": "assistant", "tool": "tool", "external": "tool"}
"""The turn role of a source (outside content arrives as a tool's result)."""


@dataclass(frozen=True)
class Shown:
    """One recalled memory, as much as the bench reads of it."""

    text: str
    flags: tuple[str, ...]
    """"kind: reason" of each security flag; empty when the memory is unflagged."""
    superseded: bool

    @property
    def flagged(self) -> bool:
        return bool(self.flags)


@dataclass(frozen=True)
class Outcome:
    """One case's result."""

    case: Case
    ok: bool
    top: tuple[Shown, ...]
    screened: tuple[str, ...] = ()
    """"action kind: reason" of what write-time screening did to the case's turns."""


def contains(text: str, part: str) -> bool:
    """Whether ``part`` is in ``text``, ignoring case (an empty part never is)."""
    return bool(part) and part.casefold() in text.casefold()


def passed(case: Case, top: Sequence[Shown]) -> bool:
    """The corrections rule: the first memory holds ``expect`` and not ``reject``."""
    if not top:
        return False
    return contains(top[0].text, case.expect) and not contains(top[0].text, case.reject)


def shown(case: Case, top: Sequence[Shown], top_k: int = BENIGN_TOP_K) -> bool:
    """The benign rule: an unflagged memory holding ``expect`` among the first ``top_k``."""
    return any(contains(m.text, case.expect) and not m.flagged for m in top[:top_k])


class McpSession:
    """The edge's ``retain`` and ``recall`` tools through the official MCP client."""

    def __init__(self, client: Any) -> None:
        self._client = client

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A tool's structured result; a tool error is a RuntimeError naming the tool."""
        result = await self._client.call_tool(tool, arguments)
        if result.is_error:
            raise RuntimeError(f"MCP {tool} failed: {result.content}")
        return dict(result.structured_content or {})

    async def retain(self, bank: str, turn: CaseTurn, turn_id: str) -> list[str]:
        """Store one turn; what screening did to it."""
        arguments = {
            "bank": bank,
            "session_id": turn.session,
            "turns": [
                {
                    "id": turn_id,
                    "text": turn.text,
                    "speaker": turn.speaker,
                    "role": _ROLES[turn.source],
                    "source": turn.source,
                    "time": turn.time.isoformat(),
                }
            ],
        }
        reply = await self.call("retain", arguments)
        return [f"{s.get('action')} {s.get('kind')}: {s.get('reason')}" for s in reply.get("screened", [])]

    async def recall(self, bank: str, case: Case, top_k: int) -> tuple[Shown, ...]:
        """The case's question as of its ``now``: the memories, best first."""
        reply = await self.call(
            "recall", {"bank": bank, "query": case.question, "top_k": top_k, "now": case.now.isoformat()}
        )
        return tuple(
            Shown(
                text=str(m.get("text", "")),
                flags=tuple(f"{f.get('kind')}: {f.get('reason')}" for f in m.get("flags") or ()),
                superseded=bool(m.get("superseded_by")),
            )
            for m in reply.get("memories", [])
        )


@contextlib.asynccontextmanager
async def mcp_session(url: str, token: str) -> AsyncIterator[McpSession]:
    """A connected MCP session on ``url`` that presents ``token``."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"authorization": f"Bearer {token}"} if token else {}
    timeout = httpx2.Timeout(60.0, read=300.0)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield McpSession(client)


async def run_case(session: McpSession, case: Case, run_id: str, benign: bool = False) -> Outcome:
    """Retain the case's turns one by one into a fresh bank, recall, score."""
    bank = f"corr-{run_id}-" + hashlib.sha256(case.id.encode()).hexdigest()[:12]
    screened: list[str] = []
    for index, turn in enumerate(case.turns):
        screened += await session.retain(bank, turn, f"{run_id}-{index}")
    top = await session.recall(bank, case, BENIGN_TOP_K if benign else TOP_K)
    ok = shown(case, top) if benign else passed(case, top)
    return Outcome(case, ok, top, tuple(screened))


async def run_pass(
    url: str, token: str, cases: Sequence[Case], run_id: str, benign: bool = False, progress: bool = False
) -> list[Outcome]:
    """Every case through one edge's MCP endpoint, in order."""
    outcomes: list[Outcome] = []
    async with mcp_session(url, token) as session:
        for number, case in enumerate(cases, start=1):
            outcome = await run_case(session, case, run_id, benign)
            outcomes.append(outcome)
            if progress:
                mark = "ok" if outcome.ok else "FAIL"
                print(f"[corrections] {number}/{len(cases)} {case.id} {mark}", file=sys.stderr, flush=True)
    return outcomes


def _share(hits: int, cases: int) -> dict[str, Any]:
    return {"cases": cases, "passed": hits, "rate": round(hits / cases, 4) if cases else None}


def tally(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Passed of all, by kind, by language, and by kind and language."""
    by_kind: dict[str, list[Outcome]] = {}
    by_lang: dict[str, list[Outcome]] = {}
    by_both: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        by_kind.setdefault(outcome.case.kind, []).append(outcome)
        by_lang.setdefault(outcome.case.lang, []).append(outcome)
        by_both.setdefault(f"{outcome.case.kind}/{outcome.case.lang}", []).append(outcome)

    def count(group: Sequence[Outcome]) -> dict[str, Any]:
        return _share(sum(o.ok for o in group), len(group))

    return {
        "cases": len(outcomes),
        "passed": sum(o.ok for o in outcomes),
        "by_kind": {name: count(group) for name, group in sorted(by_kind.items())},
        "by_lang": {name: count(group) for name, group in sorted(by_lang.items())},
        "by_kind_lang": {name: count(group) for name, group in sorted(by_both.items())},
    }


def detail(outcome: Outcome) -> dict[str, Any]:
    """One outcome for the JSON's ``outcomes`` list."""
    return {
        "id": outcome.case.id,
        "kind": outcome.case.kind,
        "lang": outcome.case.lang,
        "ok": outcome.ok,
        "expect": outcome.case.expect,
        "reject": outcome.case.reject,
        "top": [
            "".join(f"[{flag[:90]}] " for flag in m.flags)
            + f"{'[superseded] ' if m.superseded else ''}{m.text[:120]}"
            for m in outcome.top
        ],
        "screened": list(outcome.screened),
    }
