"""Corroboration: when content from tools and outside sources may be believed.

A tool's output or an outside document can be written by anyone who controls that tool or page, so what
it says is never taken as a trusted fact or a lesson on its own word. It is believed once an independent
source says the same: the user or the agent (the trusted kinds), or a second untrusted source of another
kind (a tool and an outside page agreeing). The same untrusted kind saying it twice is no corroboration:
whoever planted it once can plant it again. Every layer that decides on trust (semantic facts, reflect
lessons, recall-time flags) uses these rules, so they agree.
"""

from __future__ import annotations

from collections.abc import Iterable

from hindsight.runtime.records import Source, Trust

UNTRUSTED_SOURCES = frozenset({Source.TOOL, Source.EXTERNAL})
"""Sources whose content needs corroboration before it is trusted."""

UNCORROBORATED_TAG = "uncorroborated"
"""Tag a derived record (a semantic fact) carries while only untrusted sources state it."""


def untrusted(source: Source) -> bool:
    """Whether content from ``source`` needs corroboration."""
    return source in UNTRUSTED_SOURCES


def corroborated(sources: Iterable[Source]) -> bool:
    """Whether content stated by ``sources`` (one entry per record stating it) is believed: any trusted
    kind among them, or two different untrusted kinds."""
    kinds = set(sources)
    return bool(kinds - UNTRUSTED_SOURCES) or len(kinds & UNTRUSTED_SOURCES) >= 2


def capped_trust(source: Source, trust: Trust) -> Trust:
    """The trust a record may hold before corroboration: low for an untrusted source, whatever the caller
    claimed; as given otherwise."""
    return Trust.LOW if untrusted(source) else trust
