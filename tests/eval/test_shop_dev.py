"""The shop development questions (benchmarks/data/shop-dev) are right about the collection they
are asked of: expected documents exist and the customer may read them, every answer span is in
one of them verbatim, languages match the kinds, and no question is (nearly) a held-out case.
The checks are ``benchmarks/shop_dev_check.py``'s, on the collection as ``evidex eval --cases``
builds it (keyword-only)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from answers_sets import SHOP_DEV, load
from evidex.evaluation._collection import Collection
from shop_dev_check import collection, problems


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return [json.loads(line) for line in SHOP_DEV.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def col() -> Collection:
    return collection()


def test_every_question_is_right_about_the_documents(rows: list[dict], col: Collection) -> None:
    assert problems(rows, col) == []


def test_the_checks_catch_wrong_rows(rows: list[dict], col: Collection) -> None:
    answerable = next(r for r in rows if r["kind"] == "wh" and r["language"] == "en")
    wrong = [
        {**answerable, "_id": "internal", "expected": ["handbook/02-refund-approvals.docx"]},
        {**answerable, "_id": "tenant", "expected": ["globex/returns"]},
        {**answerable, "_id": "span", "answer": "not in the page", "answers": {}},
        {**answerable, "_id": "german", "expected": ["shop/de/rueckgabe"]},
        {**answerable, "_id": "ooc", "kind": "ooc"},
        {**answerable, "_id": "split", "split": "test"},
    ]
    found = problems(wrong, col)
    for rid in ("internal", "tenant", "span", "german", "ooc", "split"):
        assert any(p.startswith(f"{rid}:") for p in found), (rid, found)
    assert any(p.startswith("german:") and "is in de" in p for p in found)


def test_the_loader_asks_as_the_customer_and_counts_the_kinds() -> None:
    qset = load("shop", "dev")
    assert qset.actor.tenant == "acme" and qset.actor.visibilities == frozenset({"public"})
    kinds = {q.kind for q in qset.questions}
    assert kinds == {"wh", "keyword", "cross_de_en", "cross_en_de", "ooc"}
    assert all(q.expected and q.answers for q in qset.questions if q.answerable)
    assert all(not q.expected for q in qset.questions if not q.answerable)
    with pytest.raises(SystemExit):
        load("shop", "test")
