"""Search terms become tsvector/tsquery literals that skip PostgreSQL's parser on both sides."""

from __future__ import annotations

from hindsight.runtime.tsearch import (
    MAX_POSITION,
    MAX_POSITIONS_PER_LEXEME,
    query_terms,
    tsquery_literal,
    tsvector_literal,
)


def test_an_english_document_keeps_its_words_with_positions_and_drops_stop_words() -> None:
    assert (
        tsvector_literal(["The deploy failed, the deploy retried"]) == "'deploy':1,3 'failed':2 'retried':4"
    )


def test_a_chinese_document_is_indexed_by_characters_and_bigrams() -> None:
    literal = tsvector_literal(["北京大学"])
    for lexeme in ("北", "京", "大", "学", "北京", "京大", "大学"):
        assert f"'{lexeme}':" in literal


def test_apostrophes_are_doubled_so_the_literal_stays_well_formed() -> None:
    assert tsvector_literal(["O'Neill"]) == "'o''neill':1"
    assert tsquery_literal(["o'neill"]) == "'o''neill'"


def test_every_part_of_a_record_is_indexed_and_empty_parts_are_skipped() -> None:
    assert tsvector_literal(["", "Caroline", "adopted a dog"]) == "'caroline':1 'adopted':2 'dog':3"


def test_positions_are_capped_where_postgresql_would_refuse_them() -> None:
    literal = tsvector_literal(["word " * (MAX_POSITIONS_PER_LEXEME + 10)])
    assert literal.count(",") == MAX_POSITIONS_PER_LEXEME - 1
    far = tsvector_literal(["filler " * (MAX_POSITION + 5) + "last"])
    assert far.endswith(f"'last':{MAX_POSITION}")


def test_a_query_becomes_an_or_of_its_distinct_terms() -> None:
    assert query_terms("Where is the database? database!") == ["database"]
    assert (
        tsquery_literal(query_terms("database migration timeout")) == "'database' | 'migration' | 'timeout'"
    )
    assert tsquery_literal(query_terms("北京")) == "'北' | '京' | '北京'"


def test_a_query_of_stop_words_or_punctuation_has_no_terms() -> None:
    assert query_terms("what is the ?!") == []
    assert tsquery_literal([]) is None
    assert tsquery_literal(["", ""]) is None


def test_overlong_lexemes_are_left_out_instead_of_failing_the_write() -> None:
    assert tsvector_literal(["x" * 5000 + " ok"]) == "'ok':2"
    assert tsquery_literal(["x" * 5000]) is None
