"""Which turn a turn answers, and how its words are read into the reply's vector."""

from __future__ import annotations

from hindsight.episodic.outbox import answers, turn_record
from hindsight.episodic.outbox_queue import PreviousTurn
from hindsight.runtime.records import Role, Turn
from hindsight.semantic.engine import REPLY_CONTEXT_CHARS, embedding_text, reply_context
from hindsight.semantic.records import RecordKind, SemanticRecord


def _turn(speaker: str, role: Role = Role.USER) -> Turn:
    return Turn("t2", "s", "Yes, last Friday!", role=role, speaker=speaker)


def test_another_speakers_turn_is_answered_and_ones_own_is_continued() -> None:
    before = PreviousTurn("t1", "Maria", "user", "Did you see the concert?")
    assert answers(_turn("Jon"), before)
    assert not answers(_turn("jon "), PreviousTurn("t1", "Jon", "user", "I went out."))  # names by key
    assert answers(_turn("", Role.ASSISTANT), PreviousTurn("t1", "", "user", "Any plans?"))  # by role
    assert not answers(_turn("", Role.USER), PreviousTurn("t1", "", "user", "Any plans?"))


def test_the_turn_record_names_the_turn_answered_only_for_a_reply() -> None:
    before = PreviousTurn("t1", "Maria", "user", "Did you see the concert?")
    record = turn_record(_turn("Jon"), before)
    assert (record.replies_to.id, record.replies_to.speaker) == ("t1", "Maria")
    assert not turn_record(_turn("Maria"), before).HasField("replies_to")
    assert not turn_record(_turn("Jon")).HasField("replies_to")


def test_the_reply_is_read_after_what_it_answers_cut_to_a_few_hundred_characters() -> None:
    said = reply_context("Maria", "x" * (REPLY_CONTEXT_CHARS + 50))
    assert said == "Maria: " + "x" * REPLY_CONTEXT_CHARS
    reply = SemanticRecord("t2", "Yes, last Friday!", speaker="Jon", replies_to="t1", replies_to_text=said)
    assert embedding_text(reply) == f"{said}\nJon: Yes, last Friday!"
    fact = SemanticRecord("f", "Jon saw the concert", kind=RecordKind.FACT, replies_to_text=said)
    assert embedding_text(fact) == "Jon saw the concert"  # facts say what they are about themselves
