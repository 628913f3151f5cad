"""Copying a store's data to another store and verifying the copy: one algorithm for
``evidex migrate`` (a whole store to an empty one on any backend) and ``evidex move-tenant``
(one tenant between live stores; ``placement.move_tenant`` runs the steps).

* ``rebuild_writes``: documents rebuilt from their stored text and passages (index terms
  re-derived with the store's analyzer, which is what wrote them), with their stored vectors
  and their superseded versions verbatim;
* ``sync_tenant`` makes the target's copy of a tenant equal to the source's as the source is
  now: documents the target lacks or holds in another version are (re)written, documents the
  source no longer has are removed; the sync records follow. Run while the source keeps
  serving, it catches up whatever was written since the last run;
* ``copy_records`` adds the records the target lacks, of a tenant or of every tenant: recorded
  conflicts (with dismissals), runs, and the operator records (answer records, feedback,
  handoffs); ids are the target's own;
* ``compare_tenant`` reads both in one snapshot each: documents with their metadata and
  fingerprints, passages (text, offsets, headings, flags), vectors bit for bit, history,
  per-signature statistics (what permission-exact BM25 sums), sync records and every record;
* ``copy_store`` (migrate): every document into the empty target, then ``copy_records`` of
  every tenant, then ``compare_tenant`` of every tenant and the run log in order;
* ``clear_tenant`` removes a tenant from a store.

Everything a move does is idempotent, so a move interrupted at any point is finished by
running it again. The target's writes of a move are made with ``moving=True``: a store the
tenant once moved away from still holds the mark saying so, which refuses every other write
of the tenant.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from ..model import Document, Passage, StoreError
from ..query import analyzer_for
from ._contract import DocumentWrite, HistoryEntry, PassageWrite, ReadView, Store, StoredDocument
from ._runs import RunRecord

__all__ = ["CopyReport", "TenantCounts", "TenantSync", "clear_tenant", "compare_tenant", "copy_records",
           "copy_store", "doc_key", "rebuild_writes", "sync_tenant", "verify_copy"]

T = TypeVar("T")
#: Documents per transaction of a copy; per transaction of a removal.
COPY_BATCH = 200
REMOVE_BATCH = 2000
#: Every run of a log (the listing's limit, never reached).
ALL = 2**62


@dataclass
class CopyReport:
    documents: int = 0
    passages: int = 0
    history_versions: int = 0
    conflicts: int = 0
    runs: int = 0
    operator_records: int = 0
    verified: int = 0
    mismatches: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"documents": self.documents, "passages": self.passages,
                "history_versions": self.history_versions, "conflicts": self.conflicts,
                "runs": self.runs, "operator_records": self.operator_records, "verified": self.verified,
                "mismatches": self.mismatches[:20]}


def copy_store(source: Store, target: Store, *, batch: int = COPY_BATCH,
               progress: Callable[[int, int], None] | None = None) -> CopyReport:
    """Copy every document, passage, vector, history entry, sync record and record of
    ``source`` into the empty ``target``, then verify the copy (see the module docstring)."""
    if next(target.iter_documents(), None) is not None:
        raise StoreError("the target store already holds documents; migrate needs an empty one")
    if (target.analyzer, target.embedder, target.dimension) != (source.analyzer, source.embedder,
                                                                 source.dimension):
        raise StoreError(
            f"the target was created with analyzer {target.analyzer!r} and model {target.embedder!r}; "
            f"the source has {source.analyzer!r} and {source.embedder!r}")
    docs = list(source.iter_documents())
    report = CopyReport()
    history: list[tuple[str, str, HistoryEntry]] = []
    for chunk in _batches(docs, batch):
        with source.read(latest=True) as view:
            writes, old = rebuild_writes(view, source, chunk)
        history += old
        written = target.apply(writes, keep_history=True)
        report.documents += written.added
        report.passages += written.passages_written
        if progress:
            progress(report.documents, len(docs))
    target.restore_history(history)
    report.history_versions = len(history)
    # Sync bookkeeping travels too, so the first sync after a migration skips unchanged files.
    target.apply([], keep_history=True, sources=source.source_entries())
    report.conflicts, report.runs, report.operator_records = copy_records(source, target, None)
    report.mismatches = verify_copy(source, target)
    report.verified = len(docs) - len({m.split(":")[0] for m in report.mismatches})
    return report


def verify_copy(source: Store, target: Store) -> list[str]:
    """What differs between the two stores: ``compare_tenant`` of every tenant either holds
    anything of, and the run log in its order (ids aside)."""
    problems: list[str] = []
    for tenant in sorted(_tenants(source) | _tenants(target)):
        problems += compare_tenant(source, target, tenant).mismatches
    if [_run_key(r) for r in source.runs(limit=ALL)] != [_run_key(r) for r in target.runs(limit=ALL)]:
        problems.append("run log differs")
    return problems


def _tenants(store: Store) -> set[str]:
    """Every tenant ``store`` holds a document, a sync record or a record of."""
    return ({d.tenant for d in store.iter_documents()} | {e.tenant for e in store.source_entries()}
            | {c.tenant for c in store.conflicts()} | {r.tenant for r in store.runs(limit=ALL) if r.tenant}
            | {row[0] for rows in store.operator_records(None).values() for row in rows})


def rebuild_writes(view: ReadView, source: Store, docs: list[StoredDocument]
                   ) -> tuple[list[DocumentWrite], list[tuple[str, str, HistoryEntry]]]:
    """The writes that recreate ``docs`` (read in ``view`` of ``source``) in another store, and
    their superseded versions, oldest first: passages verbatim with their stored vectors, index
    terms re-derived with the store's analyzer (what wrote them). A few reads per batch."""
    texts = view.texts_of([d.dkey for d in docs])
    passages_of = view.passages_of([d.dkey for d in docs])
    vectors = view.passage_vectors([p.pid for ps in passages_of.values() for p in ps])
    by_tenant: dict[str, list[str]] = {}
    for d in docs:
        by_tenant.setdefault(d.tenant, []).append(d.id)
    histories = {(t, i): h for t, ids in by_tenant.items() for i, h in view.histories_of(t, ids).items()}
    writes, history = [], []
    for d in docs:
        stored = passages_of[d.dkey]
        if source.embedder != "none" and any(p.pid not in vectors for p in stored):
            raise StoreError(f"document {d.id!r} of {d.tenant!r} lacks passage vectors")
        passages = []
        analyzer = analyzer_for(source.analyzer, d.language)
        for p in stored:
            terms = Counter(analyzer.terms(p.text))
            passages.append(PassageWrite(
                Passage(p.number, p.start, p.end, p.text, p.heading_path, p.anchor, p.page),
                dict(terms), sum(terms.values()), flags=p.flags, vector=vectors.get(p.pid)))
        doc = Document(d.id, d.tenant, d.groups, d.version, texts[d.dkey],
                       title=d.title, source_url=d.source_url, language=d.language,
                       visibility=d.visibility, published_at=d.published_at, tags=d.tags)
        writes.append(DocumentWrite(doc, d.split, tuple(passages)))
        history += [(d.tenant, d.id, e) for e in reversed(histories[(d.tenant, d.id)])]
    return writes, history


@dataclass
class TenantSync:
    """What one ``sync_tenant`` pass changed in the target."""

    copied: int = 0  # documents written (new on the target, or in another version there)
    removed: int = 0  # documents (or sync records) the source no longer has
    passages: int = 0
    history: int = 0

    @property
    def changed(self) -> int:
        return self.copied + self.removed


@dataclass
class TenantCounts:
    """What ``compare_tenant`` found on the source, and every difference from the target."""

    documents: int = 0
    passages: int = 0
    vectors: int = 0
    history_versions: int = 0
    signatures: int = 0
    sync_records: int = 0
    conflicts: int = 0
    runs: int = 0
    operator_records: int = 0
    mismatches: list[str] = field(default_factory=list)


def _batches(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def doc_key(d: StoredDocument) -> tuple[object, ...]:
    """What must be equal for two stores' copies of a document to be the same version."""
    return (d.version, d.content_sha256, d.split, d.title, d.source_url, d.language, d.visibility,
            tuple(sorted(d.groups)), tuple(d.tags), d.published_at)


def sync_tenant(source: Store, target: Store, tenant: str, *, batch: int = COPY_BATCH,
                progress: Callable[[int, int], None] | None = None) -> TenantSync:
    """Make ``target``'s copy of ``tenant`` equal to ``source``'s as it is now (see the module
    docstring); ``progress(documents done, documents to copy)`` after each batch."""
    out = TenantSync()
    src = {d.id: d for d in source.iter_documents(tenant)}
    dst = {d.id: d for d in target.iter_documents(tenant)}
    todo = sorted(i for i, d in src.items() if i not in dst or doc_key(dst[i]) != doc_key(d))
    entries = [e for e in source.source_entries() if e.tenant == tenant]
    kept = {e.doc_id for e in entries}
    orphans = {e.doc_id for e in target.source_entries() if e.tenant == tenant} - kept - set(src)
    # Gone from the source, or about to be written again whole (history included).
    stale = sorted((set(dst) - set(src)) | orphans | {i for i in todo if i in dst})
    for chunk in _batches(stale, REMOVE_BATCH):
        target.remove_documents(tenant, chunk, moving=True)
    out.removed = len((set(dst) - set(src)) | orphans)
    done = 0
    for chunk in _batches(todo, batch):
        with source.read(latest=True) as view:
            # The rows as this snapshot has them: a document superseded since the listing is
            # copied in its newest version, one removed since is left out.
            found = view.documents([src[i].dkey for i in chunk])
            current = [d for d in found.values() if d.tenant == tenant]
            writes, history = rebuild_writes(view, source, current)
        target.apply(writes, keep_history=False, moving=True, history=history)
        out.copied += len(writes)
        out.passages += sum(len(w.passages) for w in writes)
        out.history += len(history)
        done += len(chunk)
        if progress is not None:
            progress(done, len(todo))
    target.apply([], keep_history=False, sources=[e for e in entries if e.doc_id in src], moving=True)
    return out


def _run_key(r: RunRecord) -> tuple[object, ...]:
    return (r.kind, r.source, r.tenant, r.scheduled_for, r.started_at, r.ended_at, r.ok,
            tuple(sorted(r.counts.items())), r.problems)


def copy_records(source: Store, target: Store, tenant: str | None) -> tuple[int, int, int]:
    """Add the records of ``tenant`` (None: of every tenant, and the runs of none) that
    ``target`` lacks, oldest first: (conflicts, runs, operator records) added."""
    conflicts = target.restore_conflicts(source.conflict_rows(tenant))
    have = Counter(_run_key(r) for r in target.runs(limit=ALL, tenant=tenant))
    added = 0
    for run in reversed(source.runs(limit=ALL, tenant=tenant)):  # oldest first
        key = _run_key(run)
        if have[key]:
            have[key] -= 1
            continue
        target.record_run(run)
        added += 1
    return conflicts, added, target.restore_operator_records(source.operator_records(tenant))


def compare_tenant(source: Store, target: Store, tenant: str, *, batch: int = 500) -> TenantCounts:
    """Everything of ``tenant`` on ``source`` compared with ``target`` (module docstring)."""
    out = TenantCounts()
    bad = out.mismatches
    with source.read(latest=True) as sv, target.read(latest=True) as tv:
        sd = {d.id: d for d in sv.tenant_documents(tenant)}
        td = {d.id: d for d in tv.tenant_documents(tenant)}
        out.documents = len(sd)
        bad += [f"{tenant}/{i}: missing on the target" for i in sorted(set(sd) - set(td))]
        bad += [f"{tenant}/{i}: only on the target" for i in sorted(set(td) - set(sd))]
        common = sorted(set(sd) & set(td))
        for chunk in _batches(common, batch):
            _compare_documents(sv, tv, tenant, [sd[i] for i in chunk], [td[i] for i in chunk], out)
        mine, theirs = _statistics(sv, tenant), _statistics(tv, tenant)
        out.signatures = len(mine)
        if mine != theirs:
            bad.append(f"{tenant}: per-signature passage counts or lengths differ (statistics)")
    entries = [e for e in source.source_entries() if e.tenant == tenant]  # ordered by tenant, doc_id
    out.sync_records = len(entries)
    if entries != [e for e in target.source_entries() if e.tenant == tenant]:
        bad.append(f"{tenant}: sync records differ")
    conflicts = source.conflict_rows(tenant)
    out.conflicts = len(conflicts)
    if sorted(conflicts) != sorted(target.conflict_rows(tenant)):
        bad.append(f"{tenant}: recorded conflicts differ")
    runs = [_run_key(r) for r in source.runs(limit=ALL, tenant=tenant)]
    out.runs = len(runs)
    if Counter(runs) != Counter(_run_key(r) for r in target.runs(limit=ALL, tenant=tenant)):
        bad.append(f"{tenant}: run log differs")
    mine_records, their_records = source.operator_records(tenant), target.operator_records(tenant)
    out.operator_records = sum(len(rows) for rows in mine_records.values())
    for table, rows in mine_records.items():
        if Counter(rows) != Counter(their_records.get(table, ())):
            bad.append(f"{tenant}: {table} differ")
    return out


def _statistics(view: ReadView, tenant: str) -> dict[tuple[object, ...], tuple[int, int]]:
    """Per access signature (by its attributes: ids differ between stores): passages, length."""
    return {(tuple(sorted(s.groups)), s.visibility, s.language, tuple(sorted(s.tags))):
            (s.passages, s.total_length) for s in view.signatures(tenant) if s.passages}


def _compare_documents(sv: ReadView, tv: ReadView, tenant: str, mine: list[StoredDocument],
                       theirs: list[StoredDocument], out: TenantCounts) -> None:
    bad = out.mismatches
    sp, tp = sv.passages_of([d.dkey for d in mine]), tv.passages_of([d.dkey for d in theirs])
    st, tt = sv.texts_of([d.dkey for d in mine]), tv.texts_of([d.dkey for d in theirs])
    ids = [d.id for d in mine]
    sh, th = sv.histories_of(tenant, ids), tv.histories_of(tenant, ids)
    svec = sv.passage_vectors([p.pid for ps in sp.values() for p in ps])
    tvec = tv.passage_vectors([p.pid for ps in tp.values() for p in ps])
    for a, b in zip(mine, theirs, strict=True):
        where = f"{tenant}/{a.id}"
        pa, pb = sp[a.dkey], tp[b.dkey]
        out.passages += len(pa)
        out.history_versions += len(sh[a.id])
        if doc_key(a) != doc_key(b) or st.get(a.dkey) != tt.get(b.dkey):
            bad.append(f"{where}: version, metadata or text differs")
        if [_passage(p) for p in pa] != [_passage(p) for p in pb]:
            bad.append(f"{where}: passages differ")
        else:
            va = [svec.get(p.pid) for p in pa]
            vb = [tvec.get(p.pid) for p in pb]
            out.vectors += sum(v is not None for v in va)
            if any((x is None) != (y is None) or (x is not None and not np.array_equal(x, y))
                   for x, y in zip(va, vb, strict=True)):
                bad.append(f"{where}: passage vectors differ")
        if [_entry(e) for e in sh[a.id]] != [_entry(e) for e in th[b.id]]:
            bad.append(f"{where}: history differs")


def _passage(p: object) -> tuple[object, ...]:
    return tuple(getattr(p, f) for f in ("number", "start", "end", "text", "heading_path", "anchor", "page",
                                         "flags"))


def _entry(e: object) -> tuple[object, ...]:
    return tuple(getattr(e, f) for f in ("version", "content_sha256", "text", "split", "superseded_at",
                                         "meta"))


def clear_tenant(store: Store, tenant: str) -> int:
    """Remove ``tenant``'s documents (with passages, vectors, history, sync records) and its
    recorded conflicts and runs from ``store``; the number of documents removed."""
    ids = [d.id for d in store.iter_documents(tenant)]
    ids += sorted({e.doc_id for e in store.source_entries() if e.tenant == tenant} - set(ids))
    removed = 0
    for chunk in _batches(ids, REMOVE_BATCH):
        removed += store.remove_documents(tenant, chunk, moving=True)
    store.remove_records(tenant)
    return removed
