"""Deterministic lesson derivation: no LLM, the same episodes always give the same lessons.

Rules, applied to a bank's episodes in time order and grouped by task type (or, without one, by
situation):

- an episode that states a lesson teaches it (confidence 0.7);
- a failure later followed by a success of the same task teaches "what worked where what failed"
  (0.6);
- a failure never followed by a success teaches what to avoid (0.4);
- an action that succeeded repeatedly earns its own lesson, and every lesson recommending it is
  reinforced by 0.1 per extra success (never above 0.8: rules stay below what an LLM reflection may
  reach, and recall weighs lessons by confidence);
- the same action failing more than once in a task teaches to change approach instead of retrying
  (0.4);
- a user correction stated in an episode teaches to follow it (0.45);
- a failed episode whose outcome reports a tool error teaches to check that tool (0.35).

Each lesson also records its stance: which action it recommends (+1) or warns against (-1) for which
task (its topic), so that a newer lesson saying the opposite can supersede it.

A lesson's id is ``content_id(bank, task type or situation, lesson text)``, so deriving it again
(from the same or from new episodes) updates one record instead of adding a duplicate.

With the poisoning defences on, no lesson is drawn from episodes that only tools and outside sources
reported (the sources of their turns): such a lesson would turn planted content into advice. It is drawn
once a trusted episode (the user's or the agent's own) or an untrusted one of the other kind backs it
(:func:`vouched`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from hindsight.reflect.domain import Episode, Lesson, Method, Result
from hindsight.runtime.records import RecordMeta, Source, Trust, content_id
from hindsight.runtime.trust import corroborated

STATED_CONFIDENCE = 0.7
RECOVERY_CONFIDENCE = 0.6
REPEATED_SUCCESS_CONFIDENCE = 0.5
AVOID_CONFIDENCE = 0.4
RETRIES_CONFIDENCE = 0.4
CORRECTION_CONFIDENCE = 0.45
TOOL_ERROR_CONFIDENCE = 0.35
REINFORCEMENT = 0.1
MAX_CONFIDENCE = 0.8

ERROR_MARKERS = (
    "error", "exception", "traceback", "timed out", "timeout", "crash", "refused", "denied", "not found",
    "invalid", "错误", "异常", "超时", "报错",
)  # fmt: skip
"""Words in a failed episode's outcome that mean a tool (rather than the plan) went wrong."""
CORRECTION_MARKERS = (
    "corrected", "correction", "that's wrong", "that is wrong", "not what i asked", "not what i wanted",
    "user said no", "user rejected", "纠正", "不对", "错了", "不是这样",
)  # fmt: skip
"""Phrases in an episode that mean the user corrected the agent."""


def _clause(text: str) -> str:
    """Text as a clause inside a sentence: one line, no closing full stop."""
    return " ".join(text.split()).rstrip(".;!\u3002\uff01\uff1b")


def action_key(text: str) -> str:
    """An action as compared across lessons: lower case, single spaces."""
    return _key(text)


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
    action_key: str = ""
    """The action the lesson is about (normalised)."""
    stance: int = 0
    """+1: do ``action_key``; -1: avoid it; 0: neither."""


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
        _key(episode.action),
        {Result.SUCCESS: 1, Result.FAILURE: -1}.get(episode.result, 0),
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
        _key(success.action),
        1,
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
        _key(failure.action),
        -1,
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
        _key(first.action),
        1,
    )


def _retries(failures: Sequence[Episode]) -> _Draft:
    first = failures[0]
    text = (
        f"For {_label(first)}: {_clause(first.action)} was retried and kept failing; "
        "change the approach after the first failure instead of repeating it"
    )
    return _Draft(
        group_of(first),
        first.situation,
        first.action,
        f"failed {len(failures)} times: {_clause(failures[-1].outcome) or 'no outcome recorded'}",
        text,
        RETRIES_CONFIDENCE,
        "",
        list(failures),
        _key(first.action),
        -1,
    )


def _has(text: str, markers: Sequence[str]) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in markers)


def _correction(episode: Episode) -> _Draft:
    text = (
        f"For {_label(episode)}: the user corrected {_clause(episode.action) or 'the approach'} "
        f"({_clause(episode.outcome) or _clause(episode.situation)}); follow that correction next time"
    )
    return _Draft(
        group_of(episode),
        episode.situation,
        episode.action,
        episode.outcome,
        text,
        CORRECTION_CONFIDENCE,
        "",
        [episode],
        _key(episode.action),
        -1,
    )


def _tool_error(episode: Episode) -> _Draft:
    tools = ", ".join(episode.tools)
    text = (
        f"For {_label(episode)}: the tool {tools} reported an error "
        f"({_clause(episode.outcome)}); check its inputs and its output before relying on it"
    )
    return _Draft(
        group_of(episode), episode.situation, episode.action, episode.outcome, text,
        TOOL_ERROR_CONFIDENCE, "", [episode],
    )  # fmt: skip


def _drafts(episodes: Sequence[Episode]) -> list[_Draft]:
    drafts = [_stated(episode) for episode in episodes if episode.lesson.strip()]
    for episode in episodes:
        if _has(" ".join((episode.situation, episode.outcome, episode.lesson)), CORRECTION_MARKERS):
            drafts.append(_correction(episode))
        if episode.result is Result.FAILURE and episode.tools and _has(episode.outcome, ERROR_MARKERS):
            drafts.append(_tool_error(episode))
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
        failed: dict[str, list[Episode]] = defaultdict(list)
        for episode in members:
            if episode.result is Result.FAILURE and _key(episode.action):
                failed[_key(episode.action)].append(episode)
        drafts.extend(_retries(failures) for failures in failed.values() if len(failures) > 1)
    return drafts


def _reinforce(drafts: list[_Draft], episodes: Sequence[Episode]) -> None:
    """Raise every lesson whose recommended action succeeded more than once in its group."""
    successes = Counter((group_of(e), _key(e.action)) for e in episodes if e.result is Result.SUCCESS)
    for draft in drafts:
        extra = successes[(draft.group, draft.recommends)] - 1 if draft.recommends else 0
        if extra > 0:
            draft.confidence = min(MAX_CONFIDENCE, draft.confidence + REINFORCEMENT * extra)


def lesson_meta(sources: Iterable[Episode]) -> RecordMeta:
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


def vouched(episodes: Iterable[Episode]) -> bool:
    """Whether the episodes a lesson comes from are backed by more than tool or outside content alone."""
    return corroborated(source for episode in episodes for source in episode.sources)


def derive_lessons(bank_id: str, episodes: Iterable[Episode], guarded: bool = True) -> list[Lesson]:
    """The lessons a bank's episodes teach, most confident first; equal lessons are merged. ``guarded``:
    only those :func:`vouched` for."""
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
            meta=lesson_meta(d.sources),
            method=Method.RULES,
            topic=d.group,
            action_key=d.action_key,
            stance=d.stance,
        )
        for key, d in merged.items()
        if not guarded or vouched(d.sources)
    ]
    return sorted(lessons, key=lambda lesson: (-lesson.confidence, lesson.id))
