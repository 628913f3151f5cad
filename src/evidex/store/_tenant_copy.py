"""One tenant's data copied between two stores, compared, and cleared: the store side of
``evidex move-tenant`` (``placement.move_tenant`` runs the steps).

Everything here is idempotent, so a move interrupted at any point is finished by running it
again:

* ``sync_tenant`` makes the target's copy of the tenant equal to the source's as the source is
  now: documents the target lacks or holds in another version are (re)written with their
  passages, stored vectors and history in one transaction each batch; documents the source no
  longer has are removed; the sync records follow. Run while the source keeps serving, it
  catches up whatever was written since the last run.
* ``copy_records`` adds the recorded conflicts (with dismissals) and runs the target lacks.
* ``compare_tenant`` reads both in one snapshot each: documents with their metadata and
  fingerprints, passages (text, offsets, headings, flags), vectors bit for bit, history,
  per-signature statistics (what permission-exact BM25 sums), sync records, conflicts, runs.
* ``clear_tenant`` removes the tenant from a store.

The target's writes are made with ``moving=True``: a store the tenant once moved away from
still holds the mark saying so, which refuses every other write of the tenant.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from ._contract import ReadView, Store, StoredDocument
from ._copy import rebuild_writes
from ._runs import RunRecord

__all__ = ["TenantCounts", "TenantSync", "clear_tenant", "compare_tenant", "copy_records", "doc_key",
           "sync_tenant"]

T = TypeVar("T")
#: Documents per transaction of a copy; per transaction of a removal.
COPY_BATCH = 200
REMOVE_BATCH = 2000


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


def copy_records(source: Store, target: Store, tenant: str) -> tuple[int, int]:
    """Add ``tenant``'s recorded conflicts and runs that ``target`` lacks; (conflicts, runs) added."""
    conflicts = target.restore_conflicts(source.conflict_rows(tenant))
    have = Counter(_run_key(r) for r in target.runs(limit=2**62, tenant=tenant))
    added = 0
    for run in reversed(source.runs(limit=2**62, tenant=tenant)):  # oldest first
        key = _run_key(run)
        if have[key]:
            have[key] -= 1
            continue
        target.record_run(run)
        added += 1
    return conflicts, added


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
    runs = [_run_key(r) for r in source.runs(limit=2**62, tenant=tenant)]
    out.runs = len(runs)
    if Counter(runs) != Counter(_run_key(r) for r in target.runs(limit=2**62, tenant=tenant)):
        bad.append(f"{tenant}: run log differs")
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
