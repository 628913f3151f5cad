"""Choosing the best passages: order, per-document cap and deterministic ties.

Order is (score descending, document id ascending, passage number ascending). Only a small
prefix of the candidates is ever sorted: every candidate whose score reaches the m-th best is
taken (so ties at the cut are never split arbitrarily), and m grows only when the cap per
document left the list short. Document ids (strings) are looked up only for runs of equal
scores, which are rare with BM25 but common with rank fusion.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

__all__ = ["select_top"]


def _order(
    idx: np.ndarray,
    neg: np.ndarray,
    dkeys: np.ndarray,
    numbers: np.ndarray,
    doc_ids: Callable[[Iterable[int]], dict[int, str]],
) -> list[int]:
    order = idx[np.argsort(neg[idx], kind="stable")]
    s = neg[order]
    ties = np.flatnonzero(s[1:] == s[:-1])
    out = order.tolist()
    if len(ties) == 0:
        return out
    ids = doc_ids(int(k) for k in np.unique(dkeys[order[np.union1d(ties, ties + 1)]]))
    i = 0
    while i < len(out):
        j = i + 1
        while j < len(out) and s[j] == s[i]:
            j += 1
        if j - i > 1:
            out[i:j] = sorted(out[i:j], key=lambda k: (ids[int(dkeys[k])], int(numbers[k])))
        i = j
    return out


def select_top(
    scores: np.ndarray,
    dkeys: np.ndarray,
    numbers: np.ndarray,
    limit: int,
    max_per_document: int | None,
    doc_ids: Callable[[Iterable[int]], dict[int, str]],
) -> list[int]:
    """Indices into ``scores`` of the selected candidates, best first."""
    n = len(scores)
    if n == 0:
        return []
    cap = max_per_document or n
    m = min(n, max(32, 2 * limit))
    neg = -scores
    while True:
        if m < n:
            kth = np.partition(neg, m - 1)[m - 1]
            idx = np.flatnonzero(neg <= kth)
        else:
            idx = np.arange(n)
        out: list[int] = []
        per_doc: dict[int, int] = {}
        dk = dkeys.tolist() if n <= 4 * m else None
        for i in _order(idx, neg, dkeys, numbers, doc_ids):
            d = dk[i] if dk is not None else int(dkeys[i])
            c = per_doc.get(d, 0)
            if c < cap:
                per_doc[d] = c + 1
                out.append(i)
                if len(out) == limit:
                    return out
        if m >= n:
            return out
        m = min(n, m * 4)
