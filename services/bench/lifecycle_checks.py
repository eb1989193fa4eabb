"""The invariants of ``hindsight bench lifecycle``, checked against every surface a user can read.

After each step, for the banks it touched: no word only purged records carried is found in the bank's
listing (archived included), episodes, review queue, entities and entity pages, semantic review items,
lessons, working memory windows or the console's views; the live and archived turns and the held-back
count are exactly the model's; each decision reached the audit log. Then, once the outbox is drained
(bounded): the console's counts match, the working windows hold the turns retained into them, the
touched live turns are found by meaning and on their person's entity page, the touched purged ones by
no layer's recall, and every current value is one a live turn states. At the end of a sequence the
same, for everything, plus the bank's export; an import is checked against its export.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import grpc

from hindsight.bench.lifecycle_model import GONE, HELD, KEPT, LIVE, BankModel
from hindsight.bench.lifecycle_probe import CALL_TIMEOUT, LAYERS, Probe
from hindsight.bench.lifecycle_tally import (
    COUNTS_DISAGREE,
    CURRENT_WITHOUT_SOURCE,
    EXPORT_ROUND_TRIP,
    HELD_RECALLED,
    LIVE_FACT_MISSING,
    LIVE_MISSING_BY_ID,
    LIVE_MISSING_BY_MEANING,
    LIVE_MISSING_FROM_ENTITY_PAGE,
    NOT_AUDITED,
    PURGED_FINDABLE,
    SUPERSEDED_CURRENT,
    TWO_CURRENT_VALUES,
    WINDOW_MISSING_TURN,
)
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.memory.v1 import memory_pb2
from hindsight.contracts.working.v1 import working_pb2

if TYPE_CHECKING:
    from hindsight.bench.lifecycle_steps import Example

MENTIONS = 50
"""Mentions read from one entity page (a person of more live turns than this is not checked for each)."""
FULL_CHECK_LIMIT = 40
"""At the end of a sequence, at most this many live (and as many purged) turns are recalled one by one."""
PARTIAL_RETRIES = 2
"""Times a recall that came back partial (a layer past its deadline) is asked again before it counts."""
AUDIT_WAIT = 5.0
"""Seconds a decision's audit entry may take to appear (the edge writes it in the background)."""


ROUND_TRIP_LOOSE = frozenset({"audit"})
"""Kinds whose count may differ after a round trip (an import writes audit entries of its own)."""
ROUND_TRIP_EXACT = frozenset({"turn", "quarantined"})
"""Kinds whose records must come back equal (ids, text, times and links included)."""
ROUND_TRIP_IGNORED_KEYS = frozenset({"bank_id", "recorded_at", "quarantined_at", "archived_at"})
"""Keys that name the bank or the time of the write, documented as differing after an import."""


def _records(export: str, bank: str) -> dict[str, list[str]]:
    """An export's records by kind, each as canonical JSON with the bank's name and write times left out."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ROUND_TRIP_IGNORED_KEYS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value.replace(bank, "<bank>") if isinstance(value, str) else value

    found: dict[str, list[str]] = {}
    for line in export.splitlines()[1:]:
        if line.strip():
            record = json.loads(line)
            kind = str(record.get("kind", ""))
            if kind != "end":
                found.setdefault(kind, []).append(json.dumps(strip(record), sort_keys=True))
    return {kind: sorted(records) for kind, records in found.items()}


def _first_missing(records: list[str], among: list[str]) -> list[str]:
    """The first of `records` not found in `among` (as a list, empty when every one is there)."""
    present = set(among)
    return [r for r in records if r not in present][:1]


class Checks(Probe):
    """Compares what the mesh shows with the model and reports each difference to the tally."""

    async def check_bank(self, example: Example, bank: BankModel, with_export: bool) -> None:
        """Purged words on no surface; listings and counts exactly the model's."""
        forbidden = bank.forbidden_words()
        for surface, text in (await self.surfaces(bank, with_export)).items():
            for word in sorted(forbidden):
                if word in text:
                    at = text.index(word)
                    self.report(
                        example,
                        PURGED_FINDABLE,
                        f"{bank.bank}/{surface}:{word}",
                        f"bank {bank.bank}: {surface} shows purged word {word!r}: "
                        f"…{text[max(0, at - 120) : at + 80]}…",
                    )
        live = {t.id for t in bank.in_state(LIVE)}
        kept = {t.id for t in bank.in_state(*KEPT)}
        listed = await self._listed(bank.bank, archived=False)
        listed_all = await self._listed(bank.bank, archived=True)
        for turn_id in sorted(live - set(listed)):
            self.report(example, LIVE_MISSING_BY_ID, f"{bank.bank}/{turn_id}", "live turn not in ListRecent")
        if set(listed) != live or len(listed) != len(set(listed)):
            self.report(
                example,
                COUNTS_DISAGREE,
                f"{bank.bank}:live:{len(listed)}:{len(live)}",
                f"ListRecent lists {sorted(listed)}; the model's live turns are {sorted(live)}",
            )
        if set(listed_all) != kept:
            self.report(
                example,
                COUNTS_DISAGREE,
                f"{bank.bank}:kept:{len(listed_all)}:{len(kept)}",
                f"ListRecent(include_archived) lists {sorted(listed_all)}; the model keeps {sorted(kept)}",
            )
        if live:
            got = await self.layer_call(
                self.episodic,
                "GetTurns",
                episodic_pb2.GetTurnsRequest(bank_id=bank.bank, turn_ids=sorted(live)),
            )
            for turn_id in sorted(live - {t.id for t in got.turns}):
                self.report(
                    example,
                    LIVE_MISSING_BY_ID,
                    f"{bank.bank}/{turn_id}",
                    "live turn not returned by GetTurns",
                )
        queue = await self.memory.ListQuarantine(
            memory_pb2.ListQuarantineRequest(bank_id=bank.bank),
            metadata=self.admin_metadata,
            timeout=CALL_TIMEOUT,
        )
        held = len(bank.in_state(HELD))
        if queue.pending_count != held:
            self.report(
                example,
                COUNTS_DISAGREE,
                f"{bank.bank}:held:{queue.pending_count}:{held}",
                f"the review queue has {queue.pending_count} pending; the model holds {held}",
            )

    async def check_settled(self, example: Example, bank: BankModel) -> None:
        """After quiescence: the console's counts are the listings' and the model's; the working windows
        hold the turns retained into them."""
        await self._check_windows(example, bank)
        live, kept = bank.in_state(LIVE), bank.in_state(*KEPT)
        await self._entities(bank.bank)
        self.review_count = len(await self.review_items(bank.bank))
        counts = await self.console_read(bank.bank, "counts")
        if counts:
            shown = json.loads(counts)
            episodic, semantic = shown.get("episodic", {}), shown.get("semantic", {})
            expected = {
                "turns": len(live),
                "turns_with_archived": len(kept),
                "entities": self.entity_count,
                "open_reviews": self.review_count,
            }
            said = {key: int({**episodic, **semantic}.get(key, -1)) for key in expected}
            if said != expected:
                self.report(
                    example,
                    COUNTS_DISAGREE,
                    f"{bank.bank}:console:{sorted(said.items())}",
                    f"the console counts {said}; the model and the listings say {expected}",
                )

    async def _check_windows(self, example: Example, bank: BankModel) -> None:
        for session in sorted({t.session for t in bank.turns.values() if t.windowed}):
            window = await self.layer_call(
                self.working, "GetWindow", working_pb2.GetWindowRequest(bank_id=bank.bank, session_id=session)
            )
            held = {turn.id for turn in window.turns}
            for turn in bank.turns.values():
                if turn.windowed and turn.session == session and turn.id not in held:
                    self.report(
                        example,
                        WINDOW_MISSING_TURN,
                        f"{bank.bank}/{turn.id}",
                        f"session {session}'s window holds {sorted(held)}",
                    )

    async def check_audited(self, example: Example, kind: str, before: int) -> None:
        """The step's decisions reached the audit log (written in the background: waited for, bounded)."""
        deadline = time.monotonic() + AUDIT_WAIT
        while True:
            after = await self.audit_count(example.banks)
            if after > before or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
        if after <= before:
            self.report(
                example,
                NOT_AUDITED,
                kind,
                f"{kind} left the audit log of the sequence's banks at {after} entries (before: {before})",
            )

    def check_round_trip(self, example: Example, source: str, copy: str, first: str, second: str) -> None:
        """The copy's export against the source's: the same records but for the documented differences."""
        a, b = _records(first, source), _records(second, copy)
        for kind in sorted(set(a) | set(b)):
            if kind in ROUND_TRIP_LOOSE:
                continue
            left, right = a.get(kind, []), b.get(kind, [])
            if len(left) != len(right):
                self.report(
                    example,
                    EXPORT_ROUND_TRIP,
                    f"{kind}:count",
                    f"{source} exports {len(left)} {kind} records, its imported copy {len(right)}; "
                    f"only in the source: {_first_missing(left, right)}; "
                    f"only in the copy: {_first_missing(right, left)}",
                )
            elif kind in ROUND_TRIP_EXACT and left != right:
                missing = _first_missing(left, right)
                self.report(
                    example,
                    EXPORT_ROUND_TRIP,
                    f"{kind}:records",
                    f"{kind} records differ after the round trip; first one not found again: {missing}",
                )

    async def check_recalls(self, example: Example, bank: BankModel, turn_ids: Iterable[str]) -> None:
        """Live turns found by their own text; purged ones by no layer; replaced values not current."""
        forbidden, held_words = bank.forbidden_words(), bank.held_words()
        for turn_id in turn_ids:
            turn = bank.turns.get(turn_id)
            if turn is None:
                continue
            if turn.state == LIVE and not turn.claim:
                continue  # an outside report contradicting the bank is ranked down on purpose (poisoning)
            if turn.state == LIVE:
                for _ in range(1 + PARTIAL_RETRIES):  # a layer past its deadline on a loaded machine: again
                    reply = await self._recall(bank.bank, turn.text)
                    self._check_memories(example, bank, reply, forbidden, held_words, "recall")
                    if not reply.partial:
                        break
                if not any(m.id == turn.id or turn.id in m.meta.source_turn_ids for m in reply.memories):
                    late = [memory_pb2.Layer.Name(r.layer) for r in reply.layer_reports if not r.ok]
                    self.report(
                        example,
                        LIVE_MISSING_BY_MEANING,
                        f"{bank.bank}/{turn.id}",
                        f"recall of its own text {turn.text!r} returned {[m.id for m in reply.memories]}"
                        + (f" (partial: layers {late} did not answer)" if reply.partial else ""),
                    )
            elif turn.state == GONE and set(turn.words) & forbidden:
                for layer in LAYERS:
                    reply = await self._recall(bank.bank, turn.text, [layer])
                    self._check_memories(
                        example, bank, reply, forbidden, held_words, memory_pb2.Layer.Name(layer)
                    )
        await self._check_current_values(example, bank)

    def _check_memories(
        self,
        example: Example,
        bank: BankModel,
        reply: memory_pb2.RecallResponse,
        forbidden: set[str],
        held_words: set[str],
        where: str,
    ) -> None:
        stated = {p for places in bank.live_places().values() for p in places}
        replaced = {p.lower() for places in bank.superseded_places().values() for p in places} - stated
        for memory in reply.memories:
            text = (memory.text + " " + " ".join(memory.meta.tags)).lower()
            for word in forbidden:
                if word in text:
                    self.report(
                        example,
                        PURGED_FINDABLE,
                        f"{bank.bank}/{where}:{word}",
                        f"bank {bank.bank}: recall ({where}) returned {memory.kind} {memory.id}: "
                        f"{memory.text[:200]!r}",
                    )
            for word in held_words:
                if word in text:
                    self.report(
                        example,
                        HELD_RECALLED,
                        f"{bank.bank}/{where}:{word}",
                        f"bank {bank.bank}: {memory.id}: {memory.text[:200]!r}",
                    )
            if not memory.superseded_by and any(f" in {place}" in text for place in replaced):
                self.report(
                    example,
                    SUPERSEDED_CURRENT,
                    f"{bank.bank}/{memory.id}",
                    f"recall returned replaced text as current: {memory.kind} {memory.text[:200]!r}",
                )

    async def _check_current_values(self, example: Example, bank: BankModel) -> None:
        replaced = bank.superseded_places()
        for name in sorted({t.name for t in bank.in_state(*KEPT) if t.name}):
            about = sorted(t.id for t in bank.in_state(LIVE) if t.name == name)
            try:
                page = await self.memory.GetEntityPage(
                    memory_pb2.GetEntityPageRequest(bank_id=bank.bank, entity=name, mention_limit=MENTIONS),
                    metadata=self.agent_metadata,
                    timeout=CALL_TIMEOUT,
                )
            except grpc.aio.AioRpcError as exc:
                if exc.code() != grpc.StatusCode.NOT_FOUND:
                    raise
                for turn_id in about:
                    self.report(
                        example,
                        LIVE_MISSING_FROM_ENTITY_PAGE,
                        f"{bank.bank}/{turn_id}",
                        f"no entity page for {name} ({exc.code().name}: {exc.details()})",
                    )
                continue
            mentioned = {mention.id for mention in page.mentions}
            if len(about) <= MENTIONS and len(page.mentions) < MENTIONS:
                for turn_id in sorted(set(about) - mentioned):
                    self.report(
                        example,
                        LIVE_MISSING_FROM_ENTITY_PAGE,
                        f"{bank.bank}/{turn_id}",
                        f"the entity page of {name} lists mentions {sorted(mentioned)}",
                    )
            current = {
                fact.value.lower()
                for fact in page.facts
                if fact.attribute == "lives_in"
                and not fact.superseded_by
                and not fact.HasField("valid_to")  # current, as the semantic layer counts it
                and fact.subject.lower() == name.lower()
            }
            backed = bank.live_places().get(name.lower(), set())
            stale = current & ({p.lower() for p in replaced.get(name.lower(), set())} - backed)
            if stale:
                self.report(
                    example,
                    SUPERSEDED_CURRENT,
                    f"{bank.bank}/{name}:{sorted(stale)}",
                    f"entity page of {name}: replaced place(s) {sorted(stale)} still current; "
                    f"current: {sorted(current)}",
                )
            unbacked = current - backed - stale
            if unbacked:
                self.report(
                    example,
                    CURRENT_WITHOUT_SOURCE,
                    f"{bank.bank}/{name}:{sorted(unbacked)}",
                    f"entity page of {name}: current place(s) {sorted(unbacked)} no live turn states; "
                    f"live turns say {sorted(backed)}",
                )
            agreed = bank.agreed_places().get(name.lower())
            if agreed is not None and agreed not in current:
                self.report(
                    example,
                    LIVE_FACT_MISSING,
                    f"{bank.bank}/{name}:{agreed}",
                    f"every live turn about {name} says {agreed}; the page's current: {sorted(current)}",
                )
            if len(current) > 1:
                self.report(
                    example,
                    TWO_CURRENT_VALUES,
                    f"{bank.bank}/{name}",
                    f"entity page of {name}: lives_in has {len(current)} current values {sorted(current)}",
                )

    async def check_step(self, example: Example, touched: set[tuple[str, str]]) -> None:
        banks = sorted({bank for bank, _ in touched} | set(example.banks[:1]))
        for bank_id in banks:
            await self.check_bank(example, example.model.bank(bank_id), with_export=False)
        if not touched:
            return
        await self.settle(example)
        for bank_id in banks:
            ids = sorted(turn_id for bank, turn_id in touched if bank == bank_id)
            await self.check_settled(example, example.model.bank(bank_id))
            await self.check_recalls(example, example.model.bank(bank_id), ids)

    async def check_all(self, example: Example) -> None:
        await self.settle(example)
        for bank_id in example.banks:
            bank = example.model.bank(bank_id)
            await self.check_bank(example, bank, with_export=True)
            await self.check_settled(example, bank)
            live = sorted(t.id for t in bank.in_state(LIVE))[:FULL_CHECK_LIMIT]
            gone = sorted(t.id for t in bank.in_state(GONE))[:FULL_CHECK_LIMIT]
            await self.check_recalls(example, bank, [*live, *gone])
