"""What a private mesh holds at one moment: memory per service and disk per data directory.

Memory is the RSS of each service process with its descendants (PostgreSQL's backends belong to
``postgres``), summed, plus the PSS sum, which counts pages shared between processes (PostgreSQL's shared
buffers, every Python service's libraries) once. Disk is allocated blocks, as ``du`` counts them, of each
directory in ``HINDSIGHT_HOME`` except the logs.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import psutil

MB = 1024 * 1024
NOT_DATA = frozenset({"logs"})
"""Directories of ``HINDSIGHT_HOME`` that hold no memories."""


@dataclass(frozen=True)
class Memory:
    """Memory of the mesh's processes, in MB."""

    rss_mb: float
    pss_mb: float
    by_service: dict[str, float] = field(default_factory=dict)
    """RSS per service (and per store), descendants included."""


def _service_name(process: psutil.Process, names: Mapping[int, str]) -> str:
    if process.pid in names:
        return names[process.pid]
    with contextlib.suppress(psutil.Error):
        return process.name().split()[0].removesuffix("-server")
    return str(process.pid)


def mesh_memory(supervisor_pid: int, services: Mapping[str, int]) -> Memory:
    """Memory of every process the supervisor started, grouped by the child that leads it."""
    names = {pid: name for name, pid in services.items()}
    by_service: dict[str, float] = {}
    rss = pss = 0
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(supervisor_pid).children():
            group_rss = 0
            with contextlib.suppress(psutil.Error):
                for process in [child, *child.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        info = process.memory_full_info()
                        group_rss += info.rss
                        pss += getattr(info, "pss", info.rss)
            name = _service_name(child, names)
            by_service[name] = by_service.get(name, 0.0) + group_rss / MB
            rss += group_rss
    return Memory(rss / MB, pss / MB, dict(sorted(by_service.items())))


def _allocated(path: Path) -> int:
    """Bytes allocated under ``path`` (files counted once, by inode), as ``du`` reports them."""
    total = 0
    seen: set[tuple[int, int]] = set()
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                stat = os.lstat(os.path.join(root, name))
                if (stat.st_dev, stat.st_ino) not in seen:
                    seen.add((stat.st_dev, stat.st_ino))
                    total += stat.st_blocks * 512
    return total


def data_disk(home: Path) -> dict[str, float]:
    """MB on disk per data directory of ``home`` (``postgres``, ``valkey``, ``qdrant``, ...)."""
    usage: dict[str, float] = {}
    with contextlib.suppress(OSError):
        for entry in sorted(home.iterdir()):
            if entry.is_dir() and entry.name not in NOT_DATA:
                usage[entry.name] = _allocated(entry) / MB
    return usage
