"""The two decisions as pure functions (no store): on topic (``decide._topic``), the spans an
answer may quote (``decide._spans``), hubness (``decide._probes``) and answer-bearing
(``decide._bearing``): what is asked rules spans out, the scorer picks, the threshold decides."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from decisions import CAL, decide_on, quoted
from evidex.decide import Calibration, PassageSupport, Probes, on_topic, shown, spans
from evidex.ingest import sentence_spans


def support(sim: float | None, cov: float = 0.0, sentence_cov: float | None = None) -> PassageSupport:
    return PassageSupport(similarity=sim, cross_language=False, coverage=cov,
                          sentence_coverage=cov if sentence_cov is None else sentence_cov,
                          title_coverage=0.0, keyword=0.0, sentences=())


# -- on topic -----------------------------------------------------------------------------------
unit = st.floats(0.0, 1.0)


@given(sim=unit, cov=unit, hub=unit, more=st.floats(0.0, 0.3))
def test_on_topic_grows_with_similarity_and_coverage_and_falls_with_hubness(
        sim: float, cov: float, hub: float, more: float) -> None:
    if on_topic([support(sim, cov)], [hub], CAL).verdict:
        assert on_topic([support(sim + more, cov)], [hub], CAL).verdict
        assert on_topic([support(sim, cov + more)], [hub], CAL).verdict
    if not on_topic([support(sim, cov)], [hub], CAL).verdict:
        assert not on_topic([support(sim, cov)], [hub + more], CAL).verdict


def test_keyword_only_stores_decide_on_sentence_coverage() -> None:
    assert on_topic([support(None, 0.0, 0.3)], None, CAL).verdict
    assert not on_topic([support(None, 0.0, 0.29)], None, CAL).verdict


def test_hubness_is_the_mean_of_the_closest_probes() -> None:
    rng = np.random.default_rng(3)
    probes = rng.normal(size=(40, 8))
    probes /= np.linalg.norm(probes, axis=1, keepdims=True)
    rows = rng.normal(size=(5, 8))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    got = Probes(probes).hubness(rows)
    want = np.sort(rows @ probes.T, axis=1)[:, -10:].mean(axis=1)
    assert np.allclose(got, want, atol=1e-6)


# -- spans ----------------------------------------------------------------------------------------
def quotable(text: str) -> tuple[list[tuple[int, int]], list[bool]]:
    ss = sentence_spans(text)
    return ss, [len(text[s:e].split()) >= 3 for s, e in ss]


def test_a_sentence_that_refers_back_is_quoted_with_its_antecedent() -> None:
    for text, want in [
        ("Gas cartridges cannot go to Switzerland. We ship them delivered duty paid.",
         "Gas cartridges cannot go to Switzerland. We ship them delivered duty paid."),
        ("Hiking boots may be worn outdoors. This works once per customer per year.",
         "Hiking boots may be worn outdoors. This works once per customer per year."),
        ("Worn items cannot be returned. There is one exception, the boot comfort promise.",
         "Worn items cannot be returned. There is one exception, the boot comfort promise."),
        ("Rücksendungen sind kostenlos. Dies gilt auch für Österreich.",
         "Rücksendungen sind kostenlos. Dies gilt auch für Österreich."),
    ]:
        got = [text[sp.start:sp.end] for sp in spans(text, *quotable(text), procedure=False)]
        assert got[-1] == want


def test_polite_sie_and_plain_sentences_stand_alone() -> None:
    text = "Die Ware ist verpackt. Senden Sie uns die Ware zurück."
    assert [text[sp.start:sp.end] for sp in spans(text, *quotable(text), procedure=False)][-1] == \
        "Senden Sie uns die Ware zurück."


def test_a_how_do_i_question_quotes_the_steps_as_one_span() -> None:
    text = ("To exchange an item:\n\n1. Open My orders in your account.\n2. Choose Exchange next to "
            "the item.\n3. Send the item back with the label.\n\nRefunds take a week to arrive.")
    got = {text[sp.start:sp.end] for sp in spans(text, *quotable(text), procedure=True) if sp.kind == "steps"}
    assert got == {"1. Open My orders in your account.\n2. Choose Exchange next to the item.\n"
                   "3. Send the item back with the label."}
    assert not any(sp.kind == "steps" for sp in spans(text, *quotable(text), procedure=False))


@given(st.text(alphabet=st.sampled_from(list("ab .\n1-*This them:")), max_size=120), st.booleans())
def test_spans_are_contiguous_and_hold_their_focus(text: str, procedure: bool) -> None:
    ss, ok = quotable(text)
    for sp in spans(text, ss, ok, procedure):
        assert 0 <= sp.start <= sp.focus[0] < sp.focus[1] <= sp.end <= len(text)


def test_shown_text_drops_markdown_but_keeps_words() -> None:
    got = shown("We ship them **delivered duty paid**: no fees.")
    assert got == "We ship them delivered duty paid: no fees."
    assert shown("## ERR-401: Please sign in") == "ERR-401: Please sign in"
    assert shown("- **Summit:** _free_ shipping, snake_case kept") == "Summit: free shipping, snake_case kept"
    assert shown("| Zone 1 (Germany) | 4.95 € |") == "Zone 1 (Germany); 4.95 €"
    table = "| Plan | Monthly |\n|---|:---:|\n| Summit | 9 € |"
    assert shown(table) == "Plan; Monthly\nSummit; 9 €"  # no row of dashes
    assert shown("1. Open My orders\n2. Choose *Exchange*") == "Open My orders\nChoose Exchange"


# -- answer-bearing -------------------------------------------------------------------------------
def test_a_question_for_a_value_is_not_answered_by_a_span_without_one() -> None:
    texts = ["The heated gloves have a battery in each cuff and three heat levels."]
    got = decide_on("How long does the battery of the heated gloves take to charge?", texts)
    assert not got.verdict and got.why == "not_stated" and got.asked == "duration"
    ok = ["The heated gloves have a battery in each cuff. A full charge takes 3 hours."]
    got = decide_on("How long does the battery of the heated gloves take to charge?", ok)
    assert got.verdict and quoted(got, ok) == ["A full charge takes 3 hours."]


def test_an_identifier_line_answers_only_a_question_for_an_identifier() -> None:
    texts = ["Fjell Down Jacket, men. SKU JK-1310. Fill: 200 g of 700 cuin goose down. Price: 289.00 €."]
    got = decide_on("What is the fill weight of the Fjell down jacket?", texts)
    assert quoted(got, texts) == ["Fill: 200 g of 700 cuin goose down."]
    got = decide_on("What is the SKU of the Fjell down jacket?", texts,
                    dataclasses.replace(CAL, keyword_coverage=0.2))
    assert got.verdict and "SKU JK-1310." in quoted(got, texts)[0]


def test_a_condition_right_after_the_quote_belongs_to_it() -> None:
    texts = ["You can return items within 30 days of delivery. Only unworn items can be returned. "
             "Refunds take a week."]
    got = decide_on("how many days do i have to return an item", texts)
    assert quoted(got, texts) == [
        "You can return items within 30 days of delivery. Only unworn items can be returned."]


def test_sources_that_state_different_values_are_both_quoted() -> None:
    texts = ["Returns are accepted within 30 days of delivery.",
             "Returns are accepted within 14 days of delivery."]
    got = decide_on("within how many days are returns accepted", texts)
    assert got.disagree and len(got.quotes) == 2
    same = ["Returns are accepted within 30 days of delivery.", "Returns are accepted within 30 days."]
    assert not decide_on("within how many days are returns accepted", same).disagree


def test_below_the_threshold_is_weak_evidence() -> None:
    texts = ["Our stores sell outdoor clothing."]
    strict = dataclasses.replace(CAL, keyword_coverage=0.99)
    got = decide_on("Can I return a worn jacket?", texts, strict)
    assert not got.verdict and got.why == "weak_evidence" and got.threshold == 0.99
    assert got.score is not None and got.score < 0.99


def test_with_vectors_the_closest_span_in_meaning_answers() -> None:
    texts = ["Returns are free. You have 30 days to send an item back."]
    picks = {"Returns are free.": np.array([1.0, 0.0]),
             "You have 30 days to send an item back.": np.array([0.0, 1.0])}

    def vectors(items: list[str]) -> np.ndarray:
        return np.stack([picks[t.split("\n")[-1]] for t in items])

    cal = Calibration(on_topic=0.0, answer_bearing=0.5, hub_weight=0.0)
    got = decide_on("Is sending something back free of charge?", texts, cal, vectors=vectors,
                    query=np.array([1.0, 0.0]))
    assert got.verdict and quoted(got, texts) == ["Returns are free."] and got.score >= 1.0
