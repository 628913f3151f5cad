"""The write path of ``SQLStore``: documents, passages, segments, history and sync records
written in one transaction (the invariants are in ``_core``'s docstring), and removal."""


import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..model import IngestReport, StoreError, TenantMoved
from . import _tenants
from ._contract import DocumentWrite, HistoryEntry, MissingVectors, SourceEntry
from ._dialect import Tx, now, sig_key
from ._merge_policy import merge_budget
from ._schema import columns
from ._segments import (
    PACK_LIMIT,
    PID,
    TF,
    FlatPostings,
    SegmentArrays,
    encode,
    segment_from_rows,
)
from ._session import ReadSession

if TYPE_CHECKING:
    pass


class WritePath:
    """``SQLStore``'s writes (a part of it: it runs on ``SQLStore``'s connections and
    transactions, ``_write`` and ``_retrying``)."""

    def apply(self, writes: Sequence[DocumentWrite], *, keep_history: bool = True,
              sources: Sequence[SourceEntry] = (), moving: bool = False,
              history: Sequence[tuple[str, str, HistoryEntry]] = (),
              session: ReadSession | None = None) -> IngestReport:
        if not writes and not sources and not history:
            return IngestReport()
        keys = [(w.document.tenant, w.document.id) for w in writes]
        if len(set(keys)) != len(keys):
            raise StoreError("a document appears twice in the batch; nothing was written")
        self._merges.check()  # a failed background merge is reported before writing more
        report: IngestReport = self._retrying(self._apply, writes, keep_history, sources, moving, history,
                                              session)
        if report.passages_written:
            self._merges.request(merge_budget(report.passages_written, self._merge_policy))
        return report

    def _apply(self, writes: Sequence[DocumentWrite], keep_history: bool,
               sources: Sequence[SourceEntry], moving: bool,
               history: Sequence[tuple[str, str, HistoryEntry]],
               session: ReadSession | None) -> IngestReport:
        added = superseded = written = 0
        with self._write(session=session) as tx:
            c = tx.cur
            self._check_model(c)
            keys = [(w.document.tenant, w.document.id) for w in writes]
            if not moving:
                self._refuse_moved(c, {t for t, _ in keys} | {e.tenant for e in sources})
            self.dialect.lock_documents(c, keys)
            existing = {(r[0], r[1]): r[2:] for r in self.dialect.by_document(
                c, "SELECT tenant, doc_id, dkey, version, content_sha256, meta, split, sig FROM documents",
                keys)}
            changed = []
            for w, key in zip(writes, keys, strict=True):
                row = existing.get(key)
                if not (row and tuple(row[1:5]) == w.index_key()):
                    changed.append((w, row))
            sigs = self._signatures(c, [w for w, _ in changed])
            pids = iter(self.dialect.next_pids(c, sum(len(w.passages) for w, _ in changed)))
            seg_rows: list[tuple[int, int, int, int, int, dict[str, int]]] = []
            prows: list[tuple[Any, ...]] = []
            vectors: list[np.ndarray | None] = []
            for w, row in changed:
                d = w.document
                version, sha, meta, split = w.index_key()
                sig = sigs[sig_key(d.tenant, d.groups, d.visibility, d.language, d.tags)]
                if row:
                    dkey = int(row[0])
                    if keep_history:
                        c.execute(
                            "INSERT INTO history (tenant, doc_id, version, content_sha256, meta, split, "
                            "text, superseded_at) SELECT d.tenant, d.doc_id, d.version, d.content_sha256, "
                            "d.meta, d.split, t.text, ? FROM documents d JOIN document_texts t USING (dkey) "
                            "WHERE dkey = ?", (now(), dkey))
                    self._drop_passages(tx, dkey, int(row[5]))
                    c.execute("UPDATE documents SET version = ?, content_sha256 = ?, meta = ?, split = ?, "
                              "sig = ?, indexed_at = ? WHERE dkey = ?",
                              (version, sha, meta, split, sig, now(), dkey))
                    c.execute("UPDATE document_texts SET text = ? WHERE dkey = ?", (d.text, dkey))
                    superseded += 1
                else:
                    dkey = self.dialect.insert_id(
                        c, "INSERT INTO documents (tenant, doc_id, version, content_sha256, meta, split, "
                        "sig, indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (d.tenant, d.id, version, sha, meta, split, sig, now()), "dkey")
                    c.execute("INSERT INTO document_texts (dkey, text) VALUES (?, ?)", (dkey, d.text))
                    added += 1
                total = 0
                for pw in w.passages:
                    p, pid = pw.passage, next(pids)
                    prows.append((pid, dkey, p.number, p.start, p.end, pw.length,
                                  json.dumps(list(p.heading_path), ensure_ascii=False), p.anchor, p.page,
                                  json.dumps(list(pw.flags)), p.text))
                    seg_rows.append((pid, sig, pw.length, dkey, p.number, pw.terms))
                    vectors.append(pw.vector)
                    total += pw.length
                tx.add(sig, len(w.passages), total)
                tx.tenants.add(d.tenant)
                written += len(w.passages)
            if prows:
                self.dialect.insert_many(c, "passages", columns("passages"), prows)
                cols, postings = segment_from_rows(seg_rows)
                stacked = self._stack(vectors)
                seg = self._insert_segment(c, cols, postings, stacked, self.embedder)
                # As a reader would load it (``SQLView.segment_arrays``).
                packed = postings if len(prows) <= PACK_LIMIT else None
                cached = stacked if self._vectors.cache_model()[0] != "none" else None
                tx.segment = SegmentArrays(seg, *(col.astype(PID) for col in cols), packed=packed,
                                           vectors=cached)
            self._put_sources(tx, sources)
            if history:
                self._put_history(tx, history)
        # Committed: the readers' cache gets the new passages' rows as the database would return
        # them, and the new segment when it held the generation before this write's (a reader
        # after the write, such as conflict detection, then reads neither back).
        self._cache.remember_passages([(*r[:5], r[10], r[6], r[7], r[8], r[9]) for r in prows])
        if tx.segment is not None and tx.generation is not None:
            with self._lock:
                self._cache.install(tx.segment, tx.dead, tx.generation, tx.signatures or [],
                                    self._vectors.cache_model())
        return IngestReport(added, superseded, len(writes) - len(changed), written,
                            generation=tx.generation if tx.changed else None)

    def _refuse_moved(self, c: Any, tenants: set[str]) -> None:
        """Raise ``TenantMoved`` when one of ``tenants`` is marked as moving or moved away
        (inside the write's transaction, after the writers' lock: see the module docstring)."""
        if not tenants:
            return
        for tenant, mark in sorted(_tenants.marks(c, sorted(tenants)).items()):
            raise TenantMoved(tenant, mark.state, mark.location, mark.replicas)

    def _signatures(self, c: Any, writes: Sequence[DocumentWrite]) -> dict[str, int]:
        """Signature ids of these writes, created in key order (so concurrent writers creating
        the same new signatures wait for each other instead of deadlocking)."""
        wanted: dict[str, DocumentWrite] = {}
        for w in writes:
            d = w.document
            wanted.setdefault(sig_key(d.tenant, d.groups, d.visibility, d.language, d.tags), w)
        out: dict[str, int] = {}
        for key in sorted(wanted):
            row = c.execute("SELECT id FROM signatures WHERE key = ?", (key,)).fetchone()
            if row is None:
                d = wanted[key].document
                c.execute("INSERT INTO signatures (key, tenant, groups, visibility, language, tags) "
                          "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING",
                          (key, d.tenant, json.dumps(sorted(d.groups)), d.visibility, d.language,
                           json.dumps(sorted(d.tags))))
                row = c.execute("SELECT id FROM signatures WHERE key = ?", (key,)).fetchone()
            out[key] = int(row[0])
        return out

    def _drop_passages(self, tx: Tx, dkey: int, sig: int) -> None:
        c = tx.cur
        rows = self.dialect.delete_returning(c, "passages", "dkey = ?", (dkey,), "pid, length")
        if not rows:
            return
        pids = [int(r[0]) for r in rows]
        self._vectors.drop(c, pids)
        tx.dead.extend(pids)
        tx.add(sig, -len(rows), -sum(int(r[1]) for r in rows))

    def _stack(self, vectors: list[np.ndarray | None]) -> np.ndarray | None:
        if self.embedder == "none":
            return None
        if any(v is None for v in vectors):
            raise MissingVectors("a changed document arrived without passage vectors")
        mat = np.vstack(vectors).astype(np.float32)  # type: ignore[arg-type]
        if mat.shape[1] != self.dimension:
            raise StoreError(f"vectors have {mat.shape[1]} dimensions; the store's model "
                             f"{self.embedder!r} has {self.dimension}")
        return mat

    def _insert_segment(self, c: Any, cols: list[np.ndarray], postings: FlatPostings,
                        vectors: np.ndarray | None, model: str) -> int:
        """Store one segment: a small one with its postings packed into its row (one write
        instead of hundreds of scattered index rows), a large one with a row per term."""
        n = len(cols[0])
        packed = postings.stored() if n <= PACK_LIMIT else (None, None, None, None)
        seg = self.dialect.insert_id(
            c, "INSERT INTO segments (n, pids, sigs, lengths, dkeys, numbers, terms, term_ends, term_pids, "
            "term_tfs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (n, *(encode(col, PID) for col in cols), *packed), "id")
        if vectors is not None:
            self._vectors.write(c, seg, cols[0], cols[1], vectors, model)
        if n > PACK_LIMIT:
            self.dialect.insert_many(c, "postings", ("term", "segment", "pids", "tfs"), (
                (t, seg, encode(p, PID), encode(f, TF)) for t, p, f in postings.items()))
        return seg

    def _put_sources(self, tx: Tx, entries: Sequence[SourceEntry]) -> None:
        """Upsert entries. An entry equal to the stored one changes no row; a changed one (a new
        stamp, say) is a change like any other and bumps the generation."""
        if not entries:
            return
        cur = tx.cur.executemany(
            "INSERT INTO source_documents (source, tenant, doc_id, item, stamp, content_sha256) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, doc_id) DO UPDATE SET "
            "source = excluded.source, item = excluded.item, stamp = excluded.stamp, "
            "content_sha256 = excluded.content_sha256 WHERE source_documents.source != excluded.source "
            "OR source_documents.item != excluded.item OR source_documents.stamp != excluded.stamp "
            "OR source_documents.content_sha256 != excluded.content_sha256",
            [(e.source, e.tenant, e.doc_id, e.item, e.stamp, e.content_sha256) for e in entries])
        if cur.rowcount:
            tx.changed = True
            tx.tenants.update(e.tenant for e in entries)

    def source_entries(self, source: str | None = None) -> list[SourceEntry]:
        q = "SELECT source, tenant, doc_id, item, stamp, content_sha256 FROM source_documents"
        with self._connection() as c:
            rows = (c.execute(q + " ORDER BY tenant, doc_id") if source is None else
                    c.execute(q + " WHERE source = ? ORDER BY tenant, doc_id", (source,)))
            return [SourceEntry(*r) for r in rows.fetchall()]

    def unchanged(self, writes: Sequence[DocumentWrite]) -> set[tuple[str, str]]:
        """(tenant, id) of the writes that would be no-ops now: lets the caller skip embedding
        them. ``apply`` checks again inside its transaction."""
        if not writes:
            return set()
        with self._connection() as c:
            rows = self.dialect.by_document(
                c, "SELECT tenant, doc_id, version, content_sha256, meta, split FROM documents",
                [(w.document.tenant, w.document.id) for w in writes])
        have = {(r[0], r[1]): tuple(r[2:]) for r in rows}
        return {(w.document.tenant, w.document.id) for w in writes
                if have.get((w.document.tenant, w.document.id)) == w.index_key()}


    def remove(self, tenant: str, doc_id: str, session: ReadSession | None = None) -> bool:
        def run() -> bool:
            with self._write(session=session) as tx:
                c = tx.cur
                self._refuse_moved(c, {tenant})
                self.dialect.lock_documents(c, [(tenant, doc_id)])
                row = c.execute("SELECT dkey, sig FROM documents WHERE tenant = ? AND doc_id = ?",
                                (tenant, doc_id)).fetchone()
                if not row:
                    return False
                self._drop_passages(tx, int(row[0]), int(row[1]))
                c.execute("DELETE FROM document_texts WHERE dkey = ?", (row[0],))
                c.execute("DELETE FROM documents WHERE dkey = ?", (row[0],))
                for table in ("history", "source_documents"):
                    c.execute(f"DELETE FROM {table} WHERE tenant = ? AND doc_id = ?", (tenant, doc_id))
                tx.changed = True
                tx.tenants.add(tenant)
                return True

        removed: bool = self._retrying(run)
        return removed

    def remove_documents(self, tenant: str, doc_ids: Sequence[str], *, moving: bool = False) -> int:
        """Delete these documents of ``tenant`` with their passages, history and source
        entries, in one transaction (a move clears a tenant off its old server this way);
        the number that existed. ``moving``: the move itself writes (see ``apply``)."""
        def run() -> int:
            with self._write() as tx:
                c = tx.cur
                if not moving:
                    self._refuse_moved(c, {tenant})
                keys = [(tenant, d) for d in doc_ids]
                self.dialect.lock_documents(c, keys)
                rows = self.dialect.by_document(c, "SELECT dkey, sig, doc_id FROM documents", keys)
                # History and sync records go with the ids, whether or not a document is left.
                loose = {(t, d) for table in ("history", "source_documents") for t, d in
                         self.dialect.by_document(c, f"SELECT tenant, doc_id FROM {table}", keys)}
                if not rows and not loose:
                    return 0
                dkeys = [int(r[0]) for r in rows]
                sig_of = {int(r[0]): int(r[1]) for r in rows}
                for cond, params in self.dialect.where_in("dkey", dkeys):
                    dead = self.dialect.delete_returning(c, "passages", cond, params, "pid, length, dkey")
                    if dead:
                        self._vectors.drop(c, [int(r[0]) for r in dead])
                        tx.dead.extend(int(r[0]) for r in dead)
                        for r in dead:
                            tx.add(sig_of[int(r[2])], -1, -int(r[1]))
                    c.execute(f"DELETE FROM document_texts WHERE {cond}", params)
                    c.execute(f"DELETE FROM documents WHERE {cond}", params)
                for table in ("history", "source_documents"):
                    _tenants.delete_by_document(c, table, sorted(loose))
                tx.changed = True
                tx.tenants.add(tenant)
                return len(rows)

        removed: int = self._retrying(run)
        return removed

    def restore_history(self, entries: Sequence[tuple[str, str, HistoryEntry]]) -> None:
        if not entries:
            return
        with self._write() as tx:
            self._put_history(tx, entries)

    def _put_history(self, tx: Tx, entries: Sequence[tuple[str, str, HistoryEntry]]) -> None:
        """Append (tenant, document id, entry) to the history verbatim, oldest first."""
        self.dialect.insert_many(tx.cur, "history", columns("history")[1:], [
            (t, d, e.version, e.content_sha256, e.meta, e.split, e.text, e.superseded_at)
            for t, d, e in entries])
        tx.changed = True
        tx.tenants.update(t for t, _, _ in entries)
