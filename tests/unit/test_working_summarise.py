"""The extractive summariser: keeps numbers, names, instructions and open tasks, never grows."""

from __future__ import annotations

from hindsight.runtime.records import RecordMeta, Role, Turn
from hindsight.working.entries import Entry, EntryKind
from hindsight.working.summarise import ExtractiveSummariser, names, numbers, source_text

TURNS = [
    ("user", "Alice", "Hi there! How are you doing today? I hope the weekend was relaxing and fun."),
    ("assistant", "", "Good morning! I'm doing well, thanks for asking. The weekend was quiet here."),
    (
        "user",
        "Alice",
        "We decided to move the launch to March 14 because the Berlin office needs 2 more weeks.",
    ),
    ("assistant", "", "Understood. I will update the plan so that the launch is on March 14 in Berlin."),
    ("user", "Alice", "Please keep the budget under 12,500 euros and never email Bob directly about it."),
    ("assistant", "", "Noted: the budget stays under 12,500 euros, and I will not email Bob directly."),
    ("user", "Alice", "Still need to book the venue in Kreuzberg. Can you check prices for 80 guests?"),
    ("assistant", "", "Sure, that sounds lovely, I really enjoy planning events like this one with you."),
]


def _entries() -> list[Entry]:
    roles = {"user": Role.USER, "assistant": Role.ASSISTANT}
    return [
        Entry(
            EntryKind.TURN,
            Turn(
                id=f"t{i}",
                session_id="s",
                text=text,
                role=roles[role],
                speaker=speaker,
                meta=RecordMeta(importance=0.9 if role == "user" else 0.6),
            ),
            len(text) // 4,
            float(i),
        )
        for i, (role, speaker, text) in enumerate(TURNS)
    ]


def test_a_summary_keeps_every_number_and_name_and_is_shorter_than_its_source() -> None:
    entries = _entries()
    source = source_text(entries)
    summary = ExtractiveSummariser().summarise_now(entries, len(source))
    assert len(summary) < len(source) * 0.8
    for item in numbers(source) + names(source):
        assert item in summary, item
    assert {"12,500", "14", "2", "80"} <= set(numbers(source))
    assert {"Alice", "Berlin", "Bob", "Kreuzberg", "March"} <= set(names(source))


def test_instructions_decisions_and_open_tasks_are_kept_and_small_talk_dropped() -> None:
    summary = ExtractiveSummariser().summarise_now(_entries(), 10_000)
    assert "decided to move the launch" in summary
    assert "never email Bob" in summary
    assert "Still need to book the venue" in summary
    assert "I really enjoy planning" not in summary
    assert "Hi there" not in summary


def test_a_summary_is_never_longer_than_its_source_or_its_limit() -> None:
    tiny = [Entry(EntryKind.TURN, Turn(id="a", session_id="s", text="Bob 42 Ann 7 Kim 9"), 6, 0.0)]
    source = source_text(tiny)
    assert len(ExtractiveSummariser().summarise_now(tiny, 10_000)) <= len(source)
    assert len(ExtractiveSummariser().summarise_now(_entries(), 50)) <= 50


def test_the_same_turns_always_give_the_same_summary() -> None:
    summariser = ExtractiveSummariser()
    assert summariser.summarise_now(_entries(), 10_000) == summariser.summarise_now(_entries(), 10_000)


def test_chinese_sentences_are_split_and_numbers_kept() -> None:
    entries = [
        Entry(
            EntryKind.TURN,
            Turn(id=f"c{i}", session_id="s", text=text),
            len(text),
            float(i),
        )
        for i, text in enumerate(
            [
                "你好！今天天气不错。",
                "我们决定把预算定为3000元。请在周五之前完成报告！",
                "嗯，好的。",
                "下一步需要联系供应商。",
            ]
        )
    ]
    summary = ExtractiveSummariser().summarise_now(entries, 10_000)
    assert "3000" in summary and "下一步" in summary
    assert len(summary) <= len(source_text(entries))
