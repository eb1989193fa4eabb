"""Peak resident memory of each layer, measured under load (docs/deployment.md, "Sizing"): the manifests'
memory requests must cover it and their limits leave room above it. Remeasure when a layer grows."""

from __future__ import annotations

MEASURED_PEAK_RSS_MIB = {
    "inference": 405,
    "working": 63,
    "episodic": 58,
    "semantic": 110,
    "reflect": 73,
    "mcp_edge": 87,
}
HEADROOM = 2.0
"""A limit is at least this many times the measured peak (bigger batches, longer texts, more banks)."""


def mebibytes(quantity: str) -> float:
    """A memory quantity in MiB: Kubernetes binary units (``512Mi``, ``1Gi``) or compose's (``512m``, ``1g``).

    Not for Kubernetes decimal quantities, where ``m`` means milli."""
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "k": 1 / 1024, "m": 1, "g": 1024, "M": 1, "G": 1024}
    for suffix in sorted(units, key=len, reverse=True):
        if quantity.endswith(suffix):
            return float(quantity[: -len(suffix)]) * units[suffix]
    return float(quantity) / 2**20
