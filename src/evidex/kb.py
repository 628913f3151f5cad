"""``KnowledgeBase``: the library's front door, composing store, ingest, retrieval and citation.

It holds no state of its own beyond settings: everything durable is in the store, so several
processes can open the same file and agree on what it holds.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .answer import Answer, AnswerSettings, OpenAIConfig, OpenAIGenerator, answer_question
from .cite import resolve_citation
from .embed import (
    DEFAULT_EMBEDDER,
    EMBEDDERS,
    Embedder,
    EmbeddingCache,
    QueryVectorCache,
    get_embedder,
    query_vectors,
)
from .ingest import DEFAULT_MAX_SECTION_CHARS, SPLITS, scan, split_key, split_text
from .model import (
    Actor,
    Document,
    DocumentError,
    EvidexError,
    Filters,
    Hit,
    IngestReport,
    QueryError,
    Resolution,
    SearchResults,
    StoreError,
)
from .query import DEFAULT_LIMITS, Analyzer, QueryLimits, content_terms, get_analyzer, parse_query
from .retrieve import (
    BM25,
    DEFAULT_FUSION,
    EVIDENCE_THRESHOLDS,
    BM25Params,
    Candidates,
    EvidenceThresholds,
    Fusion,
    Leg,
    evidence_level,
    fuse,
    hits_from,
    keyword_candidates,
    select_top,
    vector_candidates,
)
from .store import (
    DocumentWrite,
    MissingVectors,
    PassageWrite,
    SourceEntry,
    Store,
    StoredDocument,
    open_store,
)

__all__ = ["KnowledgeBase"]

MATCHES = ("any", "all")
MODES = ("hybrid", "keyword", "vector")
#: Questions are sentences: longer than search queries, still bounded.
QUESTION_LIMITS = QueryLimits(max_chars=500, max_words=40, max_word_chars=40)
#: Environment variable naming the embedding model for new stores (default multilingual-e5-small;
#: "none" makes a keyword-only store).
EMBEDDER_ENV = "EVIDEX_EMBEDDER"


def _dimension(model: str) -> int:
    return 0 if model == "none" else get_embedder(model).dimension


def _check_model(model: str | None) -> None:
    if model is not None and model != "none" and model not in EMBEDDERS:
        raise StoreError(f"unknown embedding model {model!r}; known: none, {', '.join(EMBEDDERS)}")


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
        embed_cache: EmbeddingCache | str | Path | None = None,
        evidence: EvidenceThresholds | None = None,
        answer_settings: AnswerSettings | None = None,
    ) -> None:
        self.store = store
        self.keep_history = keep_history
        self.max_limit = max_limit
        self.query_limits = query_limits
        self._analyzer: Analyzer = get_analyzer(store.analyzer)
        self._bm25 = BM25(bm25 or BM25Params())
        self._cache_arg = embed_cache
        self._cache: EmbeddingCache | None = embed_cache if isinstance(embed_cache, EmbeddingCache) else None
        self._evidence = evidence
        self._query_vectors: QueryVectorCache = query_vectors
        self.answer_settings = answer_settings or AnswerSettings()

    @classmethod
    def open(
        cls,
        location: str | Path,
        *,
        analyzer: str | None = None,
        embedder: str | None = None,
        **settings: Any,
    ) -> KnowledgeBase:
        """Open (creating if missing) the store at ``location``.

        ``analyzer`` and ``embedder`` are fixed when a store is created; passing other ones for
        an existing store is an error rather than a silently inconsistent index. A new store
        gets ``embedder``, else ``$EVIDEX_EMBEDDER``, else multilingual-e5-small ("none": no
        vectors, keyword search only).
        """
        if analyzer is not None:
            get_analyzer(analyzer)  # validate the names before touching any file
        _check_model(embedder)
        default = os.environ.get(EMBEDDER_ENV) or DEFAULT_EMBEDDER
        _check_model(default)
        store = open_store(
            location,
            analyzer=analyzer,
            embedder=embedder,
            dimension=_dimension(embedder) if embedder else 0,
            create_embedder=(default, _dimension(default)),
        )
        return cls(store, **settings)

    @property
    def embedder_id(self) -> str:
        return self.store.embedder

    def _embedder(self) -> Embedder:
        return get_embedder(self.store.embedder)

    def _embed_cache(self) -> EmbeddingCache:
        if self._cache is None:
            self._cache = EmbeddingCache(self._cache_arg)  # type: ignore[arg-type]
        return self._cache

    def embed_passages(self, texts: list[str],
                       progress: Callable[[int], None] | None = None) -> np.ndarray:
        """Vectors of passage texts with the store's model, through the embedding cache."""
        e = self._embedder()
        return self._embed_cache().embed(e.model_id, e.dimension, texts, e.embed_passages,
                                         progress=progress)

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
        keep_history: bool | None = None,
        sources: Sequence[SourceEntry] = (),
    ) -> IngestReport:
        """Add new documents, supersede changed ones, skip unchanged ones: all in one
        transaction. A batch with an invalid member is rejected whole.

        ``sources`` records which configured source each document came from (see
        ``evidex.sources``) in the same transaction, so a sync killed at any moment never
        leaves a record that claims a document is up to date when it is not.
        ``keep_history`` overrides the knowledge base's setting for this batch."""
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
        keep = self.keep_history if keep_history is None else keep_history
        writes = [
            DocumentWrite(d, split_key(split, max_section_chars, d.sections),
                          self._passages(d, split, max_section_chars))
            for d in docs
        ]
        if self.store.embedder == "none":
            return self.store.apply(writes, keep_history=keep, sources=sources)
        try:
            skip = self.store.unchanged(writes)
            return self.store.apply(self._with_vectors(writes, skip), keep_history=keep,
                                    sources=sources)
        except MissingVectors:
            # Another writer changed a document we took for unchanged: embed everything.
            return self.store.apply(self._with_vectors(writes, set()), keep_history=keep,
                                    sources=sources)

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

    def reembed(self, model: str, progress: Callable[[int, int], None] | None = None) -> int:
        """Rebuild every vector with ``model`` and switch to it atomically; search keeps using
        the old vectors until the switch commits. Returns the number of passages embedded."""
        _check_model(model)
        if model == "none":
            raise StoreError("reembed needs an embedding model; 'none' would drop vector search")
        e = get_embedder(model)
        done: dict[int, np.ndarray] = {}
        for _ in range(5):
            rows = [(pid, text) for pid, text in self.store.live_passages() if pid not in done]
            total, count = len(rows), [0]

            def tick(n: int, total: int = total, count: list[int] = count) -> None:
                count[0] += n
                if progress:
                    progress(count[0], total)

            vecs = self._embed_cache().embed(e.model_id, e.dimension, [t for _, t in rows],
                                             e.embed_passages, progress=tick)
            done.update(zip((pid for pid, _ in rows), vecs, strict=True))
            if self.store.switch_vectors(e.model_id, e.dimension, done):
                return len(done)
        raise StoreError("the store kept changing during reembed; try again when writes pause")

    def _passages(self, doc: Document, split: str, max_section_chars: int) -> tuple[PassageWrite, ...]:
        out = []
        for p in split_text(doc.text, split, max_section_chars=max_section_chars,
                            sections=doc.sections):
            terms = Counter(self._analyzer.terms(p.text))
            out.append(PassageWrite(p, dict(terms), sum(terms.values()), flags=scan(p.text)))
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
        mode: str = "hybrid",
        filters: Filters | Mapping[str, Any] | None = None,
        max_per_document: int | None = 2,
        explain: bool = False,
        fusion: Fusion | str = DEFAULT_FUSION,
        rrf_k: int = 60,
        window: int = 50,
        alpha: float = 0.5,
        limits: QueryLimits | None = None,
    ) -> SearchResults:
        """Passages ``actor`` may read that match ``query``, best first (``limit`` is top_k).

        ``mode``: "hybrid" (default: BM25 and vector legs fused), "keyword" or "vector". Scores
        order the hits of this run (BM25, cosine, or fused) and mean nothing across queries;
        ``results.evidence`` is "none", "weak" or "strong" (see ``retrieve._evidence``).
        """
        if not isinstance(actor, Actor):
            raise EvidexError("actor must be an evidex.Actor built by trusted code")
        limit = _positive_int(limit, "limit", self.max_limit)
        if match not in MATCHES:
            raise QueryError(f"match must be one of {', '.join(MATCHES)}, got {match!r}")
        if mode not in MODES:
            raise QueryError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if mode != "keyword" and self.store.embedder == "none":
            raise QueryError(f"mode {mode!r} needs vectors; this store is keyword-only")
        if max_per_document is not None:
            max_per_document = _positive_int(max_per_document, "max_per_document")
        if not isinstance(explain, bool):
            raise QueryError("explain must be a bool")
        fz = fusion if isinstance(fusion, Fusion) else Fusion(fusion, rrf_k, window, alpha)
        flt = Filters.of(filters)
        words = parse_query(query, limits or self.query_limits)
        terms = self._analyzer.query_terms(words)
        if not words or not actor.active:
            return SearchResults(terms=terms)
        model = self.store.embedder
        qvec = self._query_vector(query) if mode != "keyword" else None
        with self.store.read() as view:
            if mode == "keyword":
                if not terms:
                    return self._results(view, [], terms, None)
                cand = keyword_candidates(view, self._bm25, actor, terms, flt, match, limit,
                                          max_per_document)
                hits = hits_from(view, cand, limit, max_per_document,
                                 self._explain_single(view, cand, "keyword") if explain else None)
                return self._results(view, hits, terms, None, cand.info["term_pids"])
            if self.store.embedder != model:  # another process re-embedded the store meanwhile
                qvec = self._query_vector(query)
            # Legs are windows of candidates; when the per-document cap leaves the list short
            # and a leg filled its window, the windows grow (x4) until the list is full or the
            # legs are exhausted, so a long document never under-fills the result.
            scale = 1
            term_pids = None
            while True:
                win = max(fz.window, limit) * scale
                legs = []
                if mode == "hybrid" and terms:
                    kc = keyword_candidates(view, self._bm25, actor, terms, flt, match, win, None)
                    legs.append(self._ranked(view, kc, "keyword", win))
                    term_pids = kc.info["term_pids"]
                vc = vector_candidates(view, actor, flt, qvec, win)  # type: ignore[arg-type]
                best_sim = float(vc.scores.max()) if len(vc.scores) else None
                legs.append(self._ranked(view, vc, "vector", win))
                pids, scores, why = fuse(legs, fz) if mode == "hybrid" else (
                    legs[0].pids, legs[0].scores, self._why(legs[0]))
                hits = hits_from(view, Candidates(pids, scores, {}), limit, max_per_document,
                                 why if explain else None)
                full = any(len(leg.pids) >= win for leg in legs)
                if len(hits) >= limit or not full or max_per_document is None:
                    break
                scale *= 4
            return self._results(view, hits, terms, best_sim, term_pids)

    def _query_vector(self, query: str) -> np.ndarray:
        """The query's embedding, through the process-wide cache (see ``embed._queries``)."""
        return self._query_vectors.get(self.store.embedder, query, self._embedder().embed_queries)

    @staticmethod
    def _ranked(view: Any, cand: Candidates, name: str, window: int) -> Leg:
        order = select_top(cand.scores, view.dkey, view.number, window, None, view.doc_ids,
                           cand.pids)
        return Leg(name, cand.pids[order], cand.scores[order])

    def _explain_single(self, view: Any, cand: Candidates, name: str) -> dict[int, dict[str, Any]]:
        return self._why(self._ranked(view, cand, name, len(cand.pids)))

    @staticmethod
    def _why(leg: Leg) -> dict[int, dict[str, Any]]:
        return {int(p): {leg.name: {"rank": r, "score": float(s)}}
                for r, (p, s) in enumerate(zip(leg.pids, leg.scores, strict=True), start=1)}

    def _thresholds(self) -> EvidenceThresholds:
        return self._evidence or EVIDENCE_THRESHOLDS.get(self.store.embedder, EVIDENCE_THRESHOLDS["none"])

    def _results(self, view: Any, hits: list[Hit], terms: list[str], best_sim: float | None,
                 term_pids: Mapping[str, np.ndarray] | None = None) -> SearchResults:
        """Attach the evidence level. Which query terms the hits contain is read from the
        postings (no re-analysis of the hit texts): the keyword leg's readable passages per
        term when it ran (hits are readable, so the answer is the same), else every segment's."""
        pids = np.array([h.pid for h in hits], dtype=np.int64)
        contained: list[set[str]] = [set() for _ in hits]
        for t in content_terms(terms) if hits else ():
            known = term_pids.get(t) if term_pids is not None else None
            runs = [known] if known is not None else [p for p, _ in view.postings(t)]
            for p in runs:  # sorted ids: binary search; "clip" keeps ids past the end in range
                if len(p):
                    # In the haystack's dtype: int64 needles made numpy convert the whole int32
                    # postings array on every call (0.35 ms per common term at 1M passages).
                    n = pids.astype(p.dtype, copy=False)
                    # Three array calls per term, then a short Python loop: this check took a
                    # quarter of a SciFact search at limit 10 when it built masks per term.
                    for i, hit in enumerate((p.take(p.searchsorted(n), mode="clip") == n).tolist()):
                        if hit:
                            contained[i].add(t)
        level, signals = evidence_level(terms, contained, best_sim, self._thresholds())
        res = SearchResults(hits, terms=terms, evidence=level)
        res.signals = signals
        return res

    def answer(
        self,
        actor: Actor,
        question: str,
        generator: str = "extractive",
        *,
        filters: Filters | Mapping[str, Any] | None = None,
        settings: AnswerSettings | None = None,
        openai: OpenAIGenerator | OpenAIConfig | None = None,
    ) -> Answer:
        """Answer from the passages ``actor`` may read, citing every claim, or decline.

        ``generator``: "extractive" (default; quotes sentences, no model) or "openai" (any
        OpenAI-compatible server, configured by ``openai`` or EVIDEX_OPENAI_* variables).
        """
        st = settings or self.answer_settings
        gen = openai if isinstance(openai, OpenAIGenerator) else None
        if generator == "openai" and gen is None:
            gen = OpenAIGenerator(openai if isinstance(openai, OpenAIConfig) else OpenAIConfig.from_env())
        mode = st.mode if self.store.embedder != "none" else "keyword"

        found: list[SearchResults] = []

        def search(q: str) -> SearchResults:
            found.append(self.search(actor, q, limit=st.top_k, mode=mode, filters=filters, fusion=st.fusion,
                                     limits=QUESTION_LIMITS))
            return found[-1]

        def recheck(quotes: list[str]) -> str:
            res = found[-1]
            return evidence_level(res.terms, (self._analyzer.terms(q) for q in quotes),
                                  res.signals.get("similarity"), self._thresholds())[0]

        return answer_question(
            actor, question, search=search, resolve=lambda c: self.resolve(actor, c),
            terms_of=self._analyzer.terms, recheck=recheck, generator=generator,
            settings=st if mode == st.mode else dataclasses.replace(st, mode=mode), openai=gen,
        )

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
        """Close the store and drop this handle's ranking caches; using it afterwards raises
        ``StoreError``. Closing twice is harmless."""
        self.store.close()
        self._bm25.clear()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
