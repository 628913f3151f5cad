"""Sync and drift: make the index hold exactly what the sources hold, or say how it differs.

Both walk the same plan. For each source: list its items; remove the documents of items no
longer listed (deleted or renamed files, URLs gone from the sitemap); read every other item
unless its recorded stamp says it is unchanged; compare the documents read with the store by
fingerprint; write new and changed ones in batches; finally remove documents an item no longer
yields (a record deleted from a JSONL file, a file that became unreadable as a document).

Crash safety comes from the store: each batch is one transaction that writes the documents
together with their source entries (item and stamp), and a removal deletes document and entry
together. A sync killed at any moment leaves every document in exactly one version; an item is
only skipped by its stamp when every document it yields was written with that stamp, so the
next run redoes exactly what the killed one did not finish.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .._batch import checked_batch
from ..config import Config, FilesSource, RecordsSource, SourceDefaults, WebSource
from ..ingest import check_words
from ..knowledge import Knowledge
from ..model import Document, DocumentError, EvidexError
from ..notify import owner_name
from ..store import ReadSession, SourceEntry
from ._items import (
    Content,
    FetchError,
    Gone,
    Item,
    NotModified,
    SourceError,
    effective,
    files_items,
    records_items,
)
from ._web import web_items

__all__ = ["BATCH_DOCUMENTS", "LOADER_VERSION", "Skipped", "SourceReport", "SyncReport", "drift", "sync"]

Source = FilesSource | WebSource | RecordsSource
#: Part of every stamp: bump it when a loader's output changes, so the next sync re-reads
#: every item instead of trusting stamps recorded by the old loader.
LOADER_VERSION = "1"
#: Documents per write transaction: large enough to amortise a commit and an embedding call,
#: small enough that progress moves and a crash loses little work.
BATCH_DOCUMENTS = 256
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Skipped:
    item: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"item": self.item, "reason": self.reason}


@dataclass
class SourceReport:
    """One source's outcome. For a sync, ``new``/``changed`` were added/superseded and
    ``removed`` were removed; for a drift check they are what a sync would do."""

    source: str
    owner: str | None
    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    #: Items that cannot become documents (no text layer, bad front matter, unsupported type).
    skipped: list[Skipped] = field(default_factory=list)
    #: Items that could not be read now (network, I/O); their indexed documents were kept.
    errors: list[Skipped] = field(default_factory=list)
    #: The source could not be listed at all; nothing of it was changed.
    failed: str | None = None
    #: Items read and parsed (the others were skipped by their stamp or a 304).
    read: int = 0
    #: Ids of the conflicts this sync's writes found (see ``KnowledgeBase.conflicts``).
    conflicts: list[int] = field(default_factory=list)

    @property
    def drifted(self) -> bool:
        return bool(self.new or self.changed or self.removed)

    def as_dict(self, kind: Literal["sync", "drift"]) -> dict[str, Any]:
        names = ("added", "superseded") if kind == "sync" else ("new", "changed")
        return {
            "source": self.source,
            "owner": self.owner,
            names[0]: sorted(self.new),
            names[1]: sorted(self.changed),
            "removed": sorted(self.removed),
            "unchanged": self.unchanged,
            "skipped": [s.as_dict() for s in self.skipped],
            "errors": [s.as_dict() for s in self.errors],
            "failed": self.failed,
            "items_read": self.read,
            "conflicts": self.conflicts,
        }


@dataclass
class SyncReport:
    kind: Literal["sync", "drift"]
    sources: list[SourceReport]
    seconds: float = 0.0

    @property
    def drifted(self) -> bool:
        return any(s.drifted for s in self.sources)

    @property
    def ok(self) -> bool:
        """Every source was read completely (skipped documents are content problems, reported
        but not failures of the sync)."""
        return not any(s.failed or s.errors for s in self.sources)

    def totals(self) -> dict[str, int]:
        names = ("added", "superseded") if self.kind == "sync" else ("new", "changed")
        return {
            names[0]: sum(len(s.new) for s in self.sources),
            names[1]: sum(len(s.changed) for s in self.sources),
            "unchanged": sum(s.unchanged for s in self.sources),
            "removed": sum(len(s.removed) for s in self.sources),
            "skipped": sum(len(s.skipped) for s in self.sources),
            "errors": sum(len(s.errors) + (1 if s.failed else 0) for s in self.sources),
        }

    def by_owner(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for s in self.sources:
            o = out.setdefault(s.owner or "(no owner)", {"new": 0, "changed": 0, "removed": 0})
            o["new"] += len(s.new)
            o["changed"] += len(s.changed)
            o["removed"] += len(s.removed)
        return out

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, **self.totals(),
                               "sources": [s.as_dict(self.kind) for s in self.sources],
                               "seconds": round(self.seconds, 3)}
        if self.kind == "drift":
            out["drifted"] = self.drifted
            out["by_owner"] = self.by_owner()
        return out


def _digest(source: Source) -> str:
    """Everything about the source that shapes its documents, plus the loader version: a
    changed ``groups`` or ``split`` re-reads every item even when no file changed."""
    blob = source.model_dump_json() + "|" + LOADER_VERSION
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def _trusted(entries: list[SourceEntry], digest: str, stored: dict[tuple[str, str], str]) -> str | None:
    """The item stamp to skip by, when every document of the item was written with it, still
    holds the text then written, and the source's settings are the same; otherwise None."""
    if not entries:
        return None
    stamp = entries[0].stamp
    if any(e.stamp != stamp for e in entries):
        return None
    head, sep, rest = stamp.partition("|")
    body, sep2, count = rest.rpartition("|")
    if not (sep and sep2) or head != digest or not body or count != str(len(entries)):
        return None
    if any(stored.get((e.tenant, e.doc_id)) != e.content_sha256 for e in entries):
        return None
    return body


def _items(source: Source, skip: Callable[[str, str], None]) -> tuple[list[Item], Callable[[], None]]:
    if isinstance(source, FilesSource):
        return files_items(source, skip), lambda: None
    if isinstance(source, RecordsSource):
        return records_items(source, skip), lambda: None
    return web_items(source)


class _Run:
    """One sync or drift run over some sources of one knowledge base."""

    def __init__(self, kb: Knowledge, write: bool, progress: Progress | None,
                 session: ReadSession | None = None) -> None:
        self.kb = kb
        self.write = write
        self.session = session  # the caller's: told what the run writes
        self.progress = progress
        # Ownership across the whole run, so two sources claiming one id are caught even when
        # neither owned it before.
        self.owners = {(e.tenant, e.doc_id): e.source for e in kb.source_entries()}
        self.stored = {(d.tenant, d.id): d.content_sha256 for d in kb.documents()}

    def _tick(self, what: str, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(what, done, total)

    def source(self, source: Source) -> SourceReport:
        rep = SourceReport(source.id, owner_name(source.owner))
        try:
            items, close = _items(source, lambda item, why: rep.skipped.append(Skipped(item, why)))
        except SourceError as exc:
            rep.failed = str(exc)
            return rep
        try:
            self._source(source, items, rep)
        finally:
            close()
        return rep

    def _source(self, source: Source, items: list[Item], rep: SourceReport) -> None:
        entries = self.kb.source_entries(source.id)
        by_item: dict[str, list[SourceEntry]] = {}
        for e in entries:
            by_item.setdefault(e.item, []).append(e)
        listed = {i.key for i in items}
        # Items gone from the listing first: a renamed file's old document never coexists with
        # its new one in a search.
        for e in entries:
            if e.item not in listed:
                self._remove(e, rep)
        digest = _digest(source)
        seen: set[tuple[str, str]] = set()
        batch: list[tuple[Document, SourceEntry]] = []
        for n, item in enumerate(items, start=1):
            ents = by_item.get(item.key, [])
            try:
                got = item.read(_trusted(ents, digest, self.stored))
            except FetchError as exc:
                rep.errors.append(Skipped(item.name, str(exc)))
                seen.update((e.tenant, e.doc_id) for e in ents)
                continue
            except EvidexError as exc:
                rep.skipped.append(Skipped(item.name, str(exc).splitlines()[0]))
                continue
            finally:
                self._tick(f"{source.id}: reading", n, len(items))
            if isinstance(got, NotModified):
                rep.unchanged += len(ents)
                seen.update((e.tenant, e.doc_id) for e in ents)
                continue
            if isinstance(got, Gone):
                continue
            rep.read += 1
            self._take(source, item, got, digest, seen, batch, rep)
            if len(batch) >= BATCH_DOCUMENTS:
                self._flush(source, batch, rep)
        self._flush(source, batch, rep)
        for e in entries:
            if e.item in listed and (e.tenant, e.doc_id) not in seen:
                self._remove(e, rep)

    def _take(self, source: Source, item: Item, got: Content, digest: str,
              seen: set[tuple[str, str]], batch: list[tuple[Document, SourceEntry]],
              rep: SourceReport) -> None:
        rep.skipped.extend(Skipped(w, r) for w, r in got.rejected)
        docs = []
        for d in got.documents:
            key = (d.tenant, d.id)
            owner = self.owners.get(key)
            too_long = _too_long(d, source.split)
            if too_long is not None:
                rep.skipped.append(Skipped(item.name, too_long))
            elif key in seen:
                rep.skipped.append(Skipped(item.name, f"document id {d.id!r} is produced by another "
                                                     f"item of source {source.id!r} too"))
            elif owner is not None and owner != source.id:
                rep.skipped.append(Skipped(item.name, f"document id {d.id!r} belongs to source "
                                                     f"{owner!r}"))
            else:
                seen.add(key)
                docs.append(d)
        stamp = f"{digest}|{got.stamp}|{len(docs)}" if len(docs) == len(got.documents) else ""
        batch.extend((d, SourceEntry(source.id, d.tenant, d.id, item.key, stamp, d.content_sha256))
                     for d in docs)

    def _flush(self, source: Source, batch: list[tuple[Document, SourceEntry]],
               rep: SourceReport) -> None:
        if not batch:
            return
        # Languages first, as the write identifies them: a document stored with its identified
        # language compares equal to the same text read again, so neither drift nor sync takes a
        # re-read (a touched file, a page without validators) for a change.
        docs = checked_batch([d for d, _ in batch], identify_languages=True)
        same = self.kb.unchanged(docs, source.split, max_section_chars=source.max_section_chars)
        for d in docs:
            key = (d.tenant, d.id)
            if key in same:
                rep.unchanged += 1
            elif key in self.stored:
                rep.changed.append(d.id)
            else:
                rep.new.append(d.id)
        if self.write:
            written = self.kb.ingest(docs, source.split, max_section_chars=source.max_section_chars,
                                     keep_history=source.supersede, sources=[e for _, e in batch],
                                     session=self.session)
            rep.conflicts += [c.id for c in written.conflicts]
            for d, e in batch:
                self.stored[(d.tenant, d.id)] = d.content_sha256
                self.owners[(e.tenant, e.doc_id)] = source.id
        else:
            for _, e in batch:
                self.owners.setdefault((e.tenant, e.doc_id), source.id)
        batch.clear()

    def _remove(self, e: SourceEntry, rep: SourceReport) -> None:
        rep.removed.append(e.doc_id)
        if self.write:
            self.kb.remove(e.tenant, e.doc_id, session=self.session)
            self.stored.pop((e.tenant, e.doc_id), None)
            self.owners.pop((e.tenant, e.doc_id), None)


def _too_long(doc: Document, split: str) -> str | None:
    """Why ``doc`` is one passage longer than a passage may be (split ``document``: the loader
    checked its paragraphs, not the document as one passage), else None; the item is skipped
    rather than the batch refused at its write."""
    if split != "document":
        return None
    try:
        check_words(doc.text)
    except DocumentError as exc:
        return str(exc)
    return None


def _selected(config: Config, only: str | Sequence[str] | None) -> list[Source]:
    ids = [only] if isinstance(only, str) else list(only or [])
    chosen = [config.source(i) for i in ids] if ids else list(config.sources)
    if not chosen:
        raise EvidexError("the configuration has no sources")
    defaults: SourceDefaults = config.defaults
    return [effective(s, defaults) for s in chosen]


def _run(kind: Literal["sync", "drift"], kb: Knowledge, config: Config,
         only: str | Sequence[str] | None, progress: Progress | None,
         session: ReadSession | None = None) -> SyncReport:
    sources = _selected(config, only)
    t0 = time.perf_counter()
    run = _Run(kb, kind == "sync", progress, session)
    reports = [run.source(s) for s in sources]
    return SyncReport(kind, reports, time.perf_counter() - t0)


def sync(kb: Knowledge, config: Config, source: str | Sequence[str] | None = None, *,
         progress: Progress | None = None, session: ReadSession | None = None) -> SyncReport:
    """Bring the index in line with the configured sources (all, or the ones named).
    ``session``: the caller's (``KnowledgeBase.session``), so its later reads include the sync."""
    return _run("sync", kb, config, source, progress, session)


def drift(kb: Knowledge, config: Config, source: str | Sequence[str] | None = None, *,
          progress: Progress | None = None) -> SyncReport:
    """What a sync would change, per source and owner, without writing anything."""
    return _run("drift", kb, config, source, progress)
