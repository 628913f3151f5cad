"""Copying a store to another backend (``evidex migrate``), history included, then verifying it.

The copy goes through the store contract, so it works between any two backends: each live
document is rebuilt from its stored text and passages (the index terms re-derived with the
store's analyzer, which is what wrote them in the first place), written with its stored
vectors, then its superseded versions are appended verbatim. The target must be empty and gets
the source's analyzer and embedding model. Verification reads the target back: every document's
version, ``content_sha256`` and passage count, and every document's history, must equal the
source's, or the copy is reported as failed. The recorded conflicts (with their dismissals)
and the run log travel too, oldest first, with their times; their ids are the target's own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from ..model import Document, Passage, StoreError
from ..query import analyzer_for
from ._conflicts import copy_conflicts
from ._contract import DocumentWrite, HistoryEntry, PassageWrite, ReadView, Store, StoredDocument

if TYPE_CHECKING:
    from ._core import SQLStore

__all__ = ["CopyReport", "copy_store", "rebuild_writes", "verify_copy"]


@dataclass
class CopyReport:
    documents: int = 0
    passages: int = 0
    history_versions: int = 0
    conflicts: int = 0
    runs: int = 0
    verified: int = 0
    mismatches: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"documents": self.documents, "passages": self.passages,
                "history_versions": self.history_versions, "conflicts": self.conflicts,
                "runs": self.runs, "verified": self.verified,
                "mismatches": self.mismatches[:20]}


def _batches(docs: list[StoredDocument], size: int) -> Iterator[list[StoredDocument]]:
    for i in range(0, len(docs), size):
        yield docs[i : i + size]


def copy_store(source: Store, target: Store, *, batch: int = 200,
               progress: Callable[[int, int], None] | None = None) -> CopyReport:
    """Copy every document, passage, vector and history entry of ``source`` into the empty
    ``target``, then verify the target by fingerprints (see the module docstring)."""
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
    # Both backends are SQL stores: the conflicts table is copied row by row, as it is.
    src, dst = cast("SQLStore", source), cast("SQLStore", target)
    with src._connection() as sc, dst._transaction(False, None) as tc:
        report.conflicts = copy_conflicts(sc, tc)
        tc.execute("COMMIT")
    runs = source.runs(limit=2**62)
    for run in reversed(runs):
        target.record_run(run)
    report.runs = len(runs)
    report.mismatches = verify_copy(source, target)
    report.verified = len(docs) - len({m.split(":")[0] for m in report.mismatches})
    return report


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


def verify_copy(source: Store, target: Store) -> list[str]:
    """What differs between the two stores' documents, passage counts and histories."""
    problems: list[str] = []
    theirs = {(d.tenant, d.id): d for d in target.iter_documents()}
    with source.read() as sv, target.read() as tv:
        for d in source.iter_documents():
            key = f"{d.tenant}/{d.id}"
            t = theirs.pop((d.tenant, d.id), None)
            if t is None:
                problems.append(f"{key}: missing in the target")
                continue
            if (t.version, t.content_sha256, t.split) != (d.version, d.content_sha256, d.split):
                problems.append(f"{key}: version or fingerprint differs")
            if len(tv.document_passages(t.dkey)) != len(sv.document_passages(d.dkey)):
                problems.append(f"{key}: passage count differs")
            mine = [(e.version, e.content_sha256, e.superseded_at) for e in sv.history(d.tenant, d.id)]
            other = [(e.version, e.content_sha256, e.superseded_at) for e in tv.history(d.tenant, d.id)]
            if mine != other:
                problems.append(f"{key}: history differs")
    problems += [f"{t}/{i}: only in the target" for t, i in theirs]
    if source.source_entries() != target.source_entries():
        problems.append("sync records (source_documents) differ")
    if _conflict_rows(source) != _conflict_rows(target):
        problems.append("recorded conflicts differ")
    if [_run_row(r) for r in source.runs(limit=2**62)] != [_run_row(r) for r in target.runs(limit=2**62)]:
        problems.append("run log differs")
    return problems


def _conflict_rows(store: Store) -> list[tuple[object, ...]]:
    return [(c.tenant, c.kind, c.subject, c.a, c.b, c.detected_at, c.status, c.reason)
            for c in reversed(store.conflicts())]


def _run_row(r: object) -> object:
    return {k: v for k, v in vars(r).items() if k != "id"}
