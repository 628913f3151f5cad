"""``hash-test``: a tiny deterministic embedder FOR UNIT TESTS ONLY.

It exists so tests of indexing, storage and fusion can run in milliseconds without loading a
neural model. Its vectors carry no meaning beyond shared words and character trigrams, so it
must never be the default configuration, be offered to users as a real model, or appear in a
benchmark or quality figure.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from evidex.embed._base import check_texts, empty, finish

MODEL_ID = "hash-test"
DIMENSION = 64
_WORD = re.compile(r"\w+")
#: Vector for a text without features (empty or only punctuation/space), so it is never NaN.
_FALLBACK = np.full(DIMENSION, 1.0 / np.sqrt(DIMENSION), dtype=np.float32)


@lru_cache(maxsize=65536)
def _bucket(feature: str) -> tuple[int, float]:
    """Bucket and sign of one feature.

    blake2b rather than ``hash()``: Python salts ``hash()`` per process, which would make vectors
    differ between runs. The sign bit halves the bias that collisions add to dot products.
    """
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % DIMENSION, (1.0 if (value >> 32) & 1 else -1.0)


def _vector(text: str) -> npt.NDArray[np.float32]:
    lowered = text.lower()
    vector = np.zeros(DIMENSION, dtype=np.float32)
    for word in _WORD.findall(lowered):
        index, sign = _bucket("w:" + word)
        vector[index] += sign
        padded = f" {word} "
        for start in range(len(padded) - 2):
            index, sign = _bucket("c:" + padded[start : start + 3])
            vector[index] += 0.5 * sign
    if float(np.linalg.norm(vector)) < 1e-6:
        return _FALLBACK.copy()
    return vector


class HashingEmbedder:
    """Feature hashing of lower-cased word unigrams and character trigrams into 64 dimensions.

    For tests only (see the module docstring): deterministic across processes and platforms,
    dependency-free and instant, with unit-norm rows like the real embedders.
    """

    model_id: str = MODEL_ID
    dimension: int = DIMENSION

    def _embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        items = check_texts(texts)
        if not items:
            return empty(DIMENSION)
        return finish(np.stack([_vector(text) for text in items]), len(items), DIMENSION)

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed queries exactly like passages (the test embedder is symmetric)."""
        return self._embed(texts)

    def embed_passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed passages exactly like queries (the test embedder is symmetric)."""
        return self._embed(texts)
