"""Copying a store to another backend (``evidex migrate``), history included, then verifying it.

The copy goes through the store contract only, so it works between any two backends: each live
document is rebuilt from its stored text and passages (the index terms re-derived with the
store's analyzer, which is what wrote them in the first place), written with its stored
vectors, then its superseded versions are appended verbatim. The target must be empty and gets
the source's analyzer and embedding model. Verification reads the target back: every document's
version, ``content_sha256`` and passage count, and every document's history, must equal the
source's, or the copy is reported as failed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..model import Document, Passage, StoreError
from ..query import analyzer_for
from ._contract import DocumentWrite, HistoryEntry, PassageWrite, Store, StoredDocument

__all__ = ["CopyReport", "copy_store"]


@dataclass
class CopyReport:
    documents: int = 0
    passages: int = 0
    history_versions: int = 0
    verified: int = 0
    mismatches: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"documents": self.documents, "passages": self.passages,
                "history_versions": self.history_versions, "verified": self.verified,
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
        writes = []
        with source.read() as view:
            for d in chunk:
                stored = view.document_passages(d.dkey)
                vectors = view.passage_vectors(p.pid for p in stored)
                if source.embedder != "none" and len(vectors) != len(stored):
                    raise StoreError(f"document {d.id!r} of {d.tenant!r} lacks passage vectors")
                passages = []
                analyzer = analyzer_for(source.analyzer, d.language)
                for p in stored:
                    terms = Counter(analyzer.terms(p.text))
                    passages.append(PassageWrite(
                        Passage(p.number, p.start, p.end, p.text, p.heading_path, p.anchor, p.page),
                        dict(terms), sum(terms.values()), flags=p.flags, vector=vectors.get(p.pid)))
                doc = Document(d.id, d.tenant, d.groups, d.version, view.document_text(d.dkey),
                               title=d.title, source_url=d.source_url, language=d.language,
                               visibility=d.visibility, published_at=d.published_at, tags=d.tags)
                writes.append(DocumentWrite(doc, d.split, tuple(passages)))
                history += [(d.tenant, d.id, e) for e in reversed(view.history(d.tenant, d.id))]
        written = target.apply(writes, keep_history=True)
        report.documents += written.added
        report.passages += written.passages_written
        if progress:
            progress(report.documents, len(docs))
    target.restore_history(history)
    report.history_versions = len(history)
    # Sync bookkeeping travels too, so the first sync after a migration skips unchanged files.
    target.apply([], keep_history=True, sources=source.source_entries())
    report.mismatches = verify_copy(source, target)
    report.verified = len(docs) - len({m.split(":")[0] for m in report.mismatches})
    return report


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
    return problems
