"""Sentence boundaries and the choice of the sentence to quote inside a passage and across
passages (pure functions, no store)."""

from __future__ import annotations

import dataclasses

from answer_helpers import extract
from evidex.answer import Source, sentences
from evidex.decide import PassageSupport, asked, passage_support, term_weights
from evidex.ingest import sentence_spans
from evidex.query import get_analyzer

EN = get_analyzer("english")


def spans(text: str) -> list[str]:
    return [text[s:e] for s, e in sentence_spans(text)]


# -- boundaries ---------------------------------------------------------------------------------
def test_a_german_date_does_not_end_a_sentence() -> None:
    text = "Die Inventur findet am 3. Januar 2027 in allen Filialen statt. Danach ist geöffnet."
    assert spans(text) == ["Die Inventur findet am 3. Januar 2027 in allen Filialen statt.",
                           "Danach ist geöffnet."]
    assert spans("Geöffnet bis 24. Dezember. Am 1. Mai geschlossen.") == [
        "Geöffnet bis 24. Dezember.", "Am 1. Mai geschlossen."]
    # The answer contract reads the same boundaries.
    assert sentences("Am 8. Dezember offen. [1]") == ["Am 8. Dezember offen. [1]"]


def test_a_number_before_another_capital_word_still_ends_a_sentence() -> None:
    assert spans("Wir haben Filialen in Hamburg und Köln: insgesamt 3. Mai kommt Leipzig dazu.") == [
        "Wir haben Filialen in Hamburg und Köln: insgesamt 3. Mai kommt Leipzig dazu."]  # a date
    assert spans("Es sind 3. Dann kommt Leipzig.") == ["Es sind 3.", "Dann kommt Leipzig."]
    assert spans("Version 1.3. Januar beginnt.") == ["Version 1.3.", "Januar beginnt."]
    assert spans("Bis 13.\nAugust ist zu.") == ["Bis 13.", "August ist zu."]


# -- inside a passage ---------------------------------------------------------------------------
def one(question: list[str], text: str, titles: tuple[str, ...] = (),
        df: dict[str, int] | None = None) -> tuple[list[Source], list[PassageSupport]]:
    w = term_weights(EN.query_terms(question), df or {}, 10, EN.terms)
    src = Source(1, {"quote": text, "title": titles[0] if titles else None,
                     "heading_path": titles[1:], "version": "1"}, ())
    p = passage_support(text, titles, EN.terms, w, similarity=0.9, cross_language=False, keyword=0.0)
    return [src], [dataclasses.replace(p, supported=True)]


REPAIR = "Usually 2 to 3 weeks from the day the item arrives at the Repair Lab. Resoling takes 4 to 5 weeks."
REPAIR_TITLES = ("Repair Lab", "How long does a repair take?")


def test_words_of_the_title_do_not_choose_between_sentences() -> None:
    # "take", "repair" and "lab" are in the heading every sentence is read with: the rarer
    # "takes" of the second sentence must not make it the answer to the heading's question.
    srcs, sup = one(["how", "long", "will", "a", "repair", "at", "the", "repair", "lab", "take"],
                    REPAIR, REPAIR_TITLES, df={"take": 1, "repair": 4, "lab": 4})
    assert extract(srcs, sup, "how long will a repair at the repair lab take")["answer"].startswith(
        "Usually 2 to 3 weeks")


def test_a_word_found_in_one_sentence_chooses_it() -> None:
    text = "Our shop opened in 1990. Worn jackets cannot be returned."
    srcs, sup = one(["can", "i", "return", "a", "worn", "jacket"], text)
    got = extract(srcs, sup, "Can I return a worn jacket?")["answer"]
    assert got == "Worn jackets cannot be returned. [1]"


def test_a_table_header_row_is_not_quoted_its_rows_are_with_their_headers() -> None:
    text = ("| Status | Qualifying spend per calendar year | Points per 1 € |\n|---|---|---|\n"
            "| Scout | from 0 € | 1 point |\n| Summit | from 1,500 € | 1.5 points |")
    srcs, sup = one(["how", "much", "spend", "to", "reach", "summit", "status"], text)
    out = extract(srcs, sup, "how much do I need to spend to reach summit status")["answer"]
    # Shown without the table's pipes, each cell with its column's header.
    assert out == "Summit: Qualifying spend per calendar year from 1,500 €, Points per 1 € 1.5 points [1]"


def test_a_duration_asked_for_in_a_later_sentence_of_the_question() -> None:
    q = "I typed the wrong password a few times. How long do I have to wait?"
    assert asked(q).kind == "duration" and asked("Wie lange dauert es?").kind == "duration"
    assert asked("I typed the wrong password. What should I do?").kind == "procedure"
    text = ("After 5 failed sign-in attempts your account is locked for 15 minutes. "
            "Wait and try again, or reset the password you typed wrong.")
    srcs, sup = one(q.split(), text)
    assert extract(srcs, sup, q)["answer"].startswith("After 5 failed")


# -- across passages ----------------------------------------------------------------------------
def test_a_list_of_dates_is_no_disagreement_with_one_date_but_one_value_each_is() -> None:
    q = ["are", "german", "stores", "open", "on", "christmas", "eve"]
    texts = ["On Christmas Eve, 24 December, the German stores are open 10:00-14:00.",
             "German stores are closed on New Year's Day (1 January), Good Friday (3 April), "
             "Labour Day (1 May) and Christmas (25 and 26 December)."]
    w = term_weights(EN.query_terms(q), {}, 10, EN.terms)
    srcs = [Source(i, {"quote": t, "title": None, "heading_path": (), "version": "1"}, ())
            for i, t in enumerate(texts, start=1)]
    sup = [dataclasses.replace(passage_support(t, (), EN.terms, w, similarity=0.9,
                                               cross_language=False, keyword=0.0), supported=True)
           for t in texts]
    assert not extract(srcs, sup, "are german stores open on christmas eve")["answer"].startswith(
        "Sources disagree.")
    texts[1] = "On Christmas Eve, 23 December, German stores open late."
    srcs[1] = Source(2, {"quote": texts[1], "title": None, "heading_path": (), "version": "1"}, ())
    sup[1] = dataclasses.replace(passage_support(texts[1], (), EN.terms, w, similarity=0.9,
                                                 cross_language=False, keyword=0.0), supported=True)
    assert extract(srcs, sup, "are german stores open on christmas eve")["answer"].startswith(
        "Sources disagree.")


def test_a_question_in_the_passage_is_not_quoted_as_the_answer() -> None:
    text = ("Can I see the order in an account? Create an account with the same email address; "
            "guest orders from the last 12 months are added automatically.")
    srcs, sup = one(["can", "i", "see", "guest", "orders", "in", "an", "account"], text)
    assert extract(srcs, sup, "Can I see guest orders in an account?")["answer"].startswith(
        "Create an account"), sup[0].sentences
    # A question quoted inside a statement does not make it a question.
    text = 'Click "Forgot password?" on the sign-in page to reset your password.'
    srcs, sup = one(["how", "do", "i", "reset", "my", "password"], text)
    assert extract(srcs, sup, "How do I reset my password?")["answer"].startswith("Click")
