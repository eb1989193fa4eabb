"""Stemmed search terms: English words meet across tense and number; other terms stay as they are."""

from __future__ import annotations

from hindsight.runtime.text import search_terms, stem, terms
from hindsight.runtime.tsearch import query_terms, tsvector_literal


def test_english_words_are_stemmed_so_tenses_and_plurals_meet() -> None:
    assert search_terms("She painted two sunrises") == ["paint", "two", "sunris"]
    assert search_terms("paint a sunrise") == ["paint", "sunris"]


def test_numbers_short_words_and_chinese_are_left_alone() -> None:
    assert stem("2023") == "2023" and stem("ran") == "ran" and stem("o'neill") == "o'neill"
    assert search_terms("西湖") == terms("西湖")


def test_the_text_search_helpers_take_the_analysis_to_use() -> None:
    assert tsvector_literal(["painted walls"], search_terms) == "'paint':1 'wall':2"
    assert tsvector_literal(["painted walls"]) == "'painted':1 'walls':2"
    assert query_terms("walls and walls", search_terms) == ["wall"]
