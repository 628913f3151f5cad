"""Answers with the real default embedder (multilingual-e5-small, int8) on a small encyclopedic
collection (three topics of benchmarks/data/encyclopedia, English and German paragraphs):
wh-questions are answered citing their paragraph and quoting the sentence with the answer,
questions in the other language are answered by quoting the passage in its own language, and
off-topic questions are declined. Dev-split questions only (the set's test split is for
reporting)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from actors import PUBLIC_INTERNAL
from evidex import Actor, Document, KnowledgeBase
from evidex.decide import guess_language

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "encyclopedia"
TOPICS = ("en-lisbon", "en-turing", "de-einstein")
ACTOR = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)  # the documents are internal


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeBase:
    rows = [json.loads(line) for line in (DATA / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    docs = [Document(r["_id"], "t", ("g",), "1", r["text"], title=r["title"], language=r["language"])
            for r in rows if r.get("topic") in TOPICS]
    base = KnowledgeBase.open(tmp_path_factory.mktemp("enc") / "kb.db", embedder="multilingual-e5-small-int8")
    base.ingest(docs, split="paragraph")
    return base


@pytest.mark.parametrize(("question", "target", "span"), [
    ("How long did the ground shake during the Lisbon earthquake of 1755?", "en-lisbon-2",
     "between three and six minutes"),
    ("In which journal did Turing publish \"Computing Machinery and Intelligence\"?", "en-turing-3",
     "Mind"),
    ("Which company built Lisbon's suspension bridge that opened in 1966?", "en-lisbon-5",
     "American Bridge Company"),
])
def test_wh_question_is_answered_with_the_sentence_that_holds_the_answer(
        kb: KnowledgeBase, question: str, target: str, span: str) -> None:
    ans = kb.answer(ACTOR, question)
    assert ans.status == "answered", (ans.reason, ans.trace and ans.trace["signals"])
    assert target in {c["document_id"] for c in ans.citations}
    assert span in ans.text
    c = next(c for c in ans.citations if c["document_id"] == target)
    assert span in c["quote"][c["sentence_start"]:c["sentence_end"]]


@pytest.mark.parametrize(("question", "target"), [
    # (Not the German questions about Turing: the German Turing paragraphs are closer in
    # meaning to them than the English one that answers.)
    ("In welchem Jahr wurden das Hieronymus-Kloster und der Turm von Belém zum Welterbe erklärt?",
     "en-lisbon-4"),
    ("Who received Einstein's Nobel prize money?", "de-einstein-4"),
])
def test_question_in_the_other_language_quotes_the_passage_in_its_own(
        kb: KnowledgeBase, question: str, target: str) -> None:
    ans = kb.answer(ACTOR, question)
    assert ans.status == "answered", (ans.reason, ans.trace and ans.trace["signals"])
    c = next(c for c in ans.citations if c["document_id"] == target)
    quoted = c["quote"][c["sentence_start"]:c["sentence_end"]]
    assert quoted in re.sub(r" \[\d+\]", "", ans.text)  # a marker after every sentence
    assert guess_language(quoted) == target[:2] != guess_language(question)


@pytest.mark.parametrize("question", [
    "How do I merge two branches in git?", "Wie backe ich einen Käsekuchen?",
])
def test_off_topic_question_is_declined(kb: KnowledgeBase, question: str) -> None:
    assert kb.answer(ACTOR, question).status == "declined"
