"""Hypothesis strategies, the reference access rule and the reference BM25 shared by the
permission-exact property tests (keyword: tests/retrieve/test_permission_exact.py, vector and fusion:
tests/retrieve/test_vector_exact.py), so both draw the same kinds of actors and documents.

Documents are drawn over a six-word vocabulary so that terms overlap everywhere: an inaccessible
document that leaked into the statistics would change document frequencies, the passage count
or the average length, and with them every score.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from evidex import VISIBILITIES, Actor, Document, Filters, KnowledgeBase

VOCAB = ("alpha", "beta", "gamma", "delta", "omega", "zeta")
ABSENT = "absent"  # never in any document
TENANTS = ("t1", "t2")
GROUPS = ("g1", "g2", "g3")
OUTSIDERS = "outsiders"  # a group no actor ever has
LANGS = (None, "en", "de")
TAGS = ("x", "y")
VIS = tuple(sorted(VISIBILITIES))


def visible(actor: Actor, flt: Filters, d: Document) -> bool:
    """The access rule and the filters, written out from the issue's text."""
    return (
        actor.active
        and d.tenant == actor.tenant
        and bool(set(actor.groups) & set(d.groups))
        and d.visibility in actor.visibilities
        and (flt.language is None or d.language == flt.language)
        and set(flt.tags) <= set(d.tags)
    )


word = st.tuples(st.sampled_from(VOCAB), st.booleans()).map(lambda t: t[0].title() if t[1] else t[0])
words_paragraph = st.lists(word, min_size=1, max_size=6).map(" ".join)
paragraph = st.one_of(words_paragraph, words_paragraph, words_paragraph, st.sampled_from(["", "--"]))
text = st.lists(paragraph, min_size=1, max_size=4).map("\n\n".join)


@st.composite
def actors(draw: st.DrawFn) -> Actor:
    return Actor(
        draw(st.sampled_from(TENANTS)),
        frozenset(draw(st.sets(st.sampled_from(GROUPS), min_size=1))),
        active=draw(st.sampled_from([True] * 9 + [False])),
        visibilities=frozenset(draw(st.sets(st.sampled_from(VIS), min_size=1))),
    )


@st.composite
def filters(draw: st.DrawFn) -> Filters:
    return Filters(draw(st.sampled_from(LANGS)), frozenset(draw(st.sets(st.sampled_from(TAGS)))))


@st.composite
def visible_doc(draw: st.DrawFn, actor: Actor, flt: Filters, doc_id: str, version: str = "v1"
                ) -> Document:
    """A document this actor may read under these filters (unless the actor is inactive)."""
    groups = {draw(st.sampled_from(sorted(actor.groups)))} | draw(st.sets(st.sampled_from(GROUPS)))
    return Document(
        doc_id, actor.tenant, frozenset(groups), version, draw(text),
        language=flt.language if flt.language is not None else draw(st.sampled_from(LANGS)),
        visibility=draw(st.sampled_from(sorted(actor.visibilities))),
        tags=tuple(set(flt.tags) | draw(st.sets(st.sampled_from(TAGS)))),
    )


@st.composite
def hidden_doc(draw: st.DrawFn, actor: Actor, flt: Filters, index: int, version: str = "v1"
               ) -> Document:
    """A document the actor may not read under these filters: either random, or a near miss
    that differs from a readable document in exactly one attribute."""
    base = draw(visible_doc(actor, flt, f"h{index}", version))
    ways = ["tenant", "groups", "random"]
    if set(actor.visibilities) != set(VIS):
        ways.append("visibility")
    if flt.language is not None:
        ways.append("language")
    if flt.tags:
        ways.append("tags")
    way = draw(st.sampled_from(ways))
    fields = {
        "id": base.id, "tenant": base.tenant, "groups": base.groups, "version": version,
        "text": base.text, "language": base.language, "visibility": base.visibility,
        "tags": base.tags,
    }
    if way == "tenant":
        # Another tenant, and the id of a readable document: ids are only unique per tenant.
        other = next(t for t in TENANTS if t != actor.tenant)
        fields.update(tenant=other, id=f"d{index}")
    elif way == "groups":
        others = sorted(set(GROUPS) - set(actor.groups))
        extra = draw(st.sets(st.sampled_from(others))) if others else set()
        fields.update(groups=frozenset({OUTSIDERS, *extra}))
    elif way == "visibility":
        fields.update(visibility=draw(st.sampled_from(sorted(set(VIS) - set(actor.visibilities)))))
    elif way == "language":
        fields.update(language=draw(st.sampled_from([x for x in LANGS if x != flt.language])))
    elif way == "tags":
        fields.update(tags=tuple(set(base.tags) - set(flt.tags)))
    else:
        tenant = draw(st.sampled_from(TENANTS))
        fields.update(
            tenant=tenant, id=f"h{index}" if tenant == actor.tenant else f"d{index}",
            groups=frozenset(draw(st.sets(st.sampled_from((*GROUPS, OUTSIDERS)), min_size=1))),
            visibility=draw(st.sampled_from(VIS)), language=draw(st.sampled_from(LANGS)),
            tags=tuple(draw(st.sets(st.sampled_from(TAGS)))),
        )
    d = Document(**fields)  # type: ignore[arg-type]
    if actor.active and visible(actor, flt, d):
        # Only the "random" way can land here: push it out through the group set.
        d = Document(**{**fields, "groups": frozenset({OUTSIDERS})})  # type: ignore[arg-type]
    assert not visible(actor, flt, d)
    return d


def unreadable_writes(kb: KnowledgeBase, data: st.DataObject, actor: Actor, flt: Filters,
                      live: dict[tuple[str, str], Document]) -> Iterator[str]:
    """Draw 1-8 writes the actor may not read (add, supersede, remove, optimize) and apply them
    to ``kb`` one at a time, yielding each step after it is applied (``live``: the unreadable
    documents stored, kept current)."""
    steps = data.draw(st.lists(st.sampled_from(["add", "supersede", "remove", "optimize"]),
                               min_size=1, max_size=8))
    for k, step in enumerate(steps):
        if step == "add":
            d = data.draw(hidden_doc(actor, flt, 100 + k))
            kb.ingest(d)
            live[(d.tenant, d.id)] = d
        elif step == "supersede" and live:
            old = live[data.draw(st.sampled_from(sorted(live)))]
            new = data.draw(hidden_doc(actor, flt, 0, version=f"v{k + 2}"))
            # Either a new version and text, or the same version and text with other (still
            # unreadable) access attributes, which re-indexes it too.
            same = data.draw(st.booleans())
            new = Document(old.id, old.tenant, new.groups if new.tenant == old.tenant
                           else frozenset({OUTSIDERS}), old.version if same else new.version,
                           old.text if same else new.text,
                           language=new.language, visibility=new.visibility, tags=new.tags)
            assert not visible(actor, flt, new)
            report = kb.ingest(new)
            assert (report.superseded, report.unchanged) == (
                (0, 1) if new.metadata() == old.metadata() and same else (1, 0))
            live[(new.tenant, new.id)] = new
        elif step in ("remove", "optimize"):
            remove_or_optimize(kb, step, live, data)
        yield step


def remove_or_optimize(kb: KnowledgeBase, step: str, live: dict[tuple[str, str], Document],
                       data: st.DataObject) -> None:
    """The "remove" step (a random live document, if any) or the "optimize" step of the
    write-series tests."""
    if step == "remove" and live:
        key = data.draw(st.sampled_from(sorted(live)))
        assert kb.remove(*key)
        del live[key]
    elif step == "optimize":
        kb.optimize()


K1, B = 1.2, 0.75


# -- reference model (deliberately independent of evidex's code) ------------------------------
def ref_passages(d: Document) -> list[tuple[int, list[str]]]:
    """Paragraph split as the contract says: parts at blank lines numbered 1..n over the whole
    split, whitespace-only parts not indexed; terms are lower-cased letter runs."""
    out = []
    for number, part in enumerate(d.text.split("\n\n"), start=1):
        if part.strip():
            out.append((number, re.findall(r"[a-z]+", part.lower())))
    return out


def ref_bm25(docs: Iterable[Document], query_terms: Sequence[str], match: str
             ) -> dict[tuple[str, int], float]:
    """Textbook Okapi BM25 over exactly ``docs``: (document id, passage) -> score."""
    passages = [(d.id, n, Counter(toks), len(toks)) for d in docs for n, toks in ref_passages(d)]
    if not passages:
        return {}
    n_pass = len(passages)
    avgdl = sum(p[3] for p in passages) / n_pass
    terms = sorted(set(query_terms))
    df = {t: sum(1 for p in passages if p[2][t]) for t in terms}
    idf = {t: math.log(1 + (n_pass - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
    out = {}
    for doc_id, number, tf, dl in passages:
        present = [t for t in terms if tf[t]]
        if not present or (match == "all" and len(present) != len(terms)):
            continue
        out[(doc_id, number)] = sum(
            idf[t] * tf[t] * (K1 + 1) / (tf[t] + K1 * (1 - B + B * dl / avgdl)) for t in present
        )
    return out


def results(kb: KnowledgeBase, actor: Actor, q: Query) -> list[tuple[str, str, int, str, float]]:
    hits = kb.search(actor, q.text, limit=q.limit, match=q.match, filters=q.filters,
                     max_per_document=q.max_per_document, mode="keyword")
    return [(h.document_id, h.version, h.passage, h.quote, h.score) for h in hits]


# -- strategies --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    text: str
    match: str
    limit: int
    max_per_document: int | None
    filters: Filters | dict[str, object] | None


@st.composite
def queries(draw: st.DrawFn, flt: Filters) -> Query:
    qwords = draw(st.lists(st.sampled_from((*VOCAB, ABSENT)), min_size=1, max_size=3))
    # The filters go in as the object or as the documented mapping form.
    as_mapping = draw(st.booleans())
    filt: Filters | dict[str, object] = (
        {"language": flt.language, "tags": sorted(flt.tags)} if as_mapping else flt
    )
    return Query(
        " ".join(w.upper() if draw(st.booleans()) else w for w in qwords),
        draw(st.sampled_from(["any", "all"])),
        draw(st.integers(1, 50)),
        draw(st.sampled_from([None, 1, 2, 3])),
        filt,
    )


Scenario = tuple[Actor, Filters, list[Document], list[Document], list[Query]]


@st.composite
def scenarios(draw: st.DrawFn, make_queries: Callable[[Filters], st.SearchStrategy[Any]] | None = None
              ) -> Scenario:
    """An actor, filters, readable and hidden documents, and 2-4 queries (``make_queries``:
    the keyword ``queries`` unless a test draws its own kind)."""
    actor = draw(actors())
    flt = draw(filters())
    n_vis = draw(st.integers(0, 6))
    n_hid = draw(st.integers(1, 6))
    vis = [draw(visible_doc(actor, flt, f"d{i}")) for i in range(n_vis)]
    hid = [draw(hidden_doc(actor, flt, i)) for i in range(n_hid)]
    qs = draw(st.lists((make_queries or queries)(flt), min_size=2, max_size=4))
    return actor, flt, vis, hid, qs
