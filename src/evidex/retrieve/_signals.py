"""The query-time signals adaptive fusion weighs (``_adaptive.QuerySignals``), read from the two
legs of one hybrid search.

Everything here is already at hand after both legs ran: each query term's readable passages
(``term_pids``, whose sizes are the permission-exact document frequencies), the legs' ranked
windows, and each passage's access signature, which carries its document's language. Nothing is
read from the store beyond the actor's signature list.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ..query import content_terms
from ._adaptive import QuerySignals
from ._fusion import Leg

__all__ = ["TOP", "query_signals"]

#: How many of a leg's best passages the signals look at (coverage, language, peak).
TOP = 10
#: Coverage is the best over this many keyword passages (the first may be a near-duplicate).
_COVERAGE_DEPTH = 3


def query_signals(keyword: Leg | None, vector: Leg, terms: Sequence[str],
                  term_pids: Mapping[str, np.ndarray] | None, visible: int,
                  language_of_pid: Mapping[int, str | None], query_language: str | None) -> QuerySignals:
    """``visible``: the number of passages the actor may read under the filters (BM25's N);
    ``language_of_pid``: the language of (at least) the vector leg's best passages."""
    wanted = content_terms(list(terms))
    known = (sum(1 for t in wanted if len((term_pids or {}).get(t, ()))) / len(wanted)) if wanted else 0.0
    if keyword is None or not len(keyword.pids):
        coverage, peak = 0.0, 0.0
    else:
        coverage = _coverage(keyword.pids[:_COVERAGE_DEPTH], terms, term_pids or {}, visible)
        top = keyword.scores[:TOP]
        peak = float((top[0] - top[-1]) / top[0]) if len(top) > 1 and top[0] > 0 else 1.0
    foreign = 0.0
    if query_language is not None:
        langs = [language_of_pid.get(int(p)) for p in vector.pids[:TOP]]
        stated = [lg for lg in langs if lg]
        if stated:
            foreign = sum(1 for lg in stated if _base(lg) != query_language) / len(stated)
    return QuerySignals(round(coverage, 4), round(foreign, 4), round(peak, 4), query_language,
                        round(known, 4))


def _base(tag: str) -> str:
    """The primary language subtag: "de-CH" -> "de"."""
    return tag.split("-", 1)[0].lower()


def _coverage(pids: np.ndarray, terms: Sequence[str], term_pids: Mapping[str, np.ndarray],
              visible: int) -> float:
    """The best IDF-weighted share of content terms contained in one of ``pids``. A term no
    readable passage contains has the highest IDF, so a query of mostly unknown words (another
    language's words) has a low coverage even when a name in it matches."""
    wanted = content_terms(list(terms))
    if not wanted:
        return 0.0
    n = max(visible, 1)
    total = 0.0
    got = np.zeros(len(pids))
    for t in wanted:
        p = term_pids.get(t)
        df = 0 if p is None else len(p)
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        total += idf
        if df:
            needles = pids.astype(p.dtype, copy=False)
            got += idf * (p.take(p.searchsorted(needles), mode="clip") == needles)
    return float(got.max() / total) if total > 0 else 0.0
