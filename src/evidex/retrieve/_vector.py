"""The vector leg: exact cosine search over exactly the passages the actor may read."""

from __future__ import annotations

import numpy as np

from ..store import ReadView
from ._access import Allowed
from ._keyword_leg import Candidates

__all__ = ["vector_candidates"]


def vector_candidates(view: ReadView, allowed: Allowed, query: np.ndarray, window: int) -> Candidates:
    """At least the ``window`` most similar allowed passages (plus ties at the cut).

    Only the vector blocks of allowed signatures are scored, so the list is never under-filled
    by filtering after the search, and other actors' data cannot change it.
    """
    sigs = (np.flatnonzero(allowed.table[:-1]) - 1).tolist()
    pids, scores = view.vector_search(sigs, query, window)
    return Candidates(pids, scores.astype(np.float64))
