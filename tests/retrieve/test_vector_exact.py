"""Permission-exact vector search and rank fusion (issue 3), as properties over random stores.

The claims under test:

(a) mode="vector" and mode="hybrid" give identical hits (document, passage, score, rank, the
    explanation of every leg, evidence) for a store holding only what the actor may read under
    the filters and for one that also holds unreadable documents, and adding, superseding or
    removing unreadable documents (and optimising) changes nothing, bit for bit;
(b) vector hits are an exact brute-force cosine search over exactly the readable passages:
    top ``limit`` by cosine, ties (equal vectors) by document id then passage number, never
    under-filled;
(c) hybrid RRF scores are sum 1 / (k + rank) over the keyword and vector windows, where each
    leg's ranks are those of an independent mode="keyword" / mode="vector" search; ties are
    ordered (fused score desc, document id, passage); max_per_document and limit are applied
    after fusion. The convex fusion is checked the same way.

Every example uses real SQLite files in a fresh temporary folder and the deterministic hash-test
embedder (set by the autouse fixture in tests/support/stores.py). Paragraphs are drawn from a six-word
vocabulary so that equal passages, and therefore exactly tied cosines, are common.
"""

from __future__ import annotations

import itertools
import random
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from actors import PUBLIC_INTERNAL
from backends import BACKENDS, Locator, locator
from documents import doc
from evidex import Actor, Document, Filters, KnowledgeBase
from evidex.embed import get_embedder
from evidex.query import language_key
from evidex.retrieve import CENTRING
from strategies import (
    ABSENT,
    VOCAB,
    unreadable_writes,
    visible,
)
from strategies import (
    scenarios as shared_scenarios,
)

MODES = ("vector", "hybrid")
#: Cosines of different vectors closer than this may be ordered either way (float32 rounding).
NEAR = 1e-6

SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# -- reference model (independent of evidex's retrieval code) ---------------------------------
def ref_passages(d: Document) -> list[tuple[int, str]]:
    """Paragraph split: parts at blank lines numbered 1..n, whitespace-only parts skipped."""
    return [(n, part) for n, part in enumerate(d.text.split("\n\n"), start=1) if part.strip()]


@dataclass(frozen=True)
class RefPassage:
    doc: str
    number: int
    cosine: float  # float64, computed row by row (independent of any matrix layout)
    vector: bytes = field(repr=False)  # the float32 passage vector: equal bytes, exact tie


def ref_vector(docs: Sequence[Document], query: str) -> list[RefPassage]:
    """Brute-force cosine of the query's hash-test vector with every passage of ``docs``,
    re-based per language as the vector leg documents it (``retrieve._vector``): a passage in
    language L gains CENTRING x (the highest of the query's cosines with a language's mean
    passage vector - its cosine with L's), when ``docs`` hold more than one language."""
    emb = get_embedder("hash-test")
    items = [(d.id, n, text, language_key(d.language)) for d in docs for n, text in ref_passages(d)]
    if not items:
        return []
    vecs = emb.embed_passages([t for _, _, t, _ in items])
    q = emb.embed_queries([query])[0].astype(np.float64)
    cos = (vecs.astype(np.float64) * q).sum(axis=1)
    langs = sorted({lang for *_, lang in items})
    shift = dict.fromkeys(langs, 0.0)
    if len(langs) > 1:
        mean = {lang: float(np.mean([c for c, (*_, la) in zip(cos, items, strict=True) if la == lang]))
                for lang in langs}
        shift = {lang: CENTRING * (max(mean.values()) - m) for lang, m in mean.items()}
    return [RefPassage(d, n, float(c) + shift[lang], v.tobytes())
            for (d, n, _, lang), c, v in zip(items, cos, vecs, strict=True)]


def check_vector_ranking(got: Sequence[tuple[str, int, float]], ref: Sequence[RefPassage],
                         limit: int) -> None:
    """``got`` (document, passage, score) is the exact top ``limit`` of ``ref``.

    Order: cosine descending; passages with equal vectors in one language (an exact tie) by
    (document id, passage); only different vectors whose cosines lie within float32 rounding may come in
    either order, at the cut too.
    """
    by_key = {(r.doc, r.number): r for r in ref}
    assert len(got) == min(limit, len(ref)), (got, limit, len(ref))  # never under-filled
    keys = [(d, n) for d, n, _ in got]
    assert len(set(keys)) == len(keys)
    for d, n, score in got:
        assert (d, n) in by_key, (d, n)  # only readable passages
        assert abs(score - by_key[(d, n)].cosine) <= NEAR, (d, n, score, by_key[(d, n)].cosine)

    def before(a: RefPassage, b: RefPassage) -> bool:
        """May ``a`` be ranked above ``b``?"""
        if a.vector == b.vector and a.cosine == b.cosine:  # one language: re-based alike
            return (a.doc, a.number) < (b.doc, b.number)
        return a.cosine >= b.cosine - NEAR

    chosen = [by_key[k] for k in keys]
    for a, b in itertools.pairwise(chosen):
        assert before(a, b), ("order", a, b, got)
    if chosen:
        for r in (r for r in ref if (r.doc, r.number) not in set(keys)):
            assert before(chosen[-1], r), ("cut", chosen[-1], r, got)


# -- strategies --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    text: str
    match: str
    limit: int
    max_per_document: int | None
    window: int
    rrf_k: int
    filters: Filters | dict[str, object] | None


@st.composite
def queries(draw: st.DrawFn, flt: Filters) -> Query:
    # Distinct words (case aside): the query text is then exactly its normalised word list, so
    # the reference embeds what evidex embeds (repeated words are covered in test_hybrid.py).
    qwords = draw(st.lists(st.sampled_from((*VOCAB, ABSENT)), min_size=1, max_size=3, unique=True))
    as_mapping = draw(st.booleans())
    filt: Filters | dict[str, object] = (
        {"language": flt.language, "tags": sorted(flt.tags)} if as_mapping else flt
    )
    return Query(
        " ".join(w.upper() if draw(st.booleans()) else w for w in qwords),
        draw(st.sampled_from(["any", "all"])),
        draw(st.integers(1, 50)),
        draw(st.sampled_from([None, 1, 2, 3])),
        draw(st.sampled_from([1, 2, 3, 5, 8, 50])),
        draw(st.sampled_from([1, 60, 1000])),
        filt,
    )


Scenario = tuple[Actor, Filters, list[Document], list[Document], list[Query]]


def scenarios() -> st.SearchStrategy[Scenario]:
    """The shared scenarios, with this file's queries (they also draw a window and k)."""
    return shared_scenarios(queries)


@contextmanager
def store(*batches: Sequence[Document], backend: str = "sqlite",
          **settings: Any) -> Iterator[tuple[KnowledgeBase, str]]:
    """A fresh store on ``backend`` (references stay on SQLite: a PostgreSQL store must then
    give SQLite's results bit for bit)."""
    with tempfile.TemporaryDirectory() as tmp:
        loc = locator(backend, Path(tmp))
        path = loc("kb")
        kb = KnowledgeBase.open(path, **settings)
        try:
            assert kb.stats()["embedder"] == "hash-test"
            for batch in batches:
                if batch:
                    kb.ingest(batch)
            yield kb, path
        finally:
            kb.close()
            loc.cleanup()


def chunked(docs: Sequence[Document], sizes: Sequence[int]) -> list[list[Document]]:
    out, i = [], 0
    for s in sizes:
        out.append(list(docs[i : i + s]))
        i += s
    out.append(list(docs[i:]))
    return out


def results(kb: KnowledgeBase, actor: Actor, q: Query, mode: str) -> tuple[list[tuple[Any, ...]], str]:
    hits = kb.search(actor, q.text, limit=q.limit, match=q.match, filters=q.filters, mode=mode,
                     max_per_document=q.max_per_document, window=q.window, rrf_k=q.rrf_k, explain=True)
    return ([(h.document_id, h.version, h.passage, h.quote, h.score, h.rank, h.explain) for h in hits],
            hits.evidence)


def all_results(kb: KnowledgeBase, actor: Actor, qs: Sequence[Query]) -> list[Any]:
    return [results(kb, actor, q, mode) for q in qs for mode in MODES]


def every_query(qs: Sequence[Query]) -> Query:
    """A query that reaches every readable passage in both legs (limit 50, no cap)."""
    return Query(" ".join(VOCAB[:3]), "any", 50, None, 50, 60, qs[0].filters)


def n_readable(actor: Actor, flt: Filters, docs: Sequence[Document]) -> int:
    return sum(len(ref_passages(d)) for d in docs if visible(actor, flt, d))


@pytest.mark.parametrize("backend", BACKENDS)
# -- (a) unreadable documents change nothing -----------------------------------------------------
@SETTINGS
@given(scenarios(), st.data())
def test_a_unreadable_documents_change_vector_and_hybrid_results_not_at_all(
    backend: str, scenario: Scenario, data: st.DataObject
) -> None:
    """A store with only the readable documents and one that also holds unreadable ones (mixed
    into the readable ones in a random order and in random batches) give identical vector and
    hybrid hits: same passages, scores, ranks, per-leg explanation and evidence level."""
    actor, flt, vis, hid, qs = scenario
    mixed = data.draw(st.permutations(vis + hid))
    sizes = data.draw(st.lists(st.integers(1, 4), max_size=6))
    qs = [*qs, every_query(qs)]
    with store(vis) as (only, _), store(*chunked(mixed, sizes), backend=backend) as (both, _):
        for q in qs:
            for mode in MODES:
                assert results(both, actor, q, mode) == results(only, actor, q, mode), (mode, q)
        # Not vacuous: with anything readable, the vector leg returns every readable passage.
        assert len(results(both, actor, qs[-1], "vector")[0]) == n_readable(actor, flt, vis)


@pytest.mark.parametrize("backend", BACKENDS)
@SETTINGS
@given(scenarios(), st.data())
def test_a_writes_to_unreadable_documents_change_nothing_in_place(
    backend: str, scenario: Scenario, data: st.DataObject
) -> None:
    """In one store, adding, superseding (new text, or new unreadable access attributes) and
    removing unreadable documents, and optimize(), leave every vector and hybrid result as it
    was: for the writing handle, for a second handle whose caches were warm before the writes,
    and for a handle opened afterwards."""
    actor, flt, vis, hid, qs = scenario
    qs = [*qs, every_query(qs)]
    with store(vis + hid, backend=backend) as (kb, path):
        before = all_results(kb, actor, qs)
        other = KnowledgeBase.open(path)
        try:
            assert all_results(other, actor, qs) == before
            live = {(d.tenant, d.id): d for d in hid}
            for k, step in enumerate(unreadable_writes(kb, data, actor, flt, live)):
                assert all_results(kb, actor, qs) == before, (k, step)
                assert all_results(other, actor, qs) == before, (k, step)
            fresh = KnowledgeBase.open(path)
            try:
                assert all_results(fresh, actor, qs) == before
            finally:
                fresh.close()
        finally:
            other.close()


# -- (b) vector search is exact brute force over the readable passages ----------------------------
def _tie_example() -> Scenario:
    """The smallest failure hypothesis found: three readable one-word documents with the same
    text, in two access signatures (the tags differ)."""
    def d(i: str, tags: tuple[str, ...], tenant: str = "t1") -> Document:
        return Document(i, tenant, frozenset({"g1"}), "v1", "alpha", language="en",
                        visibility="confidential", tags=tags)

    actor = Actor("t1", frozenset({"g1"}), visibilities=frozenset({"confidential"}))
    flt = Filters("en")
    qs = [Query("alpha", "any", 1, None, 1, 1, flt), Query("alpha", "any", 50, None, 50, 60, flt)]
    return actor, flt, [d("d0", ("x", "y")), d("d1", ()), d("d2", ("x", "y"))], [d("d0", (), "t2")], qs


@pytest.mark.parametrize("backend", BACKENDS)
@SETTINGS
@example(scenario=_tie_example(), seed=0, sizes=[])
@given(scenarios(), st.integers(0, 2**32 - 1), st.lists(st.integers(1, 4), max_size=6))
def test_b_vector_hits_equal_brute_force_cosine_over_readable_passages(
    backend: str, scenario: Scenario, seed: int, sizes: list[int]
) -> None:
    """mode="vector" with max_per_document=None returns exactly the top ``limit`` readable
    passages by cosine (ties of equal vectors by document id, then passage), with cosine
    scores, ranks 1..n, and exactly min(limit, readable passages) hits. mode="hybrid" is never
    under-filled either. (Documents go in shuffled by ``seed``, in batches of ``sizes``.)"""
    actor, flt, vis, hid, qs = scenario
    mixed = vis + hid
    random.Random(seed).shuffle(mixed)
    readable = [d for d in vis if visible(actor, flt, d)]
    with store(*chunked(mixed, sizes), backend=backend) as (kb, _):
        for q in qs:
            ref = ref_vector(readable, q.text)
            for limit in sorted({q.limit, 1, max(1, len(ref))}):
                hits = kb.search(actor, q.text, limit=limit, match=q.match, filters=q.filters,
                                 max_per_document=None, mode="vector", evidence=True)
                check_vector_ranking([(h.document_id, h.passage, h.score) for h in hits], ref, limit)
                assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
                assert hits.evidence in (("weak", "strong") if hits else ("none",))
                fused = kb.search(actor, q.text, limit=limit, match=q.match, filters=q.filters,
                                  max_per_document=None, mode="hybrid", window=q.window)
                assert len(fused) == min(limit, len(ref)), (q, limit, len(fused), len(ref))
            # With a per-document cap: the greedy pick from the full (checked) order, and as many
            # hits as the cap allows, in vector and in hybrid mode.
            everything = kb.search(actor, q.text, limit=max(1, len(ref)), filters=q.filters,
                                   max_per_document=None, mode="vector")
            per_doc = Counter(r.doc for r in ref)
            for cap in sorted({1, 2, q.max_per_document or 1}):
                capped = kb.search(actor, q.text, limit=q.limit, filters=q.filters,
                                   max_per_document=cap, mode="vector")
                assert [(h.document_id, h.passage, h.score) for h in capped] == [
                    (h.document_id, h.passage, h.score) for h in everything
                    if (h.document_id, h.passage) in set(greedy(keys_of(everything), q.limit, cap))]
                room = min(q.limit, sum(min(cap, c) for c in per_doc.values()))
                assert len(capped) == room, (q, cap, len(capped), room)
                fused = kb.search(actor, q.text, limit=q.limit, match=q.match, filters=q.filters,
                                  max_per_document=cap, mode="hybrid", window=q.window)
                assert len(fused) == room, ("hybrid", q, cap, len(fused), room)
                assert max(Counter(h.document_id for h in fused).values(), default=0) <= cap


def keys_of(hits: Sequence[Any]) -> list[tuple[str, int]]:
    return [(h.document_id, h.passage) for h in hits]


# -- (c) fusion recomputed from the two independent legs ----------------------------------------
def leg_ranks(kb: KnowledgeBase, actor: Actor, q: Query, mode: str, window: int
              ) -> dict[tuple[str, int], dict[str, float | int]]:
    """(document, passage) -> {rank, score} of the top ``window`` of one leg searched alone."""
    hits = kb.search(actor, q.text, limit=window, match=q.match, filters=q.filters,
                     max_per_document=None, mode=mode, explain=True)
    out: dict[tuple[str, int], dict[str, float | int]] = {}
    for h in hits:
        assert h.explain is not None
        # The single-leg explanation agrees with the hit itself.
        assert h.explain[mode] == {"rank": h.rank, "score": h.score}, (mode, h.explain)
        out[(h.document_id, h.passage)] = {"rank": h.rank, "score": h.score}
    return out


def greedy(ordered: Sequence[tuple[str, int]], limit: int, cap: int | None) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    per: Counter[str] = Counter()
    for doc_id, number in ordered:
        if cap is None or per[doc_id] < cap:
            per[doc_id] += 1
            out.append((doc_id, number))
            if len(out) == limit:
                break
    return out


def convex(leg: dict[tuple[str, int], dict[str, float | int]], weight: float) -> dict[tuple[str, int], float]:
    """alpha-weighted min-max normalised scores of one leg's window (1 when all are equal)."""
    if not leg:
        return {}
    lo = min(float(v["score"]) for v in leg.values())
    hi = max(float(v["score"]) for v in leg.values())
    return {k: weight * ((float(v["score"]) - lo) / (hi - lo) if hi > lo else 1.0) for k, v in leg.items()}


@pytest.mark.parametrize("backend", BACKENDS)
@SETTINGS
@given(scenarios(), st.data())
def test_c_fused_scores_come_from_the_independent_legs(backend: str, scenario: Scenario,
                                                       data: st.DataObject) -> None:
    """RRF: fused score = 1/(k + keyword rank) + 1/(k + vector rank) over each leg's window of
    max(window, limit) passages, the ranks being those of mode="keyword" and mode="vector"
    searched alone; explain=True reports exactly those ranks and scores (and a leg only when the
    passage is in its window); order is (fused desc, document id, passage); max_per_document and
    limit pick greedily from the fused order. Convex fusion (alpha weighting min-max normalised
    leg scores) is recomputed the same way.

    When the per-document cap leaves the list short while a leg filled its window, both windows
    grow fourfold until the list is full or no leg fills its window (kb.search's documented way
    of never under-filling); the reference grows its windows the same way."""
    actor, flt, vis, hid, qs = scenario
    mixed = data.draw(st.permutations(vis + hid))
    # A high max_limit lets the single-leg searches below return windows beyond 50.
    with store(mixed[: len(mixed) // 2], mixed[len(mixed) // 2 :], backend=backend,
               max_limit=1000) as (kb, _):
        for q in qs:
            fusion = data.draw(st.sampled_from(["rrf", "rrf", "convex"]))
            alpha = data.draw(st.sampled_from([0.0, 0.3, 0.5, 1.0]))
            scale = 1
            while True:
                w = max(q.window, q.limit) * scale
                kw = leg_ranks(kb, actor, q, "keyword", w)
                vec = leg_ranks(kb, actor, q, "vector", w)
                fused: dict[tuple[str, int], float] = {}
                if fusion == "rrf":
                    parts = [{k: 1.0 / (q.rrf_k + int(v["rank"])) for k, v in leg.items()}
                             for leg in (kw, vec)]
                else:
                    parts = [convex(kw, 1.0 - alpha), convex(vec, alpha)]
                for part in parts:  # keyword leg first, as documented
                    for k, c in part.items():
                        fused[k] = fused.get(k, 0.0) + c
                order = sorted(fused, key=lambda k: (-fused[k], k[0], k[1]))
                want = greedy(order, q.limit, q.max_per_document)
                filled = len(kw) >= w or len(vec) >= w
                if len(want) >= q.limit or not filled or q.max_per_document is None:
                    break
                scale *= 4
            event(f"window growth x{scale}")
            hits = kb.search(actor, q.text, limit=q.limit, match=q.match, filters=q.filters,
                             max_per_document=q.max_per_document, mode="hybrid", explain=True,
                             fusion=fusion, alpha=alpha, rrf_k=q.rrf_k, window=q.window)
            assert [(h.document_id, h.passage) for h in hits] == want, (fusion, q, scale)
            assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
            for h in hits:
                key = (h.document_id, h.passage)
                assert h.score == fused[key], (key, h.score, fused[key])
                assert h.explain is not None
                assert h.explain["fused_score"] == h.score
                for name, leg in (("keyword", kw), ("vector", vec)):
                    if key in leg:
                        assert h.explain.get(name) == leg[key], (name, key, h.explain)
                    else:
                        assert name not in h.explain, (name, key, h.explain)
            if q.max_per_document is not None:
                assert max(Counter(h.document_id for h in hits).values(), default=0) <= q.max_per_document
            event(f"{fusion}: " + ("both legs" if kw and hits else "vector leg only" if hits else "no hits"))
            # The vector leg covers every readable passage here (fewer than the window), so a
            # hit without a vector entry would be a passage outside the readable set.
            if n_readable(actor, flt, vis) <= w:
                assert all("vector" in (h.explain or {}) for h in hits)


# -- explicit examples -------------------------------------------------------------------------
_doc = doc


READER = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)


def test_example_equal_passages_tie_exactly_and_order_by_document_id(locate: Locator) -> None:
    """Five documents with the same paragraph, ingested in reverse id order: their cosines are
    the same number, so the vector leg must list them by document id, and the hybrid order
    must follow (fused score, document id) as well."""
    kb = KnowledgeBase.open(locate("kb"))
    kb.ingest([_doc(f"d{i}", "alpha beta gamma delta") for i in reversed(range(5))])
    hits = kb.search(READER, "alpha zeta omega", mode="vector", limit=5, max_per_document=None)
    assert [h.document_id for h in hits] == [f"d{i}" for i in range(5)], [
        (h.document_id, h.score) for h in hits]
    assert len({h.score for h in hits}) == 1
    fused = kb.search(READER, "alpha zeta omega", mode="hybrid", limit=5, max_per_document=None)
    assert [h.document_id for h in fused] == [f"d{i}" for i in range(5)]
    kb.close()


def test_example_vector_scores_do_not_depend_on_unreadable_neighbours(locate: Locator) -> None:
    """The same readable passages must get the same cosines, bit for bit, in a store where
    writes of unreadable documents made the store merge segments as in one without them.

    Layout: a readable nine-paragraph document (one segment that no merge touches), then a
    readable three-paragraph document, then (in `both` only) seven one-passage unreadable
    documents, each in its own batch: the eighth small segment triggers the tiered merge that
    rewrites the second readable document's segment."""
    only = KnowledgeBase.open(locate("only"))
    both = KnowledgeBase.open(locate("both"))
    first = _doc("a", "\n\n".join(f"omega {'beta ' * i}" for i in range(1, 10)))
    second = _doc("b", "\n\n".join(["alpha beta gamma delta"] * 3))
    query = "alpha zeta omega"
    for kb in (only, both):
        kb.ingest(first)
        kb.ingest(second)
        kb.search(READER, query, mode="vector")  # warm caches, as a running service has them
    for i in range(7):
        both.ingest(_doc(f"h{i}", "zeta zeta", groups=("other",)))
    both.store.settle()  # merges run after the write returns (see store._merge_runner)
    assert both.stats()["segments"] < 9  # the merge did run
    want = [(h.document_id, h.passage, h.score) for h in only.search(READER, query, mode="vector",
                                                                      limit=12, max_per_document=None)]
    got = [(h.document_id, h.passage, h.score) for h in both.search(READER, query, mode="vector",
                                                                     limit=12, max_per_document=None)]
    assert got == want
    only.close()
    both.close()


def test_example_vector_mode_per_document_cap_never_under_fills(locate: Locator) -> None:
    """One document with 60 passages that are all closer to the query than anything else, and
    five one-paragraph documents: limit 6 with at most 2 per document must give 2 passages of
    the big document and 4 others, as keyword mode does, not a short list (vector and hybrid,
    whose legs' windows of 50 hold only the big document's passages)."""
    kb = KnowledgeBase.open(locate("kb"))
    big = "\n\n".join(f"alpha beta alpha beta n{i}" for i in range(60))
    kb.ingest([_doc("a", big)] + [_doc(f"o{i}", "alpha zeta omega gamma") for i in range(5)])
    keyword = kb.search(READER, "alpha beta", mode="keyword", limit=6, max_per_document=2)
    assert len(keyword) == 6
    vector = kb.search(READER, "alpha beta", mode="vector", limit=6, max_per_document=2)
    assert [h.document_id for h in vector] == ["a", "a", "o0", "o1", "o2", "o3"], [
        (h.document_id, h.passage) for h in vector]
    hybrid = kb.search(READER, "alpha beta", limit=6, max_per_document=2)
    assert sorted(h.document_id for h in hybrid) == ["a", "a", "o0", "o1", "o2", "o3"], [
        (h.document_id, h.passage) for h in hybrid]
    kb.close()


