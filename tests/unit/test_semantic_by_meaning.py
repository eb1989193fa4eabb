"""Corrections found by meaning: the same question with a new value supersedes, in English and Chinese,
with or without a cue; questions, conditions, called-off plans, stories about another time, someone else's
value and another attribute of the same thing do not; who counts as the same person is a per-bank setting.

The examples are written here (phrasings of our own), apart from the corrections bench's generated set."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.modality import why_not_current
from hindsight.runtime.records import RecordMeta, Source, Trust
from hindsight.semantic.by_meaning import CANDIDATES, Finder, judge
from hindsight.semantic.records import EmbeddedRecord, SemanticRecord
from hindsight.semantic.same_question import comparable_values, match
from hindsight.semantic.speakers import BankSpeakers, SpeakerPolicy


def turn(
    text: str,
    day: int = 1,
    speaker: str = "",
    session: str = "s1",
    source: Source = Source.USER,
    trust: Trust = Trust.HIGH,
) -> SemanticRecord:
    return SemanticRecord(
        id=f"t{day}-{abs(hash(text)) % 10_000}",
        text=text,
        speaker=speaker,
        session_id=session,
        meta=RecordMeta(time=datetime(2025, 4, day, 9, tzinfo=UTC), source=source, trust=trust),
    )


CHANGES = [
    ("Invoices go out on the 1st.", "From next month invoices go out on the 15th."),
    ("Our rent is due on the 5th.", "Our rent is now due on the 10th."),
    ("The boiler was serviced by Northgate Heating.", "The boiler is serviced by Westfield Plumbing now."),
    ("I'm learning Spanish in the evenings.", "Actually I'm learning Portuguese in the evenings."),
    ("The team offsite is in Porto.", "Heads up, the team offsite is in Madrid."),
    ("Our wifi password is tulip-42.", "Our wifi password changed to maple-77."),
    ("We deploy with Terraform 1.5.", "We deploy with Terraform 1.7 these days."),
    (
        "The kids' swimming class is at 4:30 on Thursdays.",
        "The kids' swimming class is at 5:15 on Thursdays.",
    ),
    ("My gym membership costs $45 a month.", "My gym membership costs $52 a month."),
    ("I drink oat milk in my coffee.", "I drink soy milk in my coffee these days."),
    ("公司年会在三亚办。", "公司年会改在丽江办了。"),
    ("我们的房租每月5号交。", "我们的房租改成每月10号交了。"),
    ("我每天早上七点起床。", "我现在每天早上六点起床。"),
    ("我们组周会在周一上午。", "我们组周会改到周三下午了。"),
    ("家里的宽带是电信的。", "其实家里的宽带是联通的。"),
    ("我在学日语。", "我现在在学法语。"),
    # a named owner's place is one value ("Jo's flat"), not someone else's thing
    ("Our choir rehearses at the church hall.", "These days our choir rehearses at Amira's house."),
    # one name for another, though the old one reads like an owner word ("Teams")
    ("Our office uses Teams for calls.", "Our office uses Zoom for calls now."),
    # a framing opener is no part of the question ("Note that", "FYI")
    ("Note that my bike is stored in the shed.", "My bike is stored in the garage now."),
    # the speaker's own thing with a one-word name ("my allergy is to ...")
    ("My allergy is to penicillin.", "Going forward, my allergy is to shellfish."),
    # Chinese dates read whole: a month with its part, "next" with a weekday, holidays
    ("我们的年度体检在五月中旬。", "我们的年度体检改到四月初了。"),
    ("我姑姑月底来北京。", "我姑姑下周六来北京。"),
    ("我们家下周六聚餐。", "我们家中秋节聚餐。"),
    # a correction said with a cue after a shared verb ("吃", "对...过敏")
    ("我家的狗吃牛肉狗粮。", "纠正一下，我家的狗吃羊肉狗粮。"),
    ("我对芒果过敏。", "我记错了，我对菠萝过敏。"),
    # a denial that opens a correction is not a question
    ("我的车停在B2层。", "不对不对，我的车停在B3层。"),
]

KEEPS = [
    # someone else's value
    ("My favourite opera is Carmen.", "My brother's favourite opera is Tosca."),
    ("Our dentist is Dr Patel.", "Our neighbours' dentist is Dr Okafor."),
    ("我的车停在B2层。", "我同事的车停在B3层。"),
    # another attribute of the same thing
    ("My flight leaves at 9am.", "My flight lands at 11am."),
    ("The standup is at 9:30.", "The standup is in room 4."),
    ("我们的数据库是PostgreSQL。", "我们的数据库每晚备份一次。"),
    ("周会在周一上午。", "周会在三楼会议室。"),
    # a question
    ("The standup is at 9:30.", "Is the standup at 10:00 now?"),
    ("我的车停在B2层。", "我的车是停在B3层吗？"),
    # a conditional or hypothetical
    ("The standup is at 9:30.", "If we moved the standup to 10:00 it would be easier."),
    ("我们的房租每月5号交。", "要是房租改成每月10号交就好了。"),
    # a plan called off
    ("The offsite is in Porto.", "We were going to hold the offsite in Madrid, but it was cancelled."),
    ("公司年会在三亚办。", "本来打算年会改在丽江办，后来取消了。"),
    # a story about another time
    ("I live in Lisbon.", "Back in college I lived in Boston."),
    ("我住在上海。", "小时候我住在成都。"),
    # values among several
    ("I like jazz.", "I like rock."),
    # an added detail is not a new value
    ("Dinner with Sam is at 7pm.", "Dinner with Sam is at 7pm at the Thai place."),
    # the same value written another way
    ("Rent is due on the 5th.", "Rent is due on the 5."),
    # what a thing is against where or when it is ("是" / "在")
    ("我的眼药水是玻璃酸钠。", "我的眼药水在睡前滴。"),
    # a date against an amount
    ("我们的水费每月15号交。", "我们的水费每月一百二。"),
    ("Our gym fee is due on the 3rd.", "Our gym fee is 40 pounds."),
    # two events after a shared verb, with no cue: a log, not a value replaced
    ("我将要参加青年设计论坛。", "我将要参加城市音乐节。"),
    ("我家的狗吃牛肉狗粮。", "我家的狗吃羊肉狗粮。"),
    # a plan or a time that is not now, in other words than the usual cues
    (
        "The recycling goes out on Mondays.",
        "The idea was that the recycling goes out on Fridays; that's off now.",
    ),
    ("我们的周会在周一。", "等新同事入职了，我们的周会在周三。"),
    ("我们的宠物医生是何医生。", "疫情之前，我们的宠物医生是绿爪诊所。"),
    # the same attribute of another subject, named before the copula (or in a clause without one)
    ("The release manager for Orion is Keiko.", "The release manager for Vega is Marcus."),
    ("The head office of Acme is in Leeds.", "The head office of Globex is in Bristol."),
    ("Our Lisbon team starts at 8.", "Our Toronto team starts at 10."),
]


@pytest.mark.parametrize(("old", "new"), CHANGES)
def test_a_new_value_to_the_same_question_supersedes(old: str, new: str) -> None:
    verdict = judge(turn(old, 1), turn(new, 9))
    assert verdict.supersedes, (verdict.reason, verdict.found)


@pytest.mark.parametrize(("old", "new"), KEEPS)
def test_look_alikes_leave_the_earlier_statement_alone(old: str, new: str) -> None:
    verdict = judge(turn(old, 1), turn(new, 9))
    assert not verdict.supersedes, verdict


# A person introduced in one clause and their value stated in the next ("X is my Y, ..."): the second
# clause's subject is the first clause's, so two people with the same attribute are two questions.
_INTRODUCED_ZH = (
    "{n}是我的{r}，其{a}是{v}。",
    "{n}是我{r}，{a}{v}。",
    "{n}是我的{r}，{a}是{v}。",
    "{n}是我的{r}。其{a}是{v}。",
)
_INTRODUCED_EN = (
    "{n} is my {r}, age {v}.",
    "{n} is my {r}; height {v}.",
    "{n} is my {r}. Their birthday is {v}.",
)
_PEOPLE_ZH = (("李梓涵", "同事"), ("王宇轩", "叔叔"), ("张欣怡", "表姐"))
_VALUES_ZH = (("年龄", "37岁", "60岁"), ("身高", "161cm", "179cm"), ("生日", "3月24日", "12月18日"))
_PEOPLE_EN = (("Priya", "colleague"), ("Tomas", "uncle"), ("Mei", "cousin"))
_VALUES_EN = ("37", "60", "12 May")


def _two_people() -> list[tuple[str, str]]:
    pairs = []
    for template in _INTRODUCED_ZH:
        for (first, second), (attribute, old, new) in zip(
            zip(_PEOPLE_ZH, _PEOPLE_ZH[1:] + _PEOPLE_ZH[:1], strict=True), _VALUES_ZH, strict=True
        ):
            pairs.append(
                (
                    template.format(n=first[0], r=first[1], a=attribute, v=old),
                    template.format(n=second[0], r=second[1], a=attribute, v=new),
                )
            )
    for template in _INTRODUCED_EN:
        for first, second in zip(_PEOPLE_EN, _PEOPLE_EN[1:] + _PEOPLE_EN[:1], strict=True):
            pairs.append(
                (
                    template.format(n=first[0], r=first[1], v=_VALUES_EN[0]),
                    template.format(n=second[0], r=second[1], v=_VALUES_EN[1]),
                )
            )
    return pairs


@pytest.mark.parametrize(("old", "new"), _two_people())
def test_a_value_of_another_person_introduced_before_it_is_not_a_correction(old: str, new: str) -> None:
    verdict = judge(turn(old, 1), turn(new, 9))
    assert not verdict.supersedes, verdict


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("我身高166cm。", "张伟是我的舅舅，身高153cm。"),  # the speaker's own, then an introduced person's
        ("My height is 170 cm.", "Tomas is my uncle, height 182 cm."),
    ],
)
def test_the_speakers_own_value_is_not_replaced_by_an_introduced_persons(old: str, new: str) -> None:
    assert not judge(turn(old, 1), turn(new, 9)).supersedes


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Quick update, my flight leaves at 9am.", "Sorry, my flight leaves at 10am."),
        ("我的下属在山东青岛工作呢。", "我的下属在广州工作呢。"),
        ("王宇是我的表哥，身高166cm。", "王宇是我的表哥，身高170cm。"),
    ],
)
def test_a_clause_with_its_own_subject_or_the_same_introduced_one_still_supersedes(
    old: str, new: str
) -> None:
    verdict = judge(turn(old, 1), turn(new, 9))
    assert verdict.supersedes, verdict


def test_the_values_are_told_from_the_frame() -> None:
    found = match("Invoices go out on the 1st.", "From next month invoices go out on the 15th.")
    assert found is not None and found.old_values == ("1st",) and found.new_values == ("15th",)
    found = match("公司年会在三亚办。", "公司年会改在丽江办了。")
    assert found is not None and found.old_values == ("三亚",) and found.new_values == ("丽江",)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("Is the standup at 10 now?", "question"),
        ("我的车是停在B3层吗", "question"),
        ("If we moved it to Friday, that would help.", "hypothetical"),
        ("我在考虑把周会改到周五。", "hypothetical"),
        ("We had planned to move it to Friday but called it off.", "called off"),
        ("本来打算改到周五，后来取消了。", "called off"),
        ("Years ago my rent was 600 euros.", "another time"),
        ("大学那会儿我住在宿舍。", "another time"),
        ("Correction: what I told you earlier was wrong, the rent is 900 euros.", ""),
        ("我之前说错了，房租是九百。", ""),
        ("I used to live in Leeds, but now I live in York.", ""),
        ("不对不对，周会在周三。", ""),
        ("不是不是，房租是九百。", ""),
        ("周会在周三，对不对？", "question"),
        ("I'd hoped the rent was lower, but it didn't work out.", "called off"),
        ("We nearly agreed on Fridays, then nothing came of it.", "called off"),
        ("一度说改到周五，现在不了了之了。", "called off"),
        ("Once we move, the bins go out on Tuesdays.", "hypothetical"),
        ("等我换了工作，通勤就是四十分钟。", "hypothetical"),
        ("At my old job, my manager was Tom.", "another time"),
        ("Before the pandemic, our vet was Dr Hollis.", "another time"),
        ("刚来这个城市时，我住在城东。", "another time"),
        ("平时，周会在周一开。", ""),
        ("我们十点之前到。", ""),
    ],
)
def test_only_an_assertion_of_what_holds_now_counts(text: str, why: str) -> None:
    assert why_not_current(text) == why


def test_who_counts_as_one_person_is_a_setting_of_each_bank() -> None:
    policy = SpeakerPolicy.parse("auto", "team-*=pooled, diary=person")
    assert policy.mode("team-red") is BankSpeakers.POOLED
    assert policy.mode("diary") is BankSpeakers.PERSON
    assert policy.mode("other") is BankSpeakers.AUTO
    early, later = turn("x", 1, session="a"), turn("y", 9, session="b")
    assert policy.same_person("other", later, early)  # unnamed users are one person by default
    assert not policy.same_person("team-red", later, early)  # pooled: only inside a session
    alice, bob = turn("x", 1, speaker="Alice"), turn("y", 9, speaker="Bob")
    assert not policy.same_person("other", bob, alice)
    assert policy.same_person("diary", bob, alice)  # one person's bank: any user-side name is theirs
    agent = turn("y", 9, source=Source.AGENT)
    assert not policy.same_person("diary", agent, early)


@pytest.mark.parametrize(("default", "banks"), [("solo", ""), ("auto", "team-*=crowd"), ("auto", "=pooled")])
def test_a_bad_speaker_setting_is_refused_naming_it(default: str, banks: str) -> None:
    with pytest.raises(InvalidArgument, match="HINDSIGHT_SEMANTIC"):
        SpeakerPolicy.parse(default, banks)


def test_an_earlier_statement_is_replaced_only_by_the_same_person_later_with_no_less_trust() -> None:
    finder = Finder(SpeakerPolicy())
    old = turn("Our rent is due on the 5th.", 1, speaker="Alice")
    assert finder.replaced("b", turn("Our rent is due on the 10th.", 9, speaker="Alice"), [old])
    assert not finder.replaced("b", turn("Our rent is due on the 10th.", 9, speaker="Bob"), [old])
    earlier = turn("Our rent is due on the 10th.", 1, speaker="Alice")
    assert not finder.replaced("b", earlier, [turn("Our rent is due on the 5th.", 9, speaker="Alice")])
    low = turn("Our rent is due on the 10th.", 9, speaker="Alice", trust=Trust.LOW)
    assert not finder.replaced("b", low, [old])
    tool = turn("Our rent is due on the 10th.", 9, speaker="Alice", source=Source.TOOL)
    assert not finder.replaced("b", tool, [old])


@pytest.mark.parametrize(
    ("old", "new", "comparable"),
    [
        ("due on the 27th", "1,200 euros a month", False),
        ("lisinopril", "taken with dinner", False),
        ("硝苯地平", "每天早上吃", False),
        ("the staging-1 cluster", "staging-2", True),
        ("112", "87", True),
        ("Dr Hollis", "Greenpaw Clinic", True),
    ],
)
def test_values_parsed_for_one_attribute_name_must_answer_the_same_question(
    old: str, new: str, comparable: bool
) -> None:
    """The statement path ("my X is Y") keys by the attribute's name; "our rent is due on the 27th" and
    "our rent is 1,200 euros a month" share it but not the question."""
    assert comparable_values(old, new) is comparable


def test_candidates_are_bounded_nearest_first_and_share_a_word() -> None:
    """Retain reads at most :data:`CANDIDATES` earlier turns per turn, the nearest that share a keyword."""
    finder = Finder(SpeakerPolicy())
    new = EmbeddedRecord(turn("My manager is Rahul Mehta.", 9), [1.0, 0.0])
    earlier = [
        EmbeddedRecord(turn(f"My manager is person {i}.", 1 + i % 5), [1.0 - i / 100, (i / 100) ** 0.5])
        for i in range(20)
    ]
    unrelated = EmbeddedRecord(turn("Lovely weather today.", 2), [1.0, 0.0])
    found = finder.candidates(new, [], [unrelated, *earlier])
    assert len(found) == CANDIDATES
    assert unrelated.record.id not in {r.id for r in found}  # no word in common
    assert [r.text for r in found] == [f"My manager is person {i}." for i in range(CANDIDATES)]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Step 2: rotated key 2 on host db-2.", "Step 3: rotated key 3 on host db-3."),
        ("Deployed build 41 to the staging cluster.", "Deployed build 42 to the staging cluster."),
        ("Yesterday I painted the fence blue.", "Today I painted the shed green."),
    ],
)
def test_two_events_told_in_the_past_are_a_log_not_a_change(old: str, new: str) -> None:
    verdict = judge(SemanticRecord("old", old), SemanticRecord("new", new))
    assert not verdict.supersedes, verdict


def test_a_long_clause_is_not_aligned_word_by_word() -> None:
    filler = " ".join(f"detail{i}" for i in range(200))
    assert match(f"My locker number is 42 {filler}", f"My locker number is 87 {filler}") is None
