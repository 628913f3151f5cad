"""Choosing the best passages: order, per-document cap and deterministic ties.

Order is (score descending, document id ascending, passage number ascending). Only a small
prefix of the candidates is ever sorted: every candidate whose score reaches a cut near the
m-th best is taken (so ties at the cut are never split arbitrarily), and m grows only when the
prefix left the list short. Any cut gives the same selection once the prefix holds enough
hits: every candidate left out scores below every one taken, so it would come after them and
cannot use up a document's cap before them. Document ids (strings) are looked up only for runs
of equal scores (passages of equal length and term frequencies; rank fusion).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import pairwise

import numpy as np

__all__ = ["select_top"]


def select_top(
    scores: np.ndarray,
    dkeys: np.ndarray,
    numbers: np.ndarray,
    limit: int,
    max_per_document: int | None,
    doc_ids: Callable[[Iterable[int]], dict[int, str]],
    pids: np.ndarray | None = None,
    ties: bool = True,
) -> list[int]:
    """Indices into ``scores`` of the selected candidates, best first.

    ``dkeys`` and ``numbers`` are per candidate, or, with ``pids`` (the candidates' passage
    ids), per passage id: then only the prefix that can be selected is looked up, never every
    candidate (tens of thousands, at random places of arrays over the whole id space).

    ``ties=False`` leaves equal scores in any order, for a caller that needs only how many are
    selected and the lowest selected score: neither depends on how ties are broken (within a
    document the cap keeps equal scores either way, and across documents the cut falls on one
    score), and breaking them means looking up document ids."""
    n = len(scores)
    if n == 0 or limit <= 0:
        return []
    m = min(n, max(32, 2 * limit))
    while True:
        idx = _prefix(scores, m) if m < n else np.arange(n)
        at = idx if pids is None else pids.take(idx)
        dk, nm = dkeys.take(at), numbers.take(at)
        neg = -scores.take(idx)  # ascending order is best first
        if len(idx) <= _SMALL:
            chosen = _select_small(neg.tolist(), dk.tolist(), nm.tolist(),
                                   doc_ids if ties else None, max_per_document, limit)
            if len(chosen) >= limit or m >= n:
                return idx.take(chosen[:limit]).tolist()
        else:
            chosen = _select_large(neg, dk, nm, doc_ids if ties else None, max_per_document, limit)
            if len(chosen) >= limit or m >= n:
                return idx.take(chosen).tolist()
        m = min(n, m * 4)


#: A candidate list this many times longer than the prefix wanted is cut at a score read off a
#: sample (``_prefix``) rather than at its m-th best: finding that among thousands of
#: candidates was the largest part of a selection (benchmarks/RESULTS-history.md, "Plain search speed").
_SAMPLE_FROM = 16
#: The sample is every (m / this)-th candidate, cut at its this-th best score: about m
#: candidates reach it (fewer than the limit under the cap makes the next, longer prefix).
_SAMPLE_HEAD = 8


def _prefix(scores: np.ndarray, m: int) -> np.ndarray:
    """Positions, in candidate order, of every candidate whose score reaches a cut near the
    m-th best: the m-th best itself, or for a long list the ``_SAMPLE_HEAD``-th best of every
    ``m // _SAMPLE_HEAD``-th candidate (a partition of a quarter of the candidates or less)."""
    n = len(scores)
    step = m // _SAMPLE_HEAD
    if n >= _SAMPLE_FROM * m and step >= 2 and n // step >= _SAMPLE_HEAD:
        sample = scores[::step]
        cut = np.partition(sample, len(sample) - _SAMPLE_HEAD)[len(sample) - _SAMPLE_HEAD]
    else:
        cut = np.partition(scores, n - m)[n - m]  # the m-th best score
    return (scores >= cut).nonzero()[0]


def _select_large(neg: np.ndarray, dk: np.ndarray, nm: np.ndarray,
                  doc_ids: Callable[[Iterable[int]], dict[int, str]] | None,
                  cap: int | None, limit: int) -> np.ndarray:
    """``_select_small`` on arrays, for long prefixes (limit 100 takes ~200 entries): the same
    head, found before ties are broken, with the cap and the tie break as whole-array calls,
    and the tie break only when the head holds ties."""
    order = neg.argsort(kind="stable")  # the method skips np.argsort's dispatch
    s = neg[order]
    kept = _kept(dk[order], cap)
    end = len(s) if len(kept) < limit else int(np.searchsorted(s, s[kept[limit - 1]], side="right"))
    if doc_ids is None or not (s[1:end] == s[:end - 1]).any():
        return order[kept[:limit]]
    head, hs = order[:end], s[:end]
    tied = hs[1:] == hs[:-1]
    in_run = np.zeros(end, dtype=bool)
    in_run[1:] |= tied
    in_run[:-1] |= tied
    hk = dk[head]
    tied_keys = sorted(set(hk[in_run].tolist()))  # a few keys: cheaper than np.unique
    ids = doc_ids(tied_keys)
    keys = np.array(tied_keys, dtype=hk.dtype)
    by_id = sorted(range(len(keys)), key=lambda i: ids.get(tied_keys[i], ""))
    rank_of_key = np.empty(len(keys), dtype=np.int64)
    rank_of_key[by_id] = np.arange(len(keys))
    # Entries outside every run get some rank: their score alone places them.
    rank = rank_of_key[np.minimum(np.searchsorted(keys, hk), len(keys) - 1)]
    head = head[np.lexsort((nm[head], rank, hs))]
    return head[_kept(dk[head], cap)[:limit]]


def _kept(dk: np.ndarray, cap: int | None) -> np.ndarray:
    """Positions of the entries of ``dk`` (document keys in rank order) that are among the
    first ``cap`` of their document."""
    n = len(dk)
    if cap is None or cap >= n:
        return np.arange(n)
    by_doc = dk.argsort(kind="stable")  # keeps rank order inside each document
    sorted_dk = dk[by_doc]
    first_of_run = np.empty(n, dtype=bool)
    first_of_run[:1] = True
    np.not_equal(sorted_dk[1:], sorted_dk[:-1], out=first_of_run[1:])
    if first_of_run.all():  # every document once (always so for whole documents)
        return np.arange(n)
    if cap == 1:  # the common case: the best passage of each document
        return np.sort(by_doc[first_of_run])
    run_start = np.maximum.accumulate(np.where(first_of_run, np.arange(n), 0))
    occurrence = np.empty(n, dtype=np.int64)
    occurrence[by_doc] = np.arange(n) - run_start
    return np.flatnonzero(occurrence < cap)


#: Prefixes up to this many entries are ordered in plain Python (``_select_small``), longer ones
#: on arrays (``_select_large``): where the two cost the same on SciFact's candidates (the
#: figures are in benchmarks/RESULTS.md, session 12). Either gives the same selection.
_SMALL = 64


def _select_small(neg: list[float], dk: list[int], nm: list[int],
                  doc_ids: Callable[[Iterable[int]], dict[int, str]] | None,
                  cap: int | None, limit: int) -> list[int]:
    """The selection from a short prefix (typically ~33 entries), on Python lists: on arrays
    this short a dozen numpy calls cost more than the work. Order: score, then document id for
    equal scores, then passage number; at most ``cap`` entries per document.

    Only the head that can be selected is ordered fully (the prefix holds twice the entries
    the limit needs, more under a cap). The head ends with the whole run of equal scores at the
    limit-th entry kept under the cap. How many entries the cap keeps at each score does not
    depend on how ties are ordered (a document keeps its ``cap`` best scores either way), so
    the head is found before ties are broken, and when it holds no ties the entries kept on
    the way are the answer."""
    order = sorted(range(len(neg)), key=neg.__getitem__)
    if cap is not None and len(set(dk)) == len(dk):
        cap = None  # every candidate from another document (whole documents): the cap drops none
    kept, end = _capped(order, neg, dk, cap, limit)
    if doc_ids is None:
        return kept
    head = order[:end]
    tied = {dk[i] for a, b in pairwise(head) if neg[a] == neg[b] for i in (a, b)}
    if not tied:
        return kept
    ids = doc_ids(tied)
    # Entries outside every run never compare beyond their (distinct) score.
    head.sort(key=lambda i: (neg[i], ids.get(dk[i], ""), nm[i]))
    return _capped(head, neg, dk, cap, limit)[0]


def _capped(order: list[int], neg: list[float], dk: list[int], cap: int | None,
            limit: int) -> tuple[list[int], int]:
    """The entries of ``order`` (sorted by ``neg``) kept under ``cap``, from the start until
    ``limit`` are kept and every entry tied with the limit-th kept one has been walked; and
    how many entries of ``order`` that walk took."""
    n = len(order)
    if cap is None or cap >= n:
        end = min(limit, n)
        while 0 < end < n and neg[order[end]] == neg[order[end - 1]]:
            end += 1
        return order[:end], end
    used: dict[int, int] = {}
    kept: list[int] = []
    end = 0
    while end < n:
        i = order[end]
        if len(kept) >= limit and neg[i] != neg[order[end - 1]]:
            break
        c = used.get(dk[i], 0)
        if c < cap:
            used[dk[i]] = c + 1
            kept.append(i)
        end += 1
    return kept, end
