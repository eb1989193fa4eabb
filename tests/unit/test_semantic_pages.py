"""Entity pages: who a turn mentions (English and Chinese, no LLM), how a page's counts merge, and the
page keeper on a real in-process store (Qdrant Edge in a scratch directory)."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from hindsight.runtime.errors import InvalidArgument, NotFound
from hindsight.runtime.records import RecordMeta
from hindsight.semantic.backend import open_vector_store
from hindsight.semantic.engine import contributions_of
from hindsight.semantic.extract import Extraction
from hindsight.semantic.lineage_store import QdrantSemanticStore
from hindsight.semantic.mentions import PERSON, Gazetteer, mentions_of, speaker_entity
from hindsight.semantic.pages import PageKeeper, fact_chains, page_offset, page_token, page_updates
from hindsight.semantic.payloads import entity_from_payload, entity_payload, merge_entities
from hindsight.semantic.records import EmbeddedRecord, Entity, ModelIdentity, RecordKind, SemanticRecord
from hindsight.semantic.settings import SemanticSettings

MODEL = ModelIdentity("pages-test", 4, "0" * 64)
START = datetime(2023, 5, 8, 12, tzinfo=UTC)


def names(text: str, speaker: str, known: Gazetteer | None = None) -> dict[str, str]:
    return {m.name: m.how for m in mentions_of(text, speaker, known or Gazetteer())}


def people(*names_: str) -> Gazetteer:
    known = Gazetteer()
    for name in names_:
        known.add(name, PERSON)
    return known


# ----- mentions -------------------------------------------------------------------------------------------
def test_a_turn_mentions_its_speaker_and_the_names_inside_its_sentences() -> None:
    found = names("I met Beth Smith at the Louvre in Paris last May.", "Alice")
    assert found == {"Alice": "spoke", "Beth Smith": "named", "Louvre": "named", "Paris": "named"}


def test_names_used_to_address_the_listener_are_not_what_the_turn_is_about() -> None:
    known = people("Caroline", "Melanie")
    for text in ("Hey Caroline! I signed up for a pottery class.", "Wow, Caroline, that's great!",
                 "That sounds lovely, Caroline!", "Thanks Caroline. I ran a charity race."):  # fmt: skip
        assert names(text, "Melanie", known) == {"Melanie": "spoke"}, text
    assert names("I told Caroline about the race.", "Melanie", known) == {
        "Melanie": "spoke",
        "Caroline": "named",
    }


def test_a_sentence_initial_word_is_a_name_only_once_the_bank_knows_it() -> None:
    assert names("Yesterday was fun. Bart went fishing.", "user") == {"user": "spoke"}
    known = people("Bart")
    assert names("Bart went fishing.", "user", known) == {"user": "spoke", "Bart": "named"}


def test_a_short_form_of_one_known_persons_name_is_that_person_and_becomes_an_alias() -> None:
    [speaker, mel] = mentions_of("I think Mel would love it.", "Caroline", people("Caroline", "Melanie"))
    assert (speaker.name, mel.name, mel.said) == ("Caroline", "Melanie", "Mel")
    ambiguous = people("Joanna", "John")
    assert names("I saw Jo today.", "Nate", ambiguous) == {"Nate": "spoke", "Jo": "named"}


def test_my_relatives_are_entities_of_the_speaker() -> None:
    found = names("My kids loved the museum and my husband drove.", "Melanie")
    assert found == {"Melanie": "spoke", "Melanie's kids": "relative", "Melanie's husband": "relative"}
    assert speaker_entity("assistant") == "" and names("My pleasure.", "assistant") == {}


def test_chinese_turns_resolve_me_to_the_speaker_and_find_names() -> None:
    assert names("我的妈妈在上海工作。", "小红") == {"小红": "spoke", "小红的妈妈": "relative"}
    assert names("李明辉是我的同事，他很喜欢跑步。", "user") == {
        "user": "spoke",
        "李明辉": "named",
        "user的同事": "relative",
    }
    assert names("周末和王芳一起去爬山了。", "user")["王芳"] == "named"
    known = people("小红", "张伟")
    assert names("张伟今天请我吃饭", "小红", known) == {"小红": "spoke", "张伟": "named"}


# ----- page counts ----------------------------------------------------------------------------------------
def turn(turn_id: str, text: str, speaker: str, when: datetime = START) -> SemanticRecord:
    return SemanticRecord(
        id=turn_id,
        text=text,
        speaker=speaker,
        session_id="s1",
        meta=RecordMeta(source_turn_ids=(turn_id,), time=when),
    )


def test_a_turn_adds_one_mention_to_each_entity_it_mentions_and_relates_them() -> None:
    record = turn("t1", "My sister Beth lives in Paris.", "Alice")
    updates = {e.name: e for e in page_updates(record, mentions_of(record.text, record.speaker, Gazetteer()))}
    assert set(updates) == {"Alice", "Beth", "Paris", "Alice's sister"}
    assert updates["Alice"].spoken_count == 1 and updates["Beth"].spoken_count == 0
    assert dict(updates["Beth"].related) == {"Alice": 1, "Paris": 1, "Alice's sister": 1}
    assert updates["Alice's sister"].aliases == ("Alice sister",)


def test_merged_pages_add_their_counts_and_widen_first_and_last_seen() -> None:
    early = Entity(
        "Beth", "person", mention_count=2, first_seen=START, last_seen=START, related=(("Paris", 2),)
    )
    later = Entity("Beth", "other", mention_count=1, spoken_count=1, first_seen=START + timedelta(days=3),
                   last_seen=START + timedelta(days=3), related=(("Paris", 1), ("Rome", 1)))  # fmt: skip
    merged = merge_entities(early, later)
    assert (merged.type, merged.mention_count, merged.spoken_count) == ("person", 3, 1)
    assert (merged.first_seen, merged.last_seen) == (START, START + timedelta(days=3))
    assert merged.related == (("Paris", 3), ("Rome", 1))
    assert entity_from_payload(entity_payload("bank", merged)) == merged


def test_facts_read_as_chains_oldest_first_per_attribute() -> None:
    def fact(fact_id: str, attribute: str, value: str, day: int, superseded_by: str = "") -> SemanticRecord:
        return SemanticRecord(
            id=fact_id, text=value, kind=RecordKind.FACT, subject="Alice", attribute=attribute, value=value,
            valid_from=START + timedelta(days=day), superseded_by=superseded_by,
        )  # fmt: skip

    chain = fact_chains([fact("f3", "lives_in", "Rome", 5), fact("f1", "lives_in", "Paris", 1, "f3"),
                         fact("f2", "job", "nurse", 2)])  # fmt: skip
    assert [f.id for f in chain] == ["f2", "f1", "f3"]


def test_page_tokens_are_offsets_and_a_forged_one_names_the_field() -> None:
    assert page_token(0) == "" and page_offset(page_token(40)) == 40 and page_offset("") == 0
    with pytest.raises(InvalidArgument, match="page_token"):
        page_offset("abc")


# ----- the keeper on a real store -----------------------------------------------------------------------
@pytest.fixture
async def store() -> AsyncIterator[QdrantSemanticStore]:
    with tempfile.TemporaryDirectory() as path:
        async with open_vector_store(
            SemanticSettings(qdrant_path=path, qdrant_backend="edge"), MODEL
        ) as opened:
            yield opened


async def write(
    store: QdrantSemanticStore, keeper: PageKeeper, bank: str, turns: list[SemanticRecord]
) -> None:
    """What the engine does on Upsert: annotate, write the records, then each turn's page contribution."""
    annotated, updates = await keeper.annotate(bank, turns, Extraction())
    await store.upsert(bank, [EmbeddedRecord(r, [1.0, 0.0, 0.0, 0.0]) for r in annotated])
    touched = await store.put_contributions(bank, contributions_of(updates, []))
    await store.rebuild_entities(bank, sorted(touched))


async def test_pages_count_mentions_once_even_when_turns_are_delivered_again(
    store: QdrantSemanticStore,
) -> None:
    keeper = PageKeeper(store)
    turns = [
        turn("t1", "Hey Bob! I adopted a dog.", "Alice", START),
        turn("t2", "Wow, Alice! What is its name?", "Bob", START + timedelta(minutes=1)),
        turn("t3", "Its name is Rex. Bob, you should meet Rex.", "Alice", START + timedelta(minutes=2)),
        turn("t4", "I told Carol about Alice and Rex.", "Bob", START + timedelta(days=1)),
    ]
    await write(store, keeper, "b1", turns)
    await write(store, keeper, "b1", turns[2:])  # a re-delivery
    alice = await keeper.entity("b1", "alice")
    assert (alice.mention_count, alice.spoken_count) == (3, 2)
    assert (alice.first_seen, alice.last_seen) == (START, START + timedelta(days=1))
    rex = await keeper.entity("b1", "Rex")
    assert rex.mention_count == 2 and dict(rex.related)["Alice"] == 2
    page = await keeper.page("b1", "Alice", mention_limit=2)
    assert [m.id for m in page.mentions] == ["t4", "t3"] and page.next_page_token
    rest = await keeper.page("b1", "Alice", mention_limit=2, token=page.next_page_token)
    assert [m.id for m in rest.mentions] == ["t1"] and rest.next_page_token == ""
    with pytest.raises(NotFound):
        await keeper.page("b1", "Zed", mention_limit=5)
    with pytest.raises(NotFound):
        await keeper.entity("b2", "Alice")


async def test_a_query_matches_the_entities_it_names_unless_most_turns_mention_them(
    store: QdrantSemanticStore,
) -> None:
    keeper = PageKeeper(store)
    turns = [
        turn(f"a{i}", f"I painted picture {i}.", "Alice", START + timedelta(minutes=i)) for i in range(6)
    ]
    turns += [turn("b1", "Alice showed me a painting of Rex.", "Bob", START + timedelta(hours=1))]
    await write(store, keeper, "b1", turns)
    [match] = await keeper.matches("b1", ["what", "did", "rex", "do"], max_share=0.6, named_limit=10)
    assert (
        match.entity.name == "Rex"
        and match.named_turn_ids == ("b1",)
        and match.share == pytest.approx(1 / 7, abs=1e-3)
    )
    await write(store, keeper, "b1", [turn("b2", "Rex slept all day.", "Bob", START + timedelta(hours=2))])
    [again] = await keeper.matches(
        "b1", ["rex"], max_share=0.6, named_limit=10
    )  # a write drops what was read
    assert sorted(again.named_turn_ids) == ["b1", "b2"] and again.entity.mention_count == 2
    assert await keeper.matches("b1", ["alice"], max_share=0.6, named_limit=10) == []  # 7 of 8 turns
    [alice] = await keeper.matches("b1", ["alice"], max_share=1.0, named_limit=10)
    assert alice.named_turn_ids == ("b1",)
    listed, token = await keeper.list("b1", limit=2)
    assert [e.name for e in listed] == ["Alice", "Bob"] and token
    people_only, _ = await keeper.list("b1", limit=10, entity_type="person")
    assert {e.name for e in people_only} == {"Alice", "Bob"}
    prefixed, _ = await keeper.list("b1", limit=10, prefix="re")
    assert [e.name for e in prefixed] == ["Rex"]
