"""The load of the fault scenarios: agents that retain and recall about once a second each, over gRPC.

Every retain the edge acknowledged is recorded (bank, turn id, text, when), so that the scenario can look
for each one afterwards, by id and by meaning. Errors are counted by operation and kind; an error while
the edge itself is down is counted apart (``edge_down_errors``): a client cannot reach a dead edge.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from hindsight.client import AsyncMemoryClient, Turn
from hindsight.client.errors import HindsightError

RETAIN_TIMEOUT = 30.0
RECALL_TIMEOUT = 10.0
SESSION = "faults"

_WHO = (
    "Ada",
    "Bruno",
    "Chiara",
    "Dmitri",
    "Elif",
    "Farid",
    "Greta",
    "Hiro",
    "Ines",
    "Jonas",
    "Kemal",
    "Lena",
)
_DID = (
    "repaired the {thing} beside the {place}",
    "booked a table for {count} people near the {place}",
    "lost the {thing} somewhere around the {place}",
    "painted the {thing} a bright shade of {colour}",
    "ordered {count} boxes of {food} for the {place}",
    "photographed a {colour} heron at the {place}",
    "borrowed a {thing} from the neighbour at the {place}",
    "planted {count} rows of {food} behind the {place}",
    "taught a workshop on {topic} at the {place}",
    "wrote a long letter about {topic} from the {place}",
    "cancelled the {topic} meeting at the {place}",
    "sold an old {colour} {thing} at the {place}",
)
_THING = ("bicycle", "kettle", "telescope", "accordion", "umbrella", "lantern", "sewing machine", "canoe")
_PLACE = ("harbour", "library", "bakery", "train station", "orchard", "museum", "lighthouse", "market hall")
_COLOUR = ("crimson", "teal", "ochre", "violet", "amber", "silver", "olive", "coral")
_FOOD = ("leeks", "apricots", "basil", "chestnuts", "lentils", "quinces", "fennel", "radishes")
_TOPIC = ("beekeeping", "tax forms", "glassblowing", "chess openings", "bridge design", "soil chemistry")


def sentence(rng: random.Random, serial: int) -> str:
    """A short, varied first-person-free statement; ``serial`` keeps every one distinct."""
    did = rng.choice(_DID).format(
        thing=rng.choice(_THING),
        place=rng.choice(_PLACE),
        colour=rng.choice(_COLOUR),
        food=rng.choice(_FOOD),
        topic=rng.choice(_TOPIC),
        count=rng.randint(2, 40),
    )
    return f"{rng.choice(_WHO)} {did} (note {serial})."


@dataclass(frozen=True)
class Ack:
    """A retain the edge acknowledged."""

    bank: str
    turn_id: str
    text: str
    asked: float
    """``time.monotonic()`` when the retain was sent."""
    at: float
    """``time.monotonic()`` when the acknowledgement arrived."""


@dataclass
class Tally:
    """What the agents did and what went wrong."""

    retains: int = 0
    recalls: int = 0
    retain_errors: int = 0
    recall_errors: int = 0
    recall_partial: int = 0
    edge_down_errors: int = 0
    error_kinds: Counter[str] = field(default_factory=Counter)
    acknowledged: list[Ack] = field(default_factory=list)


@dataclass(frozen=True)
class LoadPlan:
    """How hard the agents push."""

    agents: int = 8
    rate: float = 1.0
    """Operations per second of each agent."""
    recall_share: float = 0.7
    """Share of operations that are recalls (the rest retain one turn)."""


class FaultLoad:
    """``agents`` clients of the edge at ``address``, each on its own bank, until ``stop`` is set."""

    def __init__(
        self,
        address: str,
        token: str,
        plan: LoadPlan,
        run_id: str,
        edge_down: Callable[[], bool] = lambda: False,
    ) -> None:
        self.address = address
        self.token = token
        self.plan = plan
        self.run_id = run_id
        self.edge_down = edge_down
        self.tally = Tally()

    def banks(self) -> list[str]:
        return [f"faults-{self.run_id}-{index}" for index in range(self.plan.agents)]

    async def run(self, stop: asyncio.Event) -> Tally:
        await asyncio.gather(*(self._agent(index, bank, stop) for index, bank in enumerate(self.banks())))
        return self.tally

    def _failed(self, operation: str, error: HindsightError, down: bool) -> None:
        self.tally.error_kinds[f"{operation}:{type(error).__name__}"] += 1
        if down:
            self.tally.edge_down_errors += 1
        elif operation == "retain":
            self.tally.retain_errors += 1
        else:
            self.tally.recall_errors += 1

    async def _agent(self, index: int, bank: str, stop: asyncio.Event) -> None:
        rng = random.Random(f"{self.run_id}-{index}")
        mine: list[str] = []
        serial = 0
        period = 1.0 / self.plan.rate
        await asyncio.sleep(rng.uniform(0, period))  # agents do not all ask at the same instant
        async with AsyncMemoryClient(self.address, token=self.token, timeout=RECALL_TIMEOUT) as client:
            while not stop.is_set():
                began = time.monotonic()
                down = self.edge_down()
                if mine and rng.random() < self.plan.recall_share:
                    try:
                        reply = await client.recall(bank, rng.choice(mine), top_k=5)
                    except HindsightError as error:
                        self._failed("recall", error, down or self.edge_down())
                    else:
                        self.tally.recall_partial += reply.partial
                    self.tally.recalls += 1
                else:
                    serial += 1
                    text = sentence(rng, serial)
                    turn_id = f"{bank}-t{serial}"
                    try:
                        await client.retain(
                            bank, Turn(text, session_id=SESSION, id=turn_id), timeout=RETAIN_TIMEOUT
                        )
                    except HindsightError as error:
                        self._failed("retain", error, down or self.edge_down())
                    else:
                        self.tally.acknowledged.append(Ack(bank, turn_id, text, began, time.monotonic()))
                        mine.append(text)
                    self.tally.retains += 1
                wait = period * rng.uniform(0.8, 1.2) - (time.monotonic() - began)
                if wait > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), wait)
