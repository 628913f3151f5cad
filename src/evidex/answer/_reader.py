"""What answering may read, and nothing more: the narrow interface the facade hands the
pipeline (``_pipeline.respond``) once per answer.

The pipeline never holds the facade, the store or a snapshot: it asks this interface for a
search, the question's vector, the quotes' vectors and the release's re-resolutions, so every
read an answer makes is one of these calls and can be counted (one search snapshot, one
resolution snapshot). The caller and the generation its reads must see (read-your-writes) are
bound into the reader by the facade, so no stage passes them along or reads them from the
ambient context.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..decide import Calibration, Probes
from ..model import Filters, Resolution, SearchResults
from ..retrieve import Fusion

__all__ = ["Searched", "StoreReader"]


@dataclass(frozen=True)
class Searched:
    """The answer's search, decided on (``results.support``, ``results.topic``), with the query
    vector it ranked with: the answer-bearing decision compares the quotes with this one
    instead of fetching it again. None when the search ranked without one (keyword mode, a
    keyword-only store, or the vector leg's deadline missed)."""

    results: SearchResults
    vector: np.ndarray | None


class StoreReader(Protocol):
    """The store as one caller reads it during one answer. Implemented by the facade
    (``kb._AnswerReads``); a test may hand in its own."""

    @property
    def keyword_only(self) -> bool:
        """The store has no vectors (embedding model ``none``)."""
        ...

    @property
    def vector_timeout_ms(self) -> int | None:
        """The deadline of each vector step an answer waits for (None: no deadline)."""
        ...

    def search(self, question: str, words: list[str], *, limit: int, mode: str,
               filters: Filters, fusion: Fusion) -> Searched:
        """The ranker's search for ``question`` (parsed into ``words`` once, by the facade)
        with the decision, in one snapshot."""
        ...

    def query_vector(self, question: str) -> np.ndarray:
        """The question's vector, when the search did not rank with one (keyword mode)."""
        ...

    def resolve(self, citations: Sequence[Mapping[str, Any]]) -> list[Resolution]:
        """Each passage citation re-checked against the store as it is now, all in one
        snapshot (none taken for no citation)."""
        ...

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        """Passage-side vectors of ``texts`` through the embedding cache (may run the model)."""
        ...

    def cached_passages(self, texts: list[str]) -> np.ndarray | None:
        """Passage-side vectors of ``texts`` when all are in the embedding cache, else None."""
        ...

    def probes(self) -> Probes:
        """The probe questions' vectors for the store's model."""
        ...

    def calibration(self) -> Calibration:
        """The values the decisions compare with."""
        ...

    def terms(self, text: str) -> list[str]:
        """``text``'s index terms under the store's analyzer (grounding and release)."""
        ...
