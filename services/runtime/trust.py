"""Corroboration: when content from tools and outside sources may be believed.

A tool's output or an outside document can be written by anyone who controls that tool or page, so what
it says is never taken as a trusted fact or a lesson on its own word. It is believed once an independent
source says the same: the user or the agent (the trusted kinds), or a second untrusted source of another
kind (a tool and an outside page agreeing). The same untrusted kind saying it twice is no corroboration:
whoever planted it once can plant it again. Every layer that decides on trust (semantic facts, reflect
lessons, recall-time flags) uses these rules, so they agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.records import Source, Trust
from hindsight.runtime.validation import check_tags

UNTRUSTED_SOURCES = frozenset({Source.TOOL, Source.EXTERNAL})
"""Sources whose content needs corroboration before it is trusted."""

UNCORROBORATED_TAG = "uncorroborated"
"""Tag a derived record (a semantic fact) carries while only untrusted sources state it."""

SERVICE_TAG_PREFIX = "hindsight:"
"""Tags under this prefix are the memory service's own judgement: a client that writes one is refused (a
client's own words, "reviewed" or "verified", stay its to use)."""

REVIEWED_TAG = f"{SERVICE_TAG_PREFIX}reviewed"
"""Tag a turn carries once a reviewer approved it out of the review queue: a person read it and vouched
for it, so recall no longer ranks it (or the facts drawn from it, which carry its tags) down as unverified
or as a planted trigger. An instruction in it is still flagged, and the semantic layer still lets no tool's
statement replace the user's value. Only a review decision sets it; a new version with another text loses
it."""


def untrusted(source: Source) -> bool:
    """Whether content from ``source`` needs corroboration."""
    return source in UNTRUSTED_SOURCES


def vouched(tags: Iterable[str]) -> bool:
    """Whether a record's tags say a reviewer approved it (see :data:`REVIEWED_TAG`)."""
    return REVIEWED_TAG in tags


def corroborated(sources: Iterable[Source]) -> bool:
    """Whether content stated by ``sources`` (one entry per record stating it) is believed: any trusted
    kind among them, or two different untrusted kinds."""
    kinds = set(sources)
    return bool(kinds - UNTRUSTED_SOURCES) or len(kinds & UNTRUSTED_SOURCES) >= 2


def capped_trust(source: Source, trust: Trust) -> Trust:
    """The trust a record may hold before corroboration: low for an untrusted source, whatever the caller
    claimed; as given otherwise."""
    return Trust.LOW if untrusted(source) else trust


def check_written_tags(tags: Sequence[str], field: str = "tags") -> tuple[str, ...]:
    """Tags a client writes onto a record: checked as any tags are, and none under
    :data:`SERVICE_TAG_PREFIX` (a client that could write the review mark would skip the checks only a
    review earns)."""
    checked = check_tags(tags, field)
    for index, tag in enumerate(checked):
        if tag.casefold().startswith(SERVICE_TAG_PREFIX):
            raise InvalidArgument(f"{field}[{index}]", f"{tag!r} is set by the memory service, not a client")
    return checked


def review_mark_kept(old_tags: Sequence[str], new_tags: Sequence[str], same_text: bool) -> tuple[str, ...]:
    """A new version's tags: the review mark stays only while the text is the text that was reviewed,
    whatever the caller's tags said (an approved text edited into another was not approved)."""
    kept = tuple(tag for tag in new_tags if tag != REVIEWED_TAG)
    return (*kept, REVIEWED_TAG) if same_text and vouched(old_tags) else kept
