"""``KnowledgeBase``: the library's front door, composing store, ingest, retrieval and citation.

It holds no state of its own beyond settings: everything durable is in the store, so several
processes can open the same file and agree on what it holds.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from . import answer, decide, retrieve
from ._checks import check_actor as _check_actor
from ._checks import check_model as _check_model
from ._checks import dimension as _dimension
from ._checks import positive_int as _positive_int
from ._vectors import Vectors
from ._writes import Writing
from .answer import GENERATORS, Answer, AnswerSettings, OpenAIConfig, OpenAIGenerator
from .check import CheckReport, check_store
from .cite import resolve_citation
from .decide import Calibration, Probes
from .embed import DEFAULT_EMBEDDER, Embedder, EmbeddingCache
from .model import (
    Actor,
    CitationError,
    DocumentError,
    DocumentView,
    EvidexError,
    Filters,
    Hit,
    Passage,
    QueryError,
    ReadFailed,
    Resolution,
    SearchResults,
    TenantMoved,
    can_access,
    check_unicode,
)
from .query import DEFAULT_LIMITS, QueryLimits, analyzer_for, get_analyzer, parse_query
from .retrieve import BM25, DEFAULT_FUSION, MODES, BM25Params, Fusion
from .store import (
    ReadSession,
    ReadView,
    Store,
    StoredDocument,
    migrate_store,
    open_store,
    redacted,
)
from .tools import LIVE_KIND, LiveSource, Toolbox, ToolConfig

__all__ = ["KnowledgeBase", "migrate_store"]

T = TypeVar("T")

MATCHES = ("any", "all")
#: Questions are sentences: longer than search queries, still bounded.
QUESTION_LIMITS = QueryLimits(max_chars=500, max_words=40, max_word_chars=40)
#: Environment variable naming the embedding model for new stores (default multilingual-e5-small;
#: "none" makes a keyword-only store).
EMBEDDER_ENV = "EVIDEX_EMBEDDER"


class KnowledgeBase(Writing):
    """A knowledge base over one store, and the library's only door to it: each method checks
    its arguments (a bad one is a one-line ``EvidexError``) and hands the work to the layer
    that owns it (``retrieve.search``, ``decide.evidence``, ``store.apply``, the ``answer`` stages,
    ``resolve_citation``). The CLI and the service reach the store only through it."""

    def __init__(
        self,
        store: Store,
        *,
        keep_history: bool = True,
        max_limit: int = 50,
        query_limits: QueryLimits = DEFAULT_LIMITS,
        bm25: BM25Params | None = None,
        embed_cache: EmbeddingCache | str | Path | None = None,
        calibration: Calibration | None = None,
        answer_settings: AnswerSettings | None = None,
        vector_timeout_ms: int | None = 4000,
        detect_conflicts: bool = True,
        tools: Toolbox | Sequence[ToolConfig] = (),
        serve_moved_tenants: bool = False,
    ) -> None:
        self.store = store
        #: Read a tenant this store marks as moved to another server as if it were not: only
        #: for verifying a move back to a store the tenant once left (``placement``).
        self.serve_moved_tenants = serve_moved_tenants
        self.keep_history = keep_history
        self.max_limit = max_limit
        self.query_limits = query_limits
        self._bm25 = BM25(bm25 or BM25Params())
        #: The store's model with its caches (``_vectors``): passage, query and probe vectors.
        self._vectors = Vectors(store, embed_cache, calibration)
        self.answer_settings = answer_settings or AnswerSettings()
        #: Deadline of hybrid search's vector leg (query embedding plus vector search); past it,
        #: or in a keyword-only store, hybrid search returns the keyword ranking and says so in
        #: ``SearchResults.fallback``. None waits however long the leg takes.
        self.vector_timeout_ms = (None if vector_timeout_ms is None else
                                  _positive_int(vector_timeout_ms, "vector_timeout_ms", err=EvidexError))
        #: Check every added or changed passage for values that contradict another document's
        #: (see ``conflicts.find_conflicts``); ``conflicts`` lists what was found.
        self.detect_conflicts = detect_conflicts
        #: Live tools: a Toolbox shared with others (a service's handles), or tools of this
        #: handle alone (closed with it).
        self._own_toolbox = not isinstance(tools, Toolbox)
        self._toolbox = tools if isinstance(tools, Toolbox) else Toolbox(tools)

    @classmethod
    def open(
        cls,
        location: str | Path,
        *,
        analyzer: str | None = None,
        embedder: str | None = None,
        replicas: Sequence[str] = (),
        replica_settings: Any = None,
        **settings: Any,
    ) -> KnowledgeBase:
        """Open (creating if missing) the store at ``location``.

        ``analyzer`` (default ``auto``) and ``embedder`` are fixed when a store is created (``reindex``,
        ``reembed`` change them); other ones for an existing store are an error. A new store
        gets ``embedder``, else ``$EVIDEX_EMBEDDER``, else multilingual-e5-small ("none": no
        vectors, keyword search only).

        ``replicas``: URLs of streaming replicas of the PostgreSQL primary ``location``: reads
        go to them, writes to the primary (see ``evidex.store._replicas``; ``replica_settings``
        an ``evidex.store.ReplicaSettings``: lag bounds, waits, timeouts).
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
            replicas=replicas,
            replica_settings=replica_settings,
        )
        return cls(store, **settings)

    def _embedder(self) -> Embedder:
        return self._vectors.embedder()

    def _embed_cache(self) -> EmbeddingCache:
        return self._vectors.cache()

    def _write_cache(self) -> EmbeddingCache | None:
        return self._vectors.write_cache()

    def embed_passages(self, texts: list[str],
                       progress: Callable[[int], None] | None = None) -> np.ndarray:
        """Vectors of passage texts with the store's model, through the embedding cache."""
        return self._vectors.embed_passages(texts, progress)

    @property
    def analyzer(self) -> str:
        return self.store.analyzer

    #: The store's analyzer, read each time (``reindex`` may change it).
    _analyzer = property(lambda self: get_analyzer(self.store.analyzer))

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
        rerank: bool = False,
        evidence: bool = False,
        at_least: int | None = None,
        session: ReadSession | None = None,
    ) -> SearchResults:
        """Passages ``actor`` may read that match ``query``, best first (``limit`` is top_k).

        ``mode``: "hybrid" (default: BM25 and vector legs fused; the keyword ranking when the
        vector leg misses ``vector_timeout_ms`` or the store has no vectors, with
        ``results.fallback`` saying why), "keyword" or "vector". Scores
        order the hits of this run (BM25, cosine, or fused) and mean nothing across queries.
        A plain search ranks only. ``evidence``: also decide whether the passages are on topic
        (``results.evidence`` "none", "weak" or "strong", ``results.support``,
        ``results.topic``; see ``evidex.decide``), which reads the best passages again
        sentence by sentence; ``explain`` and ``rerank`` compute it too, else
        ``results.evidence`` is None. ``rerank``: re-order the best fused candidates with the
        second-stage ranker (answers always do; see ``decide._rerank``).
        ``at_least``: a store generation (``IngestReport.generation`` of a write) the search
        must see; with read replicas, one that has replayed it answers, else the primary.
        ``session``: the caller's (``session()``): the search sees every write made with it and
        records which server answered. Every read and write below takes both the same way.
        """
        _check_actor(actor)
        limit = _positive_int(limit, "limit", self.max_limit)
        if match not in MATCHES:
            raise QueryError(f"match must be one of {', '.join(MATCHES)}, got {match!r}")
        if mode not in MODES:
            raise QueryError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if mode == "vector" and self.store.embedder == "none":
            raise QueryError(f"mode {mode!r} needs vectors; this store is keyword-only")
        if max_per_document is not None:
            max_per_document = _positive_int(max_per_document, "max_per_document")
        for name, flag in (("explain", explain), ("rerank", rerank), ("evidence", evidence)):
            if not isinstance(flag, bool):
                raise QueryError(f"{name} must be a bool")
        fz = fusion if isinstance(fusion, Fusion) else Fusion(fusion, rrf_k, window, alpha)
        words = parse_query(query, limits or self.query_limits)
        reads = self._reads(at_least, session)
        return self._ranked(actor, query, words, Filters.of(filters), reads, mode=mode, limit=limit,
                            match=match, max_per_document=max_per_document, explain=explain,
                            fusion=fz, rerank=rerank, decided=evidence or explain or rerank)[0]

    def _ranked(self, actor: Actor, query: str, words: list[str], flt: Filters,
                reads: ReadSession | None, *, mode: str, limit: int, match: str,
                max_per_document: int | None, explain: bool, fusion: Fusion, rerank: bool,
                decided: bool) -> tuple[SearchResults, np.ndarray | None]:
        """The search of checked arguments (``words``: ``query`` parsed), in one snapshot, with
        the query vector it ranked with (None: it ranked without one), which an answer's
        decision reuses instead of fetching it again."""
        if not words or not actor.active:
            return SearchResults(terms=self._analyzer.query_terms(words),
                                 evidence="none" if decided else None), None
        # Embedded before the snapshot is taken, so no read is held open while the model runs.
        model = self.store.embedder
        qvec, deadline = self._vectors.for_search(mode, query, self.vector_timeout_ms)

        def run(view: ReadView) -> tuple[SearchResults, np.ndarray | None]:
            v = qvec
            if isinstance(v, np.ndarray) and self.store.embedder != model:  # re-embedded meanwhile
                v = self._query_vector(query)
            q = retrieve.make_query(
                view, actor, query, analyzer=self.store.analyzer, words=words, filters=flt,
                mode=mode, limit=limit, depth=decide.depth(limit, rerank), match=match,
                max_per_document=max_per_document, explain=explain, fusion=fusion, vector=v,
                deadline=deadline, rerank=rerank, evidence=decided)
            res = self._search(view, q)
            return res, (v if isinstance(v, np.ndarray) and res.fallback is None else None)

        return self._read(run, actor.tenant, reads)

    def _search(self, view: ReadView, q: retrieve.Query) -> SearchResults:
        """Rank ``q`` in ``view``, then (when ``q.evidence``) decide; sentence vectors that miss
        the deadline give the keyword ranking, decided on without similarity."""
        ranking = retrieve.search(view, self._bm25, q)
        if not q.evidence:
            return _results(q, ranking, ranking.hits[:q.limit])
        analyze = analyzer_for(self.store.analyzer, q.keyword.own_language).terms
        probes = self._probes() if ranking.fallback is None and q.query_vector is not None else None
        found = decide.evidence(view, q, ranking, self._calibration_now(), analyze, probes)
        res = _results(q, ranking, found.hits, found.level)
        res.signals, res.support, res.topic = found.signals, found.support, found.topic
        res.question, res.shift = found.question, ranking.shift
        return res

    def _reads(self, at_least: int | None, session: ReadSession | None) -> ReadSession | None:
        """The one value a call's reads take: the caller's session, needing ``at_least`` too."""
        if at_least is None:
            return session
        return (session or ReadSession()).requiring(self.store.lineage, at_least)

    def _read(self, fn: Callable[[ReadView], T], tenant: str | None = None,
              reads: ReadSession | None = None, latest: bool = False) -> T:
        """``fn`` on one snapshot (of ``tenant``'s data: refused with ``TenantMoved`` once the
        tenant has moved to another server) that includes what ``reads`` needs. A read replica
        that fails during it is skipped and ``fn`` runs once more, on another server: a crashed
        replica costs no failed read."""
        for attempt in range(2):
            try:
                with self.store.read(latest=latest, session=reads) as view:
                    if tenant is not None and not self.serve_moved_tenants:
                        mark = view.moved(tenant)
                        if mark is not None and mark.state == "moved":
                            raise TenantMoved(tenant, mark.state, mark.location, mark.replicas)
                    return fn(view)
            except ReadFailed:
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _query_vector(self, query: str) -> np.ndarray:
        return self._vectors.query_vector(query)

    def _calibration_now(self) -> Calibration:
        return self._vectors.calibration()

    def _probes(self) -> Probes:
        return self._vectors.probes()

    def answer(
        self,
        actor: Actor,
        question: str,
        generator: str = "extractive",
        *,
        filters: Filters | Mapping[str, Any] | None = None,
        settings: AnswerSettings | None = None,
        openai: OpenAIGenerator | OpenAIConfig | None = None,
        live: Sequence[LiveSource] | None = None,
        at_least: int | None = None,
        session: ReadSession | None = None,
    ) -> Answer:
        """Answer from the passages ``actor`` may read and the live lookups (tools) it may
        make, citing every claim, or decline (``tool_unavailable`` when a lookup the question
        asks for fails: never from stale data or passages in its place). A declined answer
        lists up to three related passages it found (``Answer.related``, not an answer).

        ``generator``: "extractive" (default; quotes sentences, no model) or "openai" (any
        OpenAI-compatible server, configured by ``openai`` or EVIDEX_OPENAI_* variables).
        ``live``: the lookups the question asks for, already made (a service starts them
        before it takes a store handle); None starts them here, overlapping the search.
        ``at_least``, ``session``: what its reads must see (see ``search``).

        The stages, in order: search (with the decision) -> gate (on topic) -> generate (the
        extractive generator also needs the answer-bearing decision) -> verify -> resolve the
        cited passages again -> release; ``answer.respond`` owns them (``answer._pipeline``)
        and reads the store only through the ``_AnswerReads`` it is handed here.
        """
        st = settings or self.answer_settings
        if generator not in GENERATORS:
            raise EvidexError(f"generator must be one of {', '.join(GENERATORS)}, got {generator!r}")
        gen = openai if isinstance(openai, OpenAIGenerator) else None
        if generator == "openai" and gen is None:
            gen = OpenAIGenerator(openai if isinstance(openai, OpenAIConfig) else OpenAIConfig.from_env())
        mode = st.mode if self.store.embedder != "none" else "keyword"
        st = st if mode == st.mode else dataclasses.replace(st, mode=mode)
        _check_actor(actor)
        # Parsed once, here. A question refused here starts no lookup. One without words is the
        # caller's mistake, never a question the collection lacks: no decline, no person offered.
        words = parse_query(question, QUESTION_LIMITS)
        if not words:
            raise QueryError("the question has no words: ask in words what you want to know")
        limit = _positive_int(st.top_k, "limit", self.max_limit)
        request = answer.Request(actor, question, words, generator, st, limit, Filters.of(filters),
                                 gen, live)
        reads = _AnswerReads(self, actor, self._reads(at_least, session))
        return answer.respond(reads, self._toolbox, request)

    def resolve(self, actor: Actor, citation: Mapping[str, Any], *, at_least: int | None = None,
                session: ReadSession | None = None) -> Resolution:
        """Re-check a citation now: access, then version and fingerprint, then the quote. A
        live citation (``kind: "live"``) is looked up again, as ``actor``. ``at_least``,
        ``session``: what the check must see (see ``search``)."""
        _check_actor(actor)
        kind = citation.get("kind", "passage") if isinstance(citation, Mapping) else "passage"
        if kind == LIVE_KIND:
            return self._toolbox.resolve(actor, citation)
        if kind != "passage":
            raise CitationError(f"this is not a citation: kind must be passage or live, got {kind!r}")
        return self._read(lambda view: resolve_citation(view, actor, citation), actor.tenant,
                          self._reads(at_least, session))

    # -- live tools ---------------------------------------------------------------------------
    @property
    def toolbox(self) -> Toolbox:
        """The live tools with their threads and connections (shared by a service's handles)."""
        return self._toolbox

    def tools(self, actor: Actor | None = None) -> list[ToolConfig]:
        """The configured live tools; with ``actor``, those it may use."""
        if actor is None:
            return list(self._toolbox.tools)
        _check_actor(actor)
        return self._toolbox.usable(actor)

    def live_sources(self, actor: Actor, question: str) -> list[LiveSource]:
        """The lookups ``question`` asks for, made now as ``actor``: one ``LiveSource`` per tool
        it asks for and may use (a failed or refused lookup included, with its status)."""
        _check_actor(actor)
        if not isinstance(question, str):
            raise QueryError(f"question must be a string, got {type(question).__name__}")
        return self._toolbox.start(self._toolbox.asked(actor, question)).wait()

    def call_tool(self, actor: Actor, tool_id: str, parameters: Mapping[str, object], *,
                  operator: bool = False) -> LiveSource:
        """One lookup with explicit question parameters (an operator checking a tool);
        ``operator``: an admin of the tool's tenant, see ``Toolbox.call``."""
        _check_actor(actor)
        return self._toolbox.call(actor, tool_id, parameters, operator=operator)

    def document(self, actor: Actor, document_id: str, *, at_least: int | None = None,
                 session: ReadSession | None = None) -> DocumentView | None:
        """Document ``document_id`` of the actor's tenant with its current passages, when
        ``actor`` may read it; None otherwise. Unknown and not readable are deliberately the
        same answer, so a caller cannot probe for documents it may not see."""
        _check_actor(actor)
        if not isinstance(document_id, str):
            raise DocumentError(f"document_id must be a string, got {type(document_id).__name__}")
        check_unicode(document_id, "document_id", DocumentError)

        def read(view: ReadView) -> tuple[StoredDocument, list[Any]] | None:
            doc = view.document(actor.tenant, document_id)
            if doc is None or not can_access(actor, doc.tenant, doc.groups, doc.visibility):
                return None
            return doc, view.document_passages(doc.dkey)

        found = self._read(read, actor.tenant, self._reads(at_least, session))
        if found is None:
            return None
        doc, rows = found
        return DocumentView(
            document_id=doc.id, version=doc.version, content_sha256=doc.content_sha256,
            title=doc.title, source_url=doc.source_url, language=doc.language, tags=doc.tags,
            published_at=doc.published_at, indexed_at=doc.indexed_at,
            passages=tuple(Passage(p.number, p.start, p.end, p.text, p.heading_path, p.anchor,
                                   p.page, p.flags) for p in rows),
        )

    @property
    def written_generation(self) -> int:
        """The newest store generation a write through this handle committed (0: none): a
        read with ``at_least`` this generation sees every one of them."""
        return self.store.written

    def session(self, at_least: int | None = None) -> ReadSession:
        """A new caller's record for reading its own writes: hand it (``session=``) to the
        calls that belong together; every read given it sees every write made with it (and
        generation ``at_least``), on whichever server answers, and it records which server
        answered each read, at which generation (``ReadSession.served``)."""
        return ReadSession(at_least={} if at_least is None else {self.store.lineage: at_least})

    def for_tenant(self, tenant: str) -> KnowledgeBase:
        """The handle that serves ``tenant``: this one (tenants on several servers: theirs)."""
        return self

    def server_of(self, tenant: str) -> str:
        """Where ``tenant``'s data is, for messages (never a password)."""
        return redacted(str(getattr(self.store, "url", None) or self.store.label))

    def servers(self) -> list[dict[str, object]]:
        """The servers behind this store: the primary and its replicas with their state,
        generation and lag (a single server: itself)."""
        servers = getattr(self.store, "servers", None)
        if servers is not None:
            return list(servers())
        return [{"role": "single", "server": self.store.label, "state": "ok"}]

    def check_readable(self) -> None:
        """Take and release a read snapshot: raises when the store cannot be read now (what a
        service's health check asks)."""
        with self.store.read():
            pass

    def stats(self) -> dict[str, object]:
        return self.store.stats()

    def check(self) -> CheckReport:
        """Verify the store end to end: fingerprints against passage text, postings against
        passages, vectors, history and the database's own checks (see ``evidex.check``).
        Reads only; ``report.ok`` is False when any problem was found."""
        return check_store(self.store)

    def close(self) -> None:
        """Close the store and drop this handle's ranking caches; using it afterwards raises
        ``StoreError``. Closing twice is harmless."""
        self.store.close()
        self._bm25.clear()
        if self._own_toolbox:
            self._toolbox.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _AnswerReads:
    """``answer.StoreReader`` over one handle, for one caller: the actor and what its reads
    must see (``reads``: the caller's session) are bound here once, so the pipeline passes
    neither."""

    def __init__(self, kb: KnowledgeBase, actor: Actor, reads: ReadSession | None) -> None:
        self._kb, self._actor, self._reads = kb, actor, reads

    @property
    def keyword_only(self) -> bool:
        return self._kb.store.embedder == "none"

    @property
    def vector_timeout_ms(self) -> int | None:
        return self._kb.vector_timeout_ms

    def search(self, question: str, words: list[str], *, limit: int, mode: str,
               filters: Filters, fusion: Fusion) -> answer.Searched:
        """An answer's search: the second-stage ranker, so the decision, always; two passages
        per document at most."""
        res, vector = self._kb._ranked(
            self._actor, question, words, filters, self._reads, mode=mode, limit=limit,
            match="any", max_per_document=2, explain=False, fusion=fusion, rerank=True,
            decided=True)
        return answer.Searched(res, vector)

    def query_vector(self, question: str) -> np.ndarray:
        return self._kb._query_vector(question)

    def resolve(self, citations: Sequence[Mapping[str, Any]]) -> list[Resolution]:
        """Passage citations (what the answer cites or offers) re-checked in one snapshot."""
        if not citations:
            return []
        actor = self._actor
        return self._kb._read(lambda view: [resolve_citation(view, actor, c) for c in citations],
                              actor.tenant, self._reads)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._kb.embed_passages(texts)

    def cached_passages(self, texts: list[str]) -> np.ndarray | None:
        return self._kb._vectors.cached_passages(texts)

    def probes(self) -> Probes:
        return self._kb._probes()

    def calibration(self) -> Calibration:
        return self._kb._calibration_now()

    def terms(self, text: str) -> list[str]:
        return self._kb._analyzer.terms(text)


def _results(q: retrieve.Query, ranking: retrieve.Ranking, hits: list[Hit],
             level: str | None = None) -> SearchResults:
    res = SearchResults(hits, terms=q.keyword.terms, evidence=level)
    res.weights = ranking.weights
    res.fallback = ranking.fallback.as_dict() if ranking.fallback is not None else None
    return res
