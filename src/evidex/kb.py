"""``KnowledgeBase``: the library's front door, composing store, ingest, retrieval and citation.

It holds no state of its own beyond settings: everything durable is in the store, so several
processes can open the same file and agree on what it holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .cite import resolve_citation
from .ingest import DEFAULT_MAX_SECTION_CHARS, SPLITS, split_text
from .model import (
    Actor,
    Document,
    DocumentError,
    EvidexError,
    Filters,
    IngestReport,
    QueryError,
    Resolution,
    SearchResults,
)
from .query import DEFAULT_LIMITS, Analyzer, QueryLimits, get_analyzer, parse_query
from .retrieve import BM25, BM25Params, hits_from, keyword_candidates
from .store import DocumentWrite, PassageWrite, Store, StoredDocument, open_store

__all__ = ["KnowledgeBase"]

MATCHES = ("any", "all")
MODES = ("keyword",)


def _positive_int(value: object, what: str, upper: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise QueryError(f"{what} must be an int, got {type(value).__name__} {value!r}")
    if value < 1 or (upper is not None and value > upper):
        bound = f"1..{upper}" if upper is not None else ">= 1"
        raise QueryError(f"{what} must be in {bound}, got {value}")
    return value


class KnowledgeBase:
    def __init__(
        self,
        store: Store,
        *,
        keep_history: bool = True,
        max_limit: int = 50,
        query_limits: QueryLimits = DEFAULT_LIMITS,
        bm25: BM25Params | None = None,
    ) -> None:
        self.store = store
        self.keep_history = keep_history
        self.max_limit = max_limit
        self.query_limits = query_limits
        self._analyzer: Analyzer = get_analyzer(store.analyzer)
        self._bm25 = BM25(bm25 or BM25Params())

    @classmethod
    def open(
        cls,
        location: str | Path,
        *,
        analyzer: str | None = None,
        **settings: Any,
    ) -> KnowledgeBase:
        """Open (creating if missing) the store at ``location``.

        ``analyzer`` is fixed when a store is created; passing another one for an existing store
        is an error rather than a silently inconsistent index.
        """
        if analyzer is not None:
            get_analyzer(analyzer)  # validate the name before touching any file
        return cls(open_store(location, analyzer=analyzer), **settings)

    @property
    def analyzer(self) -> str:
        return self._analyzer.name

    # -- writing ------------------------------------------------------------------------------
    def ingest(
        self,
        documents: Iterable[Document] | Document,
        split: str = "paragraph",
        *,
        max_section_chars: int = DEFAULT_MAX_SECTION_CHARS,
    ) -> IngestReport:
        """Add new documents, supersede changed ones, skip unchanged ones: all in one
        transaction. A batch with an invalid member is rejected whole."""
        if split not in SPLITS:
            raise DocumentError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
        docs = [documents] if isinstance(documents, Document) else list(documents)
        seen: dict[tuple[str, str], int] = {}
        for i, d in enumerate(docs):
            if not isinstance(d, Document):
                raise DocumentError(f"item {i} of the batch is a {type(d).__name__}, not a Document")
            key = (d.tenant, d.id)
            if key in seen:
                raise DocumentError(
                    f"document {d.id!r} of tenant {d.tenant!r} appears twice in the batch "
                    f"(items {seen[key]} and {i}); nothing was written"
                )
            seen[key] = i
        split_key = f"heading:{max_section_chars}" if split == "heading" else split
        writes = [
            DocumentWrite(d, split_key, self._passages(d, split, max_section_chars)) for d in docs
        ]
        return self.store.apply(writes, keep_history=self.keep_history)

    def _passages(self, doc: Document, split: str, max_section_chars: int) -> tuple[PassageWrite, ...]:
        out = []
        for p in split_text(doc.text, split, max_section_chars=max_section_chars):
            terms = Counter(self._analyzer.terms(p.text))
            out.append(PassageWrite(p, dict(terms), sum(terms.values())))
        return tuple(out)

    def remove(self, tenant: str, document_id: str) -> bool:
        """Delete a document, its passages and its history. True if it existed."""
        if not isinstance(tenant, str) or not isinstance(document_id, str):
            raise DocumentError("tenant and document_id must be strings")
        return self.store.remove(tenant, document_id)

    def optimize(self) -> None:
        self.store.optimize()

    # -- reading ------------------------------------------------------------------------------
    def search(
        self,
        actor: Actor,
        query: str,
        limit: int = 6,
        *,
        match: str = "any",
        mode: str = "keyword",
        filters: Filters | Mapping[str, Any] | None = None,
        max_per_document: int | None = 2,
    ) -> SearchResults:
        """Passages ``actor`` may read that match ``query``, best first.

        Scores are BM25 values of this run over exactly what the actor may see under
        ``filters``; they order results and mean nothing across queries.
        """
        if not isinstance(actor, Actor):
            raise EvidexError("actor must be an evidex.Actor built by trusted code")
        limit = _positive_int(limit, "limit", self.max_limit)
        if match not in MATCHES:
            raise QueryError(f"match must be one of {', '.join(MATCHES)}, got {match!r}")
        if mode not in MODES:
            raise QueryError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if max_per_document is not None:
            max_per_document = _positive_int(max_per_document, "max_per_document")
        flt = Filters.of(filters)
        words = parse_query(query, self.query_limits)
        terms = self._analyzer.query_terms(words)
        if not terms or not actor.active:
            return SearchResults(terms=terms)
        with self.store.read() as view:
            cand = keyword_candidates(view, self._bm25, actor, terms, flt, match, limit, max_per_document)
            hits = hits_from(view, cand, limit, max_per_document)
        return SearchResults(hits, terms=terms)

    def resolve(self, actor: Actor, citation: Mapping[str, Any]) -> Resolution:
        """Re-check a citation now: access, then version and fingerprint, then the quote."""
        if not isinstance(actor, Actor):
            raise EvidexError("actor must be an evidex.Actor built by trusted code")
        with self.store.read() as view:
            return resolve_citation(view, actor, citation)

    def documents(self, tenant: str | None = None) -> list[StoredDocument]:
        return list(self.store.iter_documents(tenant))

    def stats(self) -> dict[str, object]:
        return self.store.stats()

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
