"""An assertion of the current state ranks before its look-alikes in a recall about now (EN and ZH)."""

from __future__ import annotations

import pytest

from hindsight.mcp_edge.assertions import prefer_assertions
from hindsight.mcp_edge.domain import LayerName, RecalledMemory
from hindsight.runtime.modality import asks_current_state, look_alike, names_other_owner
from hindsight.runtime.records import RecordMeta

EN_QUERY = "What is my favourite opera?"
ZH_QUERY = "我最喜欢的歌剧是什么?"


def memory(rid: str, text: str, score: float, kind: str = "turn") -> RecalledMemory:
    return RecalledMemory(
        id=rid, text=text, score=score, meta=RecordMeta(), layers=(LayerName.EPISODIC,), kind=kind
    )


@pytest.mark.parametrize(
    ("query", "text", "why"),
    [
        (EN_QUERY, "My favourite opera is Carmen.", ""),
        (EN_QUERY, "My brother's favourite opera is Tosca.", "other owner"),
        (EN_QUERY, "Is my favourite opera Tosca now?", "not current"),
        (EN_QUERY, "If I had to choose again, my favourite opera would be Tosca.", "not current"),
        (EN_QUERY, "Back in college my favourite opera was Tosca.", "not current"),
        (EN_QUERY, "I was going to make Tosca my favourite opera, but I changed my mind.", "not current"),
        (EN_QUERY, "Lovely weather. Honestly, my favourite opera is Tosca now.", ""),
        (EN_QUERY, "My favourite opera is Carmen, in case it comes up.", ""),
        (
            "Which Python version does our project run on?",
            "Our client's project runs on Python 3.11.",
            "other owner",
        ),
        ("What time is our team's stand-up?", "The sales team's stand-up is at 11:45.", "other owner"),
        ("What time is our team's stand-up?", "Our team's stand-up is at 10:30.", ""),
        ("Where does our book club meet?", "Our book club meets at Jo's flat.", ""),
        ("What time is our team's stand-up?", "It's at 10:30 and that's fine.", ""),
        (ZH_QUERY, "我最喜欢的歌剧是卡门。", ""),
        (ZH_QUERY, "我哥哥最喜欢的歌剧是托斯卡。", "other owner"),
        (ZH_QUERY, "我最喜欢的歌剧是托斯卡吗?", "not current"),
        (ZH_QUERY, "如果重新选,我最喜欢的歌剧会是托斯卡。", "not current"),
        (ZH_QUERY, "小时候我最喜欢的歌剧是托斯卡。", "not current"),
        (ZH_QUERY, "本来打算把最喜欢的歌剧改成托斯卡,后来算了。", "not current"),
        # someone's thing at the start of a clause, or a short kin word in Chinese
        (EN_QUERY, "Funny coincidence: Ravi's favourite opera is Tosca.", "other owner"),
        (EN_QUERY, "Lena's favourite opera is Tosca.", "other owner"),
        (ZH_QUERY, "哦，我爸最喜欢的歌剧是托斯卡。", "other owner"),
        (EN_QUERY, "Honestly: it's settled, my favourite opera is Carmen.", ""),
    ],
)
def test_look_alike_reads_modality_and_owner(query: str, text: str, why: str) -> None:
    assert look_alike(query, text) == why


def test_a_request_about_another_time_or_someone_else_is_left_alone() -> None:
    assert not asks_current_state("What was my favourite opera back in college?")
    assert not asks_current_state("小时候我最喜欢的歌剧是什么?")
    assert look_alike("What was my favourite opera back in college?", "Back in college it was Tosca.") == ""
    assert not asks_current_state("When did Caroline go to the LGBTQ support group?")
    assert look_alike("What did Melanie paint?", "Did you see Caroline's painting?") == ""
    assert look_alike("What does Melanie like to paint?", "Caroline's sister paints lakes.") == ""
    assert names_other_owner("What is my brother's favourite opera?")
    assert look_alike("What is my brother's favourite opera?", "My brother's favourite opera is Tosca.") == ""


@pytest.mark.parametrize(
    ("query", "assertion", "others"),
    [
        (EN_QUERY, "My favourite opera is Carmen.", ["My brother's favourite opera is Tosca.",
                                                     "Is my favourite opera Tosca now?"]),
        (ZH_QUERY, "我最喜欢的歌剧是卡门。", ["我哥哥最喜欢的歌剧是托斯卡。", "我最喜欢的歌剧是托斯卡吗?"]),
    ],
)  # fmt: skip
def test_the_assertion_moves_ahead_of_close_look_alikes(
    query: str, assertion: str, others: list[str]
) -> None:
    # fused scores fall steeply from the first place; what counts is relevance to the request
    fused = [memory("q1", others[0], 0.9), memory("q2", others[1], 0.3), memory("a", assertion, 0.1)]
    fused.append(memory("tail", "Unrelated turn about lunch.", 0.05))
    relevance = {"q1": 0.99, "q2": 0.98, "a": 0.97, "tail": 0.3}
    ordered = prefer_assertions(fused, query, top_k=3, relevance=relevance)
    assert [m.id for m in ordered] == ["a", "q1", "q2", "tail"]


def test_the_head_keeps_its_members_and_a_look_alike_yields_only_to_a_close_assertion() -> None:
    fused = [
        memory("q", "Is my favourite opera Tosca now?", 1.0),
        memory("a", "My favourite opera is Carmen.", 0.4),
        memory("b", "My favourite opera is Carmen, I said.", 0.3),
    ]
    relevance = {"q": 0.99, "a": 0.45, "b": 0.95}
    assert [m.id for m in prefer_assertions(fused, EN_QUERY, 2, relevance=relevance)] == ["q", "a", "b"]
    assert [m.id for m in prefer_assertions(fused, EN_QUERY, 2, 1.5, relevance)] == ["q", "a", "b"]
    assert [m.id for m in prefer_assertions(fused, EN_QUERY, 3, relevance=relevance)] == ["b", "q", "a"]
    # without relevance the memories' own scores are compared
    assert [m.id for m in prefer_assertions(fused, EN_QUERY, 3)] == ["q", "a", "b"]


@pytest.mark.parametrize(
    ("query", "answer", "other"),
    [
        ("What time is our team's stand-up?", "Our team's stand-up is at 10:30.",
         "Also, our team's stand-up happens in the kitchen area."),
        ("Who is my manager?", "My manager is Rahul Mehta.", "My manager sits on the third floor."),
        ("How much does my phone plan cost?", "My phone plan costs twenty euros.",
         "My phone plan includes unlimited calls."),
        ("我的钢琴课是什么时候？", "我的钢琴课在周三下午。", "我的钢琴老师是黄老师。"),
        ("我每月的买菜预算是多少？", "我每月买菜预算是三千五百元。", "我每月买菜都去菜市场。"),
    ],
)  # fmt: skip
def test_a_memory_without_the_kind_of_value_asked_for_yields_to_one_with_it(
    query: str, answer: str, other: str
) -> None:
    fused = [memory("o", other, 0.4), memory("a", answer, 0.2), memory("f", "Lovely weather today.", 0.1)]
    relevance = {"o": 0.98, "a": 0.96, "f": 0.2}
    assert [m.id for m in prefer_assertions(fused, query, 3, relevance=relevance)] == ["a", "o", "f"]
    far = {**relevance, "a": 0.45}  # an answer much less about the request keeps its place
    assert [m.id for m in prefer_assertions(fused, query, 3, relevance=far)] == ["o", "a", "f"]
    # a request that names no kind of value ("which", "what is") leaves both alone
    unasked = prefer_assertions(fused, "Tell me about it.", 3, relevance=relevance)
    assert [m.id for m in unasked] == ["o", "a", "f"]


def test_nothing_moves_for_a_request_about_the_past_or_when_off() -> None:
    fused = [
        memory("q", "Is my favourite opera Tosca now?", 0.9),
        memory("a", "My favourite opera is Carmen.", 0.8),
    ]
    past = "What was my favourite opera back in college?"
    relevance = {"q": 0.95, "a": 0.9}
    assert [m.id for m in prefer_assertions(fused, past, 3, relevance=relevance)] == ["q", "a"]
    assert [m.id for m in prefer_assertions(fused, EN_QUERY, 3, 2.0, relevance)] == ["q", "a"]
    assert [m.id for m in prefer_assertions(fused, EN_QUERY, 3, relevance=relevance)] == ["a", "q"]
    lesson = [memory("l", "Is the build green? Check CI first.", 0.9, kind="lesson"), fused[1]]
    assert [m.id for m in prefer_assertions(lesson, EN_QUERY, 3, relevance={"l": 0.9, "a": 0.9})] == [
        "l",
        "a",
    ]


def test_a_question_yields_to_a_relevant_answer_about_its_subject_however_much_closer_it_is() -> None:
    query = "What am I allergic to?"
    fused = [
        memory("q", "Do you think my allergy is to peanuts?", 0.4),
        memory("u", "I found an old photo album in the attic.", 0.2),
        memory("a", "For your notes: my allergy is to penicillin.", 0.1),
    ]
    relevance = {"q": 0.94, "u": 0.7, "a": 0.56}  # the question repeats the request's form
    # the answer shares "allergy" and clears 0.5: it takes the question's place; the unrelated turn stays
    assert [m.id for m in prefer_assertions(fused, query, 3, relevance=relevance)] == ["a", "q", "u"]
    weak = {**relevance, "a": 0.4}
    assert [m.id for m in prefer_assertions(fused, query, 3, relevance=weak)] == ["q", "u", "a"]
