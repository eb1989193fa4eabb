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

Each case's later turn is a phrasing template of its family and language. Dev and test are split BY
TEMPLATE: in each family and language, every third template belongs to the test split, so the test split
holds phrasings nothing was tuned on. Facts (see ``corrections_facts``) cover people, work, health, home,
schedules, money, tools and pets; everything is drawn from ``random.Random(seed)``.

The JSON-lines format (one case per line, what ``--cases FILE`` reads):

``{"id", "kind", "lang", "split", "template", "subject", "turns": [{"text", "speaker", "time", "session",
"source"}], "question", "now", "expect", "reject"}``: the turns are retained one by one, in order (``speaker``
and ``session`` strings, ``time`` ISO 8601 with an offset, ``source`` user (default), agent, tool or
external); then ``question`` is recalled as of ``now`` with
``top_k`` 3. The case passes when the first memory's text contains ``expect`` and does not contain
``reject`` (case-insensitive; an empty ``reject`` checks nothing). ``kind`` is any label (reported by kind);
``split``, ``template`` and ``subject`` are optional labels.
"""

# ruff: noqa: RUF001, E501  (Chinese text uses full-width punctuation; table rows are sentences, kept whole)

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hindsight.bench.corrections_facts import DISTRACTORS, FACTS, Fact

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

TEMPLATES: dict[tuple[str, str], tuple[str, ...]] = {
    # {S}: the sentence (first letter capital), {s}: the same mid-sentence, {p}: its past form (English).
    ("cued_correction", "en"): (
        "Correction: {S}.", "Sorry, I got that wrong earlier. {S}.", "Actually, {s}.",
        "Let me fix what I said before: {s}.", "Oops, my mistake, {s}.", "Wait, that's not right. {S}.",
        "I need to correct myself: {s}.", "Update to what I told you: {s}.", "No, hang on, {s}.",
        "Hmm, no: {s}.", "Scratch that, {s}.", "I misspoke before; {s}.", "My bad, {s}.", "Small fix: {s}.",
        "That was wrong, {s}.",
    ),
    ("cued_correction", "zh"): (
        "更正一下：{S}。", "不好意思，我刚才说错了，{S}。", "其实{S}。", "纠正一下，{S}。", "我记错了，{S}。",
        "刚才那个说法不对，{S}。", "等等，说错了，{S}。", "改一下之前说的：{S}。", "不对不对，{S}。",
        "不是不是，{S}。", "错了错了，{S}。", "刚才口误了，{S}。", "搞错了，{S}。", "修正一下：{S}。", "不对，{S}。",
    ),
    ("cueless_change", "en"): (
        "{S}.", "Starting this month, {s}.", "These days {s}.", "Just so you know, {s}.", "{S} now.",
        "From now on, {s}.", "Quick note: {s}.", "FYI, {s}.", "As of this week, {s}.",
        "Update: {s}.", "Heads up, {s}.", "So, {s}.", "By now {s}.", "Going forward, {s}.", "Since last week, {s}.",
    ),
    ("cueless_change", "zh"): (
        "{S}。", "从这个月开始，{S}。", "现在{S}了。", "跟你说一声，{S}。", "最近{S}。", "以后{S}。",
        "告诉你一下，{S}。", "这周起{S}。", "顺便提一句，{S}。",
        "说一下，{S}。", "最新情况：{S}。", "上周开始{S}了。", "目前{S}。", "跟你更新一下，{S}。", "如今{S}。",
    ),
    ("lookalike_question", "en"): (
        "Is it true that {s}?", "Do you think {s}?", "Wait, {s}?", "Can you check whether {s}?",
        "Someone asked me if {s}. Is that right?", "Would it be a problem if {s}?",
        "Am I right that {s}?", "Quick check: {s}?", "Is it still the case that {s}?", "Any chance {s}?",
        "Could it be that {s}?", "Did someone say {s}?",
    ),
    ("lookalike_question", "zh"): (
        "{S}吗？", "是不是{S}？", "你觉得{S}吗？", "帮我确认一下，{S}吗？", "有人问我是不是{S}，对吗？",
        "难道{S}？", "{S}，对吧？", "{S}是真的吗？", "会不会{S}？", "请问{S}吗？", "{S}没错吧？", "你确定{S}？",
    ),
    ("lookalike_conditional", "en"): (
        "If the new contract goes through, {s}.", "Suppose {s}; what would change for me?",
        "It would be nice if {s}.", "If things change next year, {s}.",
        "Hypothetically, if {s}, would that matter?", "In case we move, {s}.",
        "Maybe one day {s}.", "Assuming the budget is approved, {s}.", "Should the plan change, {s}.",
        "If I get the promotion, {s}.", "Imagine {s}.", "I wish {s}.",
    ),
    ("lookalike_conditional", "zh"): (
        "如果新合同签下来，{S}。", "假如{S}，会有什么影响？", "要是{S}就好了。", "万一{S}，我该怎么办？",
        "假设{S}。", "如果明年情况有变，{S}。",
        "要是预算批下来，{S}。", "等我换了工作，{S}。", "倘若{S}，我就轻松多了。", "但愿{S}。", "等明年{S}也说不定。",
        "只要{S}就好了。",
    ),
    ("lookalike_called_off", "en"): (
        "We were going to make it so that {s}, but that plan was cancelled.",
        "I had planned that {s}, but we dropped the idea.", "There was talk that {s}, but it never happened.",
        "For a moment it looked like {s}, but that fell through.",
        "The proposal was that {s}; it got rejected yesterday.",
        "I almost arranged it so that {s}, then called it off.",
        "We talked about making it so that {s}, but decided against it.", "The idea was that {s}; that's off now.",
        "They floated that {s}, but it was scrapped.", "I'd hoped {s}, but it didn't work out.",
        "It was almost settled that {s}, until it got cancelled.", "We nearly agreed that {s}, then dropped it.",
    ),
    ("lookalike_called_off", "zh"): (
        "本来打算{S}，后来取消了。", "原计划是{S}，但这个计划作废了。", "之前有人提议{S}，但没通过。",
        "差点就{S}了，最后没成。", "曾经考虑过{S}，后来放弃了。", "说好{S}，结果临时取消了。",
        "之前商量过{S}，但最后没定。", "有人建议{S}，被否了。", "原本想着{S}，后来没弄成。", "一度说{S}，现在不了了之了。",
        "差一点{S}，后来黄了。", "计划过{S}，后来搁置了。",
    ),
    ("lookalike_past", "en"): (
        "Back in college, {p}.", "Years ago, {p}.", "When I lived in Leeds, {p}.", "Funny memory: in 2015 {p}.",
        "Before we moved, {p}.", "A long time ago, {p}.",
        "In my twenties, {p}.", "When I was a student, {p}.", "Last year, {p}.", "Growing up, {p}.",
        "At my old job, {p}.", "Before the pandemic, {p}.",
    ),
    ("lookalike_past", "zh"): (
        "大学那会儿，{S}。", "十年前，{S}。", "我住在老家的时候，{S}。", "记得2015年，{S}。", "搬家之前，{S}。",
        "很多年前，{S}。",
        "读书的时候，{S}。", "前几年，{S}。", "去年这个时候，{S}。", "上一份工作那会儿，{S}。", "疫情之前，{S}。",
        "刚来这个城市时，{S}。",
    ),
    ("lookalike_other_owner", "en"): (
        "{S}.", "By the way, {s}.", "Funny coincidence: {s}.", "I just learned that {s}.", "{S}, apparently.",
        "Someone told me {s}.",
        "Oh, {s}.", "Interesting: {s}.", "Speaking of which, {s}.", "{S}, he told me.", "Turns out {s}.",
        "My friend mentioned that {s}.",
    ),
    ("lookalike_other_owner", "zh"): (
        "{S}。", "顺便说一下，{S}。", "真巧，{S}。", "我刚听说{S}。", "听说{S}。", "对了，{S}。",
        "哦，{S}。", "说起来，{S}。", "{S}，他跟我说的。", "原来{S}。", "朋友提到{S}。", "有意思的是，{S}。",
    ),
    ("lookalike_other_attribute", "en"): (
        "{S}.", "Also, {s}.", "One more thing: {s}.", "By the way, {s}.", "For the record, {s}.", "Oh and {s}.",
        "Also worth noting: {s}.", "{S}, by the way.", "Side note: {s}.", "And {s}.", "Plus, {s}.",
        "Another detail: {s}.",
    ),
    ("lookalike_other_attribute", "zh"): (
        "{S}。", "另外，{S}。", "还有一件事：{S}。", "顺便说一下，{S}。", "补充一下，{S}。", "对了，{S}。",
        "另外说一下，{S}。", "{S}，顺便说下。", "附带一句：{S}。", "还有，{S}。", "再补充一点：{S}。", "另一个细节：{S}。",
    ),
}  # fmt: skip
"""Phrasings of the later turn, per family and language."""

OPENERS: dict[str, tuple[str, ...]] = {
    "en": (
        "{S}.",
        "Just so you know, {s}.",
        "For your notes: {s}.",
        "{S}, in case it comes up.",
        "Note that {s}.",
        "Heads-up: {s}.",
    ),
    "zh": ("{S}。", "跟你说一下，{S}。", "记一下：{S}。", "{S}，先告诉你。", "提一句，{S}。", "备注：{S}。"),
}
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
