"""Keyword analysis shared by every layer that matches words: English words and Chinese n-grams.

PostgreSQL's default parser does not segment Chinese, and whitespace splitting fails for it too, so
CJK runs become character unigrams and bigrams while Latin text becomes lower-cased words without
stop words. The same terms are used to index and to query, so both sides always agree.
"""

from __future__ import annotations

import functools
import re
import threading
from collections import Counter
from typing import Any

import snowballstemmer

_TOKEN = re.compile(
    r"[0-9a-zA-Z\u00c0-\u024f]+(?:['\u2019][a-zA-Z]+)?|[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+"
)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

STOPWORDS = frozenset(
    """
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most my
myself no nor not now of off on once only or other our ours ourselves out over own same she should so
some such than that the their theirs them themselves then there these they this those through to too
under until up very was we were what when where which while who whom why will with would you your
yours yourself yourselves s t don didn doesn isn wasn weren won wouldn ll ve re d m o y also
""".split()
)
"""English function words: they match everything and so rank nothing."""


def key_of(text: str) -> str:
    """How names and values are compared (the key form the semantic layer stores): case, outer spaces
    and inner runs of spaces do not count."""
    return " ".join(text.casefold().split())


def _latin_term(word: str) -> str:
    word = word.lower().replace("\u2019", "'")
    if word.endswith("'s"):
        word = word[:-2]
    return word


def terms(text: str) -> list[str]:
    """Index terms of ``text``, in order, with repeats: Latin words and CJK unigrams + bigrams."""
    result: list[str] = []
    for token in _TOKEN.findall(text):
        if _CJK.match(token):
            result.extend(token)
            result.extend(token[i : i + 2] for i in range(len(token) - 1))
        else:
            word = _latin_term(token)
            if word and word not in STOPWORDS:
                result.append(word)
    return result


_ENGLISH_WORD = re.compile(r"[a-z]+")
_stemmers = threading.local()
"""One Snowball stemmer per thread: a stemmer keeps the word it works on in itself, so two threads sharing
one (analysis runs on worker threads, see :func:`hindsight.runtime.offload.off_loop`) get each other's
words: wrong stems, or an ``IndexError`` that failed the write it was analysing."""


def _english_stemmer() -> Any:
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        stemmer = _stemmers.english = snowballstemmer.stemmer("english")
    return stemmer


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball (Porter2) stem of a lower-case English word; other terms are returned unchanged."""
    if len(word) < 4 or not _ENGLISH_WORD.fullmatch(word):
        return word
    return str(_english_stemmer().stemWord(word))


def search_terms(text: str) -> list[str]:
    """:func:`terms` with English words stemmed ("painted", "paints" -> "paint"), for ranked keyword search.

    Stemming lets a question match the tense or number the conversation used; Chinese terms are unchanged.
    """
    return [stem(term) for term in terms(text)]


@functools.lru_cache(maxsize=32768)
def evidence_terms(text: str) -> frozenset[str]:
    """The distinct terms whose presence says a text is about a request: :func:`search_terms` without
    single Chinese characters. A shared character (我, 的, 要, 周) says little about meaning, while a shared
    bigram is about as telling as a shared English word; relevance (edge and lessons) counts these.

    Cached by text: the edge scores the same stored turns on recall after recall, and this was its largest
    per-candidate cost."""
    return frozenset(term for term in search_terms(text) if len(term) > 1 or not _CJK.match(term))


def term_counts(text: str) -> Counter[str]:
    """Term frequencies of ``text``."""
    return Counter(terms(text))
