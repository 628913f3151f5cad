"""Tenants placed on several servers, and moving one of them online.

The configuration's ``store:`` section is the source of truth: a default location and, per
tenant, its own (each a PostgreSQL primary with its read replicas, or a SQLite file). A tenant's
documents, statistics, records and citations live on its server only, so permission-exact
statistics never cross servers: a search is answered by the one server that holds everything
the actor may read.

``open_knowledge`` opens what the configuration names as a ``PlacedKnowledgeBase``: a
``KnowledgeBase`` whose every call goes to the caller's tenant's server (a handle per server,
opened on first use); calls that span tenants (stats, check, listings) ask every server and
say which one answered what (with one location, they are that store's own). It does so for a
single location too, so that a process configured before a move follows the tenant to its new
server instead of failing.

``move_tenant`` moves a tenant to another server while the old one keeps serving it:

1. **copy** the tenant (documents, passages, vectors, history, sync records; conflicts and
   runs), then **catch up** what was written meanwhile, pass after pass, until a pass finds
   little left;
2. **freeze**: mark the tenant ``moving`` on the old server; its writes wait (they are refused
   there, and a ``PlacedKnowledgeBase`` waits and retries), its reads are still served there;
3. the last **catch-up** (nothing can change any more), then **verify**: counts,
   fingerprints, passages, vectors, history, statistics and records compared, and a sample of
   citations resolved, and searches run, on both servers with identical results;
4. **switch**: mark the tenant ``moved`` to the new server: from then on every process, even one
   still configured with the old placement, reads and writes it there (it follows the mark);
   the configuration line to change is printed, or written (``write_config``);
5. **remove** the tenant from the old server (unless ``keep_source``); the mark stays there.

Each step is idempotent and the marks record how far a move got, so a move interrupted at any
point finishes when run again; nothing written to the tenant is lost (a write either committed
before the freeze, and the last catch-up copied it, or was refused and retried on the new
server) and nothing is served from both servers at once (reads switch with the mark).
"""

from __future__ import annotations

import json
import os
import random
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from .answer import Answer
from .check import CheckReport
from .config import StoreConfig, StoreLocation, load_config
from .kb import KnowledgeBase
from .model import (
    VISIBILITIES,
    Actor,
    Conflict,
    Document,
    DocumentView,
    EvidexError,
    IngestReport,
    Resolution,
    SearchResults,
    StoreError,
    TenantMoved,
)
from .store import (
    ReadSession,
    RunRecord,
    SourceEntry,
    StoredDocument,
    TenantCounts,
    clear_tenant,
    compare_tenant,
    copy_records,
    redacted,
    sync_tenant,
    without_password,
)
from .tools import Toolbox, ToolConfig

__all__ = ["SERVICE_MOVE_WAIT_S", "MoveReport", "PlacedKnowledgeBase", "Placement", "config_line",
           "move_tenant", "open_knowledge", "unfinished_source", "write_placement"]

T = TypeVar("T")

#: How long a write of a tenant being moved waits for the move to finish before it fails, by
#: default (a command line, a script). The service waits ``SERVICE_MOVE_WAIT_S`` only: its
#: request holds a store handle meanwhile, which other tenants' requests need; the caller gets
#: 503 with Retry-After instead.
MOVE_WAIT_S = 120.0
SERVICE_MOVE_WAIT_S = 2.0
#: Catch-up passes before the freeze stop once a pass copies at most this many documents.
QUIET_PASS = 50
MAX_PASSES = 8


@dataclass(frozen=True)
class Placement:
    """Where each tenant's store is: ``default`` unless ``tenants`` names another."""

    default: StoreLocation
    tenants: Mapping[str, StoreLocation] = field(default_factory=dict)
    #: The ``store:`` section's replica settings (lags, waits, timeouts); None: the defaults.
    store: StoreConfig | None = None

    @classmethod
    def of(cls, store: StoreConfig | None, db: str | None, replicas: Sequence[str] = (),
           fallback: str = "evidex.db") -> Placement:
        """The configuration's placement, with ``db`` (and its ``replicas``) as the default
        location when the configuration names none, else ``fallback``. Naming it both ways is
        an error: which one would be meant?"""
        default = store.default if store is not None else None
        if default is None:
            default = StoreLocation.model_construct(url=db or fallback, replicas=tuple(replicas))
        elif db or replicas:
            raise EvidexError("the configuration's store.default names the store: leave out --db, "
                              "$EVIDEX_DB and --replica")
        return cls(default, dict(store.tenants) if store is not None else {}, store)

    def location(self, tenant: str) -> StoreLocation:
        return self.tenants.get(tenant, self.default)

    def locations(self) -> list[StoreLocation]:
        """Every distinct location, the default first."""
        out = [self.default]
        for loc in self.tenants.values():
            if _key(loc) not in {_key(x) for x in out}:
                out.append(loc)
        return out


def _key(loc: StoreLocation) -> tuple[str, tuple[str, ...]]:
    return loc.url, tuple(loc.replicas)


def replica_settings(store: StoreConfig | None) -> Any:
    """The store layer's ``ReplicaSettings`` from the ``store:`` section (imported only when a
    location has replicas: it needs the PostgreSQL driver)."""
    from .store import ReplicaSettings

    if store is None:
        return ReplicaSettings()
    return ReplicaSettings(max_lag_s=store.max_lag_s, max_lag_generations=store.max_lag_generations,
                           wait_s=store.replica_wait_ms / 1000, timeout_s=store.failover_timeout_s)


def open_location(location: StoreLocation, store: StoreConfig | None, **settings: Any) -> KnowledgeBase:
    if location.replicas:
        settings = {**settings, "replicas": location.replicas, "replica_settings": replica_settings(store)}
    return KnowledgeBase.open(location.url, **settings)


def open_knowledge(placement: Placement, **settings: Any) -> PlacedKnowledgeBase:
    """The knowledge base of ``placement``; ``settings`` go to ``KnowledgeBase.open`` for every
    location."""
    return PlacedKnowledgeBase(placement, **settings)


class PlacedKnowledgeBase(KnowledgeBase):
    """A ``KnowledgeBase`` over tenants placed on several servers (module docstring).

    Every method of ``KnowledgeBase`` that reads or writes data is routed here by tenant (a
    test checks that none is left to the base class, which would act on the default server
    alone). A tenant marked as moved (``TenantMoved``) is followed to its new server for the
    rest of this handle's life; one being moved makes writes wait until the move finishes."""

    def __init__(self, placement: Placement, *, tools: Toolbox | Sequence[ToolConfig] = (),
                 move_wait_s: float = MOVE_WAIT_S, **settings: Any) -> None:
        self._placement = placement
        self._move_wait_s = move_wait_s
        self._settings = settings
        self._shared_tools = tools if isinstance(tools, Toolbox) else Toolbox(tools)
        self._owns_tools = not isinstance(tools, Toolbox)
        self._handles: dict[tuple[str, tuple[str, ...]], KnowledgeBase] = {}
        self._followed: dict[str, StoreLocation] = {}
        self._open_lock = threading.Lock()
        default = self._at(placement.default)
        kb_settings = {k: v for k, v in settings.items() if k not in ("analyzer", "embedder")}
        super().__init__(default.store, tools=self._shared_tools, **kb_settings)
        self._own_toolbox = False  # closed by this handle below, once

    # -- routing -------------------------------------------------------------------------------
    def _at(self, location: StoreLocation) -> KnowledgeBase:
        key = _key(location)
        kb = self._handles.get(key)
        if kb is None:
            with self._open_lock:
                kb = self._handles.get(key)
                if kb is None:
                    kb = self._handles[key] = open_location(location, self._placement.store,
                                                            tools=self._shared_tools, **self._settings)
        return kb

    def location(self, tenant: str) -> StoreLocation:
        """Where ``tenant`` is served from now (a move this handle followed included)."""
        return self._followed.get(tenant) or self._placement.location(tenant)

    def server_of(self, tenant: str) -> str:
        """The tenant's location for messages (no password)."""
        return redacted(self.location(tenant).url)

    def _kb(self, tenant: str) -> KnowledgeBase:
        return self._at(self.location(tenant))

    def for_tenant(self, tenant: str) -> KnowledgeBase:
        return self._kb(tenant)

    def _routed(self, tenant: str, call: Callable[[KnowledgeBase], T]) -> T:
        """``call`` on ``tenant``'s server, following a move (see the class docstring)."""
        waited_until = time.monotonic() + self._move_wait_s
        hops = 0
        while True:
            try:
                return call(self._kb(tenant))
            except TenantMoved as moved:
                if moved.tenant != tenant:
                    raise
                if moved.state == "moving":
                    if time.monotonic() > waited_until:
                        raise
                    time.sleep(min(0.2, self._move_wait_s))
                    continue
                hops += 1
                if hops > 3:
                    raise
                self._followed[tenant] = self._known(moved.location, moved.replicas)

    def _known(self, url: str, replicas: Sequence[str]) -> StoreLocation:
        """The location a move mark names, as the configuration writes it when it names it
        (with the credentials the mark leaves out)."""
        for loc in self._placement.locations():
            if without_password(loc.url) == url:
                return loc
        return StoreLocation.model_construct(url=url, replicas=tuple(replicas))

    def _each(self) -> Iterator[tuple[StoreLocation, KnowledgeBase]]:
        """Every store: the placement's, and those this handle followed a moved tenant to."""
        seen = set()
        for loc in [*self._placement.locations(), *self._followed.values()]:
            if _key(loc) not in seen:
                seen.add(_key(loc))
                yield loc, self._at(loc)

    def _single(self) -> KnowledgeBase | None:
        """The one store's handle when there is only one (its own stats, check, servers)."""
        stores = list(self._each())
        return stores[0][1] if len(stores) == 1 else None

    def _placed(self, location: StoreLocation) -> list[str]:
        """The tenants served from ``location`` (``(default)``: every tenant placed nowhere else)."""
        named = {t for t, loc in self._placement.tenants.items() if t not in self._followed
                 and _key(loc) == _key(location)} | {t for t, loc in self._followed.items()
                                                     if _key(loc) == _key(location)}
        default = ["(default)"] if _key(location) == _key(self._placement.default) else []
        return default + sorted(named)

    def _lives_at(self, tenant: str, location: StoreLocation) -> bool:
        return _key(self.location(tenant)) == _key(location)

    # -- writing -------------------------------------------------------------------------------
    def ingest(self, documents: Iterable[Document] | Document, split: str = "paragraph", *,
               sources: Sequence[SourceEntry] = (), batch_size: int | None = None,
               progress: Callable[[int, int], None] | None = None, **options: Any) -> IngestReport:
        docs = [documents] if isinstance(documents, Document) else list(documents)
        groups: dict[str, list[Document]] = {}
        for d in docs:
            groups.setdefault(d.tenant, []).append(d)
        total, done = IngestReport(), 0
        for tenant, group in groups.items():
            mine = [e for e in sources if e.tenant == tenant]
            offset = done

            def step(n: int, _of: int, offset: int = offset) -> None:
                if progress is not None:
                    progress(offset + n, len(docs))

            total += self._routed(tenant, lambda kb, g=group, m=mine: kb.ingest(
                g, split, sources=m, batch_size=batch_size, progress=step, **options))
            done += len(group)
        return total

    def unchanged(self, documents: Iterable[Document], split: str = "paragraph", **options: Any
                  ) -> set[tuple[str, str]]:
        out: set[tuple[str, str]] = set()
        groups: dict[str, list[Document]] = {}
        for d in documents:
            groups.setdefault(d.tenant, []).append(d)
        for tenant, group in groups.items():
            out |= self._routed(tenant, lambda kb, g=group: kb.unchanged(g, split, **options))
        return out

    def remove(self, tenant: str, document_id: str) -> bool:
        return self._routed(tenant, lambda kb: kb.remove(tenant, document_id))

    def dismiss_conflict(self, tenant: str, conflict_id: int, by: str) -> bool:
        return self._routed(tenant, lambda kb: kb.dismiss_conflict(tenant, conflict_id, by))

    def record_run(self, run: RunRecord) -> int:
        if run.tenant is None:
            return self._at(self._placement.default).record_run(run)
        return self._routed(run.tenant, lambda kb: kb.record_run(run))

    def reembed(self, model: str, progress: Callable[[int, int], None] | None = None) -> int:
        return sum(kb.reembed(model, progress=progress) for _, kb in self._each())

    def reindex(self, analyzer: str) -> int:
        return sum(kb.reindex(analyzer) for _, kb in self._each())

    def optimize(self) -> None:
        for _, kb in self._each():
            kb.optimize()

    # -- reading -------------------------------------------------------------------------------
    def search(self, actor: Actor, query: str, limit: int = 6, **options: Any) -> SearchResults:
        return self._routed(actor.tenant, lambda kb: kb.search(actor, query, limit, **options))

    def answer(self, actor: Actor, question: str, generator: str = "extractive", **options: Any) -> Answer:
        return self._routed(actor.tenant, lambda kb: kb.answer(actor, question, generator, **options))

    def resolve(self, actor: Actor, citation: Mapping[str, Any], *,
                at_least: int | None = None) -> Resolution:
        return self._routed(actor.tenant, lambda kb: kb.resolve(actor, citation, at_least=at_least))

    def document(self, actor: Actor, document_id: str, *, at_least: int | None = None) -> DocumentView | None:
        return self._routed(actor.tenant, lambda kb: kb.document(actor, document_id, at_least=at_least))

    def documents(self, tenant: str | None = None) -> list[StoredDocument]:
        if tenant is not None:
            return self._routed(tenant, lambda kb: kb.documents(tenant))
        found = [d for loc, kb in self._each() for d in kb.documents() if self._lives_at(d.tenant, loc)]
        return sorted(found, key=lambda d: (d.tenant, d.id))

    def source_entries(self, source: str | None = None) -> list[SourceEntry]:
        return sorted((e for loc, kb in self._each() for e in kb.source_entries(source)
                       if self._lives_at(e.tenant, loc)), key=lambda e: (e.tenant, e.doc_id))

    def conflicts(self, tenant: str | None = None, status: str | None = None) -> list[Conflict]:
        if tenant is not None:
            return self._routed(tenant, lambda kb: kb.conflicts(tenant, status))
        found = [c for loc, kb in self._each() for c in kb.conflicts(None, status)
                 if self._lives_at(c.tenant, loc)]
        return sorted(found, key=lambda c: (c.detected_at, c.tenant, c.id), reverse=True)

    def runs(self, limit: int = 100, *, source: str | None = None,
             tenant: str | None = None) -> list[RunRecord]:
        if tenant is not None:
            return self._routed(tenant, lambda kb: kb.runs(limit, source=source, tenant=tenant))
        found = [r for loc, kb in self._each() for r in kb.runs(limit, source=source)
                 if (r.tenant is None and _key(loc) == _key(self._placement.default))
                 or (r.tenant is not None and self._lives_at(r.tenant, loc))]
        return sorted(found, key=lambda r: r.started_at, reverse=True)[:limit]

    def check_readable(self) -> None:
        for _, kb in self._each():
            kb.check_readable()

    @property
    def written_generation(self) -> int:
        return max(kb.written_generation for kb in self._handles.values())

    @contextmanager
    def session(self, at_least: int | None = None) -> Iterator[ReadSession]:
        if at_least is not None:
            raise EvidexError("with tenants on several servers a generation names a write to one of them: "
                              "give at_least to the read (search, answer, resolve, document) instead")
        with self._at(self._placement.default).session() as s:
            yield s

    def servers(self) -> list[dict[str, object]]:
        if (one := self._single()) is not None:
            return one.servers()
        return [{**s, "location": redacted(loc.url), "placed": self._placed(loc)}
                for loc, kb in self._each() for s in kb.servers()]

    def stats(self) -> dict[str, object]:
        """Per server: where, which tenants are placed there, its counts; and the totals."""
        if (one := self._single()) is not None:
            return one.stats()
        per = []
        totals: dict[str, int] = {}
        for loc, kb in self._each():
            counts = kb.stats()
            per.append({"location": redacted(loc.url), "placed": self._placed(loc), **counts})
            for k in ("documents", "passages", "tenants", "history_versions"):
                totals[k] = totals.get(k, 0) + int(counts.get(k, 0))  # type: ignore[call-overload]
        return {**totals, "servers": per}

    def check(self) -> CheckReport:
        """Every server checked; each problem names its server."""
        if (one := self._single()) is not None:
            return one.check()
        out = CheckReport()
        started = time.perf_counter()
        for loc, kb in self._each():
            report = kb.check()
            where = redacted(loc.url)
            for p in report.problems:
                out.add(p.kind, f"{where}: {p.where}", p.detail, p.tenant)
            out.problem_count += report.problem_count - len(report.problems)
            out.documents += report.documents
            out.passages += report.passages
            out.terms += report.terms
            out.vectors += report.vectors
            out.history_versions += report.history_versions
        out.seconds = time.perf_counter() - started
        return out

    def close(self) -> None:
        for kb in self._handles.values():
            kb.close()
        self._handles.clear()
        self._bm25.clear()
        if self._owns_tools:
            self._shared_tools.close()


#: What ``KnowledgeBase`` offers that spans no tenant's data: the tools, the embedding model,
#: the analyzer's name (every server's handle shares the tools; all have the same model).
TENANT_NEUTRAL = frozenset({"tools", "toolbox", "live_sources", "call_tool", "embed_passages", "analyzer",
                            "open"})


# -- moving a tenant ----------------------------------------------------------------------------
@dataclass
class MoveReport:
    tenant: str
    source: str
    target: str
    state: str = "copying"  # copying, moving, moved, done
    passes: list[int] = field(default_factory=list)  # documents changed per catch-up pass
    counts: TenantCounts | None = None
    citations_checked: int = 0
    searches_checked: int = 0
    removed_from_source: int = 0
    kept_source: bool = False
    seconds: dict[str, float] = field(default_factory=dict)
    config_line: str = ""
    config_written: str | None = None

    def as_dict(self) -> dict[str, object]:
        c = self.counts
        return {"tenant": self.tenant, "from": self.source, "to": self.target, "state": self.state,
                "catch_up_passes": self.passes,
                "verified": None if c is None else {
                    "documents": c.documents, "passages": c.passages, "vectors": c.vectors,
                    "history_versions": c.history_versions, "signatures": c.signatures,
                    "sync_records": c.sync_records, "conflicts": c.conflicts, "runs": c.runs,
                    "citations": self.citations_checked, "searches": self.searches_checked,
                    "mismatches": c.mismatches[:20]},
                "removed_from_source": self.removed_from_source, "kept_source": self.kept_source,
                "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
                "config_line": self.config_line, "config_written": self.config_written}


def move_tenant(tenant: str, source: StoreLocation, target: StoreLocation, *, keep_source: bool = False,
                store: StoreConfig | None = None, samples: int = 50, seed: int = 0,
                progress: Callable[[str, int, int], None] | None = None,
                switched: Callable[[MoveReport], None] | None = None, **settings: Any) -> MoveReport:
    """Move ``tenant`` from ``source`` to ``target`` (module docstring). ``switched`` runs once
    the tenant is served from the target, before the source is cleared (the command line
    prints or writes the configuration there). Raises ``StoreError`` when verification finds
    a difference (the tenant then stays frozen on the source: run again to retry)."""
    if _key(source) == _key(target) or source.url == target.url:
        raise EvidexError(f"tenant {tenant!r} is already on {redacted(target.url)} (to finish a move whose "
                          "configuration was switched but whose old store is no longer configured, "
                          "give --from OLD-STORE)")
    report = MoveReport(tenant, redacted(source.url), redacted(target.url), kept_source=keep_source)
    report.config_line = config_line(tenant, target)
    stamp = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal stamp
        now = time.perf_counter()
        report.seconds[name] = report.seconds.get(name, 0.0) + now - stamp
        stamp = now

    src = open_location(source, store, **settings)
    try:
        if src.store.tenant_marks().get(tenant) is None and not _holds(src, tenant):
            # Before anything is created or marked: a mistyped name leaves no trace anywhere.
            raise EvidexError(f"tenant {tenant!r} has no documents on {redacted(source.url)}: nothing to "
                              "move (check the name; --from names the store it is on)")
        # The target may still mark the tenant as moved away (it left this store once): its
        # copy is read for verification all the same.
        dst = open_location(target, store, analyzer=src.store.analyzer, embedder=src.store.embedder,
                            serve_moved_tenants=True,
                            **{k: v for k, v in settings.items() if k not in ("analyzer", "embedder")})
    except BaseException:
        src.close()
        raise
    here = without_password(target.url)
    here_replicas = tuple(without_password(r) for r in target.replicas)
    try:
        _same_model(src, dst)
        mark = src.store.tenant_marks().get(tenant)
        if mark is not None and (mark.location, mark.replicas) != (here, here_replicas):
            raise EvidexError(f"tenant {tenant!r} is {mark.state} to {mark.location}, not {here}: finish "
                              f"that move (evidex move-tenant {tenant} --to {mark.location})")
        state = mark.state if mark is not None else "copying"
        if state == "copying":
            for _ in range(MAX_PASSES):
                step = sync_tenant(src.store, dst.store, tenant,
                                   progress=(lambda d, n: progress("copy", d, n)) if progress else None)
                report.passes.append(step.changed)
                if step.changed <= QUIET_PASS:
                    break
            copy_records(src.store, dst.store, tenant)
            lap("copy")
            src.store.mark_tenant(tenant, "moving", here, here_replicas)
            lap("freeze")
            state = "moving"
        if state == "moving":
            report.state = "moving"
            step = sync_tenant(src.store, dst.store, tenant)
            report.passes.append(step.changed)
            copy_records(src.store, dst.store, tenant)
            lap("last_catch_up")
            report.counts = compare_tenant(src.store, dst.store, tenant)
            if report.counts.mismatches:
                raise StoreError(f"the copy of {tenant!r} differs from the source ("
                                 + "; ".join(report.counts.mismatches[:3])
                                 + "); the tenant stays on the source, frozen: run the move again")
            report.citations_checked, report.searches_checked = _same_answers(src, dst, tenant, samples, seed)
            lap("verify")
            # The target serves the tenant once the source says so; a mark the target kept from
            # an earlier move away goes first.
            dst.store.mark_tenant(tenant, None)
            src.store.mark_tenant(tenant, "moved", here, here_replicas)
            lap("switch")
            state = "moved"
        report.state = "moved"
        if switched is not None:
            switched(report)
        if report.counts is None:  # a move finished earlier, run again: check it still holds
            report.counts = compare_tenant(src.store, dst.store, tenant) if keep_source else None
        if not keep_source:
            report.removed_from_source = clear_tenant(src.store, tenant)
            lap("remove")
        report.state = "done"
        return report
    finally:
        dst.close()
        src.close()


def _holds(kb: KnowledgeBase, tenant: str) -> bool:
    """Whether the store holds anything of ``tenant`` (a document, a record or a run)."""
    with kb.store.read(latest=True) as view:
        if view.tenant_documents(tenant):
            return True
    return bool(kb.runs(1, tenant=tenant)) or bool(kb.conflicts(tenant))


def unfinished_source(placement: Placement, tenant: str, target: StoreLocation,
                      **settings: Any) -> StoreLocation | None:
    """The configured location that marks ``tenant`` as moving or moved to ``target``: the
    source of a move whose configuration was already switched to ``target`` (the command was
    killed after writing it) and that still holds the tenant, which running the same command
    again finishes. None when no configured location does."""
    here = without_password(target.url)
    for loc in placement.locations():
        if _key(loc) == _key(target) or loc.url == target.url:
            continue
        kb = open_location(loc, placement.store, **settings)
        try:
            mark = kb.store.tenant_marks().get(tenant)
            # Moved and removed, the move is over: its mark stays for stale processes.
            unfinished = mark is not None and mark.location == here and (mark.state == "moving"
                                                                         or _holds(kb, tenant))
        finally:
            kb.close()
        if unfinished:
            return loc
    return None


def _same_model(src: KnowledgeBase, dst: KnowledgeBase) -> None:
    a, b = src.store, dst.store
    if (a.analyzer, a.embedder, a.dimension) != (b.analyzer, b.embedder, b.dimension):
        raise StoreError(f"the target store has analyzer {b.analyzer!r} and model {b.embedder!r}, the source "
                         f"{a.analyzer!r} and {a.embedder!r}: a tenant moves between stores that index alike")


def _same_answers(src: KnowledgeBase, dst: KnowledgeBase, tenant: str, samples: int,
                  seed: int) -> tuple[int, int]:
    """A sample of the tenant's passages cited and resolved on both servers, and searched for
    on both (keyword, and hybrid when the store has vectors) as an actor who may read the whole
    tenant: identical resolutions and identical hits with identical scores, or StoreError."""
    rnd = random.Random(seed)
    with src.store.read(latest=True) as view:
        docs = view.tenant_documents(tenant)
        chosen = rnd.sample(docs, min(samples, len(docs)))
        passages = view.passages_of([d.dkey for d in chosen])
    groups = frozenset(g for d in docs for g in d.groups)
    if not groups:
        return 0, 0
    actor = Actor(tenant, groups, visibilities=VISIBILITIES)
    citations = 0
    queries = []
    for d in chosen:
        for p in passages[d.dkey][:1]:
            cited = {"kind": "passage", "document_id": d.id, "version": d.version,
                     "content_sha256": d.content_sha256, "passage": p.number, "quote": p.text,
                     "start": p.start, "end": p.end, "heading_path": list(p.heading_path), "anchor": p.anchor}
            a, b = src.resolve(actor, cited, at_least=None), dst.resolve(actor, cited)
            if a != b or not a.ok:
                raise StoreError(f"the citation of {tenant}/{d.id} passage {p.number} resolves "
                                 f"differently on the target ({b.reason}) than on the source ({a.reason})")
            citations += 1
            words = re.findall(r"\w{4,}", p.text)[:4]
            if words:
                queries.append(" ".join(words))
    modes = ["keyword"] + (["hybrid"] if src.store.embedder != "none" else [])
    searches = 0
    for q in queries[:20]:
        for mode in modes:
            a_hits, b_hits = ([(h.document_id, h.version, h.passage, h.score)
                               for h in kb.search(actor, q, 10, mode=mode)] for kb in (src, dst))
            if a_hits != b_hits:
                raise StoreError(f"a {mode} search for {q!r} in {tenant!r} ranks differently on the target")
            searches += 1
    return citations, searches


# -- the configuration --------------------------------------------------------------------------
def _location_yaml(location: StoreLocation) -> str:
    if not location.replicas:
        return _scalar(location.url)
    replicas = ", ".join(_scalar(r) for r in location.replicas)
    return "{url: " + _scalar(location.url) + ", replicas: [" + replicas + "]}"


#: Words YAML reads as something other than a string.
_YAML_WORDS = frozenset({"null", "true", "false", "yes", "no", "on", "off", "y", "n", "~"})
#: A tenant name written plain: anything else is quoted.
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def _scalar(value: str) -> str:
    """``value`` as a YAML scalar that reads back as itself in any context, block or flow: a
    plain name as it is, everything else double-quoted (a JSON string is a YAML double-quoted
    scalar). A plain URL inside ``{url: ..., replicas: [...]}`` would be split at its commas or
    cut at `` #``, and the file would not read back."""
    if _PLAIN_KEY.fullmatch(value) and value.lower() not in _YAML_WORDS:
        return value
    return json.dumps(value, ensure_ascii=False)


def config_line(tenant: str, location: StoreLocation) -> str:
    """The configuration's line for ``tenant`` (under ``store:`` / ``tenants:``)."""
    return f"{_scalar(tenant)}: {_location_yaml(location)}"


def write_placement(path: str | Path, tenant: str, location: StoreLocation) -> None:
    """Set ``store.tenants.<tenant>`` in the configuration file at ``path`` to ``location``,
    changing only that entry's text (comments and layout stay), and check the whole file
    before it replaces the old one (atomically)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    new = _with_tenant(text, tenant, location)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".yaml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(new)
        load_config(tmp)  # the whole file still valid, or nothing is replaced
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _with_tenant(text: str, tenant: str, location: StoreLocation) -> str:
    lines = text.splitlines(keepends=True)
    root = yaml.compose(text) if text.strip() else None
    entry = _location_yaml(location)
    if root is not None and not isinstance(root, yaml.MappingNode):
        raise EvidexError("the configuration is not a mapping of sections; nothing was written")
    store = _child(root, "store")
    if store is None or _empty(store):
        if store is not None:  # ``store:`` with nothing under it: the section goes there
            del lines[store.start_mark.line if store.start_mark.column else store.start_mark.line - 1]
            text = "".join(lines)
        tail = "" if not text or text.endswith("\n") else "\n"
        return text + tail + f"store:\n  tenants:\n    {_scalar(tenant)}: {entry}\n"
    if not isinstance(store, yaml.MappingNode) or store.flow_style:
        raise EvidexError("store: is not written as a block mapping; set store.tenants by hand")
    tenants = _child(store, "tenants")
    indent = store.value[0][0].start_mark.column if store.value else 2
    if tenants is None:
        at = store.end_mark.line if store.end_mark.column == 0 else store.end_mark.line + 1
        lines.insert(at, " " * indent + f"tenants:\n{' ' * (indent + 2)}{_scalar(tenant)}: {entry}\n")
        return "".join(lines)
    if _empty(tenants):
        tenants = yaml.MappingNode("tag:yaml.org,2002:map", [], tenants.start_mark, tenants.end_mark,
                                   flow_style=True)
    if not isinstance(tenants, yaml.MappingNode) or (tenants.flow_style and tenants.value):
        raise EvidexError("store.tenants is not written as a block mapping; set it by hand")
    for key, value in tenants.value:
        if key.value != tenant:
            continue
        start, end = value.start_mark, value.end_mark
        if isinstance(value, yaml.ScalarNode) or value.flow_style:  # on the key's line: in place
            flat = "".join(lines)
            return flat[:_offset(lines, start.line, start.column)] + entry + flat[_offset(lines, end.line,
                                                                                        end.column):]
        # A block below the key: its lines give way to one line. The block ends where the next
        # key begins (or at the end of the file).
        before_end = lines[end.line][:end.column] if end.line < len(lines) else ""
        last = end.line - 1 if not before_end.strip() else end.line
        first = key.start_mark.line
        lines[first:last + 1] = [" " * key.start_mark.column + f"{_scalar(tenant)}: {entry}\n"]
        return "".join(lines)
    if tenants.value:
        column = tenants.value[0][0].start_mark.column
        last = tenants.value[-1][1].end_mark
        at = last.line if last.column == 0 else last.line + 1
    else:  # ``tenants: {}`` or an empty value: the entry goes on the next line
        column = indent + 2
        at = tenants.start_mark.line + 1
        line = lines[tenants.start_mark.line]
        lines[tenants.start_mark.line] = re.sub(r"tenants:\s*(\{\s*\})?\s*$", "tenants:\n", line)
    lines.insert(at, " " * column + f"{_scalar(tenant)}: {entry}\n")
    return "".join(lines)


def _empty(node: yaml.Node) -> bool:
    """A key with no value (``store:`` on its own), or an empty flow mapping (``{}``)."""
    if isinstance(node, yaml.ScalarNode):
        return node.tag.endswith(":null") and node.value in ("", "~", "null")
    return isinstance(node, yaml.MappingNode) and not node.value


def _child(node: yaml.Node | None, name: str) -> yaml.Node | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    for key, value in node.value:
        if getattr(key, "value", None) == name:
            return value  # type: ignore[no-any-return]
    return None


def _offset(lines: list[str], line: int, column: int) -> int:
    return sum(len(x) for x in lines[:line]) + column
