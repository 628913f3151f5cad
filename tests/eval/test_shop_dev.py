"""The shop development questions (examples/eval/shop-dev) are right about the collection they
are asked of: expected documents exist and the customer may read them, every answer span is in
one of them verbatim, languages match the kinds, and no question is (nearly) a held-out case.
The checks are ``examples/eval/check_shop_dev.py``'s (the set's one reader, which the benchmarks
load it through too), on the collection as ``evidex eval --cases`` builds it (keyword-only)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

CHECKER = Path(__file__).resolve().parents[2] / "examples" / "eval" / "check_shop_dev.py"


def _checker() -> Any:
    spec = importlib.util.spec_from_file_location("check_shop_dev", CHECKER)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check = _checker()


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return check.rows()


@pytest.fixture(scope="module")
def col() -> Any:
    return check.collection()


def test_every_question_is_right_about_the_documents(rows: list[dict], col: Any) -> None:
    assert check.problems(rows, col) == []


def test_the_checks_catch_wrong_rows(rows: list[dict], col: Any) -> None:
    answerable = next(r for r in rows if r["kind"] == "wh" and r["language"] == "en")
    wrong = [
        {**answerable, "_id": "internal", "expected": ["handbook/02-refund-approvals.docx"]},
        {**answerable, "_id": "tenant", "expected": ["globex/returns"]},
        {**answerable, "_id": "span", "answer": "not in the page", "answers": {}},
        {**answerable, "_id": "german", "expected": ["shop/de/rueckgabe"]},
        {**answerable, "_id": "ooc", "kind": "ooc"},
        {**answerable, "_id": "split", "split": "test"},
    ]
    found = check.problems(wrong, col)
    for rid in ("internal", "tenant", "span", "german", "ooc", "split"):
        assert any(p.startswith(f"{rid}:") for p in found), (rid, found)
    assert any(p.startswith("german:") and "is in de" in p for p in found)


def test_the_loader_asks_as_the_customer_and_counts_the_kinds(rows: list[dict]) -> None:
    """What the benchmarks' set ``shop`` is made of (``answers_sets.load("shop", split)`` reads
    its questions and actor through the checker)."""
    actor = check.actor()
    assert actor.tenant == "acme" and actor.visibilities == frozenset({"public"})
    kinds = {r["kind"] for r in rows}
    assert kinds == {"wh", "keyword", "cross_de_en", "cross_en_de", "ooc"}
    assert all(r["expected"] and r.get("answers") for r in rows if not r["kind"].startswith("ooc"))
    assert all(not r["expected"] for r in rows if r["kind"].startswith("ooc"))
    with pytest.raises(SystemExit):
        check.rows("test")
