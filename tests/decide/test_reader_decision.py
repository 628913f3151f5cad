"""The answer-bearing decision with the trained reader (``decide._bearing``), as a pure function:
the reader reads the scorer's first spans and decides; a deadline missed declines (``timeout``),
never a weaker rule; a strict answer type stays a check. Quotes that read as answers: a
sentence ending in a colon carries its list, a table row its column headers.

The reader here is a stand-in with known scores (the real one: tests/embed/test_reader.py)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from decisions import CAL, Scores, decide_on, quoted
from decisions import READER_TEXTS as TEXTS
from evidex.decide import Reading, shown, spans, table_header
from evidex.ingest import sentence_spans


def test_below_the_readers_threshold_the_question_is_declined_as_not_stated() -> None:
    got = decide_on("How long do I have to return an item?", TEXTS,
                    reading=Reading(Scores({"within 30 days": 0.4}), 0.5))
    assert not got.verdict and got.why == "not_stated" and got.quotes == () and got.score == 0.4


def test_a_reader_past_its_deadline_declines_with_timeout() -> None:
    got = decide_on("How long do I have to return an item?", TEXTS,
                    reading=Reading(lambda q, t: None, 0.5))
    assert not got.verdict and got.why == "timeout"


def test_vectors_past_their_deadline_decline_with_timeout_not_words_alone() -> None:
    """Without the reader, quotes whose vectors came too late are read by their words; with it,
    the answer would then depend on how busy the machine is, so the decision declines."""
    read = Scores({"within 30 days": 2.0})
    late = decide_on("How long do I have to return an item?", TEXTS, vectors=lambda texts: None,
                     query=np.ones(4, dtype=np.float32), reading=Reading(read, 0.5))
    assert not late.verdict and late.why == "timeout" and read.read == []


def test_a_strict_answer_type_stays_a_check_on_the_reader() -> None:
    """A duration is asked: the reader's best span states none, so the best that does answers."""
    read = Scores({"free of charge": 3.0, "within 30 days": 1.0})
    got = decide_on("How long do I have to return an item?", TEXTS, reading=Reading(read, 0.5))
    assert got.verdict and quoted(got, TEXTS) == ["You can return items within 30 days of delivery."]
    none = decide_on("How long do I have to return an item?", [TEXTS[1]],
                     reading=Reading(Scores({"Returns": 3.0}), 0.5))
    assert not none.verdict and none.why == "not_stated"


def test_the_reader_never_changes_a_store_without_it() -> None:
    """The default calibration of the tests' embedder has no reader: the scorer decides."""
    assert not CAL.reader


# -- quotes that read as answers -----------------------------------------------------------------
def _spans(text: str) -> list[str]:
    ss = sentence_spans(text)
    return [text[s.start:s.end] for s in spans(text, ss, [True] * len(ss), False)]


def test_a_sentence_ending_in_a_colon_carries_its_list() -> None:
    text = "You can pay with:\n- PayPal\n- Visa card\n- Klarna invoice\n\nNothing else is accepted."
    assert _spans(text)[0] == "You can pay with:\n- PayPal\n- Visa card\n- Klarna invoice"
    # A colon with no list after it is a sentence of its own.
    assert _spans("Note: bring the receipt.\n\nWe refund in 5 days.")[0] == "Note: bring the receipt."


def test_a_long_list_is_cut_after_the_steps_limit() -> None:
    text = "Sizes:\n" + "\n".join(f"- size {n}" for n in range(12))
    first = _spans(text)[0]
    assert first.startswith("Sizes:\n- size 0") and "- size 4" in first and "- size 5" not in first


TABLE = ("## Shipping costs\n\n| Zone | Standard | Free from | Express |\n|---|---|---|---|\n"
         "| Zone 1 (Germany) | 4.95 € | 50 € | 9.95 € |\n"
         "| Zone 3 (rest of the EU) | 9.95 € | 150 € | not available |\n\nPrices include VAT.")


def test_a_table_row_is_shown_with_its_column_headers() -> None:
    at = TABLE.index("| Zone 3")
    row = TABLE[at:TABLE.index("\n", at)]
    header = table_header(TABLE, at)
    assert header == ["Zone", "Standard", "Free from", "Express"]
    assert shown(row, header) == ("Zone 3 (rest of the EU): Standard 9.95 €, Free from 150 €, "
                                  "Express not available")
    # The header row itself, text outside a table, and a table without a delimiter row.
    head = TABLE[TABLE.index("| Zone |"):TABLE.index("\n|---")]
    assert shown(head, header) == "Zone; Standard; Free from; Express"
    assert table_header(TABLE, TABLE.index("Prices")) is None
    assert table_header("| a | b |\n| c | d |", 10) is None


def _answer_text(texts: Sequence[str], got: object) -> list[str]:
    return [shown(texts[q.source][q.start:q.end], table_header(texts[q.source], q.start))
            for q in got.quotes]  # type: ignore[attr-defined]


def test_an_answer_from_a_table_row_reads_as_a_sentence() -> None:
    texts = [TABLE]
    got = decide_on("How much is standard shipping to Zone 3?", texts, cal=CAL,
                    reading=Reading(Scores({"Zone 3": 2.0}), 0.5))
    assert got.verdict
    assert _answer_text(texts, got) == ["Zone 3 (rest of the EU): Standard 9.95 €, Free from 150 €, "
                                        "Express not available"]
