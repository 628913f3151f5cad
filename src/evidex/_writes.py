"""The knowledge base's write path: documents split, analysed, embedded and applied to a store.

``KnowledgeBase.ingest`` checks its arguments and hands the batch here; what changed is
embedded (unchanged documents are skipped, so re-ingesting costs no model time), written in
one transaction per batch, and checked for conflicts with the rest of its tenant. Re-embedding
every passage with another model is here too: the same embedding cache, another switch.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from . import conflicts
from ._batch import checked_batch, entries_by_document
from ._checks import check_model, positive_int
from .embed import EmbeddingCache, get_embedder, vectors_key
from .ingest import DEFAULT_MAX_SECTION_CHARS, SPLITS, scan_document, split_key, split_text
from .model import (
    Conflict,
    Document,
    DocumentError,
    EvidexError,
    IngestReport,
    QueryError,
    StoreError,
    check_unicode,
)
from .query import analyzer_for, get_analyzer
from .store import (
    DocumentWrite,
    MissingVectors,
    PassageWrite,
    ReadSession,
    RunRecord,
    SourceEntry,
    Store,
    StoredDocument,
)

__all__ = ["Writer", "Writing", "passage_writes"]


def passage_writes(store_analyzer: str, doc: Document, split: str,
                   max_section_chars: int) -> tuple[PassageWrite, ...]:
    """``doc`` split into passages, each with its terms (the document's language's analyzer)
    and the injection scan's flags."""
    out = []
    analyzer = analyzer_for(store_analyzer, doc.language)
    parts = split_text(doc.text, split, max_section_chars=max_section_chars, sections=doc.sections)
    for p, flags in zip(parts, scan_document([p.text for p in parts]), strict=True):
        terms = Counter(analyzer.terms(p.text))
        out.append(PassageWrite(p, dict(terms), sum(terms.values()), flags=flags))
    return tuple(out)


@dataclass(frozen=True)
class Writer:
    """One knowledge base's writes: its store, how it embeds passages, its embedding cache
    (None: a keyword-only store given no cache file opens none), whether it looks for
    conflicts. Made per call, so a change of the knowledge base's settings takes effect."""

    store: Store
    embed_passages: Callable[[list[str]], np.ndarray]
    cache: Callable[[], EmbeddingCache | None]
    detect_conflicts: bool
    #: The caller's (``store.ReadSession``): told each generation a write commits.
    session: ReadSession | None = None

    def ingest(self, docs: list[Document], split: str, max_section_chars: int, keep: bool,
               sources: Sequence[SourceEntry], batch_size: int | None,
               progress: Callable[[int, int], None] | None) -> IngestReport:
        """``docs`` (checked) in one transaction, or in transactions of ``batch_size``."""
        if batch_size is None:
            report = self._write(docs, split, max_section_chars, keep, sources)
            if progress is not None:
                progress(len(docs), len(docs))
            return report
        entries = entries_by_document(docs, sources)
        total = IngestReport()
        for start in range(0, len(docs), batch_size):
            batch = docs[start:start + batch_size]
            total += self._write(batch, split, max_section_chars, keep,
                                 [e for d in batch for e in entries.get((d.tenant, d.id), ())])
            if progress is not None:
                progress(start + len(batch), len(docs))
        return total

    def _write(self, docs: list[Document], split: str, max_section_chars: int, keep: bool,
               sources: Sequence[SourceEntry]) -> IngestReport:
        """One transaction: split, analyse, embed what changed, apply."""
        writes = [
            DocumentWrite(d, split_key(split, max_section_chars, d.sections),
                          passage_writes(self.store.analyzer, d, split, max_section_chars))
            for d in docs
        ]
        embed = self.store.embedder != "none"
        skip = self.store.unchanged(writes) if self.detect_conflicts or embed else set()
        if not embed:
            report = self.store.apply(writes, keep_history=keep, sources=sources, session=self.session)
        else:
            try:
                report = self.store.apply(self._with_vectors(writes, skip), keep_history=keep,
                                          sources=sources, session=self.session)
            except MissingVectors:
                # Another writer changed a document we took for unchanged: embed everything.
                skip = set()
                report = self.store.apply(self._with_vectors(writes, skip), keep_history=keep,
                                          sources=sources, session=self.session)
        written = [(d.tenant, d.id) for d in docs if (d.tenant, d.id) not in skip]
        if not self.detect_conflicts or not written or not (report.added or report.superseded):
            return report
        return dataclasses.replace(report, conflicts=tuple(self.detect(written)))

    def detect(self, written: list[tuple[str, str]]) -> list[Conflict]:
        """Conflicts of the documents just written with the rest of their tenant, recorded
        (see ``conflicts.find_conflicts``); returns those not recorded before."""
        found: list[Conflict] = []
        terms = get_analyzer(self.store.analyzer).terms
        with self.store.read(latest=True, session=self.session) as view:  # the write just made
            for tenant in sorted({t for t, _ in written}):
                every = {d.id: d for d in view.tenant_documents(tenant)}
                docs = [every.get(i) for t, i in written if t == tenant]
                found += conflicts.find_conflicts(view, tenant, [d for d in docs if d is not None],
                                                 terms, list(every.values()), self.cache())
        return self.store.record_conflicts(found)

    def _with_vectors(self, writes: list[DocumentWrite], skip: set[tuple[str, str]]) -> list[DocumentWrite]:
        todo = [w for w in writes if (w.document.tenant, w.document.id) not in skip]
        texts = [pw.passage.text for w in todo for pw in w.passages]
        vecs = iter(self.embed_passages(texts)) if texts else iter(())
        out = []
        for w in writes:
            if (w.document.tenant, w.document.id) in skip:
                out.append(w)
            else:
                out.append(dataclasses.replace(w, passages=tuple(
                    dataclasses.replace(pw, vector=next(vecs)) for pw in w.passages)))
        return out

    def reembed(self, model: str, cache: EmbeddingCache,
                progress: Callable[[int, int], None] | None = None) -> int:
        """Every live passage embedded with ``model`` (through ``cache``), then switched to
        atomically; passages written meanwhile are embedded in another round."""
        e = get_embedder(model)
        done: dict[int, np.ndarray] = {}
        for _ in range(5):
            rows = [(pid, text) for pid, text in self.store.live_passages() if pid not in done]
            total, count = len(rows), [0]

            def tick(n: int, total: int = total, count: list[int] = count) -> None:
                count[0] += n
                if progress:
                    progress(count[0], total)

            vecs = cache.embed(vectors_key(e), e.dimension, [t for _, t in rows], e.embed_passages,
                               progress=tick)
            done.update(zip((pid for pid, _ in rows), vecs, strict=True))
            if self.store.switch_vectors(e.model_id, e.dimension, done, self.session):
                return len(done)
        raise StoreError("the store kept changing during reembed; try again when writes pause")


class Writing:
    """``KnowledgeBase``'s writing methods and the operators' records (documents, runs,
    conflicts): a part of the class, in a file of its own. It defines nothing the class
    defines; the annotations below are what it reads of the class."""

    store: Store
    keep_history: bool
    detect_conflicts: bool
    _embed_cache: Callable[[], EmbeddingCache]
    _write_cache: Callable[[], EmbeddingCache | None]
    embed_passages: Callable[[list[str]], np.ndarray]

    def ingest(
        self,
        documents: Iterable[Document] | Document,
        split: str = "paragraph",
        *,
        max_section_chars: int = DEFAULT_MAX_SECTION_CHARS,
        keep_history: bool | None = None,
        sources: Sequence[SourceEntry] = (),
        batch_size: int | None = None,
        progress: Callable[[int, int], None] | None = None,
        identify_languages: bool = False,
        session: ReadSession | None = None,
    ) -> IngestReport:
        """Add new documents, supersede changed ones, skip unchanged ones: all in one
        transaction. A batch with an invalid member is rejected whole.

        ``batch_size``: write in transactions of at most that many documents instead (for inputs
        too large for one), calling ``progress(documents done, total)`` after each; the whole
        input is checked first, duplicates included, so an invalid input still writes nothing.
        ``sources`` records which configured source each document came from (see
        ``evidex.sources``) in the transaction that writes the document, so a sync killed at
        any moment never leaves a record that claims a document is up to date when it is not.
        ``keep_history`` overrides the knowledge base's setting for this call.
        ``identify_languages``: a document that states no language gets the one identified from
        its text when the model is sure (``query.identify_document``; English or German), so the
        ``auto`` analyzer stems it; loaded files rarely state one (the CLI and sources ask).
        ``session``: the caller's (``session()``), so its later reads include this write on
        whichever server answers them; every write below takes one the same way."""
        if split not in SPLITS:
            raise DocumentError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
        docs = [documents] if isinstance(documents, Document) else list(documents)
        docs = checked_batch(docs, identify_languages)
        keep = self.keep_history if keep_history is None else keep_history
        size = None if batch_size is None else positive_int(batch_size, "batch_size", err=DocumentError)
        return self._writer(session).ingest(docs, split, max_section_chars, keep, sources, size, progress)

    def _writer(self, session: ReadSession | None) -> Writer:
        """The write path with this handle's store, model, cache and settings (``_writes``)."""
        return Writer(self.store, self.embed_passages, self._write_cache, self.detect_conflicts, session)

    def conflicts(self, tenant: str | None = None, status: str | None = None, *,
                  session: ReadSession | None = None) -> list[Conflict]:
        """Recorded conflicts (of ``tenant``), newest first, with their status now: "open"
        while both passages are current, "closed" once either changed or was removed,
        "dismissed" when an admin dismissed it; ``status`` keeps only those."""
        if status not in (None, "open", "closed", "dismissed"):
            raise QueryError(f"status must be open, closed or dismissed, got {status!r}")
        recorded = self.store.conflicts(tenant)
        with self.store.read(latest=True, session=session) as view:  # as new as the records
            now = [conflicts.conflict_status(view, c) for c in recorded]
        return [c for c in now if status is None or c.status == status]

    def dismiss_conflict(self, tenant: str, conflict_id: int, by: str) -> bool:
        """An admin's call that a conflict is not one (or is accepted): it stays recorded,
        listed as dismissed, and is not raised again for the same two passages and values."""
        positive_int(conflict_id, "conflict id", 2**63 - 1)
        return self.store.dismiss_conflict(tenant, conflict_id, by)

    def unchanged(self, documents: Iterable[Document], split: str = "paragraph", *,
                  max_section_chars: int = DEFAULT_MAX_SECTION_CHARS) -> set[tuple[str, str]]:
        """(tenant, id) of the documents an ingest with these settings would skip, without
        splitting, embedding or writing anything (what a drift check needs)."""
        writes = [DocumentWrite(d, split_key(split, max_section_chars, d.sections), ())
                  for d in documents]
        return self.store.unchanged(writes)

    def source_entries(self, source: str | None = None) -> list[SourceEntry]:
        """What sync recorded about the documents of ``source`` (every source when None)."""
        return self.store.source_entries(source)

    def reembed(self, model: str, progress: Callable[[int, int], None] | None = None, *,
                session: ReadSession | None = None) -> int:
        """Rebuild every vector with ``model`` and switch to it atomically; search keeps using
        the old vectors until the switch commits. Returns the number of passages embedded."""
        check_model(model)
        if model == "none":
            raise StoreError("reembed needs an embedding model; 'none' would drop vector search")
        return self._writer(session).reembed(model, self._embed_cache(), progress)

    def reindex(self, analyzer: str, *, session: ReadSession | None = None) -> int:
        """Rebuild the keyword index with ``analyzer`` atomically (``store._reindex``); passages analysed."""
        # The caches stay exact: the rebuild gives the signatures new versions.
        return self.store.reindex(get_analyzer(analyzer).name, session)

    def remove(self, tenant: str, document_id: str, *, session: ReadSession | None = None) -> bool:
        """Delete a document, its passages and its history. True if it existed."""
        if not isinstance(tenant, str) or not isinstance(document_id, str):
            raise DocumentError("tenant and document_id must be strings")
        check_unicode(document_id, "document_id", DocumentError)
        return self.store.remove(check_unicode(tenant, "tenant", DocumentError), document_id, session)

    def optimize(self) -> None:
        self.store.optimize()

    # -- the operators' records ------------------------------------------------------------
    def documents(self, tenant: str | None = None) -> list[StoredDocument]:
        """Every stored document (of ``tenant``), without access checks: for operators and
        sync, never for answering a caller (``document`` is that)."""
        return list(self.store.iter_documents(tenant))

    def record_run(self, run: RunRecord) -> int:
        """Append a sync/drift run record to the store's run log; returns its id."""
        if not isinstance(run, RunRecord):
            raise EvidexError("run must be an evidex.store.RunRecord")
        return self.store.record_run(run)

    def runs(self, limit: int = 100, *, source: str | None = None,
             tenant: str | None = None) -> list[RunRecord]:
        """The latest ``limit`` runs (of ``source``, of ``tenant``'s sources), newest first."""
        return self.store.runs(positive_int(limit, "limit", 10_000, err=EvidexError), source, tenant)

