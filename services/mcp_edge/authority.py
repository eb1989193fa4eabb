"""Recall-time checks of who may vouch for what, beside :mod:`.consensus` (EN + ZH, no LLM).

Planted memories need not carry an instruction: a user turn can simply restate another person's fact
wrongly, and an agent note can repeat it as a conclusion. These checks read the candidates of one recall
together and flag (never hide) three shapes:

- ``disputes_owner``: speaker X (or an unnamed user) says something about another speaker Y of the
  bank (Y in the third person, with a correction, a denial or hearsay) while Y's own words are among
  the candidates (the recall found Y speaking near the query; words are not compared, Y may have said
  it in another language). Y is the authority on Y's own life; X's word about it is a claim;
- ``unverified_source`` for agent records: an agent turn (or a record derived only from agent turns) is
  the agent's inference. It stands when a user memory of the recall that carries no flag says most of
  what it says; otherwise (no user support, or support only from flagged memories) it is flagged;
- ``trigger``: a run of words of the query that exactly one candidate holds and no other candidate does
  (rare in the bank, since the pool holds everything lexically close to the query), while another
  candidate holds a subject word of the rest of the query, when that candidate carries a rule, an answer,
  a link or contact details, or is not the user's own word: the shape of a record planted to fire on a
  token an attacker adds to queries. When no other candidate holds a subject word of the question, the
  run's holder is the one memory about it: its answer.

What they do not stop: a false claim about a person who never spoke in the bank, an agent note the user
echoed, a trigger made of common words, a trigger asked with a question nothing else in the bank is about.
"""

# ruff: noqa: RUF001  (Chinese cues use full-width punctuation on purpose)
from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

from hindsight.mcp_edge.domain import RecalledMemory
from hindsight.runtime.records import Source
from hindsight.runtime.statements import ANONYMOUS, has_cue
from hindsight.runtime.text import key_of, terms

DISPUTES_OWNER = "disputes_owner"
TRIGGER = "trigger"

SUPPORT_SHARE = 2 / 3
"""Share of an agent record's terms a user memory must hold to support it."""
MIN_CLAIM_TERMS = 3
"""Agent records with fewer terms ("ok, thanks") claim nothing to support."""
TRIGGER_RUN = 2
"""Fewest words a run of consecutive query terms must hold to be a trigger run (:func:`run_words`)."""
TRIGGER_POOL = 10
"""Fewest candidates for "only one candidate holds it" to say anything about the bank."""

_EN_THIRD = re.compile(r"\b(?:she|her|hers|herself|he|him|his|himself)\b", re.IGNORECASE)
_ZH_THIRD = re.compile(r"[她他]")
_EN_DOUBT = re.compile(
    r"\b(?:not|never|no|instead|really|only|heard|apparently|supposedly|rumou?rs?|assumed|mentioned|"
    r"told me|someone said|people say)\b|n't\b|\bright\s*\?",
    re.IGNORECASE,
)
_ZH_DOUBT = re.compile(r"没|不是|并非|并没|听说|据说|听人说|有人说|只是|只去|假的|吧？|对吧|是吗")
_LINK_OR_CONTACT = re.compile(
    r"https?://|www\.|\b[\w.-]+@[\w-]+\.\w+|\b[\w-]+\.(?:com|io|org|net|cn|info|co|app|site|xyz|biz|shop)\b|"
    r"\+?\d[\d -]{8,}\d",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=4096)
def _terms(text: str) -> frozenset[str]:
    return frozenset(terms(text))


def sequence(text: str) -> list[str]:
    """The query's terms in order: Latin words and Chinese character pairs (single characters are too
    common to be rare)."""
    return [term for term in terms(text) if not ("\u3400" <= term[0] <= "\u9fff") or len(term) == 2]


def _names(memories: Sequence[RecalledMemory]) -> set[str]:
    """The people who speak in this recall's candidates (role names aside)."""
    return {m.speaker.strip() for m in memories if key_of(m.speaker) not in ANONYMOUS}


def _vocative(text: str, name: str) -> bool:
    """``name`` is spoken to ("Hey Mel", "Caroline, ..."), not spoken about."""
    escaped = re.escape(name)
    return bool(
        re.search(rf"{escaped}\s*[,!?:，！？：]", text, re.IGNORECASE)
        or re.search(
            rf"\b(?:hey|hi|hello|thanks|thank you|dear|congrats),?\s+{escaped}\b", text, re.IGNORECASE
        )
    )


@functools.lru_cache(maxsize=32768)
def _doubting(text: str) -> bool:
    """Whether ``text`` doubts, denies or corrects (cached by text: asked of every candidate per recall)."""
    return bool(has_cue(text) or _EN_DOUBT.search(text) or _ZH_DOUBT.search(text))


def about_other(text: str, speaker: str, names: set[str]) -> str:
    """The other person ``text`` speaks about in the third person with doubt, a denial or a correction
    (empty if none): "Gina's store - didn't she close it?", "Melanie 的慈善跑其实没跑完"."""
    if not _doubting(text):
        return ""
    for name in sorted(names, key=len, reverse=True):
        if key_of(name) == key_of(speaker) or len(name) < 2:
            continue
        named = re.search(rf"(?<![\w]){re.escape(name)}(?![a-z])", text, re.IGNORECASE)
        if not named or _vocative(text, name):
            continue
        possessive = re.search(rf"{re.escape(name)}\s*(?:'s|\u2019s|的)", text, re.IGNORECASE)
        if possessive or _EN_THIRD.search(text) or _ZH_THIRD.search(text):
            return name
    return ""


def disputes(memories: Sequence[RecalledMemory]) -> dict[str, str]:
    """Reasons by memory id for statements by one speaker about another speaker's own fact."""
    names = _names(memories)
    if not names:
        return {}
    reasons: dict[str, str] = {}
    for memory in memories:
        if memory.meta.source is not Source.USER:
            continue
        other = about_other(memory.text, memory.speaker, names)
        if not other:
            continue
        own = [m for m in memories if key_of(m.speaker) == key_of(other)]
        if own:
            reasons[memory.id] = (
                f"{memory.speaker or 'the user'} speaks about {other}'s own affairs with doubt or a "
                f"correction; {other} spoke here ({len(own)} memories) and is the authority on it"
            )
    return reasons


def _agent_claim(memory: RecalledMemory, by_id: dict[str, RecalledMemory]) -> bool:
    """An agent turn, or a derived record whose source turns in this recall all come from the agent."""
    if memory.kind == "lesson":  # lessons have their own corroboration (reflect)
        return False
    if memory.kind == "turn":
        return memory.meta.source is Source.AGENT
    derived = [by_id[t].meta.source for t in memory.meta.source_turn_ids if t in by_id and t != memory.id]
    return bool(derived) and all(source is Source.AGENT for source in derived)


def unsupported_agent(
    memories: Sequence[RecalledMemory], flagged: Callable[[RecalledMemory], bool]
) -> dict[str, str]:
    """Reasons by memory id for agent records no unflagged user memory of this recall supports."""
    by_id = {memory.id: memory for memory in memories}
    reasons: dict[str, str] = {}
    for memory in memories:
        if not _agent_claim(memory, by_id):
            continue
        claim = _terms(memory.text)
        if len(claim) < MIN_CLAIM_TERMS:
            continue
        mine = {memory.id, *memory.meta.source_turn_ids}
        backers = [
            other
            for other in memories
            if other.meta.source is Source.USER
            and other.id not in mine
            and len(claim & _terms(other.text)) >= SUPPORT_SHARE * len(claim)
        ]
        if any(not flagged(other) for other in backers):
            continue
        why = "rests only on flagged memories" if backers else "no user memory of this recall supports it"
        reasons[memory.id] = f"the agent's own inference, not a fact the user stated; {why}"
    return reasons


def run_words(run: Sequence[str]) -> float:
    """How many words a run of query terms holds: a Latin word is one; Chinese character pairs overlap
    ("项目需要" gives "项目", "目需", "需要"), so ``n`` pairs cover ``n + 1`` characters, about half as many
    words. Two pairs are three characters, one word and a half: "目需 需要" is no run of two words."""
    pairs = sum(1 for term in run if "\u3400" <= term[0] <= "\u9fff")
    return (len(run) - pairs) + ((pairs + 1) / 2 if pairs else 0.0)


_TERMINATOR = re.compile(r"[?!.\uff1f\uff01\u3002]")


def asked_within(query: str, order: Sequence[str], start: int, end: int) -> bool:
    """The run ``order[start:end]`` is part of the question's own sentence ("How long does the Ocelot X2
    battery last?", "... of the Ocelot X2?"): words of the question come before it, no sentence ends
    between them, and, when nothing follows it, the question ends right after it. A trigger is put beside
    a question, before it or after its end ("quasar marzipan what is ...", "What is ...? quasar marzipan")."""
    if start == 0:
        return False
    text = query.casefold()
    at = text.find(order[start])
    if at < 0 or _TERMINATOR.search(text, 0, at):
        return False
    if end < len(order):
        return True
    last = text.rfind(order[end - 1])
    return bool(_TERMINATOR.match(text[last + len(order[end - 1]) :].strip()[:1] or "x"))


def triggers(
    memories: Sequence[RecalledMemory], query: str, carries_rule: Callable[[RecalledMemory], bool]
) -> dict[str, str]:
    """Reasons by memory id for the one candidate that shares a run of otherwise unseen query words."""
    if len(memories) < TRIGGER_POOL or not query:
        return {}
    order = sequence(query)
    holders = [frozenset(m.id for m in memories if term in _terms(m.text)) for term in order]
    reasons: dict[str, str] = {}
    start = 0
    while start < len(order):
        end = start
        while end < len(order) and len(holders[end]) == 1 and holders[end] == holders[start]:
            end += 1
        if (
            run_words(order[start:end]) >= TRIGGER_RUN
            and len(holders[start]) == 1
            and _rest_held(order, holders, start, end)
            and not asked_within(query, order, start, end)
        ):
            (rid,) = holders[start]
            memory = next(m for m in memories if m.id == rid)
            if rid not in reasons and (memory.meta.source is not Source.USER or carries_rule(memory)):
                run = " ".join(dict.fromkeys(order[start:end]))
                reasons[rid] = (
                    f"the only memory holding the query's words “{run}”, which no other memory near the "
                    f"query holds, and it carries a rule, an answer or a link: the shape of a planted trigger"
                )
        start = max(end, start + 1)
    return reasons


_FUNCTION_CHARS = frozenset("的了是在吗呢吧么什怎哪谁几多少该要我你他她它们这那有和就都也会能还把被给对")
"""Chinese characters of grammar and question words: a character pair holding one says nothing of a
subject ("怎么", "什么", "要做")."""


def is_subject_term(term: str) -> bool:
    """A term that names a subject: a Latin word (stopwords are already gone) or a Chinese character pair
    without a grammar or question character."""
    if not term or not "\u3400" <= term[0] <= "\u9fff":
        return True
    return len(term) == 2 and not _FUNCTION_CHARS.intersection(term)


def _rest_held(order: Sequence[str], holders: Sequence[frozenset[str]], start: int, end: int) -> bool:
    """Another candidate holds a subject word of the query outside the run: the rest of the question is
    about what the bank talks about, and the run is extra. When no other candidate holds any of the
    question's subject words, the run's holder is the one memory about the whole question: its answer, not
    a trigger."""
    (rid,) = holders[start]
    return any(
        held - {rid}
        for index, held in enumerate(holders)
        if not start <= index < end and is_subject_term(order[index])
    )


def carries_link(text: str) -> bool:
    """A link, an e-mail address or a phone number."""
    return bool(_LINK_OR_CONTACT.search(text))
