"""The ``retrieval:`` section: analyzer, model, mode, fusion and the two legs."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    Field,
)

from ..retrieve import DEFAULT_FUSION
from ._common import (
    FuseMethod,
    Strict,
)


class KeywordLeg(Strict):
    """``retrieval.keyword``: the BM25 full-text index (the only keyword index evidex has)."""

    index: Literal["full_text"] = "full_text"


class VectorLeg(Strict):
    """``retrieval.vector``: the embedding index and the vector leg's deadline."""

    index: Literal["embeddings"] = "embeddings"
    #: Query embedding plus vector search must finish within this; past it (or when the store
    #: has no vectors) hybrid search returns the keyword ranking and says so.
    timeout_ms: int = Field(default=4000, ge=1, le=600_000)



class RetrievalConfig(Strict):
    """Defaults of every search (CLI and library callers that pass the config)."""

    analyzer: Literal["auto", "exact", "english", "german"] | None = None
    embedder: str | None = None
    mode: Literal["hybrid", "keyword", "vector"] = "hybrid"
    fuse: FuseMethod = DEFAULT_FUSION  # type: ignore[assignment]
    rrf_k: int = Field(default=60, ge=1, le=1000)
    window: int = Field(default=50, ge=1, le=1000)
    alpha: float = Field(default=0.5, ge=0.0, le=1.0)
    top_k: int = Field(default=6, ge=1, le=50)
    max_per_document: int | None = Field(default=2, ge=1)
    match: Literal["any", "all"] = "any"
    keyword: KeywordLeg = KeywordLeg()
    vector: VectorLeg = VectorLeg()

