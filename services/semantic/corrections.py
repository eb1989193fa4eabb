"""Corrections: a later statement about the same thing replaces an earlier one.

People correct themselves ("Correction: my deploy target is staging-2, not staging-1", "其实我住在上海",
"我的部署目标不是staging-1,而是staging-2") or simply state a new value ("My deploy target is staging-2"
after "... staging-1"). This module reads, without an LLM, what a turn states about whom:

- a **statement**: an owner (the speaker, or a person named with a possessive), a normalised attribute
  ("deploy target", "lives_in", "上司邮箱地址") and its value, from copular shapes ("my X is Y", "Alice's X
  is Y", "我的X是Y", "我同事的X是Y"), change shapes ("my X changed to Y", "X改成了Y") and the single-valued
  facts of the rule extractor ("I live in Paris" -> ``lives_in``);
- **denied values**: what the turn says is no longer, or not, the value ("not X but Y", "Y, not X",
  "no longer X", "不是X而是Y", "已经不X了"); a denied predicate ("I no longer live in Paris") is read as
  its affirmative to find the fact it ends;
- a **cue**: whether the turn announces a correction ("actually", "correction", "其实", "更正", ...).

:func:`replaces` decides whether a new statement supersedes an earlier one: the same owner and attribute,
a different value, said later with no less trust. Attributes that hold several values at once (likes,
plans, relatives, anything plural) never supersede. An anonymous speaker ("user" with no name) is one person
inside a conversation, but a bank may pool several people, so without a cue a statement replaces only one
of the same session; a cue says the speaker means an earlier statement, wherever it was made.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from hindsight.runtime.records import Source
from hindsight.runtime.statements import (
    ANONYMOUS,
    TURN_KEY_PREFIX,
    Reading,
    Statement,
    affirmatives,
    anonymous,
    has_cue,
    parse,
    same_value,
    value_key,
)
from hindsight.runtime.text import key_of
from hindsight.semantic.extract import relation_type
from hindsight.semantic.records import SemanticRecord
from hindsight.semantic.trust import may_replace

__all__ = [
    "ANONYMOUS",
    "TURN_KEY_PREFIX",
    "Reading",
    "Statement",
    "affirmatives",
    "anonymous",
    "denies_loosely",
    "has_cue",
    "keyed",
    "owner_of",
    "read",
    "replaces",
    "same_value",
    "stored_statement",
    "turn_subject",
    "value_key",
]


def owner_of(record: SemanticRecord) -> str:
    """Whose statements a turn makes: its speaker; without a name, "user" for what the user said (as the
    extractor names them) and the source ("agent", "tool", ...) for anything else."""
    if record.speaker.strip():
        return record.speaker.strip()
    return "user" if record.meta.source is Source.USER else record.meta.source.value


def read(record: SemanticRecord, facts: Iterable[SemanticRecord] = (), single: Iterable[str] = ()) -> Reading:
    """What ``record`` (a turn) states and denies (:func:`hindsight.runtime.statements.parse`).

    ``facts`` are the rule extractor's facts of this turn; those whose attribute is in ``single`` (the
    single-valued ones) count as statements too. Denied predicates are passed back through
    :func:`affirmatives` by the caller (it needs the extractor).
    """
    owner = owner_of(record)
    single_valued = set(single)
    seed = [
        Statement(fact.subject, fact.attribute, fact.value)
        for fact in facts
        if not (key_of(fact.subject) == "user" and key_of(owner) != "user")  # an agent's "I" is not the user
        and fact.attribute in single_valued
        and fact.subject
        and fact.value
        and relation_type(fact.attribute) is None
    ]
    return parse(record.text, owner, seed)


# ----- deciding -----------------------------------------------------------------------------------------
def replaces(
    new: Statement,
    new_record: SemanticRecord,
    cue: bool,
    old: Statement,
    old_record: SemanticRecord,
    guarded: bool = True,
    one_person: bool = False,
) -> bool:
    """Whether ``new`` (said in ``new_record``) supersedes ``old`` (said in ``old_record``).

    Same owner and attribute; said later (the same moment counts when the caller orders them) and with
    no less trust (and, ``guarded``, never from a tool or an outside source over a trusted one); a value
    that differs from the old one or denies it. Without a cue, an anonymous owner's statement reaches only
    its own session, unless the bank counts its unnamed speakers as one person (``one_person``,
    :mod:`.speakers`).
    """
    if new.key != old.key or new_record.id == old_record.id or not old.value:
        return False
    new_time, old_time = new_record.meta.time, old_record.meta.time
    if new_time is not None and old_time is not None and new_time < old_time:
        return False
    if int(new_record.meta.trust) < int(old_record.meta.trust):
        return False
    if guarded and not may_replace(new_record.meta.source, old_record.meta.source):
        return False  # a tool's or a page's "correction" never replaces what a trusted source said
    if not cue and not one_person and anonymous(new.owner) and new_record.session_id != old_record.session_id:
        return False
    if any(same_value(denied, old.value) for denied in new.denied):
        return True
    return bool(new.value) and not same_value(new.value, old.value)


def denies_loosely(reading: Reading, old: Statement) -> bool:
    """A cued correction without an attribute ("Actually it's B, not A") names ``old``'s value as wrong."""
    return reading.cue and any(same_value(denied, old.value) for denied in reading.loose_denials)


def turn_subject(owner: str) -> str:
    """The subject a turn record stores: its statement's owner, marked, so that turns never join the
    facts about that owner (dedup, conflicts, entity lookups) and facts never join a turn's chain."""
    return TURN_KEY_PREFIX + owner


def stored_statement(record: SemanticRecord) -> Statement | None:
    """The statement a stored turn record is keyed by (see :func:`keyed`)."""
    if not record.subject.startswith(TURN_KEY_PREFIX) or not record.attribute:
        return None
    return Statement(record.subject.removeprefix(TURN_KEY_PREFIX), record.attribute, record.value)


def keyed(record: SemanticRecord, reading: Reading) -> SemanticRecord:
    """``record`` keyed by its first statement with a value (else its first), so later turns find it."""
    with_value = [s for s in reading.statements if s.value]
    chosen = (with_value or list(reading.statements))[:1]
    if not chosen:
        return record
    return replace(
        record, subject=turn_subject(chosen[0].owner), attribute=chosen[0].attribute, value=chosen[0].value
    )
