"""Trust of distilled records: what tools and outside sources state stays unverified until corroborated.

A fact extracted from a tool's output or an outside document (its source turn's source) is stored with
low trust and the ``uncorroborated`` tag, whatever trust its caller claimed. It loses both when an
independent source states the same fact (the same fact merges into it: the user, the agent, or an
untrusted source of the other kind; :mod:`hindsight.runtime.trust`). An unverified statement never
replaces a trusted one: a tool's "correction" of the user's value goes to the review queue instead, while
the user's statement replaces an unverified value whenever it was said.
"""

from __future__ import annotations

from dataclasses import replace

from hindsight.runtime.records import RecordMeta, Source, Trust
from hindsight.runtime.trust import UNCORROBORATED_TAG, corroborated, untrusted
from hindsight.semantic.records import DISTILLED, SemanticRecord


def unverified(record: SemanticRecord) -> bool:
    """A record whose content only untrusted sources state."""
    return untrusted(record.meta.source) and (
        record.kind not in DISTILLED or UNCORROBORATED_TAG in record.meta.tags
    )


def guard(record: SemanticRecord) -> SemanticRecord:
    """A distilled record from an untrusted source: low trust and marked (others as they are)."""
    if record.kind not in DISTILLED or not untrusted(record.meta.source):
        return record
    tags = tuple(dict.fromkeys((*record.meta.tags, UNCORROBORATED_TAG)))
    return replace(record, meta=replace(record.meta, trust=Trust.LOW, tags=tags))


def merged_meta(kept: SemanticRecord, new: SemanticRecord, meta: RecordMeta) -> RecordMeta:
    """The trust, source and marker of ``kept`` after it absorbed ``new`` (``meta`` is the plain merge).

    Corroborated (an independent source states it too): the marker goes, the source is the trusted one
    and trust is at least medium. Otherwise an unverified record stays low and marked.
    """
    sources = [kept.meta.source, new.meta.source]
    untrusted_side = [r for r in (kept, new) if untrusted(r.meta.source)]
    if not untrusted_side:
        return meta
    tags = tuple(t for t in meta.tags if t != UNCORROBORATED_TAG)
    if corroborated(sources):
        trusted = [r for r in (kept, new) if not untrusted(r.meta.source)]
        source = trusted[0].meta.source if trusted else kept.meta.source
        trust = max([Trust.MEDIUM, *(r.meta.trust for r in trusted)])
        return replace(meta, source=source, trust=trust, tags=tags)
    return replace(meta, trust=Trust.LOW, tags=(*tags, UNCORROBORATED_TAG))


def may_replace(new_source: Source, old_source: Source) -> bool:
    """Whether a statement from ``new_source`` may supersede one from ``old_source`` on trust grounds:
    never an untrusted source over a trusted one."""
    return not (untrusted(new_source) and not untrusted(old_source))
