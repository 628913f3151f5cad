"""The query value: one search, worked out once and read by every step after it.

``KnowledgeBase.search`` builds a ``Query`` inside its read view (``make_query``): who asks and
what they may read (``Access``, computed once per search from the snapshot's signatures), the
keyword query (one analysis per readable language under ``auto``), the query vector or the
fallback that says why there is none, the vector leg's deadline, the fusion and the limits. The
ranking (``retrieve.search``) and the decision (``evidex.decide``) read it and never change it:
a search that must fall back to the keyword ranking is a new value
(``dataclasses.replace(query, vector=fallback)``), never a switch flipped in place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..model import Actor, Filters
from ..query import AUTO
from ..store import ReadView
from ._access import Access, access
from ._deadline import Deadline, Fallback
from ._fusion import Fusion
from ._keywords import KeywordQuery, keyword_query

__all__ = ["Query", "make_query"]


@dataclass(frozen=True, slots=True)
class Query:
    """One search (arguments taken as valid: ``KnowledgeBase.search`` checks what callers pass)."""

    actor: Actor
    #: The query's text, as asked (the decision reads the question in it).
    text: str
    keyword: KeywordQuery
    access: Access
    mode: str = "hybrid"
    #: Hits returned.
    limit: int = 6
    #: Hits ranked (at least ``limit``): a second stage re-orders the first ``depth`` and keeps
    #: ``limit`` (``evidex.decide``'s ranker; the caller sets it, retrieve only ranks that many).
    depth: int = 6
    match: str = "any"
    filters: Filters = field(default_factory=Filters)
    max_per_document: int | None = 2
    explain: bool = False
    fusion: Fusion = field(default_factory=Fusion)
    #: Vector and hybrid modes: the query's embedding; in hybrid mode, the ``Fallback`` that
    #: says why there is none (the keyword ranking is returned). None in keyword mode.
    vector: np.ndarray | Fallback | None = None
    #: When the vector leg must be done (hybrid mode with a timeout).
    deadline: Deadline | None = None
    #: Re-order the first ``depth`` with the second-stage ranker (decided on by the caller).
    rerank: bool = False
    #: The caller asked for the answer decision (evidence level, per-passage support).
    evidence: bool = False

    @property
    def query_vector(self) -> np.ndarray | None:
        """The query's embedding, when the search has one."""
        return self.vector if isinstance(self.vector, np.ndarray) else None


def make_query(view: ReadView, actor: Actor, text: str, *, analyzer: str = "exact",
               words: list[str] | None = None, terms: Sequence[str] | None = None,
               filters: Filters | None = None, **options: object) -> Query:
    """The query for ``text`` in ``view``: analysed from the parsed ``words`` as the store's
    ``analyzer`` requires, or (``terms``) one given analysis matched against every passage;
    ``options`` are the other fields of ``Query``."""
    flt = filters or Filters()
    acc = access(view, actor, flt, by_language=terms is None and analyzer == AUTO)
    kq = KeywordQuery.of(terms) if terms is not None else keyword_query(acc, analyzer, words or [], text)
    return Query(actor, text, kq, acc, filters=flt, **options)  # type: ignore[arg-type]
