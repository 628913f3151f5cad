"""``evidex check``: verify a store end to end, through the store contract only.

What is checked, in one read snapshot (a store being written meanwhile is checked as of the
moment the check began):

- **fingerprints**: every document's stored text hashes to its ``content_sha256``, and every
  passage's text is exactly the document text between its ``start`` and ``end``;
- **index**: every passage row is live in the index (access signature, document, number and
  length as stored), every passage the index holds live has a row, and each signature's
  passage count and total length are the sums over its live passages;
- **postings**: every term of every live passage (re-derived with the store's analyzer in the
  document's language, which is what wrote them) has a posting for that passage with the
  right term frequency, and no posting of such a term points at a live passage without it or
  at a passage id the index does not know;
- **vectors** (a store with an embedding model): the model id is one evidex knows, with the
  store's dimension, and every live passage has a finite, unit-length vector of that dimension;
- **history**: each superseded version's text hashes to its fingerprint, the history is in
  time order, no entry repeats the current version, and every sync record names a document
  the store holds;
- **engine**: the database's own checks (``Store.integrity``: SQLite ``integrity_check`` and
  ``foreign_key_check``; PostgreSQL invalid indexes, unvalidated constraints, ``amcheck``).

A store that cannot even be read (the index refuses to load) is one ``read`` problem with the
store's own error; the content checks then stop.

Each problem names what it is about (document, passage id, term) so an operator can act on it.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from .embed import get_embedder
from .model import EvidexError, sha256_text
from .query import analyzer_for
from .store import ReadView, Store, StoredDocument

__all__ = ["CheckReport", "Problem", "check_store"]

#: Problems kept in a report (all are counted): a badly damaged store must not make the report
#: as large as the store.
MAX_PROBLEMS = 1000


@dataclass(frozen=True, slots=True)
class Problem:
    kind: str  # fingerprint, passage, index, postings, vectors, history, engine, read
    where: str  # "tenant/document", "passage 17", "term 'refund'", "store"
    detail: str
    #: Whose documents the problem is about (None: the store as a whole), so a tenant's admin
    #: is shown only its own documents' problems (``CheckReport.as_dict(tenant=...)``).
    tenant: str | None = None

    def __str__(self) -> str:
        return f"{self.kind}: {self.where}: {self.detail}"

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "where": self.where, "detail": self.detail, "tenant": self.tenant}


@dataclass
class CheckReport:
    documents: int = 0
    passages: int = 0
    terms: int = 0
    vectors: int = 0
    history_versions: int = 0
    seconds: float = 0.0
    problems: list[Problem] = field(default_factory=list)
    problem_count: int = 0

    @property
    def ok(self) -> bool:
        return self.problem_count == 0

    def add(self, kind: str, where: str, detail: str, tenant: str | None = None) -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(Problem(kind, where, detail, tenant))

    def counts(self) -> dict[str, int]:
        return dict(Counter(p.kind for p in self.problems))

    def as_dict(self, tenant: str | None = None) -> dict[str, object]:
        """The report; with ``tenant``, the problems of other tenants' documents are counted
        (``withheld``) but not shown, since their ids and terms are those tenants' content."""
        shown = [p for p in self.problems if tenant is None or p.tenant in (None, tenant)]
        return {"ok": self.ok, "documents": self.documents, "passages": self.passages,
                "terms": self.terms, "vectors": self.vectors,
                "history_versions": self.history_versions, "problem_count": self.problem_count,
                "withheld": len(self.problems) - len(shown),
                "problems": [p.as_dict() for p in shown], "seconds": round(self.seconds, 3)}


def check_store(store: Store) -> CheckReport:
    """Run every check on ``store`` (see the module docstring) and report what is wrong."""
    t0 = time.perf_counter()
    report = CheckReport()
    for line in store.integrity():
        report.add("engine", "store", line)
    engine_problems = report.problem_count
    held: set[tuple[str, str]] = set()
    try:
        _content(report, store, held)
    except EvidexError as exc:
        report.add("read", "store", f"the store cannot be read: {str(exc).splitlines()[0]}")
    except Exception as exc:  # a damaged file fails in the engine's own way; say so, once
        if not engine_problems:
            raise
        report.add("read", "store", f"the content checks stopped: {type(exc).__name__}: {exc}")
    else:
        for entry in store.source_entries():
            if (entry.tenant, entry.doc_id) not in held:
                report.add("history", f"{entry.tenant}/{entry.doc_id}",
                           f"the sync record of source {entry.source!r} names a document the "
                           "store does not hold", entry.tenant)
    report.seconds = time.perf_counter() - t0
    return report


def _content(report: CheckReport, store: Store, held: set[tuple[str, str]]) -> None:
    """Every check of the stored content, in one read snapshot; fills ``held`` with the
    (tenant, id) of the documents it saw."""
    expected: dict[str, dict[int, int]] = {}  # term -> {pid: tf} over live passage rows
    owner: dict[int, str] = {}  # pid -> tenant, for attributing problems
    with store.read() as view:
        live = set(np.flatnonzero(view.sig >= 0).tolist())
        seen: set[int] = set()
        for listed in store.iter_documents():
            d = view.document(listed.tenant, listed.id)
            if d is None:  # removed after the snapshot was taken
                continue
            held.add((d.tenant, d.id))
            report.documents += 1
            # each document's passages were analysed in its language (the `auto` analyzer)
            terms_of = analyzer_for(store.analyzer, d.language).terms
            pids = _document(report, view, d, terms_of, expected)
            seen.update(pids)
            owner.update(dict.fromkeys(pids, d.tenant))
            _history(report, view, d)
        for pid in sorted(live - seen):
            report.add("index", f"passage {pid}", "live in the index but no passage row holds it "
                       f"(document key {int(view.dkey[pid])}, number {int(view.number[pid])})")
        _signatures(report, view, live)
        _postings(report, view, expected, live, owner)
        if store.embedder != "none":
            _vectors(report, view, store, sorted(live), owner)


def _document(report: CheckReport, view: ReadView, d: StoredDocument, terms_of: object,
              expected: dict[str, dict[int, int]]) -> list[int]:
    where = f"{d.tenant}/{d.id}"
    text = view.document_text(d.dkey)
    if sha256_text(text) != d.content_sha256:
        report.add("fingerprint", where, f"the stored text of version {d.version!r} does not "
                   f"hash to its content_sha256 {d.content_sha256[:12]}...", d.tenant)
    passages = view.document_passages(d.dkey)
    if not passages:
        report.add("passage", where, "the document has no passages", d.tenant)
    pids = []
    for p in passages:
        report.passages += 1
        pids.append(p.pid)
        at = f"{where} passage {p.number} (id {p.pid})"
        if not 0 <= p.start <= p.end <= len(text) or text[p.start:p.end] != p.text:
            report.add("fingerprint", at, f"the passage text is not the document text at "
                       f"[{p.start}:{p.end}]", d.tenant)
        terms = Counter(terms_of(p.text))  # type: ignore[operator]
        for term, tf in terms.items():
            expected.setdefault(term, {})[p.pid] = tf
        if p.pid >= len(view.sig) or view.sig[p.pid] < 0:
            report.add("index", at, "the passage row is not live in the index (no search finds "
                       "it)", d.tenant)
            continue
        stored = (int(view.dkey[p.pid]), int(view.number[p.pid]), int(view.length[p.pid]))
        if stored != (d.dkey, p.number, sum(terms.values())):
            report.add("index", at, f"the index holds document key, number and length {stored}; "
                       f"the row says {(d.dkey, p.number, sum(terms.values()))}", d.tenant)
    return pids


def _history(report: CheckReport, view: ReadView, d: StoredDocument) -> None:
    where = f"{d.tenant}/{d.id}"
    entries = view.history(d.tenant, d.id)  # newest first
    report.history_versions += len(entries)
    for e in entries:
        if sha256_text(e.text) != e.content_sha256:
            report.add("history", where, f"superseded version {e.version!r}: its text does not "
                       "hash to its content_sha256", d.tenant)
        if (e.version, e.content_sha256) == (d.version, d.content_sha256):
            report.add("history", where, f"superseded version {e.version!r} is the current "
                       "version", d.tenant)
    times = [e.superseded_at for e in entries]
    if times != sorted(times, reverse=True):
        report.add("history", where, "the superseded versions are not in time order", d.tenant)


def _signatures(report: CheckReport, view: ReadView, live: set[int]) -> None:
    pids = np.fromiter(live, dtype=np.int64, count=len(live))
    sigs = view.sig[pids]
    count = Counter(sigs.tolist())
    total: Counter[int] = Counter()
    for s, n in zip(sigs.tolist(), view.length[pids].tolist(), strict=True):
        total[s] += n
    tenants = {d.tenant for d in view.documents(set(view.dkey[pids].tolist())).values()}
    stated = {s.id: s for t in tenants for s in view.signatures(t)}
    for sid in sorted(set(count) | set(stated)):
        s = stated.get(sid)
        have = (s.passages, s.total_length) if s else (0, 0)
        if have != (count.get(sid, 0), total.get(sid, 0)):
            report.add("index", f"signature {sid}", f"states {have[0]} passages of total length "
                       f"{have[1]}; its live passages are {count.get(sid, 0)} of {total.get(sid, 0)}",
                       s.tenant if s else None)


def _postings(report: CheckReport, view: ReadView, expected: dict[str, dict[int, int]],
              live: set[int], owner: dict[int, str]) -> None:
    n = len(view.sig)
    for term in sorted(expected):
        report.terms += 1
        want = expected[term]
        # The term is some passage's content: a problem about it belongs to that passage's tenant.
        whose = owner.get(next(iter(want)))
        got: dict[int, int] = {}
        for pids, tfs in view.postings(term):
            for pid, tf in zip(pids.tolist(), tfs.tolist(), strict=True):
                if pid >= n or pid < 0:
                    report.add("postings", f"term {term!r}", f"a posting points at passage id "
                               f"{pid}, which the index does not know", whose)
                elif pid in live:
                    got[pid] = got.get(pid, 0) + int(tf)
        for pid in sorted(want.keys() - got.keys()):
            if pid in live:
                report.add("postings", f"term {term!r}", f"no posting for passage {pid}, which "
                           "contains the term", owner.get(pid))
        for pid in sorted(got.keys() - want.keys()):
            report.add("postings", f"term {term!r}", f"a posting to passage {pid}, which does "
                       "not contain the term", whose)
        for pid in sorted(got.keys() & want.keys()):
            if got[pid] != want[pid]:
                report.add("postings", f"term {term!r}", f"passage {pid}: term frequency "
                           f"{got[pid]} indexed, {want[pid]} in its text", owner.get(pid))


def _vectors(report: CheckReport, view: ReadView, store: Store, live: Iterable[int],
             owner: dict[int, str]) -> None:
    try:
        dim = get_embedder(store.embedder).dimension
    except ValueError as exc:
        report.add("vectors", "store", str(exc))
        dim = store.dimension
    if dim != store.dimension:
        report.add("vectors", "store", f"model {store.embedder!r} makes {dim}-dimensional "
                   f"vectors; the store says {store.dimension}")
    wanted = list(live)
    try:
        vectors = view.passage_vectors(wanted)
    except EvidexError as exc:
        report.add("vectors", "store", f"the stored vectors cannot be read: {exc}")
        return
    report.vectors = len(vectors)
    for pid in wanted:
        v = vectors.get(pid)
        if v is None:
            report.add("vectors", f"passage {pid}", f"no vector of model {store.embedder!r}",
                       owner.get(pid))
        elif v.shape != (store.dimension,) or not np.isfinite(v).all():
            report.add("vectors", f"passage {pid}", f"the vector has shape {v.shape} or is not "
                       "finite", owner.get(pid))
        elif abs(float(np.dot(v, v)) - 1.0) > 1e-2:
            report.add("vectors", f"passage {pid}", f"the vector's norm is "
                       f"{float(np.linalg.norm(v)):.3f}, not 1", owner.get(pid))
