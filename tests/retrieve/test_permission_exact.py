"""Permission-exact BM25: statistics come only from what the actor may read under the filters.

The claim under test (issue 2): BM25 statistics (passage count, average length, document
frequencies) are computed only over the passages this actor may access under these filters, and
adding, changing or removing a document the actor cannot access changes neither the actor's
results nor their scores, bit for bit.

Everything here runs on both backends (real SQLite files and PostgreSQL schemas), one fresh
store per hypothesis example.
Documents are drawn over a six-word vocabulary so that terms overlap everywhere: an inaccessible
document that leaked into the statistics would change document frequencies, the passage count
or the average length, and with them every score.
"""

from __future__ import annotations

import itertools
import math
import re
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from actors import PUBLIC_INTERNAL
from backends import BACKENDS, Locator, locator
from documents import doc
from evidex import Actor, Document, Filters, KnowledgeBase
from evidex.retrieve import access
from strategies import (
    GROUPS,
    LANGS,
    TAGS,
    TENANTS,
    VIS,
    VOCAB,
    Query,
    Scenario,
    actors,
    filters,
    hidden_doc,
    queries,
    ref_bm25,
    ref_passages,
    remove_or_optimize,
    results,
    scenarios,
    text,
    unreadable_writes,
    visible,
    visible_doc,
)

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@contextmanager
def store(*batches: Sequence[Document], embedder: str | None = None,
          backend: str = "sqlite", analyzer: str = "exact") -> Iterator[tuple[KnowledgeBase, str]]:
    """A fresh store on ``backend``. Stores under test get the default embedder (so they
    hold vectors as users' stores do); reference stores are keyword-only (``embedder="none"``) SQLite
    files, which also checks that keyword results depend neither on the vector index nor on
    the backend. The analyzer is ``exact`` unless asked: the reference tokenises alike."""
    with tempfile.TemporaryDirectory() as tmp:
        loc = locator(backend, Path(tmp))
        path = loc("kb")
        kb = KnowledgeBase.open(path, embedder=embedder, analyzer=analyzer)
        try:
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


@pytest.mark.parametrize("backend", BACKENDS)
# -- properties --------------------------------------------------------------------------------
@SETTINGS
@given(scenarios(), st.data())
def test_inaccessible_documents_change_nothing_bit_for_bit(backend: str, scenario: Scenario,
                                                           data: st.DataObject) -> None:
    """(a) A store with only the readable documents and one that also holds arbitrary unreadable
    ones (ingested in a random order and random batches, so passage ids, signatures and segments
    all differ) give identical hits with identical float scores."""
    actor, _flt, vis, hid, qs = scenario
    mixed = data.draw(st.permutations(vis + hid))
    sizes = data.draw(st.lists(st.integers(1, 4), max_size=6))
    # One more query that every readable passage with a word matches, so that the comparison
    # is never vacuous when something is readable.
    every = Query(" ".join(VOCAB), "any", 50, None, qs[0].filters)
    with store(vis, embedder="none") as (only, _), \
            store(*chunked(mixed, sizes), backend=backend) as (both, _):
        for q in [*qs, every]:
            assert results(both, actor, q) == results(only, actor, q), q
        readable_words = actor.active and any(toks for d in vis for _, toks in ref_passages(d))
        assert bool(results(both, actor, every)) == readable_words


@pytest.mark.parametrize("backend", BACKENDS)
@SETTINGS
@given(scenarios(), st.data())
def test_adding_superseding_removing_inaccessible_documents_in_place(
    backend: str, scenario: Scenario, data: st.DataObject
) -> None:
    """(b) In one store, every write to an unreadable document (add, supersede with another
    version and text and possibly other unreadable access attributes, remove, and optimize)
    leaves the actor's results bit for bit as they were; also for a second handle on the same
    file whose cache was filled before the writes."""
    actor, flt, vis, hid, qs = scenario
    with store(vis + hid, backend=backend) as (kb, path):
        before = [results(kb, actor, q) for q in qs]
        other = KnowledgeBase.open(path)
        try:
            assert [results(other, actor, q) for q in qs] == before
            live = {(d.tenant, d.id): d for d in hid}
            for step in unreadable_writes(kb, data, actor, flt, live):
                for q, want in zip(qs, before, strict=True):
                    assert results(kb, actor, q) == want, (step, q)
                    assert results(other, actor, q) == want, (step, q)
        finally:
            other.close()


@pytest.mark.parametrize("backend", BACKENDS)
@SETTINGS
@given(scenarios(), st.data())
def test_a_handle_with_warm_caches_follows_every_write(backend: str, scenario: Scenario,
                                                        data: st.DataObject) -> None:
    """Ranking caches are kept per visible collection (the allowed signatures' versions), not
    per store generation. A handle whose caches were filled before a random series of writes,
    readable or not, merges included (a merge can drop a passage tombstoned since the handle's
    last look), answers exactly as a handle opened afterwards; and a write the actor cannot see
    leaves its cached weights in use (nothing recomputed)."""
    actor, flt, vis, hid, qs = scenario
    with store(vis + hid, backend=backend) as (kb, path):
        warm = KnowledgeBase.open(path)
        try:
            for q in qs:
                results(warm, actor, q)
            live = {(d.tenant, d.id): d for d in vis + hid}
            steps = data.draw(st.lists(st.sampled_from(["add", "hidden", "supersede", "remove", "optimize"]),
                                       min_size=1, max_size=8))
            pending: list[str] = []
            for k, step in enumerate(steps):
                if step in ("add", "hidden"):  # a new document the actor may or may not read
                    d = data.draw(visible_doc(actor, flt, f"n{k}") if step == "add"
                                  else hidden_doc(actor, flt, 200 + k))
                    kb.ingest(d)
                    live[(d.tenant, d.id)] = d
                elif step == "supersede" and live:
                    old = live[data.draw(st.sampled_from(sorted(live)))]
                    new = Document(old.id, old.tenant, old.groups, f"w{k}", data.draw(text),
                                   language=old.language, visibility=old.visibility, tags=old.tags)
                    kb.ingest(new)
                    live[(new.tenant, new.id)] = new
                elif step in ("remove", "optimize"):
                    remove_or_optimize(kb, step, live, data)
                pending.append(step)
                # Look now or after more writes (so a merge may drop a passage tombstoned since
                # the last look); always after the last step.
                if not data.draw(st.booleans()) and k < len(steps) - 1:
                    continue
                misses = _count_weight_misses(warm)
                got = [results(warm, actor, q) for q in qs]
                computed = misses()
                fresh = KnowledgeBase.open(path)
                try:
                    assert got == [results(fresh, actor, q) for q in qs], (pending, k)
                finally:
                    fresh.close()
                if set(pending) <= {"hidden", "optimize"}:
                    assert computed == 0, f"writes the actor cannot see dropped its cached weights: {pending}"
                pending = []
        finally:
            warm.close()


def _count_weight_misses(kb: KnowledgeBase):  # type: ignore[no-untyped-def]
    """Wraps the handle's BM25 weights computation; the returned function tells how many times
    weights were computed (not served from the cache) since, and removes the wrapper."""
    bm = kb._bm25
    calls = [0]
    real = bm._weigh

    def weigh(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return real(*args, **kwargs)

    bm._weigh = weigh

    def done() -> int:
        del bm._weigh
        return calls[0]

    return done


@st.composite
def random_doc(draw: st.DrawFn, index: int) -> Document:
    tenant = draw(st.sampled_from(TENANTS))
    return Document(
        f"r{index}", tenant, frozenset(draw(st.sets(st.sampled_from(GROUPS), min_size=1))), "v1",
        draw(text), language=draw(st.sampled_from(LANGS)), visibility=draw(st.sampled_from(VIS)),
        tags=tuple(draw(st.sets(st.sampled_from(TAGS)))),
    )


@pytest.mark.parametrize("backend", BACKENDS)
@settings(SETTINGS, max_examples=25)
@given(st.data())
def test_many_actors_on_one_handle_each_see_only_their_statistics(backend: str, data: st.DataObject) -> None:
    """Several actors (and filter settings) search one store through one handle in a random
    interleaving, with writes in between: every result equals, bit for bit, the result in a
    store holding only what that actor may read under those filters. Catches anything cached
    across actors (postings masks, weights, statistics) that is keyed too coarsely."""
    docs = [data.draw(random_doc(i)) for i in range(data.draw(st.integers(2, 10)))]
    views = data.draw(st.lists(st.tuples(actors(), filters()), min_size=2, max_size=3))
    qs = data.draw(st.lists(st.tuples(st.integers(0, len(views) - 1), queries(Filters())),
                            min_size=4, max_size=10))
    extra = data.draw(random_doc(99))
    with store(docs, backend=backend) as (kb, _), ExitStack() as stack:
        for phase in range(2):
            if phase:  # a write between the phases: a new generation for every cache
                kb.ingest(extra)
                docs = [*docs, extra]
            only: dict[int, KnowledgeBase] = {}
            for v, q in qs:
                actor, flt = views[v]
                if v not in only:
                    readable = [d for d in docs if visible(actor, flt, d)]
                    only[v] = stack.enter_context(store(readable, embedder="none"))[0]
                q = Query(q.text, q.match, q.limit, q.max_per_document, flt)
                assert results(kb, actor, q) == results(only[v], actor, q), (phase, v, q)


def greedy(ordered: Sequence[tuple[str, int, float]], limit: int, cap: int | None
           ) -> list[tuple[str, int, float]]:
    out: list[tuple[str, int, float]] = []
    per: Counter[str] = Counter()
    for doc_id, number, score in ordered:
        if cap is None or per[doc_id] < cap:
            per[doc_id] += 1
            out.append((doc_id, number, score))
            if len(out) == limit:
                break
    return out


def ref_by_language(readable: list[Document], qterms: Sequence[str], match: str
                    ) -> dict[tuple[str, int], float]:
    """The ``auto`` analyzer's reference: textbook BM25 per language over exactly the readable
    passages of that language (those without a language are one more), every readable language.
    The vocabulary is its own stem in English and German."""
    key = {d.id: (d.language or "").split("-")[0].lower() for d in readable}
    out: dict[tuple[str, int], float] = {}
    for lang in set(key.values()):
        out.update(ref_bm25([d for d in readable if key[d.id] == lang], qterms, match))
    return out


@pytest.mark.parametrize("analyzer", ["exact", "auto"])
@pytest.mark.parametrize("backend", BACKENDS)
@SETTINGS
@given(scenarios())
def test_scores_equal_reference_bm25_over_the_readable_passages(backend: str, analyzer: str,
                                                               scenario: Scenario) -> None:
    """(c) Scores are textbook BM25 (k1=1.2, b=0.75, Lucene idf) with N, avgdl and df taken over
    the readable, filter-passing passages only (under ``auto``: those of each language); order
    is (score desc, document id asc, passage asc); max_per_document and limit select greedily
    from that order; for any and all."""
    actor, flt, vis, hid, qs = scenario
    readable = [d for d in vis if visible(actor, flt, d)]
    with store(hid[: len(hid) // 2] + vis, hid[len(hid) // 2 :], backend=backend,
               analyzer=analyzer) as (kb, _):
        for q in qs:
            qterms = re.findall(r"[a-z]+", q.text.lower())
            want = (ref_bm25(readable, qterms, q.match) if analyzer == "exact"
                    else ref_by_language(readable, qterms, q.match))
            assert len(want) <= 50  # the "every candidate" search below sees them all
            full = kb.search(actor, q.text, limit=50, match=q.match, filters=q.filters,
                             max_per_document=None, mode="keyword")
            got = [(h.document_id, h.passage, h.score) for h in full]
            assert {(d, n) for d, n, _ in got} == set(want), q
            for d, n, s in got:
                assert math.isclose(s, want[(d, n)], rel_tol=1e-9, abs_tol=0.0), (d, n, s, want)
            assert got == sorted(got, key=lambda r: (-r[2], r[0], r[1]))
            assert [h.rank for h in full] == list(range(1, len(full) + 1))
            hits = kb.search(actor, q.text, limit=q.limit, match=q.match, filters=q.filters,
                             max_per_document=q.max_per_document, mode="keyword")
            assert [(h.document_id, h.passage, h.score) for h in hits] == greedy(
                got, q.limit, q.max_per_document)
            if q.max_per_document is not None:
                assert max(Counter(h.document_id for h in hits).values(), default=0) <= q.max_per_document


POOL = ("alpha beta", "beta alpha", "alpha alpha gamma", "gamma", "beta beta beta delta", "alpha",
        "delta omega alpha beta", "--")


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.text(alphabet="abAB9é_", min_size=1, max_size=3), min_size=12, max_size=40, unique=True),
    st.data(),
)
def test_order_and_cap_with_many_tied_candidates(backend: str, ids: list[str], data: st.DataObject) -> None:
    """Many candidates (more than the selection looks at first) built from a few paragraphs, so
    that equal scores are common within and across documents: the hits are exactly the greedy
    selection from the reference order (score desc, document id asc in code point order,
    passage asc) under limit and max_per_document. Unreadable copies of the same paragraphs are
    in the store as well."""
    actor = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)
    short = st.lists(st.sampled_from(POOL), min_size=1, max_size=4).map("\n\n".join)
    # A few long documents can fill the first look at the candidates on their own, so that the
    # per-document cap leaves the selection short and it must look further.
    long = st.lists(st.sampled_from(POOL[:3]), min_size=10, max_size=30).map("\n\n".join)
    docs = [Document(i, "t", frozenset({"g"}), "1", data.draw(long if k < 3 and data.draw(st.booleans())
                                                              else short))
            for k, i in enumerate(ids)]
    hidden = [Document(f"{i}~", "t", frozenset({"h"}), "1", data.draw(short)) for i in ids[:8]]
    query = data.draw(st.sampled_from(["alpha", "alpha beta", "beta gamma", "delta alpha omega"]))
    match = data.draw(st.sampled_from(["any", "all"]))
    limit = data.draw(st.integers(1, 50))
    cap = data.draw(st.sampled_from([None, 1, 2, 3]))
    ref = ref_bm25(docs, query.split(), match)
    ordered = sorted(ref.items(), key=lambda kv: (-kv[1], kv[0][0], kv[0][1]))
    # Different inputs whose scores lie within rounding of each other would make the reference
    # order ambiguous; exact ties (equal inputs) are what this test is about.
    scores = sorted(set(ref.values()))
    assume(all(not math.isclose(a, b, rel_tol=1e-9) for a, b in itertools.pairwise(scores)))
    expected = greedy([(d, n, s) for (d, n), s in ordered], limit, cap)
    with store(hidden[:4] + docs + hidden[4:], backend=backend) as (kb, _):
        hits = kb.search(actor, query, limit=limit, match=match, max_per_document=cap, mode="keyword")
    assert [(h.document_id, h.passage) for h in hits] == [(d, n) for d, n, _ in expected]
    for h, (_, _, s) in zip(hits, expected, strict=True):
        assert math.isclose(h.score, s, rel_tol=1e-9)


# -- explicit examples ---------------------------------------------------------------------------
def test_example_cap_leaves_first_look_short(locate: Locator) -> None:
    """Three documents with 30 equally best passages each, then 40 one-passage documents: with
    limit 20 and at most 2 per document the hits are 2 of each best document (ordered by id,
    then passage) followed by 14 of the others by id."""
    actor = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)
    best = [Document(f"best{i}", "t", frozenset({"g"}), "1", "\n\n".join(["alpha alpha"] * 30))
            for i in range(3)]
    rest = [Document(f"r{i:02d}", "t", frozenset({"g"}), "1", "alpha beta gamma delta") for i in range(40)]
    kb = KnowledgeBase.open(locate("kb"))
    kb.ingest(rest + best)
    hits = kb.search(actor, "alpha", limit=20, max_per_document=2, mode="keyword")
    assert [(h.document_id, h.passage) for h in hits] == (
        [(f"best{i}", n) for i in range(3) for n in (1, 2)] + [(f"r{i:02d}", 1) for i in range(14)]
    )
    assert hits[0].score == hits[5].score > hits[6].score == hits[19].score
    kb.close()


STAFF = Actor("acme", frozenset({"staff"}), visibilities=PUBLIC_INTERNAL)


def scored(kb: KnowledgeBase, actor: Actor, query: str, **options: object) -> list[tuple[str, int, float]]:
    """(document id, passage, score) of a keyword search."""
    return [(h.document_id, h.passage, h.score)
            for h in kb.search(actor, query, mode="keyword", **options)]  # type: ignore[arg-type]


_doc = partial(doc, tenant="acme", groups=("staff",))


def test_example_hand_computed_score_is_unmoved_by_unreadable_documents(locate: Locator) -> None:
    """Two readable passages; the hand-computed BM25 must hold with and without a flood of
    unreadable 'alpha' passages in the same tenant (another group, a confidential page) and in
    another tenant."""
    kb = KnowledgeBase.open(locate("kb"))
    kb.ingest([_doc("a", "alpha beta"), _doc("b", "gamma delta gamma")])
    # N = 2, avgdl = 2.5, df(alpha) = 1 -> idf = ln(1 + 1.5/1.5) = ln 2; tf = 1, dl = 2.
    expected = math.log(2) * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 / 2.5))
    first = kb.search(STAFF, "alpha", mode="keyword")
    assert [(h.document_id, h.passage) for h in first] == [("a", 1)]
    assert math.isclose(first[0].score, expected, rel_tol=1e-12)
    flood = "\n\n".join(["alpha alpha alpha"] * 5)
    kb.ingest([
        _doc("hr-only", flood, groups=("hr",)),
        _doc("secret", flood, visibility="confidential"),
        _doc("a", flood, tenant="other"),
    ])
    again = kb.search(STAFF, "alpha", mode="keyword")
    assert [(h.document_id, h.passage, h.score) for h in again] == [("a", 1, first[0].score)]
    kb.close()


def test_example_filters_restrict_the_statistics_too(locate: Locator) -> None:
    """With filters, statistics come from the filter-passing passages only: an English page's
    score for 'alpha' is what it would be in a store holding just the English pages."""
    en = [_doc("en1", "alpha beta", language="en", tags=("faq",)),
          _doc("en2", "beta beta gamma", language="en", tags=("faq",))]
    others = [_doc("de1", "alpha alpha\n\nalpha", language="de", tags=("faq",)),
              _doc("en3", "alpha", language="en"),  # lacks the tag
              _doc("none", "alpha delta")]  # no language
    flt = {"language": "en", "tags": ["faq"]}
    a = KnowledgeBase.open(locate("a"))
    b = KnowledgeBase.open(locate("b"))
    a.ingest(en)
    b.ingest(others + en)
    got_a = scored(a, STAFF, "alpha beta", filters=flt)
    got_b = scored(b, STAFF, "alpha beta", filters=flt)
    assert got_a == got_b
    assert [r[:2] for r in got_b] == [("en1", 1), ("en2", 1)]
    ref = ref_bm25(en, ["alpha", "beta"], "any")
    for doc_id, number, score in got_b:
        assert math.isclose(score, ref[(doc_id, number)], rel_tol=1e-9)
    # Without filters the same store has other statistics, so the scores must differ: this
    # guards against a test that could not fail.
    unfiltered = {(d, n): sc for d, n, sc in scored(b, STAFF, "alpha beta", limit=10)}
    assert unfiltered[("en1", 1)] != got_b[0][2]
    a.close()
    b.close()


def test_example_supersede_and_remove_of_unreadable_document(locate: Locator) -> None:
    kb = KnowledgeBase.open(locate("kb"))
    kb.ingest([_doc("a", "alpha beta\n\nbeta gamma"), _doc("b", "alpha")])
    before = scored(kb, STAFF, "alpha beta gamma")
    kb.ingest(_doc("x", "alpha alpha", groups=("hr",)))
    assert scored(kb, STAFF, "alpha beta gamma") == before
    kb.ingest(_doc("x", "beta\n\ngamma\n\nalpha beta gamma", groups=("hr",), version="2"))
    assert scored(kb, STAFF, "alpha beta gamma") == before
    kb.ingest(_doc("x", "beta", groups=("hr", "legal"), version="3", visibility="restricted"))
    assert scored(kb, STAFF, "alpha beta gamma") == before
    assert kb.remove("acme", "x")
    assert scored(kb, STAFF, "alpha beta gamma") == before
    # A readable change does move the scores: the property is not vacuous.
    kb.ingest(_doc("c", "alpha alpha alpha"))
    assert scored(kb, STAFF, "alpha beta gamma") != before
    kb.close()


def test_example_actor_who_can_read_nothing(locate: Locator) -> None:
    kb = KnowledgeBase.open(locate("kb"))
    kb.ingest([_doc("a", "alpha"), _doc("b", "alpha", visibility="public")])
    assert kb.search(Actor("acme", frozenset(), visibilities=PUBLIC_INTERNAL), "alpha", mode="keyword") == []
    inactive = Actor("acme", frozenset({"staff"}), active=False, visibilities=PUBLIC_INTERNAL)
    assert kb.search(inactive, "alpha", mode="keyword") == []
    assert scored(kb, Actor("acme", frozenset({"staff"}), visibilities=frozenset()), "alpha") == []
    other = Actor("other", frozenset({"staff"}), visibilities=PUBLIC_INTERNAL)
    assert kb.search(other, "alpha", mode="keyword") == []
    public = kb.search(Actor("acme", frozenset({"staff"}), visibilities=frozenset({"public"})), "alpha",
                       mode="keyword")
    assert [h.document_id for h in public] == ["b"]
    # N = 1 and df = 1 for the public-only actor: idf = ln(1 + 0.5/1.5).
    assert math.isclose(public[0].score, math.log(1 + 0.5 / 1.5), rel_tol=1e-12)
    kb.close()


def test_access_is_worked_out_once_per_snapshot_and_actor(locate: Locator) -> None:
    """Searches of one snapshot share the actor's ``Access``; another actor, other filters or
    the next write's snapshot get their own, and a write that changes what is readable shows."""
    kb = KnowledgeBase.open(locate("kb"))
    kb.ingest([_doc("a", "alpha"), _doc("b", "alpha", visibility="public")])
    public = Actor("acme", frozenset({"staff"}), visibilities=frozenset({"public"}))
    with kb.store.read() as view:
        first = access(view, STAFF, Filters())
        assert access(view, STAFF, Filters()) is first
        assert access(view, public, Filters()).allowed.passages == 1 < first.allowed.passages == 2
        assert access(view, STAFF, Filters(language="de")).allowed.passages == 0
    kb.ingest(_doc("c", "alpha", groups=("staff", "other")))
    with kb.store.read() as view:
        again = access(view, STAFF, Filters())
        assert again is not first and again.allowed.passages == 3
    kb.close()


@pytest.mark.parametrize("change", ["add", "same_lengths", "remove", "remove_then_optimize"])
def test_example_warm_handle_sees_readable_changes(locate: Locator, change: str) -> None:
    """Each way a readable write reaches a handle with warm caches: new passages in a signature
    the actor already reads, a supersede that keeps every passage count and length (so the
    signature's statistics alone would not tell), a removal (tombstones), and a removal folded
    away by `optimize` before the handle looks again. The warm handle answers as a fresh one."""
    path = locate("kb")
    kb = KnowledgeBase.open(path)
    kb.ingest([_doc("a", "alpha beta\n\nbeta gamma"), _doc("b", "alpha delta"), _doc("c", "gamma")])
    warm = KnowledgeBase.open(path)
    query = "alpha beta gamma delta"
    before = scored(warm, STAFF, query)
    if change == "add":
        kb.ingest(_doc("d", "alpha alpha beta"))
    elif change == "same_lengths":
        kb.ingest(_doc("b", "beta gamma", version="2"))  # two words, as "alpha delta"
    elif change == "remove":
        assert kb.remove("acme", "b")
    else:
        assert kb.remove("acme", "b")
        kb.optimize()
    fresh = KnowledgeBase.open(path)
    try:
        after = scored(fresh, STAFF, query)
        assert after != before  # the change is readable: a stale cache would show
        assert scored(warm, STAFF, query) == after
    finally:
        fresh.close()
        warm.close()
        kb.close()
