"""decide's internals, each tested through the module that defines it: what a question asks
for and what a sentence states (``_types``, English and German), the on-topic score and its
depth (``_topic``), the spans the reader reads (``_bearing``), identifier lines and record
labels (``_spans``), the second-stage ranker (``_rerank``), and the text paths of
``_types``/``_spans`` in linear time (issue 45). The decisions themselves are tested through
``evidex.decide``'s names in the other files here."""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from decisions import CAL, Scores, decide_on, quoted
from decisions import READER_TEXTS as TEXTS
from evidex import Actor, Document, KnowledgeBase
from evidex.answer import supporting_span
from evidex.decide import (
    Calibration,
    PassageSupport,
    Reading,
    _support,
    on_topic,
    shown,
)
from evidex.decide._bearing import READ_DEPTH
from evidex.decide._rerank import rank_score, rerank_order
from evidex.decide._spans import _refers_back, identifier_only, record_label
from evidex.decide._topic import TOPIC_DEPTH, topic_score
from evidex.decide._types import STRICT, Asked, asked, matches, stated, stated_as
from evidex.embed import query_vectors
from evidex.ingest import check_text, sentence_spans
from evidex.model import DocumentError
from evidex.query import stem


# -- what a question asks for and what a sentence states (_types) ----------------------------
@pytest.mark.parametrize(("question", "kind", "dimension"), [
    ("How long do I have to return a jacket?", "duration", None),
    ("Once I reach Ranger, how long do I keep that status?", "duration", None),
    ("Wie lange dauert eine Neubesohlung?", "duration", None),
    ("How much does express shipping cost?", "price", None),
    ("What does the Stormline jacket cost?", "price", None),
    ("Was kostet der Versand nach Österreich?", "price", None),
    ("How heavy is the Basecamp 4 tent?", "quantity", "mass"),
    ("What is the fill weight of the Fjell jacket?", "quantity", "mass"),
    ("Wie schwer ist das Zelt?", "quantity", "mass"),
    ("How tall is the Berlin TV tower?", "quantity", "length"),
    ("How many people does the tent sleep?", "quantity", "people"),
    ("What percentage of the fleece is recycled?", "percent", None),
    ("How many stores do you have?", "count", None),
    ("Wie viele Filialen habt ihr?", "count", None),
    ("How often can I use the comfort promise?", "count", None),
    ("In which year was the company founded?", "year", None),
    ("What time does the Leipzig store close on Saturdays?", "time", None),
    ("When does the return period begin?", "date", None),
    ("Wann wurde die Mauer gebaut?", "date", None),
    ("What is your customer service phone number?", "phone", None),
    ("What is the e-mail address for business orders?", "email", None),
    ("What is your VAT identification number?", "code", None),
    ("What does an order number look like?", "code", None),
    ("Who do we talk to about a bulk order?", "contact", None),
    ("How do I reset my password?", "procedure", None),
    ("Wie kann ich mein Passwort zurücksetzen?", "procedure", None),
    ("Why was my payment declined?", "reason", None),
    ("Where can I rent snowshoes?", "place", None),
    ("Who sorts the clothes I hand in?", "person", None),
    ("Do you ship to Switzerland?", "yesno", None),
    ("Kann ich telefonisch bestellen?", "yesno", None),
    ("What analytics tool do you use on the website?", "other", None),
    ("Versandkosten Österreich", "price", None),
    ("What was Acme Outdoor's revenue last year?", "price", None),
    ("What age is the Scout 12 backpack for?", "count", None),
    ("Ab welchem Alter darf man ein Zelt mieten?", "count", None),
    ("Within how many days are returns accepted?", "duration", None),
    ("opening hours Leipzig", "time", None),
])
def test_question_kinds(question: str, kind: str, dimension: str | None) -> None:
    assert asked(question) == Asked(kind, dimension)


def test_the_asking_sentence_decides() -> None:
    # "when" in a subordinate clause does not make a question about a time.
    question = "What should I do if the box looks crushed when the courier hands it over?"
    assert asked(question).kind == "procedure"
    assert asked("I'm locked out after a few tries. How long do I have to wait?").kind == "duration"
    # "phone" as a noun modifier is not a question for a phone number.
    assert asked("Which phone manufacturers adopted the format?").kind != "phone"


@pytest.mark.parametrize(("question", "sentence", "answers"), [
    ("How long do I have to return a jacket?", "You can return items within 30 days of delivery.", True),
    ("How long do I have to return a jacket?", "Returns are free from Germany and Austria.", False),
    ("How long does the review take?", "We decide within 10 business days after the item arrives.", True),
    ("Wie lange gilt der Gutschein?", "Gutscheine sind 6 Monate gültig.", True),
    ("What does the jacket cost?", "Price: 329.00 €.", True),
    ("What does the jacket cost?", "SKU JK-1107.", False),
    ("Is return shipping from Austria free? How much is it?",
     "Returns from Austria are free of charge.", True),
    ("How heavy is the tent?", "Four-person family tent, 14.5 kg, standing height 195 cm.", True),
    ("How heavy is the tent?", "Four-person family tent with two sleeping cabins.", False),
    ("How tall is the tower?", "The tower is 368 Metern high.", True),
    ("What is your phone number?", "Call us on +49 40 1234 5678, Monday to Friday.", True),
    ("What is your phone number?", "Customer service answers within one business day.", False),
    ("What is the e-mail address for business orders?", "Write to business@acme-outdoor.example.", True),
    ("What is your VAT identification number?", "USt-IdNr.: DE123456789", True),
    ("How many stores do you have?", "Acme Outdoor has six stores in Germany and Austria.", True),
    ("In which year was it founded?", "It was founded in 1987 in Hamburg.", True),
    ("What time does the store close on Saturdays?", "Mon-Fri 10:00-19:00, Sat 10:00-18:00", True),
])
def test_sentences_state_the_asked_kind(question: str, sentence: str, answers: bool) -> None:
    a = asked(question)
    assert a.strict
    assert bool(matches(a, stated(sentence))) is answers


def test_non_strict_kinds_never_require_a_mention() -> None:
    for q in ("Do you ship to Switzerland?", "Why was my payment declined?", "How do I reset my password?",
              "Where can I rent snowshoes?", "Who sorts the clothes?", "What is the boot comfort promise?"):
        assert not asked(q).strict


@given(st.text(max_size=200))
def test_any_text_is_typed_without_error(text: str) -> None:
    a = asked(text)
    assert a.kind in STRICT | {"place", "person", "reason", "procedure", "yesno", "other"}
    for m in stated(text):
        assert 0 <= m.start < m.end <= len(text)


@pytest.mark.parametrize("question", [
    "How long does delivery take?", "When does the store open?", "What does it cost?",
    "How much does the tent weigh?", "How many people fit in the tent?", "What is your phone number?",
    "Which year was it built?", "How tall is the tower?", "Why is it closed?", "How do I return it?",
    "Do you ship to Austria?", "Wie viel kostet der Versand?", "Wann öffnet die Filiale?"])
def test_stated_as_is_matches_of_every_mention(question: str) -> None:
    """``stated_as`` scans only the kinds that can answer: it finds exactly what ``matches``
    keeps of all mentions."""
    sentences = [
        "Delivery takes 2 to 4 business days and costs 4.95 €, free from 50 €.",
        "The store opens at 10:00 on Saturdays, call +49 30 1234567 or write to shop@acme.example.",
        "The tent weighs 2.4 kg and sleeps two people; it was built in 1998, 120 metres tall.",
        "Closed because of the holiday. First, open the order page. Then click Return.",
        "Wir öffnen montags um 9 Uhr; der Versand kostet 5 Euro innerhalb von drei Tagen.",
    ]
    a = asked(question)
    for s in sentences:
        assert stated_as(a, s) == matches(a, stated(s)), (question, s)


# -- helpers of the tests below --------------------------------------------------------------
UNITS = (". ", "x-", "**- ", "[1]", " ", "\t", "1.", "- ", "'", "A1", "a.", "3. ", "-", "*", "__ ", "A-1",
         "aa-", "a/", "| ", "am 3. ")


def _cpu(call: Callable[[str], object], text: str) -> float:
    started = time.process_time()
    call(text)
    return time.process_time() - started


def _answer_sentence(text: str) -> object:
    return supporting_span(text, "Returns within 30 days.", str.split)




def support(sim: float | None, cov: float = 0.0, sentence_cov: float | None = None) -> PassageSupport:
    return PassageSupport(similarity=sim, cross_language=False, coverage=cov,
                          sentence_coverage=cov if sentence_cov is None else sentence_cov,
                          title_coverage=0.0, keyword=0.0, sentences=())


unit = st.floats(0.0, 1.0)


T = Calibration(on_topic=0.9, answer_bearing=0.9, similarity_scale=0.05)


def ranker_support(sim: float | None, cov: float, cross: bool = False, **kw: float) -> PassageSupport:
    return PassageSupport(similarity=sim, cross_language=cross, coverage=cov, sentence_coverage=cov,
                          title_coverage=kw.get("title", 0.0), keyword=kw.get("keyword", 0.0),
                          sentences=())


# -- on topic, the reader and spans ------------------------------------------------------------
def test_a_passage_close_to_every_question_needs_more_than_its_cosine() -> None:
    """Two passages as close to the question: the one as close to questions in general
    (hubness) is not on topic, the one that is close to this question in particular is."""
    decided = on_topic([support(0.85), support(0.85)], [0.8, 0.6], CAL)
    assert [d.on_topic for d in decided.passages] == [False, True] and decided.verdict
    assert topic_score(support(0.85, 0.5), 0.6, CAL) == pytest.approx(0.85 - 0.3 + 0.05)
    d = decided.passages[1]
    assert d.thresholds == {"score": CAL.on_topic} and d.scores["hubness"] == 0.6


def test_only_the_best_ranked_passages_are_read() -> None:
    weak, strong = support(0.1), support(0.99, 1.0)
    assert on_topic([weak] * (TOPIC_DEPTH - 1) + [strong], [0.0] * TOPIC_DEPTH, CAL).verdict
    assert not on_topic([weak] * TOPIC_DEPTH + [strong], [0.0] * (TOPIC_DEPTH + 1), CAL).verdict


def test_identifier_lines_and_record_labels() -> None:
    assert identifier_only("SKU JK-1310.") and identifier_only("Art.-Nr. 4711")
    assert not identifier_only("SKU JK-1310. Price: 329.00 €.")
    assert record_label("Price: 329.00 €.") == "Price" and record_label("Sizes: S, M, L.") == "Sizes"
    assert record_label("We ship them delivered duty paid: the price includes VAT.") is None


def test_the_reader_picks_the_span_it_reads_as_the_answer_not_the_scorers_first() -> None:
    read = Scores({"within 30 days": 2.0, "free of charge": 1.0})
    got = decide_on("How long do I have to return an item?", TEXTS, reading=Reading(read, 0.5))
    assert got.verdict and quoted(got, TEXTS) == ["You can return items within 30 days of delivery."]
    assert got.score == 2.0 and got.threshold == 0.5
    assert len(read.read) == 1 and 1 < len(read.read[0]) <= READ_DEPTH
    # Each span is read as the reader was trained: "passage: " then the span.
    assert all(t.startswith("passage: ") for t in read.read[0])


# -- the ranker -------------------------------------------------------------------------------------
@given(sim=unit, cov=unit, kw=unit, title=unit, more=st.floats(0.001, 0.5))
def test_ranker_score_grows_with_every_feature(sim: float, cov: float, kw: float, title: float,
                                               more: float) -> None:
    base = rank_score(ranker_support(sim, cov, keyword=kw, title=title), T)
    assert rank_score(ranker_support(sim + more, cov, keyword=kw, title=title), T) > base
    assert rank_score(ranker_support(sim, cov + more, keyword=kw, title=title), T) > base
    assert rank_score(ranker_support(sim, cov, keyword=kw + more, title=title), T) > base
    assert rank_score(ranker_support(sim, cov, keyword=kw, title=title + more), T) > base


def test_ranker_keeps_fused_order_on_ties() -> None:
    tied = [dataclasses.replace(ranker_support(0.8, 0.1), score=1.0) for _ in range(4)]
    assert rerank_order(tied) == [0, 1, 2, 3]


PATHS: dict[str, Callable[[str], object]] = {
    "sentences": sentence_spans, "types": stated, "asked": asked, "refers_back": _refers_back,
    "identifier": identifier_only, "shown": shown, "grounding": _answer_sentence,
    "check_text": check_text,
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_every_text_path_takes_linear_cpu_time_on_pathological_text(path: str) -> None:
    """60,000 characters of each unit (and a tail that makes a pattern fail late): quadratic
    work here is minutes of CPU, linear work well under a second. The bound is 10 s of this
    process's CPU time per call, whatever else the machine runs."""
    call = PATHS[path]
    for unit in UNITS:
        for tail in ("", "!", "a", "\n"):
            text = unit * (60_000 // len(unit)) + tail
            try:
                spent = _cpu(call, text)
            except DocumentError:
                continue  # refused by a bound: that is linear too
            assert spent < 10, f"{path} on {unit!r} * n + {tail!r}: {spent:.1f} s of CPU"


@pytest.mark.parametrize(("pattern", "text", "kind"), [
    ("url", "see shop.example.com/returns now", "url"),
    ("email", "write to help@shop.example.com today", "email"),
    ("code", "order AB-1234X arrived", "code"),
    ("place", "at Hauptstraße 5 in Berlin", "place"),
])
def test_the_linear_patterns_still_find_their_values(pattern: str, text: str, kind: str) -> None:
    assert kind in {m.kind for m in stated(text)}


def test_emphasis_and_early_pronouns_read_as_before() -> None:
    assert shown("**Returns** are *free* within `30` days, __always__.") == \
        "Returns are free within 30 days, always."
    assert _refers_back("- We ship them duty paid.") and not _refers_back("We ship parcels daily.")
    assert identifier_only("SKU: AB-12/3.") and not identifier_only("SKU: AB-12 is sold out.")
    assert asked("Hello. How much does it cost?").kind == "price"


#: Pathological units: repeated punctuation, long runs, nested marks.


def test_memos_that_questions_fill_stay_within_their_bounds(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A long-running service sees endless new questions and new passage versions: every
    process-wide memo they fill must have a bound (an unbounded one is a leak by design)."""
    monkeypatch.setenv("EVIDEX_EMBEDDER", "hash-test")
    rng = random.Random(27)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(7)) for _ in range(3000)]
    kb = KnowledgeBase.open(tmp_path / "kb.db")
    actor = Actor("acme", frozenset({"staff"}), visibilities=frozenset({"public"}))
    memos = {"stem": stem, "passage analyses": _support._analysed,
             "function stems": _support._function_stems}
    for name, memo in memos.items():
        assert memo.cache_info().maxsize is not None, f"{name} is unbounded"
    for v in range(40):  # new passage versions: each one's text is analysed afresh
        kb.ingest([Document("d", "acme", frozenset({"staff"}), str(v),
                            " ".join(words[v * 50:(v + 1) * 50]) + ". Returns take 30 days.")])
        for q in range(10):  # questions never asked before, of words never seen before
            kb.answer(actor, " ".join(words[2000 + v * 25 + q * 2:2000 + v * 25 + q * 2 + 3]))
    kb.close()
    for name, memo in memos.items():
        info = memo.cache_info()
        assert info.currsize <= info.maxsize, name
    assert len(query_vectors) <= query_vectors.capacity
