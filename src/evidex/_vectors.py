"""The vectors one knowledge-base handle reads and writes with, apart from the facade that checks
arguments (``kb.py``): the store's embedding model, the embedding cache, the process-wide
query-vector cache, the probe questions' vectors and the decisions' calibration.

They are one concern because they change together: a re-embed switches the store's model, and
every one of them follows the model the store holds now (read each time from ``store.embedder``,
never remembered), so a handle opened before a re-embed embeds with the new model after it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from .decide import Calibration, Probes, calibration, probe_texts
from .embed import Embedder, EmbeddingCache, QueryVectorCache, get_embedder, query_vectors, vectors_key
from .retrieve import Deadline, Fallback, embed_within
from .store import Store

__all__ = ["Vectors"]


class Vectors:
    """The store's model with its caches (see the module docstring)."""

    def __init__(self, store: Store, embed_cache: EmbeddingCache | str | Path | None,
                 calibration: Calibration | None) -> None:
        self._store = store
        self._cache_arg = embed_cache
        self._cache: EmbeddingCache | None = embed_cache if isinstance(embed_cache, EmbeddingCache) else None
        self._calibration = calibration
        self._probe_vectors: dict[str, Probes] = {}
        self._query_vectors: QueryVectorCache = query_vectors

    def embedder(self) -> Embedder:
        return get_embedder(self._store.embedder)

    def cache(self) -> EmbeddingCache:
        """The embedding cache, opened on first use (a handle that never embeds opens none)."""
        if self._cache is None:
            self._cache = EmbeddingCache(self._cache_arg)  # type: ignore[arg-type]
        return self._cache

    def write_cache(self) -> EmbeddingCache | None:
        """The cache the write path embeds and detects conflicts through: a keyword-only store
        opens no cache file unless it was given one."""
        return self.cache() if self._cache_arg or self._store.embedder != "none" else None

    def embed_passages(self, texts: list[str],
                       progress: Callable[[int], None] | None = None) -> np.ndarray:
        """Vectors of passage texts with the store's model, through the embedding cache."""
        e = self.embedder()
        return self.cache().embed(vectors_key(e), e.dimension, texts, e.embed_passages, progress=progress)

    def cached_passages(self, texts: list[str]) -> np.ndarray | None:
        """Passage vectors of ``texts`` when every one is in the embedding cache, else None."""
        e = self.embedder()
        return self.cache().cached(vectors_key(e), e.dimension, texts)

    def query_vector(self, query: str) -> np.ndarray:
        """The query's embedding, through the process-wide cache (see ``embed._queries``)."""
        return self._query_vectors.get(self._store.embedder, query, self.embedder().embed_queries)

    def for_search(self, mode: str, query: str, timeout_ms: int | None
                   ) -> tuple[np.ndarray | Fallback | None, Deadline | None]:
        """The query vector a search in ``mode`` needs (None: none needed), or in hybrid mode
        the keyword fallback when there is none within ``timeout_ms``; and the vector search's
        deadline."""
        get = self.query_vector
        model = self._store.embedder
        if mode == "keyword":
            return None, None
        if model == "none":
            return Fallback("no_vectors", "this store is keyword-only (embedding model none)"), None
        if mode == "vector":
            return get(query), None
        cache = self._query_vectors
        if timeout_ms is not None and isinstance(cache, QueryVectorCache) and (model, query) in cache:
            # Already embedded (asked before, or the search an answer ran): nothing to wait
            # for, so no hop to the embedding thread; the vector search keeps its deadline.
            return get(query), Deadline.start(timeout_ms)
        return embed_within(model, lambda: get(query), timeout_ms)

    def calibration(self) -> Calibration:
        """The decisions' values: the ones given, else the store's model's."""
        return self._calibration or calibration(self._store.embedder)

    def probes(self) -> Probes:
        """The probe questions' vectors for the store's model (``decide._probes``), embedded
        once ever through the embedding cache (query side) and kept per handle."""
        model = self._store.embedder
        got = self._probe_vectors.get(model)
        if got is None:
            e = self.embedder()
            got = self._probe_vectors[model] = Probes(self.cache().embed(
                f"{e.model_id}#query", e.dimension, list(probe_texts()), e.embed_queries))
        return got
