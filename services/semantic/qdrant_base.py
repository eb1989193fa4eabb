"""What every family of the semantic store shares: the client, the names of one model's collections, the
error mapping, and the reads and payload writes that go over both tiers.

The families (:mod:`~hindsight.semantic.record_tiers`, :mod:`~hindsight.semantic.entity_graph`, and
lineage in :mod:`~hindsight.semantic.lineage_store`) are mixins or subclasses on this base, assembled into
:class:`~hindsight.semantic.store.QdrantVectorStore`. Mixins rather than composed parts: the families
address the same collections through one client (a record's tiers, the graph beside them), lineage
extends the whole store by subclassing it, and callers keep one class with the same methods and no
forwarding layer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, TypeAlias

from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from hindsight.runtime.errors import Unavailable
from hindsight.semantic.edge_client import EdgeClient

QdrantAPI: TypeAlias = AsyncQdrantClient | EdgeClient
"""What the store, its start-up and the reindex talk to: a Qdrant server or local mode, or Qdrant Edge."""

COLD = "_cold"
GRAPH = "_graph"
COMPANIONS = (COLD, GRAPH)
SCROLL_PAGE = 256


@contextlib.contextmanager
def qdrant_errors(target: str) -> Iterator[None]:
    """A Qdrant server that cannot be reached or fails is Unavailable to the caller, not INTERNAL."""
    try:
        yield
    except ResponseHandlingException as exc:
        raise Unavailable(f"qdrant at {target}: {exc}") from exc
    except UnexpectedResponse as exc:
        if exc.status_code is not None and exc.status_code >= 500:
            raise Unavailable(f"qdrant at {target}: HTTP {exc.status_code}") from exc
        raise


class QdrantCollections:
    """One model's collection (the hot tier) and its companions, on any of the engines."""

    def __init__(self, client: QdrantAPI, collection: str, target: str) -> None:
        self._client = client
        self.collection = collection
        self.cold = collection + COLD
        self.graph = collection + GRAPH
        self._target = target

    @property
    def _tiers(self) -> tuple[tuple[str, bool], ...]:
        """(collection, whether it is the cold tier) of both tiers, hot first."""
        return ((self.collection, False), (self.cold, True))

    async def _scroll(
        self, collection: str, selector: models.Filter, with_vectors: bool = False
    ) -> list[models.Record]:
        points: list[models.Record] = []
        offset: Any = None
        while True:
            page, offset = await self._client.scroll(
                collection,
                scroll_filter=selector,
                limit=SCROLL_PAGE,
                offset=offset,
                with_payload=True,
                with_vectors=with_vectors,
            )
            points.extend(page)
            if offset is None:
                return points

    async def _scroll_tiers(
        self, selector: models.Filter, with_vectors: bool = False
    ) -> list[tuple[models.Record, bool]]:
        """Every point ``selector`` picks in either tier, hot first, each with whether it is cold (the
        caller maps Qdrant's errors)."""
        found: list[tuple[models.Record, bool]] = []
        for collection, cold in self._tiers:
            found.extend((point, cold) for point in await self._scroll(collection, selector, with_vectors))
        return found

    async def _set_payload_where(self, selector: models.Filter, payload: dict[str, Any]) -> int:
        """Set ``payload`` on the points ``selector`` picks in both tiers; how many there were."""
        changed = 0
        with qdrant_errors(self._target):
            for collection, _ in self._tiers:
                count = (await self._client.count(collection, count_filter=selector, exact=True)).count
                if count:
                    await self._client.set_payload(
                        collection, payload=payload, points=models.FilterSelector(filter=selector), wait=True
                    )
                changed += count
        return changed
