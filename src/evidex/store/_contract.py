"""The store contract every backend (SQLite, PostgreSQL) implements.

The store owns durability and atomicity; it knows nothing of ranking. What it hands the ranking
core is deliberately low-level (postings arrays per term, per-passage arrays of access signature,
length and document, per-signature counts) so that permission-exact BM25 statistics are *sums*
the retriever computes for each actor, never numbers baked into the index.

Vocabulary:

* access signature: (tenant, groups, visibility, language, tags) of a document. Every filter
  evidex applies before ranking is a predicate over signatures, so "what may this actor see under
  these filters" is a set of small integers.
* segment: an immutable batch of postings written by one transaction. New writes add segments;
  superseded passages are tombstoned (their signature becomes -1 in the passage arrays) until a
  merge rewrites segments without them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..model import Conflict, Document, IngestReport, Passage, StoreError
from ._feedback import AnswerRecord, FeedbackRecord, HandoffRecord
from ._reports import EvalRecord, NoticeRecord
from ._runs import RunRecord
from ._session import ReadSession
from ._tenants import Mark

__all__ = [
    "CITED",
    "DocumentWrite",
    "HistoryEntry",
    "MissingVectors",
    "PassageWrite",
    "ReadView",
    "Signature",
    "SourceEntry",
    "Store",
    "StoredDocument",
    "StoredPassage",
    "cited_row",
]


class MissingVectors(StoreError):
    """A write lacked vectors for a store with an embedding model (the caller re-embeds)."""


@dataclass(frozen=True, slots=True)
class PassageWrite:
    passage: Passage
    terms: dict[str, int]  # index term -> term frequency in this passage
    length: int  # number of index terms: the BM25 document length
    flags: tuple[str, ...] = ()
    vector: np.ndarray | None = None  # the passage's embedding, when the store has a model


@dataclass(frozen=True, slots=True)
class DocumentWrite:
    document: Document
    split: str  # the split configuration, e.g. "paragraph" or "heading:2000"
    passages: tuple[PassageWrite, ...]

    def index_key(self) -> tuple[str, str, str, str]:
        """What must be equal for a re-ingest to be a no-op."""
        d = self.document
        meta = json.dumps(d.metadata(), sort_keys=True, ensure_ascii=False)
        return d.version, d.content_sha256, meta, self.split


@dataclass(frozen=True, slots=True)
class Signature:
    id: int
    tenant: str
    groups: frozenset[str]
    visibility: str
    language: str | None
    tags: frozenset[str]
    passages: int
    total_length: int
    #: The generation of the last write that added or removed a passage of this signature, as
    #: seen by this reader (set by the reader's cache): equal versions of every signature an
    #: actor may read mean an unchanged visible collection, so its ranking caches stay valid.
    version: int = 0


@dataclass(frozen=True, slots=True)
class StoredDocument:
    dkey: int
    tenant: str
    id: str
    version: str
    content_sha256: str
    title: str | None
    source_url: str | None
    language: str | None
    visibility: str
    groups: frozenset[str]
    tags: tuple[str, ...]
    published_at: str | None
    split: str
    indexed_at: str

    @classmethod
    def from_row(cls, r: Sequence[object]) -> StoredDocument:
        """From (dkey, tenant, doc_id, version, content_sha256, meta JSON, split, indexed_at),
        the column order both backends select."""
        return cls.from_flat(flat_document(r))

    @classmethod
    def from_flat(cls, t: tuple[object, ...]) -> StoredDocument:
        """From ``flat_document``'s tuple (what the row caches keep, see ``SegmentCache``)."""
        return cls(*t[:9], frozenset(t[9]), *t[10:])  # type: ignore[arg-type]


def flat_document(r: Sequence[object]) -> tuple[object, ...]:
    """A document row with its meta JSON parsed, as a tuple of strings, numbers and tuples of
    strings: the garbage collector stops tracking such a tuple, unlike an object."""
    return (r[0], r[1], r[2], r[3], r[4], *_meta(r[5]), r[6], r[7])  # type: ignore[arg-type]


@functools.lru_cache(maxsize=4096)
def _meta(text: str) -> tuple[object, ...]:
    # Conflict detection reads every document row of the tenant on each write: most are
    # unchanged, so their meta text is parsed once.
    m = json.loads(text)
    return (m["title"], m["source_url"], m["language"], m["visibility"], tuple(sorted(m["groups"])),
            tuple(m["tags"]), m["published_at"])



@dataclass(frozen=True, slots=True)
class StoredPassage:
    pid: int
    dkey: int
    number: int
    start: int
    end: int
    text: str
    heading_path: tuple[str, ...]
    anchor: str | None
    page: int | None
    flags: tuple[str, ...]

    @classmethod
    def from_row(cls, r: Sequence[object]) -> StoredPassage:
        """From (pid, dkey, number, start, end, text, heading_path JSON, anchor, page, flags
        JSON), the column order both backends select."""
        return cls(r[0], r[1], r[2], r[3], r[4], r[5], _json_tuple(r[6]), r[7], r[8],  # type: ignore[arg-type]
                   _json_tuple(r[9]))


#: What a search hit cites of one passage (``ReadView.cited``), in this order: the fields of
#: ``model.Hit`` before its score and rank, then its page and flags.
CITED = ("document_id", "version", "content_sha256", "passage", "quote", "start", "end",
         "heading_path", "anchor", "title", "source_url", "language", "page", "flags")


def cited_row(p: Sequence[object], d: Sequence[object]) -> tuple[object, ...]:
    """The ``CITED`` tuple of a passage row (``StoredPassage.from_row``'s columns) and its
    document's ``flat_document`` tuple: strings, numbers and tuples of strings, which the
    garbage collector stops tracking, like the rows it is made of."""
    return (d[2], d[3], d[4], p[2], p[5], p[3], p[4], _json_tuple(p[6]), p[7],  # type: ignore[arg-type]
            d[5], d[6], d[7], p[8], _json_tuple(p[9]))  # type: ignore[arg-type]


@functools.lru_cache(maxsize=4096)
def _json_tuple(text: str) -> tuple[str, ...]:
    # A search decodes two per hit and conflict detection hundreds per write; the passages of a
    # document repeat a few heading paths, most have no flags, so each text is parsed once.
    return tuple(json.loads(text))


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    version: str
    content_sha256: str
    text: str
    split: str
    superseded_at: str
    meta: str = ""  # the version's metadata JSON (``Document.metadata``), for copying stores


@dataclass(frozen=True, slots=True)
class SourceEntry:
    """Which configured source a document came from, and how its source item looked then.

    Written by ``Store.apply`` in the transaction that writes the document, and deleted with
    the document by ``Store.remove``, so an entry never claims more than the store holds. Sync
    uses the entries to find documents gone from a source and to skip re-reading items whose
    ``stamp`` is unchanged.
    """

    source: str  # the source id of the configuration
    tenant: str
    doc_id: str
    item: str  # the file path or URL the document was read from
    stamp: str  # an opaque change marker of the item ("" when it must be re-read next time)
    content_sha256: str  # the fingerprint of the document text written with this entry


class ReadView(Protocol):
    """A consistent snapshot: everything read through one view belongs to one committed state."""

    #: Per-passage arrays indexed by passage id; ``sig[pid] == -1`` for dead or unused ids.
    sig: np.ndarray
    length: np.ndarray
    dkey: np.ndarray
    number: np.ndarray
    #: Changes with every committed write; equal generations mean equal content.
    generation: object
    #: This snapshot's position in the log of passage deaths (see ``deaths_since``).
    deaths_mark: tuple[object, int]

    def signatures(self, tenant: str) -> Sequence[Signature]: ...

    def moved(self, tenant: str) -> Mark | None:
        """How ``tenant`` is marked as moving or moved to another server in this snapshot
        (None: it lives here); see ``_tenants``."""
        ...

    def tenant_generation(self, tenant: str) -> int | None:
        """The generation of ``tenant``'s newest write in this snapshot (None: none recorded):
        what a tenant is shown instead of ``generation``, which moves with every tenant's
        writes (see ``_tenants``)."""
        ...

    def postings(self, term: str) -> Sequence[tuple[np.ndarray, np.ndarray]]:
        """(passage ids, term frequencies) per live segment; may include dead passages."""
        ...

    def frequency(self, term: str) -> int:
        """How many passage ids ``postings(term)`` holds in all."""
        ...

    def deaths_since(self, mark: tuple[object, int]) -> np.ndarray | None:
        """Sorted ids of the passages that died between ``mark`` (an earlier ``deaths_mark``)
        and this snapshot, or None if that is no longer known."""
        ...

    def doc_ids(self, dkeys: Iterable[int]) -> dict[int, str]: ...

    def documents(self, dkeys: Iterable[int]) -> dict[int, StoredDocument]: ...

    def passages(self, pids: Iterable[int]) -> dict[int, StoredPassage]: ...

    def cited(self, pids: Sequence[int]) -> list[tuple[Any, ...]]:
        """What a search hit cites of each live passage in ``pids``: ``CITED`` tuples, in the
        order of ``pids``. (``passages`` and ``documents`` give the same data as objects; a
        search needs only these fields of its few hits, and builds nothing else per hit.)"""
        ...

    def document(self, tenant: str, doc_id: str) -> StoredDocument | None: ...

    def tenant_documents(self, tenant: str) -> list[StoredDocument]:
        """Every current document of ``tenant``, by id."""
        ...

    def document_text(self, dkey: int) -> str: ...

    def passage(self, dkey: int, number: int) -> StoredPassage | None: ...

    def document_passages(self, dkey: int) -> list[StoredPassage]:
        """The document's live passages in passage order (for copying a store)."""
        ...

    def passages_of(self, dkeys: Sequence[int]) -> dict[int, list[StoredPassage]]:
        """``document_passages`` of many documents in one read (copying and comparing a tenant)."""
        ...

    def texts_of(self, dkeys: Sequence[int]) -> dict[int, str]:
        """``document_text`` of many documents in one read."""
        ...

    def histories_of(self, tenant: str, doc_ids: Sequence[str]) -> dict[str, list[HistoryEntry]]:
        """``history`` of many documents of one tenant in one read (each newest first)."""
        ...

    def passage_vectors(self, pids: Iterable[int]) -> dict[int, np.ndarray]:
        """Stored vectors of live passages (empty for a keyword-only store)."""
        ...

    def passage_matrix(self, pids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``passage_vectors`` as one array: (the ids among ``pids`` with a stored vector, in
        the given order; their vectors as float32 rows). Reading a tenant's vectors for a
        matrix product costs no Python work per passage."""
        ...

    def vector_search(self, sigs: Iterable[int], query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(passage ids, cosine) of at least the best ``k`` live rows of these signatures,
        with every row tied to the k-th."""
        ...

    def vector_sums(self, sigs: Iterable[int]) -> dict[int, tuple[np.ndarray, int]]:
        """Per signature among ``sigs`` that has live rows: (the sum of its live passages'
        vectors as float64, how many). Summed over exactly the signatures an actor may read,
        they give the mean vector of what the actor may read (per language, the decision's
        language centring), never anything about the rest."""
        ...

    def history(self, tenant: str, doc_id: str) -> list[HistoryEntry]: ...


class Store(Protocol):
    analyzer: str
    embedder: str  # embedding model id, or "none" for a keyword-only store
    dimension: int
    #: Names the server a read came from (``_session.Served``).
    label: str
    #: The history of writes the generations count (see ``_session``).
    lineage: str
    #: The newest generation a write through this handle committed (0: none).
    written: int

    def unchanged(self, writes: Sequence[DocumentWrite]) -> set[tuple[str, str]]: ...

    def live_passages(self) -> list[tuple[int, str]]: ...

    def switch_vectors(self, model: str, dimension: int, vectors: dict[int, np.ndarray],
                       session: ReadSession | None = None) -> bool: ...

    def reindex(self, analyzer: str, session: ReadSession | None = None) -> int:
        """Rebuild the keyword index with ``analyzer`` in one transaction (see ``_reindex``);
        the number of passages analysed."""
        ...

    def read(self, at_least: int | None = None, latest: bool = False,
             session: ReadSession | None = None) -> AbstractContextManager[ReadView]:
        """A consistent snapshot holding at least generation ``at_least`` and what ``session``
        (the caller's: see ``_session``) needs; ``latest``: every write committed before the
        call. A single server always holds all three; a store with replicas picks a server that
        does. Without a session a read includes this handle's own writes."""
        ...

    def apply(self, writes: Sequence[DocumentWrite], *, keep_history: bool,
              sources: Sequence[SourceEntry] = (), moving: bool = False,
              history: Sequence[tuple[str, str, HistoryEntry]] = (),
              session: ReadSession | None = None) -> IngestReport:
        """Write ``writes`` and upsert ``sources`` (keyed by tenant and doc_id; one entry per
        document of the batch) in one transaction. An entry equal to the stored one writes
        nothing, so an unchanged re-sync leaves the store untouched. A tenant marked as moving
        or moved away is refused (``TenantMoved``) unless ``moving``: the move's own writes.
        ``history``: (tenant, document id, entry) appended verbatim in the same transaction
        (a copy's superseded versions, timestamps included)."""
        ...

    def remove_documents(self, tenant: str, doc_ids: Sequence[str], *, moving: bool = False) -> int:
        """``remove`` of many documents of one tenant in one transaction; how many existed."""
        ...

    def mark_tenant(self, tenant: str, state: str | None, location: str = "",
                    replicas: Sequence[str] = ()) -> None:
        """Mark ``tenant`` as ``moving`` or ``moved`` to ``location``, or clear its mark."""
        ...

    def tenant_marks(self) -> dict[str, Mark]: ...

    def remove(self, tenant: str, doc_id: str, session: ReadSession | None = None) -> bool:
        """Delete the document, its passages, its history and its source entry. Every write
        takes the caller's ``session``, told the generation it committed."""
        ...

    def source_entries(self, source: str | None = None) -> list[SourceEntry]:
        """The entries of one source (every source when None), ordered by tenant and doc_id."""
        ...

    def record_conflicts(self, conflicts: Sequence[Conflict]) -> list[Conflict]:
        """Record conflicts not recorded before (see ``_conflicts``); returns those new, with ids."""
        ...

    def conflicts(self, tenant: str | None = None) -> list[Conflict]:
        """Every recorded conflict (of ``tenant``), newest first."""
        ...

    def dismiss_conflict(self, tenant: str, conflict_id: int, by: str) -> bool:
        """Mark a conflict of ``tenant`` dismissed; False when there is no such open one."""
        ...

    def conflict_rows(self, tenant: str | None) -> list[tuple[object, ...]]:
        """``tenant``'s recorded conflicts (None: every tenant's) as stored, oldest first (for
        copying them)."""
        ...

    def restore_conflicts(self, rows: list[tuple[object, ...]]) -> int:
        """Record another store's ``conflict_rows`` verbatim (dismissals included)."""
        ...

    def operator_records(self, tenant: str | None) -> dict[str, list[tuple[object, ...]]]:
        """``tenant``'s answer records, feedback and handoffs (None: every tenant's) as
        stored, per table, oldest first (for copying them)."""
        ...

    def restore_operator_records(self, rows: dict[str, list[tuple[object, ...]]]) -> int:
        """Record another store's ``operator_records`` this one lacks; how many were added."""
        ...

    def remove_records(self, tenant: str) -> None:
        """Delete ``tenant``'s recorded conflicts, runs, answer records, feedback and handoffs."""
        ...

    def restore_history(self, entries: Sequence[tuple[str, str, HistoryEntry]]) -> None:
        """Append (tenant, document id, entry) to the history verbatim, oldest first: how a
        copy keeps a store's version history (timestamps included)."""
        ...

    def optimize(self) -> None: ...

    def settle(self) -> None:
        """Return once the segment merges earlier writes asked for are done (a backend may run
        them after the write returned; searches are the same either way), raising a failure of
        one of them."""
        ...

    def stats(self) -> dict[str, object]: ...

    def integrity(self) -> list[str]:
        """The database engine's own consistency checks of the store's tables and indexes, one
        problem a line (empty when there is none); evidex's checks of its content are
        ``evidex.check``'s."""
        ...

    def record_run(self, run: RunRecord) -> int:
        """Append a sync/drift run record (see ``_runs``); returns its id."""
        ...

    def runs(self, limit: int = 100, source: str | None = None, tenant: str | None = None) -> list[RunRecord]:
        """The latest ``limit`` run records, newest first."""
        ...

    def claim_run(self, kind: str, source: str, scheduled_for: str, holder: str) -> bool:
        """Take on a due scheduled run: True for the first of several schedulers sharing the
        store to ask for that run, False for the others (see ``_runs.claim``)."""
        ...

    def record_answer(self, record: AnswerRecord) -> None:
        """Record an answer the service gave, by its trace id (see ``_feedback``)."""
        ...

    def answer_records(self, tenant: str, *, since: str | None = None, trace_id: str | None = None,
                       limit: int = 1000) -> list[AnswerRecord]:
        """``tenant``'s recorded answers, newest first."""
        ...

    def record_feedback(self, record: FeedbackRecord) -> None:
        """Record (or replace) the rating of one answer."""
        ...

    def feedback(self, tenant: str, *, since: str | None = None, limit: int = 10_000) -> list[FeedbackRecord]:
        """``tenant``'s feedback, newest first."""
        ...

    def record_handoff(self, record: HandoffRecord) -> None:
        """Record a handoff sent to a person."""
        ...

    def handoffs(self, tenant: str, *, since: str | None = None, limit: int = 100) -> list[HandoffRecord]:
        """``tenant``'s handoffs, newest first."""
        ...

    def record_notices(self, records: Sequence[NoticeRecord]) -> None:
        """Record who was told about which source's findings, and whether it reached them."""
        ...

    def notices(self, tenant: str, *, limit: int = 1000) -> list[NoticeRecord]:
        """``tenant``'s owner notices, newest first."""
        ...

    def record_eval(self, record: EvalRecord) -> None:
        """Record an evaluation run's summary."""
        ...

    def evals(self, tenant: str, *, limit: int = 10) -> list[EvalRecord]:
        """``tenant``'s recorded evaluation runs, newest first."""
        ...

    def iter_documents(self, tenant: str | None = None) -> Iterator[StoredDocument]: ...

    def close(self) -> None: ...
