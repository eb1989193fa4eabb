"""Carry a local-mode vector directory over to Qdrant Edge, once, on the first start that uses Edge.

Before Edge was the embedded default, ``HINDSIGHT_QDRANT_PATH`` held qdrant-client's local-mode files
(``meta.json`` and ``collection/<name>/``). Edge keeps its shards in ``<path>/edge/``. The carry-over
copies every collection (vectors, payloads, the model identity in its metadata) and the aliases into a
scratch ``edge.migrating/``, checks the counts, and only then renames it to ``edge/`` in one step: a
crash half-way leaves the local files as they were and the next start begins again. The local files are
then moved into ``local-mode-backup/`` (kept, never deleted: the user removes them when satisfied).
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

from qdrant_client import AsyncQdrantClient, models

from hindsight.runtime.errors import FailedPrecondition
from hindsight.semantic.collection_setup import graph_indexes, record_indexes
from hindsight.semantic.edge_client import EdgeClient
from hindsight.semantic.qdrant_base import GRAPH

log = logging.getLogger(__name__)

EDGE_DIR = "edge"
MIGRATING_DIR = "edge.migrating"
BACKUP_DIR = "local-mode-backup"
LOCAL_FILES = ("meta.json", "collection", ".lock")
PAGE = 512


def edge_root(path: Path) -> Path:
    """Where Edge keeps its shards inside a vector directory."""
    return path / EDGE_DIR


def holds_local_mode(path: Path) -> bool:
    """Whether ``path`` holds qdrant-client local-mode files."""
    return (path / "meta.json").is_file()


async def migrate_local_mode(path: Path) -> int:
    """Copy a local-mode directory into Edge; returns the points copied (0 when there was nothing to do)."""
    if not holds_local_mode(path):
        return 0
    if edge_root(path).exists():
        log.warning(
            "local-mode files left beside the Edge store; they are not read",
            extra={"path": str(path), "move_to": str(path / BACKUP_DIR)},
        )
        return 0
    started = time.monotonic()
    scratch = path / MIGRATING_DIR
    shutil.rmtree(scratch, ignore_errors=True)
    source = AsyncQdrantClient(path=str(path))
    target = EdgeClient(scratch)
    copied = 0
    try:
        for description in (await source.get_collections()).collections:
            copied += await _copy_collection(source, target, description.name)
        aliases = (await source.get_aliases()).aliases
        if aliases:
            await target.update_collection_aliases(
                [
                    models.CreateAliasOperation(
                        create_alias=models.CreateAlias(
                            collection_name=alias.collection_name, alias_name=alias.alias_name
                        )
                    )
                    for alias in aliases
                ]
            )
    finally:
        await target.close()
        await source.close()
    scratch.rename(edge_root(path))
    backup = path / BACKUP_DIR
    backup.mkdir(exist_ok=True)
    for name in LOCAL_FILES:
        if (path / name).exists():
            (path / name).rename(backup / name)
    log.warning(
        "vector store carried over from local mode to Qdrant Edge",
        extra={
            "path": str(path),
            "points": copied,
            "seconds": round(time.monotonic() - started, 1),
            "backup": str(backup),
        },
    )
    return copied


async def _copy_collection(source: AsyncQdrantClient, target: EdgeClient, name: str) -> int:
    """One collection, page by page, with its indexes; refuses (FailedPrecondition) on a short copy."""
    config = (await source.get_collection(name)).config
    vectors = config.params.vectors
    graph = name.endswith(GRAPH)
    if graph:
        await target.create_collection(name, vectors_config={}, metadata=dict(config.metadata or {}))
        await graph_indexes(target, name)
    elif isinstance(vectors, models.VectorParams):
        await target.create_collection(name, vectors_config=vectors, metadata=dict(config.metadata or {}))
        await record_indexes(target, name)
    else:
        raise FailedPrecondition(f"local-mode collection {name!r} has no single dense vector: not ours")
    offset = None
    while True:
        page, offset = await source.scroll(
            name, limit=PAGE, offset=offset, with_payload=True, with_vectors=not graph
        )
        if page:
            await target.upsert(
                name,
                points=[
                    models.PointStruct(
                        id=point.id,
                        vector={} if graph else point.vector,  # type: ignore[arg-type]
                        payload=point.payload,
                    )
                    for point in page
                ],
            )
        if offset is None:
            break
    expected = (await source.count(name, exact=True)).count
    written = (await target.count(name, exact=True)).count
    if written != expected:
        raise FailedPrecondition(f"carrying {name!r} to Qdrant Edge wrote {written} of {expected} points")
    log.info("collection carried over", extra={"collection": name, "points": written})
    return written
