"""The corrections bench's case set: a statement, a later turn about the same thing, and the question.

Families (the ``kind`` of a case):

- ``cued_correction``: the user corrects a value with a cue ("Correction: ...", "其实...") a few turns later,
  in the same session; the new value must be the top memory.
- ``cueless_change``: the user states a new value in a later session with no correction cue; the new value
  must be the top memory.
- look-alikes, after which the ORIGINAL value must stay the top memory: ``lookalike_question`` (the new
  value asked about), ``lookalike_conditional`` (a condition or hypothesis), ``lookalike_called_off`` (a plan
  that was dropped), ``lookalike_past`` (a story about another time), ``lookalike_other_owner`` (someone
  else's value), ``lookalike_other_attribute`` (another attribute of the same thing).

Each case's later turn is a phrasing template of its family and language (``data/corrections_set.json``).
Dev and test are split BY TEMPLATE: in each family and language, every third template belongs to the test
split, so the test split holds phrasings nothing was tuned on. Facts (see ``corrections_facts``) cover
people, work, health, home, schedules, money, tools and pets; everything is drawn from
``random.Random(seed)``.

The JSON-lines format (one case per line, what ``--cases FILE`` reads):

``{"id", "kind", "lang", "split", "template", "subject", "turns": [{"text", "speaker", "time", "session",
"source"}], "question", "now", "expect", "reject"}``: the turns are retained one by one, in order (``speaker``
and ``session`` strings, ``time`` ISO 8601 with an offset, ``source`` user (default), agent, tool or
external); then ``question`` is recalled as of ``now`` with
``top_k`` 3. The case passes when the first memory's text contains ``expect`` and does not contain
``reject`` (case-insensitive; an empty ``reject`` checks nothing). ``kind`` is any label (reported by kind);
``split``, ``template`` and ``subject`` are optional labels.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hindsight.bench.corrections_facts import DISTRACTORS, FACTS, Fact
from hindsight.bench.set_data import load

SPLITS = ("dev", "test")
KINDS = (
    "cued_correction",
    "cueless_change",
    "lookalike_question",
    "lookalike_conditional",
    "lookalike_called_off",
    "lookalike_past",
    "lookalike_other_owner",
    "lookalike_other_attribute",
)
CHANGES = frozenset({"cued_correction", "cueless_change"})
"""Kinds after which the new value must win; after every other kind the original value must stay."""
TEST_EVERY = 3
"""Template ``i`` of a family and language is in the test split when ``i % TEST_EVERY == TEST_EVERY - 1``."""

_TABLES = load("corrections_set")

TEMPLATES: dict[tuple[str, str], tuple[str, ...]] = {
    (kind, lang): phrasings for kind, langs in _TABLES["later"].items() for lang, phrasings in langs.items()
}
"""Phrasings of the later turn, per family and language (``data/corrections_set.json``): ``{S}`` the
sentence (first letter capital), ``{s}`` the same mid-sentence, ``{p}`` its past form (English)."""

OPENERS: dict[str, tuple[str, ...]] = _TABLES["openers"]
"""Phrasings of the first statement (the same pool for both splits)."""

SPEAKER = "user"
SOURCES = ("user", "agent", "tool", "external")
BASE_TIME = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class CaseFileError(ValueError):
    """A case file that does not follow the format; the message names the line and the field."""


@dataclass(frozen=True)
class CaseTurn:
    """One turn to retain."""

    text: str
    speaker: str
    time: datetime
    session: str
    source: str = "user"
    """Where the turn came from: user, agent, tool or external (outside content arrives as a tool's)."""


@dataclass(frozen=True)
class Case:
    """Turns to retain, the question, and what its top memory must (not) hold."""

    id: str
    kind: str
    lang: str
    turns: tuple[CaseTurn, ...]
    question: str
    now: datetime
    expect: str
    reject: str
    split: str = ""
    template: str = ""
    subject: str = ""


def _fill(template: str, sentence: str, past: str) -> str:
    first = sentence[:1].upper() + sentence[1:]
    middle = sentence
    return template.replace("{S}", first).replace("{s}", middle).replace("{p}", past)


def split_of(index: int) -> str:
    """The split of a family's ``index``-th template."""
    return "test" if index % TEST_EVERY == TEST_EVERY - 1 else "dev"


def _later(kind: str, fact: Fact, old: str, new: str, rng: random.Random) -> tuple[str, str, str]:
    """The later turn's sentence and past form, and what must not be top (the other value)."""
    if kind == "lookalike_other_owner":
        other = rng.choice(fact.others)
        return fact.statement.format(o=other, v=new), "", new
    if kind == "lookalike_other_attribute":
        sibling = rng.choice(fact.sibling_values)
        return fact.sibling.format(o=fact.owner, w=sibling), "", sibling
    past = fact.past.format(o=fact.owner, v=new) if fact.past else ""
    return fact.statement.format(o=fact.owner, v=new), past, new


def _case(kind: str, lang: str, index: int, template: str, fact: Fact, rng: random.Random, n: int) -> Case:
    old, new = rng.sample(fact.values, 2)
    start = BASE_TIME + timedelta(days=rng.randrange(0, 200), hours=rng.randrange(0, 9))
    first = _fill(rng.choice(OPENERS[lang]), fact.statement.format(o=fact.owner, v=old), "")
    sentence, past, other = _later(kind, fact, old, new, rng)
    later_text = _fill(template, sentence, past)
    fillers = rng.sample(DISTRACTORS[lang], rng.randint(2, 4))
    later_session = kind == "cueless_change" or (kind not in CHANGES and rng.random() < 0.5)
    turns = [CaseTurn(first, SPEAKER, start, "s1")]
    moment = start
    for filler in fillers:
        moment += timedelta(minutes=rng.randint(1, 6))
        turns.append(CaseTurn(filler, SPEAKER, moment, "s1"))
    if later_session:
        moment += timedelta(days=rng.randint(3, 40), hours=rng.randint(0, 5))
        session = "s2"
    else:
        moment += timedelta(minutes=rng.randint(1, 6))
        session = "s1"
    turns.append(CaseTurn(later_text, SPEAKER, moment, session))
    changes = kind in CHANGES
    return Case(
        id=f"{kind}-{lang}-t{index}-{n:02d}",
        kind=kind,
        lang=lang,
        turns=tuple(turns),
        question=fact.question,
        now=moment + timedelta(hours=1),
        expect=new if changes else old,
        reject=old if changes else other,
        split=split_of(index),
        template=f"{kind}-{lang}-t{index}",
        subject=fact.subject,
    )


def generate(seed: int = 31, per_template: int = 4) -> list[Case]:
    """The whole set: ``per_template`` cases per template (facts drawn without repeats), both splits."""
    rng = random.Random(seed)
    cases: list[Case] = []
    for (kind, lang), templates in TEMPLATES.items():
        facts = list(FACTS[lang])
        for index, template in enumerate(templates):
            chosen = rng.sample(facts, min(per_template, len(facts)))
            cases.extend(_case(kind, lang, index, template, fact, rng, n) for n, fact in enumerate(chosen))
    for case in cases:
        check_case(case)
    return cases


def check_case(case: Case) -> None:
    """A case whose checks can be decided on text: ``expect`` set, neither value inside the other."""
    if not case.expect:
        raise CaseFileError(f"case {case.id}: expect: must not be empty")
    low_expect, low_reject = case.expect.lower(), case.reject.lower()
    if low_reject and (low_reject in low_expect or low_expect in low_reject):
        raise CaseFileError(f"case {case.id}: expect and reject must not contain each other")


def select(cases: Iterable[Case], split: str) -> list[Case]:
    """The cases of ``split`` ("dev", "test" or "all"; a case with no split label is in every split)."""
    if split == "all":
        return list(cases)
    return [case for case in cases if case.split in (split, "")]


def _turn_json(turn: CaseTurn) -> dict[str, Any]:
    data = {
        "text": turn.text,
        "speaker": turn.speaker,
        "time": turn.time.isoformat(),
        "session": turn.session,
    }
    return data if turn.source == SPEAKER else {**data, "source": turn.source}


def case_json(case: Case) -> dict[str, Any]:
    """A case as one JSON object of the documented format."""
    data = asdict(case)
    data["turns"] = [_turn_json(turn) for turn in case.turns]
    data["now"] = case.now.isoformat()
    return data


def write_cases(path: Path, cases: Sequence[Case]) -> None:
    """Write cases as JSON lines (UTF-8)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(case_json(case), ensure_ascii=False) for case in cases]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _text(item: dict[str, Any], key: str, where: str, required: bool = True) -> str:
    value = item.get(key, "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise CaseFileError(f"{where}: {key}: expected a non-empty string")
    return value


def _moment(value: Any, where: str, key: str) -> datetime:
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError as exc:
        raise CaseFileError(f"{where}: {key}: not an ISO 8601 time ({value!r})") from exc
    if moment.tzinfo is None:
        raise CaseFileError(f"{where}: {key}: needs a UTC offset ({value!r})")
    return moment


def _source(raw: dict[str, Any], where: str) -> str:
    source = _text(raw, "source", where, required=False) or SPEAKER
    if source not in SOURCES:
        raise CaseFileError(f"{where}: source: expected one of {', '.join(SOURCES)}, got {source!r}")
    return source


def _parse(item: Any, where: str) -> Case:
    if not isinstance(item, dict):
        raise CaseFileError(f"{where}: expected a JSON object")
    raw_turns = item.get("turns")
    if not isinstance(raw_turns, list) or not raw_turns:
        raise CaseFileError(f"{where}: turns: expected a non-empty list")
    turns = []
    for n, raw in enumerate(raw_turns):
        place = f"{where}: turns[{n}]"
        if not isinstance(raw, dict):
            raise CaseFileError(f"{place}: expected a JSON object")
        turns.append(
            CaseTurn(
                text=_text(raw, "text", place),
                speaker=_text(raw, "speaker", place, required=False) or SPEAKER,
                time=_moment(raw.get("time"), place, "time"),
                session=_text(raw, "session", place, required=False) or "default",
                source=_source(raw, place),
            )
        )
    now = _moment(item["now"], where, "now") if item.get("now") else turns[-1].time + timedelta(hours=1)
    case = Case(
        id=_text(item, "id", where),
        kind=_text(item, "kind", where),
        lang=_text(item, "lang", where, required=False) or "unknown",
        turns=tuple(turns),
        question=_text(item, "question", where),
        now=now,
        expect=_text(item, "expect", where),
        reject=_text(item, "reject", where, required=False),
        split=_text(item, "split", where, required=False),
        template=_text(item, "template", where, required=False),
        subject=_text(item, "subject", where, required=False),
    )
    try:
        check_case(case)
    except CaseFileError as exc:
        raise CaseFileError(f"{where}: {exc}") from exc
    return case


def load_cases(path: Path) -> list[Case]:
    """Read a JSON-lines case file; the first bad line is a CaseFileError naming it and the field."""
    cases: list[Case] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path.name} line {number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CaseFileError(f"{where}: not JSON ({exc.msg})") from exc
        case = _parse(item, where)
        if case.id in seen:
            raise CaseFileError(f"{where}: id: {case.id!r} appears twice")
        seen.add(case.id)
        cases.append(case)
    if not cases:
        raise CaseFileError(f"{path.name}: no cases")
    return cases


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m hindsight.bench.corrections_set PATH [--seed N] [--split dev|test|all]``."""
    import argparse

    parser = argparse.ArgumentParser(description="write the generated corrections set as JSON lines")
    parser.add_argument("path", type=Path)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--per-template", type=int, default=4)
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="all")
    args = parser.parse_args(argv)
    if args.per_template < 1:
        parser.error("--per-template: must be at least 1")
    cases = select(generate(args.seed, args.per_template), args.split)
    write_cases(args.path, cases)
    print(f"{len(cases)} cases: {args.path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
