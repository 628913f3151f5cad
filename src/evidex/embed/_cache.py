"""A persistent cache of passage vectors keyed by (model id, SHA-256 of the embedded text).

Embedding is by far the slowest step of ingest, and most of it is repeated work: a new document
version usually changes a few paragraphs, and an evaluation re-embeds the same corpus on every
run. The cache is its own
SQLite file, separate from any store, so it survives re-created stores and temporary
evaluation stores alike; it holds only vectors of texts, never access data.

The same file keeps other results that are pure functions of a text and as wasteful to
recompute (``derived``/``put_derived``, e.g. the values conflict detection reads from a
passage), under a kind that names the code that computed them: never a text, never access data.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

__all__ = ["CACHE_ENV", "EmbeddingCache", "cache_dir", "default_cache_path"]

CACHE_ENV = "EVIDEX_CACHE_DIR"


def cache_dir() -> Path:
    """``$EVIDEX_CACHE_DIR``, else ``evidex`` under ``$XDG_CACHE_HOME`` or ``~/.cache``.

    Holds the vector cache and the model graphs evidex derives from packaged weights.
    """
    base = os.environ.get(CACHE_ENV)
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = Path(xdg) if xdg else Path.home() / ".cache"
    return root / "evidex"


def default_cache_path() -> Path:
    """``embeddings.sqlite`` in :func:`cache_dir`."""
    return cache_dir() / "embeddings.sqlite"


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, sha256 TEXT NOT NULL, "
            "dim INTEGER NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (model, sha256)) WITHOUT ROWID"
        )
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS derived (kind TEXT NOT NULL, sha256 TEXT NOT NULL, "
            "data TEXT NOT NULL, PRIMARY KEY (kind, sha256)) WITHOUT ROWID"
        )
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def embed(
        self,
        model_id: str,
        dimension: int,
        texts: Sequence[str],
        compute: Callable[[list[str]], np.ndarray],
        batch: int = 64,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Vectors for ``texts`` (float32, one row each), computing only the uncached ones."""
        keys = [text_key(t) for t in texts]
        out = np.zeros((len(texts), dimension), dtype=np.float32)
        unique = list(dict.fromkeys(keys))
        found = self._found(model_id, dimension, unique)
        todo = [k for k in unique if k not in found]
        self.hits += len(unique) - len(todo)
        self.misses += len(todo)
        text_of = dict(zip(keys, texts, strict=True))
        for i in range(0, len(todo), batch):
            chunk = todo[i : i + batch]
            vecs = np.asarray(compute([text_of[k] for k in chunk]), dtype=np.float32)
            with self._lock:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO vectors (model, sha256, dim, vec) VALUES (?, ?, ?, ?)",
                    [(model_id, k, dimension, v.tobytes()) for k, v in zip(chunk, vecs, strict=True)],
                )
            for k, v in zip(chunk, vecs, strict=True):
                found[k] = v
            if progress:
                progress(len(chunk))
        for i, k in enumerate(keys):
            out[i] = found[k]
        return out

    def cached(self, model_id: str, dimension: int, texts: Sequence[str]) -> np.ndarray | None:
        """Vectors for ``texts`` when every one is cached, else None (nothing is computed): a
        caller with a deadline answers from the cache without handing work to a thread."""
        keys = [text_key(t) for t in texts]
        found = self._found(model_id, dimension, list(dict.fromkeys(keys)))
        if len(found) < len(set(keys)):
            return None
        return np.array([found[k] for k in keys], dtype=np.float32).reshape(len(keys), dimension)

    def _found(self, model_id: str, dimension: int, unique: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors of the text keys ``unique``, by key."""
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for i in range(0, len(unique), 500):
                chunk = unique[i : i + 500]
                q = (
                    f"SELECT sha256, vec FROM vectors WHERE model = ? AND dim = ? AND sha256 IN "
                    f"({','.join('?' * len(chunk))})"
                )
                for k, v in self._conn.execute(q, [model_id, dimension, *chunk]):
                    found[k] = np.frombuffer(v, dtype=np.float32)
        return found

    def derived(self, kind: str, keys: Sequence[str]) -> dict[str, str]:
        """What ``put_derived`` kept under ``kind`` for these text keys (SHA-256 hex digests
        of the texts), by key; a key with nothing kept is absent."""
        found: dict[str, str] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            for i in range(0, len(unique), 500):
                chunk = unique[i : i + 500]
                marks = ",".join("?" * len(chunk))
                q = f"SELECT sha256, data FROM derived WHERE kind = ? AND sha256 IN ({marks})"
                found.update(self._conn.execute(q, [kind, *chunk]))
        return found

    def put_derived(self, kind: str, rows: dict[str, str]) -> None:
        """Keep ``data`` per text key under ``kind``: a kind must change whenever the code that
        computes the data does, so a result of older code is never read back."""
        with self._lock:
            # One transaction: the connection commits every statement on its own otherwise.
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany("INSERT OR REPLACE INTO derived (kind, sha256, data) VALUES (?, ?, ?)",
                                       [(kind, k, v) for k, v in rows.items()])
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def close(self) -> None:
        self._conn.close()
