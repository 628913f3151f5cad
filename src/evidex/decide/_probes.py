"""How close a text is to questions in general: its hubness, read from probe questions.

Some passages sit close to almost any question in the embedding space: short ones ("ERR-410:
Account deleted. This account has been deleted."), generic ones. In a collection they are the
nearest passage to every question nothing else answers, with a cosine as high as a real match,
so a raw cosine cannot tell "on topic" from "close to everything" (the hubness of
high-dimensional nearest neighbours; cross-domain similarity local scaling corrects for it the
same way). ``hubness`` measures it: the mean cosine of a text's ``HUB_K`` closest probe
questions, a shipped spread of everyday, encyclopedic and customer questions, keyword queries
and claims in English and German about nothing in particular (``evidex/data/probes.txt``,
written for evidex). A text close to many of them is close to questions in general; the
decision subtracts part of that (``_topic``).

The probes' vectors come from the caller (the store's model, query side, through the query
cache), once per process and model.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

import numkong
import numpy as np

__all__ = ["HUB_K", "Probes", "cosines", "probe_texts"]

#: A text's hubness: the mean cosine of this many of its closest probe questions.
HUB_K = 10


@cache
def probe_texts() -> tuple[str, ...]:
    """The shipped probe questions."""
    raw = resources.files("evidex").joinpath("data", "probes.txt").read_text("utf-8")
    return tuple(line.strip() for line in raw.splitlines()
                 if line.strip() and not line.startswith("#"))


def cosines(rows: np.ndarray, others: np.ndarray) -> np.ndarray:
    """``rows`` x ``others`` dot products (float64), with numkong's single-threaded SIMD kernel
    as the store's vector search uses: these products are small, and a multi-threaded BLAS on
    a busy machine (a service's workers, other processes) spends far longer waking its threads
    than multiplying (measured: 30 x 491 x 384 in 40 ms with two OpenBLAS threads under load,
    1.4 ms here)."""
    out = np.empty((len(rows), len(others)), dtype=np.float64)
    numkong.cdist(np.ascontiguousarray(rows, dtype=np.float32),
                  np.ascontiguousarray(others, dtype=np.float32), metric="dot", out=out)
    return out


class Probes:
    """The probe questions' vectors (unit rows, query side of one model)."""

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)

    def hubness(self, rows: np.ndarray) -> np.ndarray:
        """Per row of ``rows`` (unit vectors, passage side): the mean cosine of its ``HUB_K``
        closest probes."""
        if not len(rows):
            return np.zeros(0, dtype=np.float64)
        sims = cosines(rows, self.vectors)
        k = min(HUB_K, sims.shape[1])
        return np.partition(sims, sims.shape[1] - k, axis=1)[:, -k:].mean(axis=1, dtype=np.float64)
