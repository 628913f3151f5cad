"""What a question asks for and what a sentence states (decide._types), English and German."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evidex.decide._types import STRICT, Asked, asked, matches, stated, stated_as


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
