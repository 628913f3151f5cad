"""Safe pruning of a BM25 disjunction: candidate subsets that provably hold the selection.

Every function here works on a query's per-term postings, ``present``: (sorted passage ids,
their weights) per term, in query term order. ``top(cand, scores)`` is the caller's selection
(how many passages it takes, its cap per document): whether the selection made from just
these candidates is full, and its lowest score. A function returns (candidate ids, their exact
scores), guaranteed to contain the selection that the exhaustive disjunction would give, or
None when it cannot prove that cheaply (the caller then scores exhaustively).

Exact scores: every path adds a passage's weights in term order starting from 0.0, the same
float operations as exhaustive accumulation (adding 0.0 for an absent term changes nothing),
so pruned and unpruned scores are bit-identical. Bounds are strict ("lowest > bound"): a
passage left out can neither enter the selection nor tie with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ._tuning import Tuning

__all__ = ["Top", "maxscore", "probe", "single_term", "threshold", "top_positions"]

Postings = Sequence[tuple[np.ndarray, np.ndarray]]
#: The caller's selection over candidates: (is it full, its lowest score).
Top = Callable[[np.ndarray, np.ndarray], tuple[bool, float]]
#: Exact scores of sorted candidate ids (``probe`` bound to a query).
ScoreOf = Callable[[np.ndarray], np.ndarray]
#: Term position, candidates -> that term's weights of them (0.0 where absent), or None to
#: binary-search its postings instead.
Lookup = Callable[[int, np.ndarray], "np.ndarray | None"]


def probe(cand: np.ndarray, present: Postings, lookup: Lookup | None = None
          ) -> tuple[np.ndarray, np.ndarray]:
    """Exact scores of ``cand`` (sorted ids), and how many of the terms each contains.

    Each term's weights come from ``lookup`` when it has them (BM25 weights are > 0, so 0.0
    means absent), else from a binary search in its sorted postings."""
    scores = np.zeros(len(cand), dtype=np.float64)
    hits = np.zeros(len(cand), dtype=np.int32)
    for i, (p, w) in enumerate(present):
        if p is cand:  # the candidates are this term's passages (MaxScore's rarest term)
            scores += w
            hits += 1
            continue
        got = lookup(i, cand) if lookup is not None else None
        if got is not None:
            scores += got
            hits += got > 0.0
            continue
        # Needles in the haystack's dtype, or numpy converts the whole postings array per call.
        needles = cand.astype(p.dtype, copy=False)
        idx = np.minimum(np.searchsorted(p, needles), len(p) - 1)
        found = p[idx] == needles
        scores += np.where(found, w[idx], 0.0)
        hits += found
    return scores, hits


def maxscore(present: Postings, uppers: Sequence[float], top: Top, score_of: ScoreOf,
             max_candidates: int) -> tuple[np.ndarray, np.ndarray] | None:
    """MaxScore: score only the passages of the rarer ("essential") terms.

    A passage containing none of the essential terms scores at most the sum of the other terms'
    largest weights (``uppers``). If the selection from the essential terms' passages is full
    and its lowest score is above that bound, it is the selection from all. Otherwise one more
    term becomes essential, until all are (None). Wins when a query holds a very common word,
    whose bound is small because its idf is."""
    order = sorted(range(len(present)), key=lambda i: len(present[i][0]))
    by_df = [present[i][0] for i in order]
    upper = [uppers[i] for i in order]
    for e in range(1, len(by_df)):
        if sum(len(p) for p in by_df[:e]) > max_candidates:
            return None
        cand = np.unique(np.concatenate(by_df[:e])) if e > 1 else by_df[0]
        scores = score_of(cand)
        full, lowest = top(cand, scores)
        if full and lowest > sum(upper[e:]):
            return cand.astype(np.int64), scores
    return None


def single_term(pids: np.ndarray, weights: np.ndarray, order_of: Callable[[int], np.ndarray],
                top: Top, tuning: Tuning) -> tuple[np.ndarray, np.ndarray] | None:
    """One term: passages score their weight alone, so the selection comes from its largest.

    ``order_of(depth)``: positions of at least the ``depth`` largest weights, largest first.
    Every passage weighing at least the depth-th largest is a candidate, ties included (a
    common word has few distinct weights; a cut inside a tie would let the tie-break by
    document id reach outside), so a full selection from them is the selection from all."""
    for depth in tuning.ta_depths:
        if depth >= len(weights):
            return None
        order = order_of(depth)
        at = np.flatnonzero(weights >= weights[order[depth - 1]])
        if len(at) > tuning.ta_max_candidates:
            return None
        cand, scores = pids.take(at), weights.take(at)
        if top(cand, scores)[0]:
            return cand.astype(np.int64), scores
    return None


def threshold(present: Postings, orders: Sequence[Callable[[int], np.ndarray]], top: Top,
              score_of: ScoreOf, tuning: Tuning) -> tuple[np.ndarray, np.ndarray] | None:
    """Fagin's threshold algorithm over impact-ordered postings, for queries of common words.

    Take each term's ``depth`` largest weights (``orders[i](depth)`` as in ``single_term``); a
    passage outside their union weighs at most that term's depth-th largest for every term
    (nothing, once a term is exhausted), so its score is at most their sum. When the selection
    from the union is full and above that bound, nothing else can enter it. MaxScore fails
    exactly when every term is common; the best passages then hold several terms with high
    weights, which is where this stops early."""
    total = sum(len(p) for p, _ in present)
    for depth in tuning.ta_depths:
        if sum(min(len(p), depth) for p, _ in present) * tuning.ta_head_share > total:
            return None
        bound = 0.0
        heads = []
        for (p, w), order_of in zip(present, orders, strict=True):
            order = order_of(depth)
            heads.append(p[order[:depth]])
            if len(p) > depth:
                bound += float(w[order[depth - 1]])
        cand = np.unique(np.concatenate(heads))
        if len(cand) > tuning.ta_max_candidates:
            return None
        scores = score_of(cand)
        full, lowest = top(cand, scores)
        if full and lowest > bound:
            return cand.astype(np.int64), scores
        if all(len(p) <= depth for p, _ in present):
            return None
    return None


def top_positions(weights: np.ndarray, depth: int, tuning: Tuning) -> np.ndarray:
    """Positions of the ``depth`` largest weights (all if fewer), largest first; ties in any
    order (callers use the set and the depth-th value, which ties do not change).

    A strided sample gives a threshold that about twice ``depth`` weights reach; one comparison
    pass finds them and the selection runs over those only, instead of over all the weights.
    Exact: if at least ``depth`` weights reach the threshold, the largest are among them; if
    fewer lie strictly above it, those and enough tied ones are the answer; otherwise (the
    sample misled) the full selection runs."""
    n = len(weights)
    if depth >= n:
        return np.argsort(-weights, kind="stable")
    step = 2 * depth // tuning.sample_above
    if step >= 2:
        sample = weights[::step]
        k = max(1, (2 * depth * len(sample)) // n)  # ~2 x depth weights lie above it
        cut = np.partition(sample, len(sample) - k)[len(sample) - k]
        cand = np.flatnonzero(weights >= cut)
        most = tuning.sample_max_factor * depth
        if len(cand) > most:
            # A tie at the threshold (a common word has few distinct weights): what lies
            # strictly above it is in the answer, and tied positions complete it.
            sub = weights.take(cand)
            above = cand[sub > cut]
            if len(above) < depth:
                head = above[np.argsort(-weights.take(above), kind="stable")]
                return np.concatenate([head, cand[sub == cut][:depth - len(above)]])
            cand = above
        if depth <= len(cand) <= most:
            sub = weights.take(cand)
            idx = np.argpartition(-sub, depth - 1)[:depth]
            return cand.take(idx[np.argsort(-sub.take(idx), kind="stable")])
    neg = -weights
    idx = np.argpartition(neg, depth - 1)[:depth]
    return idx[np.argsort(neg.take(idx), kind="stable")]
