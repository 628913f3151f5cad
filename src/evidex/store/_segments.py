"""In-memory view of the immutable segments, shared by every backend.

A backend stores segments (per-passage arrays plus one postings row per term) and tombstones;
this cache mirrors the per-passage arrays in numpy, indexed by passage id, and keeps an LRU of
decoded postings. Because segments are immutable, a cached postings array can never be stale
while its segment is live; the cache is refreshed only when the store's generation changes, and
then only by the difference (segments added or removed, tombstones since the last refresh).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ._contract import Signature, StoredDocument, StoredPassage, cited_row, flat_document
from ._tenants import Mark
from ._vectors import VectorBlocks

__all__ = [
    "PACK_LIMIT",
    "FlatPostings",
    "PackedPostings",
    "PassageRow",
    "SegmentArrays",
    "SegmentCache",
    "SegmentSource",
    "decode",
    "encode",
    "segment_from_rows",
]

PID = np.dtype("<i4")
TF = np.dtype("<u2")
_NO_PIDS = np.zeros(0, dtype=np.int64)


def encode(a: np.ndarray, dtype: np.dtype) -> bytes:
    return np.ascontiguousarray(a, dtype=dtype).tobytes()


def decode(b: bytes, dtype: np.dtype) -> np.ndarray:
    return np.frombuffer(b, dtype=dtype)


PackedPostings = dict[str, tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True, slots=True)
class SegmentArrays:
    id: int
    pids: np.ndarray
    sigs: np.ndarray
    lengths: np.ndarray
    dkeys: np.ndarray
    numbers: np.ndarray
    #: Postings of a small segment, stored in its own row and held in memory whole; None for a
    #: large segment whose postings are one stored row per term.
    packed: FlatPostings | None = None
    #: Passage vectors of the store's current embedding model, row i for pids[i].
    vectors: np.ndarray | None = None


@dataclass(frozen=True, slots=True)
class FlatPostings:
    """A segment's inverted index as flat arrays: ``terms`` sorted, the postings of
    ``terms[i]`` at ``pids[ends[i - 1]:ends[i]]`` (ascending passage ids) with ``tfs`` alongside.

    This is the stored layout of a small segment (``stored``; ``from_stored`` reads it back, and
    readers look terms up in it by binary search, ``get``) and what merges work on: a merge is
    one sort over all postings, a few array operations instead of Python work per term.
    """

    terms: list[str]
    ends: np.ndarray  # int64, cumulative
    pids: np.ndarray  # int32
    tfs: np.ndarray  # uint16

    @classmethod
    def from_dict(cls, postings: PackedPostings) -> FlatPostings:
        terms = sorted(postings)
        if not terms:
            return cls.empty()
        ends = np.cumsum([len(postings[t][0]) for t in terms], dtype=np.int64)
        return cls(terms, ends, np.concatenate([postings[t][0] for t in terms]).astype(PID, copy=False),
                   np.concatenate([postings[t][1] for t in terms]).astype(TF, copy=False))

    @classmethod
    def from_stored(cls, terms: str, ends: bytes, pids: bytes, tfs: bytes) -> FlatPostings:
        """From the four stored values of a small segment."""
        names = terms.split("\n") if terms else []
        return cls(names, decode(ends, PID).astype(np.int64), decode(pids, PID), decode(tfs, TF))

    @classmethod
    def empty(cls) -> FlatPostings:
        return cls([], np.zeros(0, np.int64), np.zeros(0, PID), np.zeros(0, TF))

    def get(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(passage ids, term frequencies) of ``term``, or None. A binary search in the sorted
        terms: no per-term dictionary to build when a reader loads the segment."""
        i = bisect_left(self.terms, term)
        if i == len(self.terms) or self.terms[i] != term:
            return None
        start = int(self.ends[i - 1]) if i else 0
        end = int(self.ends[i])
        return self.pids[start:end], self.tfs[start:end]

    def count(self, term: str) -> int:
        """``len`` of ``get(term)``'s passage ids (0 when absent), without slicing."""
        i = bisect_left(self.terms, term)
        if i == len(self.terms) or self.terms[i] != term:
            return 0
        return int(self.ends[i]) - (int(self.ends[i - 1]) if i else 0)

    def stored(self) -> tuple[str, bytes, bytes, bytes]:
        """The four values a small segment stores (the layout ``from_stored`` reads)."""
        return "\n".join(self.terms), encode(self.ends, PID), encode(self.pids, PID), encode(self.tfs, TF)

    def items(self) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
        """(term, passage ids, term frequencies) per term: a large segment's stored rows."""
        start = 0
        for term, end in zip(self.terms, self.ends.tolist(), strict=True):
            yield term, self.pids[start:end], self.tfs[start:end]
            start = end


#: Reads the rows of the given keys (a backend's query), for the row caches.
RowFetch = Callable[[list[int]], Iterable[Sequence[Any]]]

#: One new passage of a write: (passage id, signature, length, document key, number, term counts).
PassageRow = tuple[int, int, int, int, int, dict[str, int]]


def segment_from_rows(rows: Sequence[PassageRow]) -> tuple[list[np.ndarray], FlatPostings]:
    """The per-passage columns and the inverted index of a new segment (rows in increasing
    passage-id order, so every term's list comes out sorted)."""
    inverted: dict[str, tuple[list[int], list[int]]] = {}
    for pid, _s, _l, _d, _n, terms in rows:
        for term, tf in terms.items():
            entry = inverted.get(term)
            if entry is None:
                inverted[term] = ([pid], [tf])
            else:
                entry[0].append(pid)
                entry[1].append(tf)
    cols = np.array([r[:5] for r in rows], dtype=np.int64).T
    postings = FlatPostings.from_dict({
        t: (np.array(p, dtype=np.int32), np.minimum(np.array(f), 65535).astype(np.uint16))
        for t, (p, f) in inverted.items()
    })
    return list(cols), postings


class SegmentSource(Protocol):
    """What a backend answers inside one read snapshot for the cache to refresh itself."""

    def segment_ids(self) -> list[int]: ...

    def segment_arrays(self, ids: Sequence[int]) -> Iterable[SegmentArrays]: ...

    def tombstones_after(self, seq: int) -> tuple[np.ndarray, int]: ...

    def all_signatures(self) -> list[Signature]: ...

    def vector_model(self) -> tuple[str, int]:
        """(embedding model id or "none", dimension) recorded in the store."""
        ...

    def fetch_postings(self, term: str) -> list[tuple[np.ndarray, np.ndarray]]:
        """Postings of ``term`` in the large (row-per-term) segments."""
        ...

    def tenant_moves(self) -> dict[str, Mark]:
        """The tenants marked as moving or moved away (see ``_tenants``)."""
        ...


class SegmentCache:
    def __init__(self, max_postings_bytes: int = 256 << 20) -> None:
        self.generation: int | None = None
        self.vector_model: str | None = None
        self.vectors: VectorBlocks | None = None
        self.segments: dict[int, np.ndarray] = {}
        self.packed: dict[int, FlatPostings] = {}
        self.tomb_seq = 0
        self.sig = np.full(0, -1, dtype=np.int32)
        self.length = np.zeros(0, dtype=np.int32)
        self.dkey = np.zeros(0, dtype=np.int32)
        self.number = np.zeros(0, dtype=np.int32)
        #: The id space: one past the largest passage id loaded. The arrays above have room
        #: beyond it; readers see them cut to it (``columns``).
        self.size = 0
        self.by_tenant: dict[str, list[Signature]] = {}
        #: Tenants marked as moving or moved to another server, as of ``generation``.
        self.moves: dict[str, Mark] = {}
        #: Signature id -> generation of the last write this reader saw add or remove one of its
        #: passages (``Signature.version``).
        self.sig_version: dict[int, int] = {}
        self.doc_ids: dict[int, str] = {}  # dkey -> document id; dkeys are never reused
        # Row caches: a passage row never changes while its id lives (a new version gets new
        # ids), so it may be kept across generations; a document row changes on supersede, so
        # that cache lives for one generation only. Both keep plain tuples (see ``passages``).
        self.passage_rows: OrderedDict[int, tuple[Any, ...]] = OrderedDict()
        self.document_rows: OrderedDict[int, tuple[Any, ...]] = OrderedDict()
        self.max_passage_rows = 20_000
        #: Passage id -> what a hit cites of it (``cited``), under the same bound.
        self.cited_rows: OrderedDict[int, tuple[Any, ...]] = OrderedDict()
        #: Term -> its postings rows in the large (row-per-term) segments. Those segments are
        #: immutable and change only with large merges and ``optimize``; a small write adds a
        #: packed segment, which ``postings`` reads from memory. So the rows stay valid across
        #: small writes (keyed by the set of large segments), and the first query after a write
        #: does not fetch each common word's megabytes again.
        self._postings: OrderedDict[str, list[tuple[np.ndarray, np.ndarray]]] = OrderedDict()
        self._postings_bytes = 0
        self._max_postings_bytes = max_postings_bytes
        self._large: tuple[int, ...] = ()
        #: The passage ids each refresh found dead (tombstoned), oldest first, so a cache of
        #: per-segment derived arrays can drop exactly those instead of recomputing: see
        #: ``deaths_since``. ``_deaths_base`` counts the entries trimmed from the front.
        self._deaths: list[np.ndarray] = []
        self._deaths_base = 0
        self._deaths_size = 0
        self._epoch = object()  # a new one whenever the arrays are rebuilt from scratch

    def columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The signature, length, document key and passage number of every id, cut to the id
        space. Ranking sizes its id-space work by these arrays (the visible-id array, dense
        frequency arrays, thresholds between paths), so they must not include the room the
        arrays keep for growth."""
        n = self.size
        return self.sig[:n], self.length[:n], self.dkey[:n], self.number[:n]

    def _grow(self, max_pid: int) -> None:
        need = max_pid + 1
        self.size = max(self.size, need)
        if need <= len(self.sig):
            return
        # A quarter of room: the slack is memory only (readers see ``columns``), and growth
        # stays geometric, so copying is amortised over the writes.
        cap = max(need + need // 4, 1024)
        for name, fill in (("sig", -1), ("length", 0), ("dkey", 0), ("number", 0)):
            old = getattr(self, name)
            new = np.full(cap, fill, dtype=np.int32)
            new[: len(old)] = old
            setattr(self, name, new)

    def refresh(self, source: SegmentSource, generation: int) -> None:
        """Bring the arrays to ``generation``; must run inside the snapshot that reported it."""
        if generation == self.generation:
            return
        model, dim = source.vector_model()
        if model != self.vector_model:
            # Another model's vectors (after a re-embed), or the first load: rebuild everything
            # from scratch but the passage rows, which no model changes (see ``passage_rows``).
            rows = self.passage_rows
            self.__init__(self._max_postings_bytes)  # type: ignore[misc]
            self.passage_rows = rows
            self.vector_model = model
            self.vectors = VectorBlocks(dim) if model != "none" else None
        full = self.generation is None  # first load (or after a reset): every signature is new
        live = set(source.segment_ids())
        removed = [s for s in self.segments if s not in live]
        added = sorted(live - set(self.segments))
        # Which signatures gained or lost a live passage since the last refresh. A merge moves
        # live passages from removed to added segments without changing them, so only passages
        # that were not live before, and live ones that are gone now, count.
        touched: set[int] = set()
        moved = np.concatenate([self.segments[s] for s in removed]) if removed else _NO_PIDS
        moved_sigs = self.sig[moved].copy()
        # Removal first: a merge moves live passages from removed to added segments.
        for seg in removed:
            pids = self.segments.pop(seg)
            self.sig[pids] = -1
            self.packed.pop(seg, None)
            if self.vectors is not None:
                self.vectors.kill(pids)
        for arr in source.segment_arrays(added):
            if len(arr.pids):
                self._grow(int(arr.pids.max()))
                self.sig[arr.pids] = arr.sigs
                self.length[arr.pids] = arr.lengths
                self.dkey[arr.pids] = arr.dkeys
                self.number[arr.pids] = arr.numbers
                new = arr.sigs if not len(moved) else arr.sigs[~np.isin(arr.pids, moved)]
                touched.update(np.unique(new).tolist())
            self.segments[arr.id] = arr.pids
            if self.vectors is not None and arr.vectors is not None:
                self.vectors.add(arr.pids, arr.sigs, arr.vectors)
            if arr.packed is not None:
                self.packed[arr.id] = arr.packed
        if len(moved):  # live before, not re-added by a merge: gone
            gone = moved_sigs[(self.sig[moved] == -1) & (moved_sigs >= 0)]
            touched.update(np.unique(gone).tolist())
        dead, self.tomb_seq = source.tombstones_after(self.tomb_seq)
        dead = dead[dead < len(self.sig)]
        dead_sigs = self.sig[dead]
        touched.update(np.unique(dead_sigs[dead_sigs >= 0]).tolist())
        self.sig[dead] = -1
        if self.vectors is not None:
            self.vectors.kill(dead)
        self._log_deaths(dead)
        large = tuple(sorted(seg for seg in self.segments if seg not in self.packed))
        if large != self._large:
            self._postings.clear()
            self._postings_bytes = 0
            self._large = large
        self.document_rows.clear()
        self.by_tenant = {}
        for s in source.all_signatures():
            version = self.sig_version.get(s.id)
            if full or version is None or s.id in touched:
                version = self.sig_version[s.id] = generation
            # ``replace(s, version=version)`` without its per-field introspection:
            self.by_tenant.setdefault(s.tenant, []).append(Signature(
                s.id, s.tenant, s.groups, s.visibility, s.language, s.tags, s.passages, s.total_length,
                version))
        self.moves = source.tenant_moves()
        self.generation = generation

    def install(self, segment: SegmentArrays, dead: Sequence[int], generation: int,
                signatures: list[Signature], model: tuple[str, int]) -> bool:
        """Bring the arrays to ``generation`` from what the write that committed it has in hand
        (its new segment, the passages it killed, the signature rows as it committed them)
        instead of reading them back. Only when the cache holds the generation just before
        that write's: then the write is the whole difference. Otherwise (another write came
        between, or another model's vectors) nothing changes and the next reader refreshes
        from the store."""
        if self.generation != generation - 1 or model[0] != self.vector_model:
            return False
        self.refresh(_Written([*self.segments, segment.id], segment, dead, generation, signatures, model,
                              self.moves), generation)
        return True

    def _log_deaths(self, dead: np.ndarray) -> None:
        self._deaths.append(np.unique(dead))
        self._deaths_size += len(dead)
        while self._deaths_size > _DEATHS_LOGGED and len(self._deaths) > 1:
            self._deaths_size -= len(self._deaths.pop(0))
            self._deaths_base += 1

    def deaths_mark(self) -> tuple[object, int]:
        """A position in the log of deaths, for ``deaths_since``."""
        return self._epoch, self._deaths_base + len(self._deaths)

    def deaths_since(self, mark: tuple[object, int]) -> np.ndarray | None:
        """The sorted ids of passages that died after ``mark``, or None when that is no longer
        known (the log was trimmed, or the arrays were rebuilt): the caller must recompute.

        A live passage's segment, access signature and length never change, so what is derived
        from a segment for one allowed set changes only by these deaths: new passages come in
        new segments, and a merge moves live passages without changing them."""
        epoch, count = mark
        if epoch is not self._epoch or count < self._deaths_base:
            return None
        since = self._deaths[count - self._deaths_base:]
        if not since:
            return _NO_PIDS
        return since[0] if len(since) == 1 else np.unique(np.concatenate(since))

    def passages(self, pids: Iterable[int], fetch: RowFetch) -> dict[int, StoredPassage]:
        """The passages with these ids (``fetch`` reads the rows not cached yet).

        Rows are cached as the tuples the database returned and turned into objects on the way
        out: the garbage collector stops tracking a tuple of strings and numbers, but walks
        every cached object on each full collection, which would then pause any call."""
        return self._cached(self.passage_rows, pids, fetch, tuple, StoredPassage.from_row)

    def remember_passages(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Keep the rows of passages a write just committed (in ``PASSAGE_SELECT``'s column
        order), unless they would push out most of what readers cached."""
        if len(rows) > self.max_passage_rows // 4:
            return
        cache = self.passage_rows
        for r in rows:
            cache[r[0]] = r
        _trim(cache, self.max_passage_rows)

    def documents(self, dkeys: Iterable[int], fetch: RowFetch) -> dict[int, StoredDocument]:
        """The documents with these keys, cached like ``passages`` (as parsed flat tuples)."""
        return self._cached(self.document_rows, dkeys, fetch, flat_document, StoredDocument.from_flat)

    def cited(self, pids: Sequence[int], passage_rows: RowFetch, document_rows: RowFetch
              ) -> list[tuple[Any, ...]]:
        """What a hit cites of each passage in ``pids`` (``CITED`` tuples, in order), made once
        per passage id from its passage and document rows (cached as in ``passages`` and
        ``documents``; the fetches read the rows not cached yet).

        A passage's citation never changes while its id lives: a document's row changes only
        when the document is superseded or deleted, which ends its passages' ids (ids are never
        reused). So, like passage rows, these are kept across generations. Each is taken once,
        as in ``_cached``."""
        cache = self.cited_rows
        got = {pid: row for pid in pids if (row := cache.get(pid)) is not None}
        missing = [pid for pid in pids if pid not in got]
        if missing:
            passages = self._cached(self.passage_rows, missing, passage_rows, tuple, _row)
            documents = self._cached(self.document_rows, {p[1] for p in passages.values()}, document_rows,
                                     flat_document, _row)
            for pid in missing:
                p = passages[pid]
                got[pid] = cache[pid] = cited_row(p, documents[p[1]])
            _trim(cache, self.max_passage_rows)
        return [got[pid] for pid in pids]

    def _cached(self, cache: OrderedDict[int, tuple[Any, ...]], keys: Iterable[int], fetch: RowFetch,
                flat: Callable[[Sequence[Any]], tuple[Any, ...]],
                build: Callable[[Any], Any]) -> dict[int, Any]:
        # Readers of one store share the cache without a lock, and a write adds to it
        # (``remember_passages``): each row is taken once (``get``), and built from what was
        # taken or fetched, never looked up again, so another thread's eviction in between
        # cannot drop a passage from the answer.
        got: dict[int, tuple[Any, ...]] = {}
        missing = []
        for k in {int(k) for k in keys}:
            row = cache.get(k)
            if row is None:
                missing.append(k)
            else:
                got[k] = row
        if missing:
            for r in fetch(missing):
                got[r[0]] = cache[r[0]] = flat(r)
        _trim(cache, self.max_passage_rows)
        return {k: build(row) for k, row in got.items()}

    def postings(self, source: SegmentSource, term: str) -> list[tuple[np.ndarray, np.ndarray]]:
        return self._large_rows(source, term) + [
            hit for seg in self.packed.values() if (hit := seg.get(term)) is not None]

    def frequency(self, source: SegmentSource, term: str) -> int:
        """How many postings ``term`` has (those of ``postings``), counted without slicing the
        packed segments: conflict detection weighs hundreds of words per write."""
        return (sum(len(p) for p, _ in self._large_rows(source, term))
                + sum(seg.count(term) for seg in self.packed.values()))

    def _large_rows(self, source: SegmentSource, term: str) -> list[tuple[np.ndarray, np.ndarray]]:
        """``term``'s postings rows in the large segments (kept in an LRU by size)."""
        rows = self._postings.get(term)
        if rows is not None:
            self._postings.move_to_end(term)
        elif not self._large:
            rows = []  # every segment keeps its postings in its row: there are none to read
        else:
            rows = self._postings[term] = source.fetch_postings(term)
            self._postings_bytes += sum(p.nbytes + t.nbytes for p, t in rows) + 64
            while self._postings_bytes > self._max_postings_bytes and len(self._postings) > 1:
                _, old = self._postings.popitem(last=False)
                self._postings_bytes -= sum(p.nbytes + t.nbytes for p, t in old) + 64
        return rows


@dataclass(frozen=True)
class _Written:
    """A ``SegmentSource`` answering from one committed write (``SegmentCache.install``)."""

    live: list[int]
    segment: SegmentArrays
    dead: Sequence[int]
    generation: int
    signatures: list[Signature]
    model: tuple[str, int]
    moves: dict[str, Mark]  # unchanged: a write of documents never marks a tenant

    def segment_ids(self) -> list[int]:
        return self.live

    def segment_arrays(self, ids: Sequence[int]) -> Iterable[SegmentArrays]:
        assert list(ids) == [self.segment.id], ids  # the write added this one segment
        return [self.segment]

    def tombstones_after(self, seq: int) -> tuple[np.ndarray, int]:
        if not self.dead:
            return _NO_PIDS, seq
        return np.asarray(self.dead, dtype=np.int64), self.generation

    def all_signatures(self) -> list[Signature]:
        return self.signatures

    def vector_model(self) -> tuple[str, int]:
        return self.model

    def fetch_postings(self, term: str) -> list[tuple[np.ndarray, np.ndarray]]:
        raise NotImplementedError("a refresh reads no postings rows")

    def tenant_moves(self) -> dict[str, Mark]:
        return self.moves


#: Passage deaths kept in the log (``SegmentCache.deaths_since``): about 10,000 one-document
#: supersedes' worth; a reader that falls further behind recomputes its derived arrays.
_DEATHS_LOGGED = 100_000


#: Segments of at most this many passages keep their postings packed in the segment row (one
#: write); larger ones store a row per term, which readers fetch one term at a time. Equal to
#: the merge policy's inline limit, so what a small write merges is written packed.
PACK_LIMIT = 8192


def _row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A cached row as it is (what ``cited`` builds from)."""
    return row


def _trim(cache: OrderedDict[int, tuple[Any, ...]], most: int) -> None:
    """Drop the oldest entries beyond ``most``; another thread may be trimming too."""
    while len(cache) > most:
        try:
            cache.popitem(last=False)
        except KeyError:  # emptied meanwhile
            return
