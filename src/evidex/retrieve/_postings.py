"""A term's postings as the ranking core reads them: masked to the allowed passages, kept per
large segment across writes, and as a dense frequency array for probing.

Three facts about the store make what is derived here reusable across writes:
* a live passage's segment, access signature, length and term frequencies never change;
* passage ids are never reused, and a write brings new passages only in new segments (a merge
  moves live passages into a new segment without changing them);
* the read view logs which passages died since a mark (``Deaths``).
Large raw postings arrays are recognised by identity (held weakly: the segment cache owns
them, and an array's id is only trusted while the array itself is alive).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ._access import Allowed
from ._cache import WeightsCache
from ._tuning import Tuning

__all__ = ["Deaths", "Pairs", "Part", "allowed_parts", "drop", "frequencies"]

#: Raw postings of a term: (sorted passage ids, term frequencies) per segment.
Postings = Sequence[tuple[np.ndarray, np.ndarray]]
Mark = tuple[object, int]


class Deaths(Protocol):
    """Where a snapshot stands in the log of passage deaths (``ReadView`` has both)."""

    deaths_mark: Mark

    def deaths_since(self, mark: Mark) -> np.ndarray | None: ...


@dataclass(frozen=True, slots=True)
class Pairs:
    """Each posting's (tf, passage length) as one index, tf * width + length, into the table of
    weights of every pair with tf <= tf_max and length < width (``_bm25.pair_weights``)."""

    index: np.ndarray
    tf_max: int
    width: int


@dataclass(frozen=True, slots=True)
class Part:
    """One segment's allowed postings of a term: sorted passage ids and their frequencies, and
    for a part kept across writes, when they share few distinct (tf, length) pairs, ``pairs``:
    its weights in every later visible collection are then one gather from a small table."""

    pids: np.ndarray
    tfs: np.ndarray
    pairs: Pairs | None = None


def allowed_parts(cache: WeightsCache, term: str, parts: Postings, allowed: Allowed,
                  sig_of_pid: np.ndarray, length_of_pid: np.ndarray, deaths: Deaths | None,
                  tuning: Tuning) -> list[Part]:
    """Each raw part's postings of live passages the actor may read, for a common term.

    With ``deaths``, a large part's allowed postings are kept per (signature table, term):
    under one table they change only by the passages that died since, so after a write the
    actor can read (new statistics, so new weights) they are reused minus those, not masked
    again from the raw postings."""
    size = len(sig_of_pid)
    key = ("parts", allowed.table.tobytes(), term)
    old = cache.get(key) if deaths is not None else None
    dead = deaths.deaths_since(old[0]) if old is not None and deaths is not None else None
    reuse: dict[int, tuple[weakref.ref[np.ndarray], Part]] = {}
    if old is not None and dead is not None:
        reuse = {id(r): (ref, part) for ref, part in old[1] if (r := ref()) is not None}
    vis: np.ndarray | None = None
    out: list[Part] = []
    kept: list[tuple[weakref.ref[np.ndarray], Part]] = []
    for raw, tf in parts:
        hit = reuse.get(id(raw))
        large = deaths is not None and len(raw) * tuning.part_factor >= size
        if hit is not None and hit[0]() is raw and dead is not None:
            part = _without(hit[1], dead)
        else:
            if len(raw) * tuning.visible_factor < size:
                # A small part (a recent write): gathers of its own ids beat building the
                # visible-id array over the whole id space after each write.
                keep = allowed.mask(sig_of_pid, raw)
            else:
                if vis is None:
                    vis = visible(cache, allowed, sig_of_pid)
                keep = vis.take(raw)  # take() gathers faster than fancy indexing
            # Positions, then take(): faster than boolean indexing on a scattered mask.
            at = np.flatnonzero(keep)
            part = Part(raw.take(at), tf.take(at))
            if large and len(part.pids):
                part = Part(part.pids, part.tfs, pairs_of(part.tfs, length_of_pid.take(part.pids), tuning))
        out.append(part)
        if large:
            kept.append((weakref.ref(raw), part))
    if kept and deaths is not None:
        nbytes = sum(p.pids.nbytes + p.tfs.nbytes + (p.pairs.index.nbytes if p.pairs else 0) + 64
                     for _, p in kept)
        cache.put(key, (deaths.deaths_mark, kept), nbytes)
    return out


def visible(cache: WeightsCache, allowed: Allowed, sig_of_pid: np.ndarray) -> np.ndarray:
    """Whether each passage id is live and allowed, as one array over the id space: one gather
    per posting instead of a signature lookup and a table lookup. Built once per visible
    collection; ids added since are not visible (the collection's key would differ)."""
    key = ("visible", allowed.key)
    hit = cache.get(key)
    if hit is not None and len(hit) >= len(sig_of_pid):
        return hit
    table = allowed.table
    vis = table.take(np.minimum(sig_of_pid + 1, len(table) - 1))
    cache.put(key, vis, vis.nbytes, ("visible", table.tobytes()))  # older collections never return
    return vis


def _without(part: Part, dead: np.ndarray) -> Part:
    """``part`` without the passages in ``dead`` (itself when none of them is in it)."""
    pids, tfs, index = drop(part.pids, dead, part.tfs, None if part.pairs is None else part.pairs.index)
    if pids is part.pids:
        return part
    pairs = None if part.pairs is None else Pairs(index, part.pairs.tf_max, part.pairs.width)
    return Part(pids, tfs, pairs)


def pairs_of(tfs: np.ndarray, lengths: np.ndarray, tuning: Tuning) -> Pairs | None:
    """The (tf, length) pair index of postings with these frequencies and passage lengths, or
    None when the table of pairs would not be much smaller than the postings."""
    width, tf_max = int(lengths.max()) + 1, int(tfs.max())
    if (tf_max + 1) * width * tuning.grid_factor > len(tfs):
        return None
    index = tfs.astype(np.int32)  # < len(tfs) / grid_factor: no overflow
    np.multiply(index, width, out=index)
    np.add(index, lengths, out=index)
    return Pairs(index, tf_max, width)


def drop(pids: np.ndarray, dead: np.ndarray, *aligned: np.ndarray | None) -> tuple[Any, ...]:
    """``pids`` and the arrays aligned with it (None stays None) without the passages in
    ``dead`` (both sorted; few dead: binary search). The same objects when none is there."""
    if not len(dead) or not len(pids):
        return (pids, *aligned)
    lo, hi = np.searchsorted(dead, [int(pids[0]), int(pids[-1]) + 1])
    if lo == hi:
        return (pids, *aligned)
    needles = dead[lo:hi].astype(pids.dtype)
    idx = np.minimum(np.searchsorted(pids, needles), len(pids) - 1)
    at = idx[pids.take(idx) == needles]
    if not len(at):
        return (pids, *aligned)
    return (np.delete(pids, at), *(None if a is None else np.delete(a, at) for a in aligned))


@dataclass(frozen=True, slots=True)
class _Frequencies:
    """A term's frequency in every passage id (0 where absent), the large raw parts folded
    into it (by identity) and the deaths mark of the snapshot that folded in last."""

    tfs: np.ndarray
    folded: dict[int, weakref.ref[np.ndarray]]
    mark: Mark | None


def frequencies(cache: WeightsCache, term: str, postings: Callable[[str], Postings], df: int,
                size: int, mark: Mark | None, tuning: Tuning) -> np.ndarray | None:
    """The term's frequency in every passage id (uint16, 0 where absent), or None when the
    term is too rare (its allowed postings, ``df``, cover less than 1/``dense_probe_factor``
    of the ``size`` ids), the array too large for the cache, or the term not yet probed
    ``dense_after_probes`` times.

    Raw frequencies, not weights: they serve every actor and stay valid across writes. A
    write only adds the postings of new segments (merged ones hold passages already written,
    with the same values) and dead passages are never candidates, so a later snapshot writes
    its new parts into the same array: in place, since every snapshot reads the same value
    at every id it can see. With the same ``mark`` nothing is new, and the postings are not
    even looked up."""
    if df * tuning.dense_probe_factor < size or size * 2 * tuning.dense_max_share > cache.budget:
        return None
    entry = cache.get(("tfs", term))
    if entry is not None and mark is not None and entry.mark == mark and len(entry.tfs) >= size:
        return entry.tfs
    if entry is None:
        probes = (cache.get(("probes", term)) or 0) + 1
        if probes < tuning.dense_after_probes:
            cache.put(("probes", term), probes, 0)
            return None
        tfs, folded = np.zeros(size + size // 8, dtype=np.uint16), {}
    else:
        tfs, folded = entry.tfs, entry.folded
        if len(tfs) < size:  # new passages since: room for them and for some more
            tfs = np.zeros(size + size // 8, dtype=np.uint16)
            tfs[:len(entry.tfs)] = entry.tfs
    kept: dict[int, weakref.ref[np.ndarray]] = {}
    for raw, tf in postings(term):
        ref = folded.get(id(raw))
        known = ref is not None and ref() is raw
        if not known:
            tfs[raw] = tf
        if len(raw) * tuning.part_factor >= size:
            kept[id(raw)] = ref if known else weakref.ref(raw)  # type: ignore[assignment]
    cache.put(("tfs", term), _Frequencies(tfs, kept, mark), tfs.nbytes)
    return tfs
