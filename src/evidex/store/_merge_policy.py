"""Which segments to merge, and merging their postings: pure functions over sizes and arrays.

The policy is log-structured: a write adds a segment; ``MergePolicy.factor`` segments of one
size tier (sizes within a factor of each other) are folded into one, so a term is spread over
O(log n) segments and each passage is rewritten O(log n) times. A write may only pay for merges
in proportion to its own size (``merge_budget``), so a one-document supersede never waits for a
large merge; those wait for a large write or ``optimize``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ._segments import PID, TF, FlatPostings

__all__ = ["MERGE_CHUNK_POSTINGS", "MERGE_FACTOR", "POLICY", "MergePolicy", "merge_budget",
           "merge_postings", "next_merge"]


@dataclass(frozen=True, slots=True)
class MergePolicy:
    #: Segments per tier that are folded together; also how much larger each tier is.
    factor: int = 8
    #: The smallest merge budget of a write: lets a one-document write fold eight segments of
    #: up to ~1,000 passages, but not eight of ~5,600 (those wait for a large write).
    inline_limit: int = 8192
    #: Above this many segments the smallest are merged (within the same budget), so that a
    #: term's postings never come from too many places.
    max_segments: int = 48


POLICY = MergePolicy()
MERGE_FACTOR = POLICY.factor


def merge_budget(written: int, policy: MergePolicy = POLICY) -> int:
    """Passages one ingest call that wrote ``written`` passages may rewrite per merge: large
    batches pay for large merges (amortised log-structured cost), small ones never do."""
    return max(policy.inline_limit, policy.factor * written)


def next_merge(sizes: dict[int, int], budget: int, policy: MergePolicy = POLICY) -> list[int] | None:
    """The segment ids to merge next, given each live segment's passage count (``sizes``, in
    segment-id order), or None when nothing within ``budget`` is due: the first size tier that
    holds ``policy.factor`` segments, else, with more than ``policy.max_segments`` segments,
    the ``factor`` smallest."""
    tiers: dict[int, list[int]] = {}
    for sid, n in sizes.items():
        tiers.setdefault(int(math.log(max(n, 1), policy.factor)), []).append(sid)
    for ids in tiers.values():
        if len(ids) >= policy.factor and sum(sizes[i] for i in ids) <= budget:
            return ids
    smallest = sorted(sizes, key=lambda i: sizes[i])[: policy.factor]
    if len(sizes) > policy.max_segments and sum(sizes[i] for i in smallest) <= budget:
        return smallest
    return None


#: Postings merged per sort: bounds the extra memory of a merge (about 40 bytes per posting)
#: when ``optimize`` folds a million passages (~45 million postings) into one segment.
MERGE_CHUNK_POSTINGS = 4_000_000


def _no_pause() -> None:
    return None


def merge_postings(parts: Sequence[FlatPostings], dead: np.ndarray,
                   pause: Callable[[], None] = _no_pause) -> FlatPostings:
    """The union of several segments' postings without the passages in ``dead``.

    A passage lives in exactly one segment, so within a term the ids of different parts never
    collide, and sorting by (term, passage id) gives the merged lists. Terms are processed in
    ranges of about ``MERGE_CHUNK_POSTINGS`` postings so memory stays bounded.

    ``pause`` is called between steps of a few milliseconds each: a merge that runs beside
    searches and writes in the same process gives way to them there (``SQLiteStore``).
    """
    parts = [p for p in parts if p.terms]
    if not parts:
        return FlatPostings.empty()
    names = sorted(set().union(*(p.terms for p in parts)))
    pause()
    index = {t: i for i, t in enumerate(names)}
    ids = []
    for p in parts:
        pause()
        ids.append(np.fromiter((index[t] for t in p.terms), dtype=np.int64, count=len(p.terms)))
    per_term = np.zeros(len(names), dtype=np.int64)
    for p, tid in zip(parts, ids, strict=True):
        per_term[tid] += np.diff(p.ends, prepend=0)
    cum = np.cumsum(per_term)
    cuts = np.searchsorted(cum, np.arange(MERGE_CHUNK_POSTINGS, int(cum[-1]), MERGE_CHUNK_POSTINGS),
                           side="right")
    bounds = [0, *sorted(set(cuts.tolist()) - {0, len(names)}), len(names)]
    out_terms: list[str] = []
    out_ends: list[np.ndarray] = []
    out_pids: list[np.ndarray] = []
    out_tfs: list[np.ndarray] = []
    written = 0
    for lo, hi in itertools.pairwise(bounds):
        pause()
        t_parts, p_parts, f_parts = [], [], []
        for p, tid in zip(parts, ids, strict=True):
            a, b = np.searchsorted(tid, lo), np.searchsorted(tid, hi)
            if a == b:
                continue
            start = int(p.ends[a - 1]) if a else 0
            stop = int(p.ends[b - 1])
            counts = np.diff(p.ends[a:b], prepend=start)
            t_parts.append(np.repeat(tid[a:b], counts))
            p_parts.append(p.pids[start:stop])
            f_parts.append(p.tfs[start:stop])
        terms_of = np.concatenate(t_parts)
        pids = np.concatenate(p_parts).astype(np.int64)
        tfs = np.concatenate(f_parts)
        if len(dead):
            keep = ~np.isin(pids, dead)
            terms_of, pids, tfs = terms_of[keep], pids[keep], tfs[keep]
        if not len(pids):
            continue
        pause()
        # Ids are < 2**31, so the key is exact and unique. Each part's keys are ascending
        # already (terms sorted, ids sorted within a term): a stable sort (timsort for int64)
        # merges those runs instead of sorting from scratch.
        order = np.argsort((terms_of << 32) | pids, kind="stable")
        terms_of, pids, tfs = terms_of[order], pids[order], tfs[order]
        starts = np.flatnonzero(np.diff(terms_of)) + 1
        out_terms += [names[i] for i in terms_of[np.concatenate(([0], starts))].tolist()]
        out_ends.append(np.append(starts, len(pids)) + written)
        out_pids.append(pids.astype(PID))
        out_tfs.append(tfs.astype(TF, copy=False))
        written += len(pids)
    if not out_terms:
        return FlatPostings.empty()
    return FlatPostings(out_terms, np.concatenate(out_ends).astype(np.int64), np.concatenate(out_pids),
                        np.concatenate(out_tfs))


