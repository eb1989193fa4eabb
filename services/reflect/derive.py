"""Deterministic lesson derivation: no LLM, the same episodes always give the same lessons.

Rules, applied to a bank's episodes in time order and grouped by task type (or, without one, by
situation):

- an episode that states a lesson teaches it (confidence 0.7);
- a failure later followed by a success of the same task teaches "what worked where what failed"
  (0.6);
- a failure never followed by a success teaches what to avoid (0.4);
- an action that succeeded repeatedly earns its own lesson, and every lesson recommending it is
  reinforced by 0.1 per extra success (never above 0.95).

A lesson's id is ``content_id(bank, task type or situation, lesson text)``, so deriving it again
(from the same or from new episodes) updates one record instead of adding a duplicate.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from hindsight.reflect.domain import Episode, Lesson, Result
from hindsight.runtime.records import RecordMeta, Source, Trust, content_id

STATED_CONFIDENCE = 0.7
RECOVERY_CONFIDENCE = 0.6
REPEATED_SUCCESS_CONFIDENCE = 0.5
AVOID_CONFIDENCE = 0.4
REINFORCEMENT = 0.1
MAX_CONFIDENCE = 0.95


def _clause(text: str) -> str:
    """Text as a clause inside a sentence: one line, no closing full stop."""
    return " ".join(text.split()).rstrip(".;!\u3002\uff01\uff1b")


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def group_of(episode: Episode) -> str:
    """Which episodes count as the same task: the task type, else the situation."""
    return _key(episode.task_type) or _key(episode.situation)


def _label(episode: Episode) -> str:
    return _clause(episode.task_type) or _clause(episode.situation) or "this task"


@dataclass
class _Draft:
    """A lesson being built: its text and where it came from."""

    group: str
    situation: str
    action: str
    outcome: str
    lesson: str
    confidence: float
    recommends: str
    """The action the lesson tells the agent to take (empty for a warning)."""
    sources: list[Episode] = field(default_factory=list)


def _stated(episode: Episode) -> _Draft:
    return _Draft(
        group_of(episode),
        episode.situation,
        episode.action,
        episode.outcome,
        episode.lesson.strip(),
        STATED_CONFIDENCE,
        _key(episode.action) if episode.result is Result.SUCCESS else "",
        [episode],
    )


def _recovery(failure: Episode, success: Episode) -> _Draft:
    text = (
        f"For {_label(failure)}: {_clause(success.action) or 'the later approach'} worked where "
        f"{_clause(failure.action) or 'the first approach'} failed "
        f"({_clause(failure.outcome) or 'no outcome recorded'})"
    )
    return _Draft(
        group_of(failure),
        failure.situation,
        success.action,
        success.outcome,
        text,
        RECOVERY_CONFIDENCE,
        _key(success.action),
        [failure, success],
    )


def _avoid(failure: Episode) -> _Draft:
    text = (
        f"Avoid: {_clause(failure.action) or 'the approach taken'} in "
        f"{_clause(failure.situation) or _label(failure)} led to "
        f"{_clause(failure.outcome) or 'failure'}"
    )
    return _Draft(
        group_of(failure),
        failure.situation,
        failure.action,
        failure.outcome,
        text,
        AVOID_CONFIDENCE,
        "",
        [failure],
    )


def _repeated(successes: Sequence[Episode]) -> _Draft:
    first = successes[0]  # the text stays the same as later successes add up, and so does the id
    text = f"For {_label(first)}: {_clause(first.action)} has worked repeatedly"
    return _Draft(
        group_of(first),
        first.situation,
        first.action,
        successes[-1].outcome,
        text,
        REPEATED_SUCCESS_CONFIDENCE,
        _key(first.action),
        list(successes),
    )


def _drafts(episodes: Sequence[Episode]) -> list[_Draft]:
    drafts = [_stated(episode) for episode in episodes if episode.lesson.strip()]
    groups: dict[str, list[Episode]] = defaultdict(list)
    for episode in episodes:
        if episode.result is not Result.UNKNOWN and group_of(episode):
            groups[group_of(episode)].append(episode)
    for members in groups.values():
        for index, episode in enumerate(members):
            if episode.result is not Result.FAILURE:
                continue
            success = next((later for later in members[index + 1 :] if later.result is Result.SUCCESS), None)
            drafts.append(_recovery(episode, success) if success else _avoid(episode))
        by_action: dict[str, list[Episode]] = defaultdict(list)
        for episode in members:
            if episode.result is Result.SUCCESS and _key(episode.action):
                by_action[_key(episode.action)].append(episode)
        drafts.extend(_repeated(successes) for successes in by_action.values() if len(successes) > 1)
    return drafts


def _reinforce(drafts: list[_Draft], episodes: Sequence[Episode]) -> None:
    """Raise every lesson whose recommended action succeeded more than once in its group."""
    successes = Counter((group_of(e), _key(e.action)) for e in episodes if e.result is Result.SUCCESS)
    for draft in drafts:
        extra = successes[(draft.group, draft.recommends)] - 1 if draft.recommends else 0
        if extra > 0:
            draft.confidence = min(MAX_CONFIDENCE, draft.confidence + REINFORCEMENT * extra)


def _meta(sources: Iterable[Episode]) -> RecordMeta:
    """Provenance of a lesson: its episodes' turns and tags; never more trusted than its weakest episode."""
    episodes = list(sources)
    return RecordMeta(
        source_turn_ids=tuple(dict.fromkeys(t for e in episodes for t in e.meta.source_turn_ids)),
        source=Source.AGENT,
        trust=min((e.meta.trust for e in episodes), default=Trust.MEDIUM),
        time=max(e.moment for e in episodes) if episodes else None,
        tags=tuple(
            dict.fromkeys(
                [*(e.task_type for e in episodes if e.task_type), *(t for e in episodes for t in e.meta.tags)]
            )
        ),
        importance=max((e.meta.importance for e in episodes), default=0.0),
    )


def lesson_id(bank_id: str, group: str, text: str) -> str:
    """The stable id of a lesson: reflecting twice updates it instead of duplicating it."""
    return content_id(bank_id, group, text)


def derive_lessons(bank_id: str, episodes: Iterable[Episode]) -> list[Lesson]:
    """The lessons a bank's episodes teach, most confident first; equal lessons are merged."""
    ordered = sorted({e.id: e for e in episodes}.values(), key=lambda e: (e.moment, e.id))
    drafts = _drafts(ordered)
    _reinforce(drafts, ordered)
    merged: dict[str, _Draft] = {}
    for draft in drafts:
        key = lesson_id(bank_id, draft.group, draft.lesson)
        if key in merged:
            kept = merged[key]
            kept.confidence = max(kept.confidence, draft.confidence)
            kept.sources.extend(e for e in draft.sources if e not in kept.sources)
        else:
            merged[key] = draft
    lessons = [
        Lesson(
            id=key,
            situation=d.situation,
            action=d.action,
            outcome=d.outcome,
            lesson=d.lesson,
            confidence=round(d.confidence, 4),
            source_episode_ids=tuple(dict.fromkeys(e.id for e in d.sources)),
            meta=_meta(d.sources),
        )
        for key, d in merged.items()
    ]
    return sorted(lessons, key=lambda lesson: (-lesson.confidence, lesson.id))
