"""The answer decision, the evidence it reads, the second-stage ranker, the sentence choice and
the disagreement check, as pure functions (no store), plus their wiring on the example
collection with the tiny test embedder."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evidex import Actor, KnowledgeBase
from evidex.answer import sentences, supporting_span
from evidex.conflicts import disagree, values
from evidex.decide import Calibration, PassageSupport, coverage, guess_language, passage_support, term_weights
from evidex.ingest import sentence_spans
from evidex.query import get_analyzer, stem

EN = get_analyzer("english")
EXACT = get_analyzer("exact")
T = Calibration(on_topic=0.9, answer_bearing=0.9, similarity_scale=0.05)


def support(sim: float | None, cov: float, cross: bool = False, **kw: float) -> PassageSupport:
    return PassageSupport(similarity=sim, cross_language=cross, coverage=cov, sentence_coverage=cov,
                          title_coverage=kw.get("title", 0.0), keyword=kw.get("keyword", 0.0),
                          sentences=())


unit = st.floats(0.0, 1.0)


# -- the evidence: weights, coverage, sentences ---------------------------------------------------
def test_stems_keep_numbers_whole_and_drop_plural_endings() -> None:
    assert stem("2014") == "2014" and stem("2015") != stem("2014")
    assert stem("bands") == stem("band") and stem("returns") == stem("returned")
    assert stem("rückgaben") == stem("rückgabe")


def test_weights_ignore_function_words_and_favour_unseen_words() -> None:
    terms = EXACT.query_terms(["how", "many", "siblings", "did", "mendeleev", "have"])
    w = term_weights(terms, {"mendeleev": 5, "have": 40}, 280, EXACT.terms)
    assert set(w) == {stem("siblings"), stem("mendeleev")}
    assert w[stem("siblings")] > w[stem("mendeleev")]  # in no passage: the most informative


@given(st.dictionaries(st.text("abcdef", min_size=1, max_size=6), st.floats(0.01, 9.0), max_size=6),
       st.sets(st.text("abcdef", min_size=1, max_size=6), max_size=8))
def test_coverage_is_a_share(weights: dict[str, float], stems: set[str]) -> None:
    c = coverage(stems, weights)
    assert 0.0 <= c <= 1.0 + 1e-9
    assert coverage(set(weights), weights) == (1.0 if weights else 0.0) or abs(
        coverage(set(weights), weights) - 1.0) < 1e-9


def test_heading_and_title_lines_are_never_sentences_to_quote() -> None:
    text = "Error ERR-401\nYour session has expired after 30 minutes. Sign in again."
    w = term_weights(EXACT.query_terms(["err", "401", "session"]), {}, 10, EXACT.terms)
    p = passage_support(text, ("Error codes",), EXACT.terms, w, similarity=None,
                        cross_language=False, keyword=0.0)
    quoted = [text[m.start:m.end] for m in p.sentences]
    assert quoted == ["Your session has expired after 30 minutes.", "Sign in again."]
    md = "## ERR-401: Please sign in again\n\nYour session has expired."
    p = passage_support(md, (), EXACT.terms, w, similarity=None, cross_language=False, keyword=0.0)
    assert [md[m.start:m.end] for m in p.sentences] == ["Your session has expired."]


def test_a_sentence_that_asks_is_not_one_that_answers() -> None:
    """An FAQ's question line is the reader's question in other words: closest in words and
    meaning, and it answers nothing. The answer after it, and a question and answer written as
    one unit, are quotable."""
    text = ("I received a gift. Can I return it?\nYes, gifts can be returned within 30 days. "
            "**Do you refund the giver?** Only when the giver returns it.")
    w = term_weights(EXACT.query_terms(["return", "gift"]), {}, 10, EXACT.terms)
    p = passage_support(text, ("Returning a gift",), EXACT.terms, w, similarity=None,
                        cross_language=False, keyword=0.0)
    assert [text[m.start:m.end] for m in p.sentences] == [
        "I received a gift.", "Yes, gifts can be returned within 30 days.",
        "**Do you refund the giver?** Only when the giver returns it."]


def test_a_sentence_that_repeats_the_title_or_points_elsewhere_is_not_an_answer() -> None:
    """A catalogue record opens with the product's name: read with its title it is as close to
    any question about the product as the title is, and says nothing."""
    text = ('Basecamp 4 Family Tent. SKU TN-9004. Four-person family tent, 14.5 kg. '
            'See "Tents: care and repair" for the warranty. The Family Tent is in stock.')
    w = term_weights(EXACT.query_terms(["basecamp", "tent", "packed", "size"]), {}, 10, EXACT.terms)
    p = passage_support(text, ("Basecamp 4 Family Tent (TN-9004)",), EXACT.terms, w,
                        similarity=None, cross_language=False, keyword=0.0)
    assert [text[m.start:m.end] for m in p.sentences] == [
        "SKU TN-9004.", "Four-person family tent, 14.5 kg.", "The Family Tent is in stock."]
    # A heading may state the answer: repeating it is quoting the answer.
    text = "Your session has expired. Sign in again."
    p = passage_support(text, ("Error codes", "ERR-401: Please sign in again"), EXACT.terms, w,
                        similarity=None, cross_language=False, keyword=0.0)
    assert [text[m.start:m.end] for m in p.sentences] == ["Your session has expired.", "Sign in again."]

def test_a_sentence_is_read_with_its_heading_path() -> None:
    w = term_weights(EXACT.query_terms(["salary", "bands", "engineering"]), {}, 10, EXACT.terms)
    text = "Band E1 ranges from 52,000 to 61,000 euros per year."
    p = passage_support(text, ("Salary bands 2026", "Engineering"), EXACT.terms, w, similarity=None,
                        cross_language=False, keyword=0.0)
    assert p.sentence_coverage == pytest.approx(1.0)


@given(st.text(alphabet=st.sampled_from(list("ab .!?\n[]1#")), max_size=80))
def test_sentence_spans_are_trimmed_ordered_and_verbatim(text: str) -> None:
    spans = sentence_spans(text)
    assert all(0 <= s < e <= len(text) for s, e in spans)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    assert [text[s:e] for s, e in spans] == sentences(text)
    assert all(text[s:e] == text[s:e].strip() for s, e in spans)


@pytest.mark.parametrize(("text", "want"), [
    ("Am 29. Januar 1886 meldete Benz das Patent an. Es gilt als Geburtsurkunde.",
     ["Am 29. Januar 1886 meldete Benz das Patent an.", "Es gilt als Geburtsurkunde."]),
    ("In der 85. Minute verwandelte Andreas Brehme. Danach war Schluss.",
     ["In der 85. Minute verwandelte Andreas Brehme.", "Danach war Schluss."]),
    ("1. Sign in to your account.\n2. Select the order.",
     ["1.", "Sign in to your account.", "2.", "Select the order."]),
    ("He died aged 68. The funeral was held in Paris.",
     ["He died aged 68.", "The funeral was held in Paris."]),
    ("Es war im Jahr 1933. Dann kam der Krieg.", ["Es war im Jahr 1933.", "Dann kam der Krieg."]),
    ("England won 4–2. Lionel scored.", ["England won 4–2.", "Lionel scored."]),
])
def test_an_ordinal_with_a_period_does_not_end_a_sentence(text: str, want: list[str]) -> None:
    """German writes ordinals with a period ("5. Mai", "im 19. Jahrhundert"); a sentence split
    there quotes, and compares by meaning, a fragment ("Minute verwandelte Andreas Brehme ...").
    A list item's number stays apart, so the item is quoted without it."""
    assert [text[s:e] for s, e in sentence_spans(text)] == want


@pytest.mark.parametrize(("text", "lang"), [
    ("Who designed the bridge?", "en"), ("Wann wurde die Brücke eröffnet?", "de"),
    ("In welchem Ort wurde Turing tot aufgefunden?", "de"), ("Eiffel tower height", None),
])
def test_language_hint(text: str, lang: str | None) -> None:
    assert guess_language(text) == lang


def test_support_is_per_sentence_not_per_passage() -> None:
    passage = "Alpha beta gamma. Filler words here. Delta epsilon zeta."
    assert supporting_span("Alpha beta gamma [1]", passage, EXACT.terms) == (0, 16)  # verbatim
    assert supporting_span("Gamma delta epsilon zeta filler here.", passage, EXACT.terms) is not None
    # Three quarters of its words are in the passage, but no sentence (or adjacent pair) holds half.
    assert supporting_span("Alpha beta gamma delta epsilon zeta omega eta.", passage, EXACT.terms) is None


# -- values and disagreement ------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "kinds"), [
    ("Returns cost €6.95 from Spain", [("price:EUR", 6.95)]),
    ("within 30 days", [("duration", 30.0)]),
    ("Re-proof it once a year", [("period", 365.0)]),
    ("alle 6 Monate nachimprägnieren", [("period", 182.5)]),
    ("Shopping Sundays: 13:00-18:00", [("time", (780, 1080))]),
    ("geöffnet von 12 bis 17 Uhr", [("time", (720, 1020))]),
    ("10 % off until 15 January", [("percent", 10.0), ("date", (1.0, 15.0))]),
    ("It opened in 1914 with 3 locks.", []),  # bare numbers and years are no values here
    ("Monday to Saturday 10:00-20:00", [("time", (600, 1200))]),  # not "10:00-2"
    ("the order is ready in 2 to 4 business days", []),  # two bare numbers are no time range
    ("RE-PROOF IT EVERY 6 MONTHS", [("period", 182.5)]),
    # Lower case longer than the text ("İ"): offsets stay those of the text.
    ("İstanbul: 9:30-18:00, Fr. 5 CHF", [("time", (570, 1080)), ("price:CHF", 5.0)]),
])
def test_values(text: str, kinds: list[tuple[str, object]]) -> None:
    assert [(v.kind, v.amount) for v in values(text)] == kinds


@given(st.lists(st.sampled_from(["every 6 months", "once a year", "13:00-18:00", "12:00-17:00", "€5",
                                 "€6.95", "30 days", "two weeks", "the shop"]), max_size=3).map(" and ".join),
       st.lists(st.sampled_from(["every 6 months", "annually", "13:00-18:00", "€5", "14 days",
                                 "the jacket"]), max_size=3).map(" and ".join))
def test_disagreement_is_symmetric_and_never_within_one_text(a: str, b: str) -> None:
    assert bool(disagree(a, b)) == bool(disagree(b, a))
    assert not disagree(a, a)


def test_the_planted_conflicts_disagree() -> None:
    care = "Re-proof your jacket once a year, or earlier if water stops beading after washing."
    product = "Reapply the water-repellent treatment every 6 months, with a spray-on product."
    assert disagree(care, product)
    assert disagree("Shopping Sundays 2026: 13:00-18:00", "Verkaufsoffene Sonntage: 12:00-17:00")


# -- wired together on the example collection ------------------------------------------------------
def test_worn_jacket_answer_quotes_the_rule_not_a_product(example_kb: KnowledgeBase,
                                                         customer: Actor) -> None:
    ans = example_kb.answer(customer, "Can I return a worn jacket?")
    assert ans.status == "answered", (ans.reason, ans.detail)
    assert "Worn items are not accepted unless they arrived damaged. [1]" in ans.text
    assert "Nordkap" not in ans.text
    c = ans.citations[0]
    assert "Worn items are not accepted" in c["quote"][c["sentence_start"]:c["sentence_end"]]


def test_error_code_answer_quotes_the_explanation_not_the_heading(example_kb: KnowledgeBase,
                                                                 customer: Actor) -> None:
    ans = example_kb.answer(customer, "What does ERR-401 mean?")
    assert ans.status == "answered"
    assert "ERR-401 appears when your session has expired." in ans.text
    assert "Sign-in required" not in ans.text


def test_heading_only_passages_are_not_hits(example_kb: KnowledgeBase, customer: Actor) -> None:
    hits = example_kb.search(customer, "Returns and refunds FAQ", limit=20, mode="keyword")
    assert hits and all(h.quote.strip() != "# Returns and refunds FAQ" for h in hits)


def test_search_with_the_ranker_returns_passages_with_their_evidence(example_kb: KnowledgeBase,
                                                                     customer: Actor) -> None:
    plain = example_kb.search(customer, "Can I return a worn jacket?")
    ranked = example_kb.search(customer, "Can I return a worn jacket?", rerank=True)
    assert len(ranked) == len(plain) == len(ranked.support)
    assert [h.rank for h in ranked] == list(range(1, len(ranked) + 1))
    scores = [p.score for p in ranked.support]
    assert scores == sorted(scores, reverse=True)
    assert ranked.evidence == ("strong" if any(p.supported for p in ranked.support) else "weak")
