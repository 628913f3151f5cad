"""What one answer reads (issue 46, "one owner for answering"): the question parsed once, its
vector fetched once (the search's, reused by the answer-bearing decision), and the store read in
two snapshots: the search's, and one in which every cited or related passage is resolved again.
Counted on the seams the facade hands the pipeline, on a store with vectors (hash-test)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import evidex.kb as kb_module
from evidex import Actor, Document, KnowledgeBase
from evidex.answer import Request, Searched, respond
from evidex.model import Filters, Resolution

CUSTOMER = Actor("acme", frozenset({"customers"}), visibilities=frozenset({"public"}))


def _doc(doc_id: str, text: str) -> Document:
    return Document(doc_id, "acme", frozenset({"customers"}), "1", text, title=doc_id.title(),
                    visibility="public")


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    kb = KnowledgeBase.open(tmp_path / "kb.db", embedder="hash-test")
    kb.ingest([
        _doc("shipping", "Parcels to Austria take three days. Parcels to Switzerland take five days."),
        _doc("care", "Wash jackets cold. Worn boots are cleaned before they are resold."),
        _doc("returns", "Unworn jackets can be returned within 30 days of delivery."),
    ])
    yield kb
    kb.close()


@pytest.fixture
def counts(kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Calls of ``parse_query``, of the query-vector fetch and of ``store.read`` (snapshots)."""
    n = {"parse": 0, "vector": 0, "snapshot": 0}

    def counted(key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            n[key] += 1
            return fn(*args, **kwargs)
        return call

    monkeypatch.setattr(kb_module, "parse_query", counted("parse", kb_module.parse_query))
    monkeypatch.setattr(kb._vectors, "query_vector", counted("vector", kb._vectors.query_vector))
    real_read = kb.store.read

    @contextmanager
    def read(*args: Any, **kwargs: Any) -> Iterator[Any]:
        n["snapshot"] += 1
        with real_read(*args, **kwargs) as view:
            yield view

    monkeypatch.setattr(kb.store, "read", read)
    return n


@pytest.mark.parametrize("question", ["How long do parcels to Austria take?",
                                      "How long do worn boots take to be cleaned and resold?"])
def test_an_answer_parses_once_fetches_its_vector_once_and_reads_two_snapshots(
        kb: KnowledgeBase, counts: dict[str, int], question: str) -> None:
    ans = kb.answer(CUSTOMER, question)
    assert ans.trace is not None and ans.trace["fallback"] is None  # the legs were fused
    resolved = len(ans.citations) if ans.status == "answered" else len(ans.related)
    assert counts == {"parse": 1, "vector": 1, "snapshot": 1 + (resolved > 0)}, (ans.status, counts)


def test_a_keyword_mode_answer_fetches_the_vector_once_for_the_decision(
        kb: KnowledgeBase, counts: dict[str, int]) -> None:
    from dataclasses import replace
    ans = kb.answer(CUSTOMER, "How long do parcels to Austria take?",
                    settings=replace(kb.answer_settings, mode="keyword"))
    assert ans.status == "answered"
    assert counts == {"parse": 1, "vector": 1, "snapshot": 2}


class _Reader:
    """A reader that is not the facade: the pipeline needs nothing else."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb, self.resolved = kb, 0

    keyword_only = False
    vector_timeout_ms = None

    def search(self, question: str, words: list[str], **options: Any) -> Searched:
        res = self.kb.search(CUSTOMER, question, options["limit"], mode=options["mode"],
                             fusion=options["fusion"], limits=kb_module.QUESTION_LIMITS, rerank=True)
        return Searched(res, self.kb._query_vector(question))

    def query_vector(self, question: str) -> np.ndarray:
        raise AssertionError("the search's vector is reused")

    def resolve(self, citations: Any) -> list[Resolution]:
        self.resolved += 1
        return [self.kb.resolve(CUSTOMER, c) for c in citations]

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self.kb.embed_passages(texts)

    def cached_passages(self, texts: list[str]) -> np.ndarray | None:
        return None

    def probes(self) -> Any:
        return self.kb._probes()

    def calibration(self) -> Any:
        return self.kb._calibration_now()

    def terms(self, text: str) -> list[str]:
        return self.kb._analyzer.terms(text)


def test_the_pipeline_runs_over_any_reader_and_resolves_once(kb: KnowledgeBase) -> None:
    question = "How long do parcels to Austria take?"
    reader = _Reader(kb)
    req = Request(CUSTOMER, question, ["how", "long", "do", "parcels", "to", "austria", "take"],
                  "extractive", kb.answer_settings, kb.answer_settings.top_k, Filters())
    ans = respond(reader, kb.toolbox, req)
    assert ans == kb.answer(CUSTOMER, question)
    assert reader.resolved == 1
