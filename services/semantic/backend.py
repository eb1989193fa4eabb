"""Which engine holds the vectors, chosen by settings, and opening the store on it.

A Qdrant server when ``QDRANT_URL`` is set (compose, Kubernetes); otherwise an engine in process: Qdrant
Edge by default, or qdrant-client's local mode (the previous default, which scans every point; kept as the
stand-in for the server API in tests and as the baseline of ``hindsight bench scale``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

from qdrant_client import AsyncQdrantClient

from hindsight.runtime.errors import FailedPrecondition
from hindsight.semantic.collection_setup import active_alias, open_active
from hindsight.semantic.edge_client import EdgeClient
from hindsight.semantic.lineage_store import QdrantSemanticStore
from hindsight.semantic.migrate_local import edge_root, migrate_local_mode
from hindsight.semantic.qdrant_base import QdrantAPI, qdrant_errors
from hindsight.semantic.records import ModelIdentity
from hindsight.semantic.settings import SemanticSettings

log = logging.getLogger(__name__)


def uses_edge(settings: SemanticSettings) -> bool:
    """Whether the vectors live in Qdrant Edge (no server URL, and the backend is not local mode)."""
    if settings.qdrant_backend not in {"edge", "local"}:
        raise FailedPrecondition(
            f"HINDSIGHT_QDRANT_BACKEND must be 'edge' or 'local', not {settings.qdrant_backend!r}"
        )
    return not settings.qdrant_url and settings.qdrant_backend == "edge"


def indexed(settings: SemanticSettings) -> bool:
    """Whether collections get payload indexes: every engine but local mode, which ignores them."""
    return bool(settings.qdrant_url) or uses_edge(settings)


def connect(settings: SemanticSettings) -> QdrantAPI:
    """The server when ``QDRANT_URL`` is set; else Qdrant Edge (or local mode) in a directory.

    Edge with no directory works in a scratch one, removed when the client closes (tests only). A local-mode
    directory from before Edge was the default is carried over on the first Edge start.
    """
    if settings.qdrant_url:
        return AsyncQdrantClient(
            url=settings.qdrant_url, api_key=settings.qdrant_api_key or None, timeout=settings.qdrant_timeout
        )
    if uses_edge(settings):
        if not settings.qdrant_path:
            return EdgeClient.scratch()
        return EdgeClient(edge_root(Path(settings.qdrant_path)))
    if settings.qdrant_path:
        return AsyncQdrantClient(path=settings.qdrant_path)
    return AsyncQdrantClient(location=":memory:")


def target_of(settings: SemanticSettings) -> str:
    """Where the vectors are, for messages."""
    engine = "edge" if uses_edge(settings) else "local"
    return settings.qdrant_url or f"{engine}:{settings.qdrant_path or 'scratch'}"


@contextlib.asynccontextmanager
async def open_vector_store(
    settings: SemanticSettings, model: ModelIdentity
) -> AsyncIterator[QdrantSemanticStore]:
    """Open Qdrant and check that the active collection holds ``model``'s vectors.

    The store reads and writes through the active alias, so a reindex that switches it (on a Qdrant
    server, while this layer runs) is followed at once.
    """
    if uses_edge(settings) and settings.qdrant_path:
        await migrate_local_mode(Path(settings.qdrant_path))
    client = connect(settings)
    target = target_of(settings)
    try:
        with qdrant_errors(target):
            collection = await open_active(client, settings.collection_prefix, model, indexed(settings))
        log.info("active collection", extra={"collection": collection, "model": model.name, "store": target})
        yield QdrantSemanticStore(client, active_alias(settings.collection_prefix), target)
    finally:
        await client.close()
