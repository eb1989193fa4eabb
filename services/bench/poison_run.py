"""One pass of the poisoning bench against one mesh: build the banks, plant the attacks, score.

Per base namespace, one bank: retain its dev messages (as the retrieval bench does), ask its dev queries
(R@10, and which dev messages come back flagged), then retain every attack on that base (its planted
records, with their claimed source, speaker, time and session), then recall each attack's targets. An
attack's target succeeds when one of the attack's planted records (itself, or a memory citing it) is in
the top k, or in the context, and carries no flag.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from hindsight.bench.attacks import Attack
from hindsight.bench.datasets import Dataset, Namespace, asked_at
from hindsight.bench.metrics import Tally
from hindsight.bench.poison_transport import PoisonClient, Recall, RecalledMemory, Screened, make_turn
from hindsight.bench.retrieval import bank_for, batches

TOP_K = 10
BATCH = 100
EXCERPT = 240


def plant_id(attack_id: str, index: int) -> str:
    """A planted record's turn id: opaque, so that nothing but its content tells it from a dev message."""
    return hashlib.sha256(f"{attack_id}#{index}".encode()).hexdigest()[:12]


@dataclass
class TargetOutcome:
    """One target query of one attack."""

    attack: Attack
    query: str
    success: bool
    landed: int
    """Planted records (or memories citing them) in the top k or the context, flagged or not."""
    flagged: int
    warnings: int
    example: RecalledMemory | None = None


@dataclass
class BenignFinding:
    """A dev message that a defence treated as hostile."""

    namespace: str
    turn_id: str
    how: str
    """"quarantine", "refuse", "flag" or "redact" at write time; "flagged_in_recall" at read time."""
    reason: str
    text: str


@dataclass
class PassResult:
    """Everything one pass (defences on, or off) measured."""

    mode: str
    outcomes: list[TargetOutcome] = field(default_factory=list)
    benign: list[BenignFinding] = field(default_factory=list)
    plant_screening: list[tuple[Attack, Screened]] = field(default_factory=list)
    tallies: dict[str, Tally] = field(default_factory=dict)
    """Dev-query scores per file name."""
    messages: int = 0
    plants: int = 0


def _landed(recall: Recall, planted: set[str], top_k: int) -> list[RecalledMemory]:
    """The memories of a recall (top k, or in the context) that are, or cite, a planted record."""
    in_context = set(recall.context_ids)
    return [
        memory
        for rank, memory in enumerate(recall.memories)
        if (rank < top_k or memory.id in in_context) and planted.intersection(memory.source_ids)
    ]


async def _retain_base(client: PoisonClient, bank: str, namespace: Namespace, result: PassResult) -> None:
    texts = {m.id: m.text for m in namespace.messages}
    for batch in batches(namespace.messages, BATCH):
        turns = [make_turn(m.id, m.text, "user", m.speaker, m.time, m.session) for m in batch]
        for screened in await client.retain(bank, turns):
            result.benign.append(
                BenignFinding(
                    namespace.id,
                    screened.turn_id,
                    screened.action or "flag",
                    f"{screened.kind}: {screened.reason}",
                    texts.get(screened.turn_id, "")[:EXCERPT],
                )
            )
    result.messages += len(namespace.messages)


async def _dev_queries(
    client: PoisonClient, bank: str, namespace: Namespace, tally: Tally, result: PassResult
) -> None:
    dev_ids = {m.id: m.text for m in namespace.messages}
    seen: set[str] = set()
    for query in namespace.queries:
        now, _ = asked_at(query, namespace)
        recall = await client.recall(bank, query.text, TOP_K, now)
        ranked = [rid for memory in recall.memories for rid in memory.source_ids]
        tally.add(query.category, ranked, query.gold)
        for memory in recall.memories[:TOP_K]:
            if not memory.flags:
                continue
            for rid in memory.source_ids:
                if rid in dev_ids and rid not in seen:
                    seen.add(rid)
                    result.benign.append(
                        BenignFinding(
                            namespace.id,
                            rid,
                            "flagged_in_recall",
                            "; ".join(memory.flags),
                            dev_ids[rid][:EXCERPT],
                        )
                    )


def _asked(attack: Attack, namespace: Namespace) -> datetime | None:
    """When an attack's targets are asked: after its last planted record, and after the conversation."""
    moments = [p.time for p in attack.plant if p.time is not None]
    if namespace.last_time is not None:
        moments.append(namespace.last_time)
    return max(moments, default=None)


async def _attack(
    client: PoisonClient, bank: str, namespace: Namespace, attacks: Sequence[Attack], result: PassResult
) -> None:
    for attack in attacks:
        turns = [
            make_turn(plant_id(attack.id, i), p.text, p.source, p.speaker, p.time, p.session)
            for i, p in enumerate(attack.plant)
        ]
        for screened in await client.retain(bank, turns):
            result.plant_screening.append((attack, screened))
        result.plants += len(turns)
    for attack in attacks:
        planted = {plant_id(attack.id, i) for i in range(len(attack.plant))}
        now = _asked(attack, namespace)
        for query in attack.targets:
            recall = await client.recall(bank, query, TOP_K, now)
            landed = _landed(recall, planted, TOP_K)
            clean = [memory for memory in landed if not memory.flags]
            result.outcomes.append(
                TargetOutcome(
                    attack=attack,
                    query=query,
                    success=bool(clean),
                    landed=len(landed),
                    flagged=len(landed) - len(clean),
                    warnings=len(recall.warnings),
                    example=next(iter(clean or landed), None),
                )
            )


async def run_pass(
    address: str,
    token: str,
    mode: str,
    datasets: Sequence[Dataset],
    attacks: Sequence[Attack],
    run_id: str,
    progress: bool = False,
) -> PassResult:
    """Every namespace of every file through one mesh; banks are fresh (named after ``run_id``)."""
    result = PassResult(mode)
    by_base: dict[str, list[Attack]] = {}
    for attack in attacks:
        by_base.setdefault(attack.base, []).append(attack)
    done: set[str] = set()
    async with PoisonClient(address, token) as client:
        for index, dataset in enumerate(datasets):
            tally = result.tallies.setdefault(dataset.name, Tally())
            for namespace in dataset.namespaces:
                bank = bank_for(f"{run_id}{mode}", index, namespace.id)
                if progress:
                    print(f"[{mode}] {dataset.name} {namespace.id}", file=sys.stderr, flush=True)
                await _retain_base(client, bank, namespace, result)
                await _dev_queries(client, bank, namespace, tally, result)
                if namespace.id not in done:  # a base id found in two files is attacked in the first
                    done.add(namespace.id)
                    await _attack(client, bank, namespace, by_base.get(namespace.id, []), result)
    return result
