"""The vector leg: exact cosine search over exactly the passages the actor may read, with the
language bias of a multilingual model taken out.

A multilingual model puts a question closer to every passage in its own language than to the
same content in another: a German question about a fact stated only on an English page finds
German pages about the same topic first, and the English page falls out of the window. That
bias is, to first order, a constant per question and passage language: the question's mean
cosine with the passages of that language. So when the actor may read passages in several
languages, each language's cosines are re-based: a passage in language L scores

    cos(q, p) + CENTRING * (max_M q . mean_M - q . mean_L)

(``mean_L``: the mean vector of the readable passages in L, from the store's per-signature
sums, so nothing about passages the actor may not read enters). Passages in the question's
nearest language keep their cosine exactly; the others are raised by most of how much farther
the question is from their language as a whole (not all of it: a translation of the page that
answers would otherwise rank as high as the page itself). In a one-language collection nothing
changes.
Each language is searched on its own (its best ``window``), so the shift is exact whatever the
backend's search does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..query import language_key
from ..store import ReadView
from ._access import Access
from ._keyword_leg import Candidates

__all__ = ["CENTRING", "LanguageShift", "language_shift", "vector_candidates"]

#: Share of each language's distance taken out, fitted on development data (shop-dev and
#: encyclopedia dev recall@6 over same- and cross-language questions; benchmarks/RESULTS.md):
#: all of it (1.0) finds as many pages in all, but loses same-language ones to translations.
CENTRING = 0.75


@dataclass(frozen=True, slots=True)
class LanguageShift:
    """Per language key of the readable passages: what is added to a passage's cosine with the
    question (0 for the question's nearest language; empty for one language)."""

    by_language: Mapping[str, float] = field(default_factory=dict)

    def of(self, language: str | None) -> float:
        return self.by_language.get(language_key(language), 0.0)


def _groups(access: Access) -> dict[str, list[int]]:
    """Allowed signature ids per language key."""
    out: dict[str, list[int]] = {}
    for sig, lang in access.language_of_sig.items():
        out.setdefault(language_key(lang), []).append(sig)
    return out


def language_shift(view: ReadView, access: Access, query: np.ndarray) -> LanguageShift:
    """The re-basing of each readable language for ``query`` (see the module docstring)."""
    groups = _groups(access)
    if len(groups) < 2:
        return LanguageShift()
    sums = view.vector_sums([s for sigs in groups.values() for s in sigs])
    means: dict[str, float] = {}
    for key, sigs in groups.items():
        parts = [sums[s] for s in sigs if s in sums]
        n = sum(c for _, c in parts)
        if n:
            means[key] = float(np.dot(sum(t for t, _ in parts) / n, query))
    if len(means) < 2:
        return LanguageShift()
    top = max(means.values())
    return LanguageShift({k: CENTRING * (top - m) for k, m in means.items()})


def vector_candidates(view: ReadView, access: Access, query: np.ndarray, window: int,
                      shift: LanguageShift) -> Candidates:
    """At least the ``window`` most similar allowed passages of each readable language (plus
    ties at the cut), scored by their cosine re-based by ``shift`` (``language_shift``).

    Only the vector blocks of allowed signatures are scored, so the list is never under-filled
    by filtering after the search, and other actors' data cannot change it.
    """
    if not shift.by_language:
        sigs = (np.flatnonzero(access.allowed.table[:-1]) - 1).tolist()
        pids, scores = view.vector_search(sigs, query, window)
        return Candidates(pids, scores.astype(np.float64))
    parts_p, parts_s = [], []
    for key, sigs in sorted(_groups(access).items()):
        pids, scores = view.vector_search(sigs, query, window)
        parts_p.append(pids)
        parts_s.append(scores.astype(np.float64) + shift.by_language.get(key, 0.0))
    return Candidates(np.concatenate(parts_p), np.concatenate(parts_s))
