"""The query contract and the analyzers."""

from __future__ import annotations

import unicodedata

import pytest

from evidex import QueryError
from evidex.query import QueryLimits, get_analyzer, parse_query


def test_words_are_nfc_lowercase_letter_digit_runs() -> None:
    # "U" + combining diaeresis is NFC-normalised to "ü" before splitting.
    assert parse_query("ERR-401 Plan_B2 U\u0308bernachtung") == ["err", "401", "plan", "b2", "übernachtung"]


@pytest.mark.parametrize(
    "query",
    ["a OR b", "NOT a", "a AND b", 'title:"a b"', "(a) NEAR b", "a* ^b", "col:a"],
)
def test_operators_are_literal_words_or_separators(query: str) -> None:
    words = parse_query(query)
    assert all(w.isalnum() for w in words)
    # Operator words are kept as ordinary words, never interpreted.
    if "OR" in query:
        assert "or" in words


@pytest.mark.parametrize("query", ["", "   ", "?!-*()\"'", "^^^"])
def test_empty_or_punctuation_only_query_has_no_words(query: str) -> None:
    assert parse_query(query) == []


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("x" * 201, "200"),
        (" ".join(f"w{i}" for i in range(13)), "13 distinct words; the limit is 12"),
        ("a" * 41, "40"),
        ("line\nbreak", r"U\+000A"),
        ("del\x7fete", r"U\+007F"),
        ("tab\there", r"U\+0009"),
        (b"bytes", "string"),
        (None, "string"),
    ],
)
def test_contract_violations_raise_query_error(query: object, message: str) -> None:
    with pytest.raises(QueryError, match=message):
        parse_query(query)


def test_exactly_the_unicode_control_characters_are_refused() -> None:
    """Every code point of Unicode's category Cc is refused, named by its code point, and no
    other character is refused as one (lone surrogates have their own error)."""
    for code in range(0x110000):
        ch = chr(code)
        if 0xD800 <= code <= 0xDFFF:
            continue
        try:
            parse_query(f"a{ch}b")
            refused = None
        except QueryError as e:
            refused = str(e)
        if unicodedata.category(ch) == "Cc":
            assert refused == f"query contains the control character U+{code:04X}"
        else:
            assert refused is None or "control character" not in refused


def test_limits_count_distinct_words_and_are_inclusive() -> None:
    assert len(parse_query(" ".join(["same"] * 30))) == 1
    assert len(parse_query(" ".join(f"w{i}" for i in range(12)))) == 12
    assert parse_query("a" * 40) == ["a" * 40]
    assert len(parse_query(" ".join(["x" * 39] * 5))) == 1  # 199 characters
    assert parse_query("x" * 300, QueryLimits(max_chars=300, max_word_chars=300)) == ["x" * 300]


def test_query_error_is_a_value_error() -> None:
    assert issubclass(QueryError, ValueError)


def test_exact_analyzer_keeps_words_exact() -> None:
    exact = get_analyzer("exact")
    assert exact.terms("Übernachtungen, Returns!") == ["übernachtungen", "returns"]
    assert exact.terms("Ubernachtung") != exact.terms("Übernachtung")
    assert exact.terms("The ERR-401") == ["the", "err", "401"]


def test_english_analyzer_stems_and_drops_stop_words() -> None:
    en = get_analyzer("english")
    assert en.terms("The returns were returned") == ["return", "were", "return"]
    assert en.terms("a b c") == []  # stop word and single letters
    assert en.terms("Übernachtung") == en.terms("übernachtung")


def test_german_analyzer_stems_and_folds_umlauts_after_stemming() -> None:
    de = get_analyzer("german")
    assert de.terms("Übernachtungen") == de.terms("Ubernachtung")
    assert "und" not in de.terms("Bahn und Flug")
    assert de.terms("Rücksendungen") == de.terms("Rücksendung")


def test_query_terms_are_sorted_and_distinct() -> None:
    en = get_analyzer("english")
    assert en.query_terms(["returns", "returned", "apple"]) == ["appl", "return"]


def test_unknown_analyzer_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="known analyzers: auto, exact, english, german"):
        get_analyzer("klingon")
