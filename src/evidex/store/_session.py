"""Read your writes: what one caller's reads must include, and which server answered them.

A store with read replicas (``_replicas``) serves reads from servers that may lag its primary.
A caller that has just written must still see its write: every write commits a store
*generation*, and a read that names one (``at_least``) is served only by a server that has
replayed it. A ``ReadSession`` is one caller's record, an explicit value the caller hands to
every read and write it makes (``Store.read(session=...)``, ``apply``, ``remove``, ...; above
the store, ``KnowledgeBase``'s methods take ``session=``): one request of the service (its API
key), one ``evidex`` command, or a block of library calls (``KnowledgeBase.session()``). There
is no ambient session: a read that is handed none includes its store handle's own writes. The
session

* collects the generation of every write made in it (``wrote``), per *lineage* (the primary a
  store's servers copy: generations of different primaries are unrelated numbers);
* answers what a read must include (``need``): the newest of those, of an explicit
  ``at_least``, and of what ``RecentWrites`` remembers of the same caller's earlier requests;
* records which server answered each read, at which generation (``served``), for the
  response to say so.

``RecentWrites`` remembers, for a few seconds, the newest generation each caller wrote per
lineage, in a small SQLite file, so that the service's worker processes (and successive
``evidex`` commands) share it: a write through one worker and a read through another still
read the write.

A session is shared by the threads of one request (the service runs a request's store calls
in worker threads); its records are appends and max-updates of small dicts under the GIL.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

__all__ = ["ReadSession", "RecentWrites", "Served"]


@dataclass(frozen=True, slots=True)
class Served:
    """One read: the server that answered it and the generation its snapshot had."""

    server: str
    generation: int


class RecentWrites:
    """The newest generation each caller wrote per lineage, kept ``seconds`` after the write.

    In a SQLite file shared by processes (``path``), or in this process only (no path). A
    lookup costs one indexed read of a small file that stays in the page cache."""

    def __init__(self, seconds: float, path: str | Path | None = None) -> None:
        self.seconds = float(seconds)
        self._path = str(path) if path is not None else None
        self._mem: dict[tuple[str, str], tuple[int, float]] = {}
        self._local = threading.local()
        self._lock = threading.Lock()
        if self._path is not None:
            with self._db() as db:
                db.execute("CREATE TABLE IF NOT EXISTS writes (caller TEXT NOT NULL, lineage TEXT NOT NULL, "
                           "generation INTEGER NOT NULL, at REAL NOT NULL, PRIMARY KEY (caller, lineage))")

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        db = getattr(self._local, "db", None)
        if db is None:
            assert self._path is not None
            db = sqlite3.connect(self._path, timeout=10, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=OFF")  # a lost entry costs one read from the primary
            self._local.db = db
        yield db

    def get(self, caller: str, lineage: str) -> int | None:
        now = time.time()
        if self._path is None:
            with self._lock:
                hit = self._mem.get((caller, lineage))
            return hit[0] if hit is not None and now - hit[1] <= self.seconds else None
        with self._db() as db:
            row = db.execute("SELECT generation, at FROM writes WHERE caller = ? AND lineage = ?",
                             (caller, lineage)).fetchone()
        return int(row[0]) if row is not None and now - row[1] <= self.seconds else None

    def newest(self, caller: str) -> int | None:
        """The newest generation ``caller`` wrote in the last ``seconds``, whatever the lineage
        (a caller writes to its own tenant's store only): what the service may show that caller
        of the store's generations, since it is a number of its own write."""
        now = time.time()
        if self._path is None:
            with self._lock:
                found = [g for (c, _), (g, at) in self._mem.items()
                         if c == caller and now - at <= self.seconds]
            return max(found) if found else None
        with self._db() as db:
            row = db.execute("SELECT MAX(generation) FROM writes WHERE caller = ? AND at >= ?",
                             (caller, now - self.seconds)).fetchone()
        return int(row[0]) if row is not None and row[0] is not None else None

    def put(self, caller: str, lineage: str, generation: int) -> None:
        now = time.time()
        if self._path is None:
            with self._lock:
                old = self._mem.get((caller, lineage))
                if old is None or now - old[1] > self.seconds or old[0] <= generation:
                    self._mem[(caller, lineage)] = (generation, now)
                if len(self._mem) > 10_000:  # callers that wrote long ago
                    self._mem = {k: v for k, v in self._mem.items() if now - v[1] <= self.seconds}
            return
        with self._db() as db:
            # Newest generation wins; an expired entry is replaced whatever it held.
            db.execute("INSERT INTO writes (caller, lineage, generation, at) VALUES (?, ?, ?, ?) "
                       "ON CONFLICT (caller, lineage) DO UPDATE SET generation = excluded.generation, "
                       "at = excluded.at WHERE writes.generation <= excluded.generation "
                       "OR writes.at < excluded.at - ?", (caller, lineage, generation, now, self.seconds))


@dataclass
class ReadSession:
    """One caller's reads and writes (see the module docstring)."""

    #: Lineage -> a generation every read of that lineage must include.
    at_least: dict[str, int] = field(default_factory=dict)
    #: Lineage -> the newest generation a write in this session committed.
    written: dict[str, int] = field(default_factory=dict)
    #: Every read made in the session, in order.
    served: list[Served] = field(default_factory=list)
    memory: RecentWrites | None = None
    caller: str = ""

    def need(self, lineage: str) -> int | None:
        """The generation a read of ``lineage`` must include now (None: any)."""
        found = [g for g in (self.at_least.get(lineage), self.written.get(lineage)) if g is not None]
        if self.memory is not None:
            remembered = self.memory.get(self.caller, lineage)
            if remembered is not None:
                found.append(remembered)
        return max(found) if found else None

    def requiring(self, lineage: str, generation: int) -> ReadSession:
        """This session needing ``generation`` of ``lineage`` as well, for one call: it shares
        this session's records (writes, reads, memory), so what the call does is recorded here."""
        need = max(generation, self.at_least.get(lineage, generation))
        return replace(self, at_least={**self.at_least, lineage: need})

    def wrote(self, lineage: str, generation: int) -> None:
        if generation > self.written.get(lineage, -1):
            self.written[lineage] = generation
        if self.memory is not None:
            self.memory.put(self.caller, lineage, generation)

    def read(self, server: str, generation: int) -> None:
        self.served.append(Served(server, generation))
