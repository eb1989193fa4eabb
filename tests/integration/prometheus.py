"""Scraping a service's metrics endpoint over HTTP and reading it with Prometheus' own text parser."""

from __future__ import annotations

from dataclasses import dataclass

import httpx2
from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class Scrape:
    """One scrape: every sample by name and labels, and the families (even those without samples yet)."""

    samples: dict[tuple[str, frozenset[tuple[str, str]]], float]
    families: dict[str, str]
    """Family name to type (``histogram``, ``counter``, ``gauge``...)."""

    def value(self, name: str, **labels: str) -> float:
        """The sample ``name`` whose labels include ``labels`` (summed over the rest); 0 when absent."""
        wanted = set(labels.items())
        return sum(v for (n, ls), v in self.samples.items() if n == name and wanted <= ls)

    def has(self, name: str, **labels: str) -> bool:
        """Whether any sample ``name`` carries ``labels``."""
        wanted = set(labels.items())
        return any(n == name and wanted <= ls for n, ls in self.samples)

    def series_names(self) -> set[str]:
        """Every series name the endpoint can export: samples seen, plus those its families imply."""
        names = {name for name, _ in self.samples}
        suffixes = {
            "histogram": ("_bucket", "_count", "_sum"),
            "counter": ("_total",),
            "summary": ("_count", "_sum"),
        }
        for family, kind in self.families.items():
            names.add(family)
            names.update(family + suffix for suffix in suffixes.get(kind, ()))
        return names


async def scrape(port: int, host: str = "127.0.0.1") -> Scrape:
    """GET /metrics and parse it."""
    async with httpx2.AsyncClient(timeout=10) as http:
        response = await http.get(f"http://{host}:{port}/metrics")
    response.raise_for_status()
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    families: dict[str, str] = {}
    for family in text_string_to_metric_families(response.text):
        families[family.name] = family.type
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return Scrape(samples, families)
