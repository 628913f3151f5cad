"""``PlacedKnowledge``: the ``Knowledge`` of tenants placed on several servers, by composition.

Every call goes to the caller's tenant's server (a ``KnowledgeBase`` per server, opened on
first use); calls that span tenants (stats, check, listings) ask every server and say which
one answered what (with one location, they are that store's own). It does so for a single
location too, so that a process configured before a move follows the tenant to its new server
instead of failing: a tenant marked as moved (``TenantMoved``) is followed for the rest of the
handle's life; one being moved makes writes wait until the move finishes (``_move``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..answer import Answer, AnswerSettings
from ..check import CheckReport
from ..config import StoreLocation
from ..kb import KnowledgeBase
from ..model import (
    Actor,
    Conflict,
    Document,
    DocumentView,
    EvidexError,
    IngestReport,
    Resolution,
    SearchResults,
    TenantMoved,
)
from ..store import ReadSession, RunRecord, SourceEntry, Store, StoredDocument, redacted, without_password
from ..tools import LiveSource, Toolbox, ToolConfig
from ._value import Placement, location_key, open_location

if TYPE_CHECKING:
    from ..knowledge import Knowledge

T = TypeVar("T")

#: How long a write of a tenant being moved waits for the move to finish before it fails, by
#: default (a command line, a script). The service waits ``SERVICE_MOVE_WAIT_S`` only: its
#: request holds a store handle meanwhile, which other tenants' requests need; the caller gets
#: 503 with Retry-After instead.
MOVE_WAIT_S = 120.0
SERVICE_MOVE_WAIT_S = 2.0


class PlacedKnowledge:
    """``Knowledge`` over tenants placed on several servers (module docstring): it holds a
    ``KnowledgeBase`` per server and routes every call that reads or writes data by tenant;
    calls that span tenants ask every server. It is no ``KnowledgeBase`` subclass, so nothing
    falls through to a base class acting on the default server alone: the type checker proves
    it implements the whole ``Knowledge`` protocol. A tenant marked as moved (``TenantMoved``)
    is followed to its new server for the rest of this handle's life; one being moved makes
    writes wait until the move finishes."""

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
        # Opened now, so a store that cannot be opened fails here rather than at the first call.
        self._default = self._at(placement.default)

    # -- what spans no tenant's data: the default store's handle answers -----------------------
    @property
    def store(self) -> Store:
        return self._default.store

    @property
    def analyzer(self) -> str:
        return self._default.analyzer

    @property
    def answer_settings(self) -> AnswerSettings:
        return self._default.answer_settings

    @property
    def toolbox(self) -> Toolbox:
        """Shared by every store's handle."""
        return self._shared_tools

    def tools(self, actor: Actor | None = None) -> list[ToolConfig]:
        return self._default.tools(actor)

    def live_sources(self, actor: Actor, question: str) -> list[LiveSource]:
        return self._default.live_sources(actor, question)

    def call_tool(self, actor: Actor, tool_id: str, parameters: Mapping[str, object], *,
                  operator: bool = False) -> LiveSource:
        return self._default.call_tool(actor, tool_id, parameters, operator=operator)

    # -- routing -------------------------------------------------------------------------------
    def _at(self, location: StoreLocation) -> KnowledgeBase:
        key = location_key(location)
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
            if location_key(loc) not in seen:
                seen.add(location_key(loc))
                yield loc, self._at(loc)

    def _single(self) -> KnowledgeBase | None:
        """The one store's handle when there is only one (its own stats, check, servers)."""
        stores = list(self._each())
        return stores[0][1] if len(stores) == 1 else None

    def _placed(self, location: StoreLocation) -> list[str]:
        """The tenants served from ``location`` (``(default)``: every tenant placed nowhere else)."""
        named = {t for t, loc in self._placement.tenants.items() if t not in self._followed
                 and location_key(loc) == location_key(location)} | {t for t, loc in self._followed.items()
                                                     if location_key(loc) == location_key(location)}
        default = ["(default)"] if location_key(location) == location_key(self._placement.default) else []
        return default + sorted(named)

    def _lives_at(self, tenant: str, location: StoreLocation) -> bool:
        return location_key(self.location(tenant)) == location_key(location)

    # -- writing -------------------------------------------------------------------------------
    def ingest(self, documents: Iterable[Document] | Document, split: str = "paragraph", *,
               sources: Sequence[SourceEntry] = (), batch_size: int | None = None,
               progress: Callable[[int, int], None] | None = None, **options: Any) -> IngestReport:
        docs = [documents] if isinstance(documents, Document) else list(documents)
        total, done = IngestReport(), 0
        for tenant, group in _by_tenant(docs).items():
            mine = [e for e in sources if e.tenant == tenant]

            def step(n: int, _of: int, offset: int = done) -> None:
                if progress is not None:
                    progress(offset + n, len(docs))

            def write(kb: KnowledgeBase, g: list[Document] = group, m: list[SourceEntry] = mine,
                      step: Callable[[int, int], None] = step) -> IngestReport:
                return kb.ingest(g, split, sources=m, batch_size=batch_size, progress=step, **options)

            total += self._routed(tenant, write)
            done += len(group)
        return total

    def unchanged(self, documents: Iterable[Document], split: str = "paragraph", **options: Any
                  ) -> set[tuple[str, str]]:
        out: set[tuple[str, str]] = set()
        for tenant, group in _by_tenant(documents).items():

            def skipped(kb: KnowledgeBase, g: list[Document] = group) -> set[tuple[str, str]]:
                return kb.unchanged(g, split, **options)

            out |= self._routed(tenant, skipped)
        return out

    def remove(self, tenant: str, document_id: str, *, session: ReadSession | None = None) -> bool:
        return self._routed(tenant, lambda kb: kb.remove(tenant, document_id, session=session))

    def dismiss_conflict(self, tenant: str, conflict_id: int, by: str) -> bool:
        return self._routed(tenant, lambda kb: kb.dismiss_conflict(tenant, conflict_id, by))

    def record_run(self, run: RunRecord) -> int:
        if run.tenant is None:
            return self._at(self._placement.default).record_run(run)
        return self._routed(run.tenant, lambda kb: kb.record_run(run))

    def reembed(self, model: str, progress: Callable[[int, int], None] | None = None, *,
                session: ReadSession | None = None) -> int:
        return sum(kb.reembed(model, progress=progress, session=session) for _, kb in self._each())

    def reindex(self, analyzer: str, *, session: ReadSession | None = None) -> int:
        return sum(kb.reindex(analyzer, session=session) for _, kb in self._each())

    def optimize(self) -> None:
        for _, kb in self._each():
            kb.optimize()

    # -- reading -------------------------------------------------------------------------------
    def search(self, actor: Actor, query: str, limit: int = 6, **options: Any) -> SearchResults:
        return self._routed(actor.tenant, lambda kb: kb.search(actor, query, limit, **options))

    def answer(self, actor: Actor, question: str, generator: str = "extractive", **options: Any) -> Answer:
        return self._routed(actor.tenant, lambda kb: kb.answer(actor, question, generator, **options))

    def resolve(self, actor: Actor, citation: Mapping[str, Any], **options: Any) -> Resolution:
        return self._routed(actor.tenant, lambda kb: kb.resolve(actor, citation, **options))

    def document(self, actor: Actor, document_id: str, **options: Any) -> DocumentView | None:
        return self._routed(actor.tenant, lambda kb: kb.document(actor, document_id, **options))

    def documents(self, tenant: str | None = None) -> list[StoredDocument]:
        if tenant is not None:
            return self._routed(tenant, lambda kb: kb.documents(tenant))
        found = [d for loc, kb in self._each() for d in kb.documents() if self._lives_at(d.tenant, loc)]
        return sorted(found, key=lambda d: (d.tenant, d.id))

    def source_entries(self, source: str | None = None) -> list[SourceEntry]:
        return sorted((e for loc, kb in self._each() for e in kb.source_entries(source)
                       if self._lives_at(e.tenant, loc)), key=lambda e: (e.tenant, e.doc_id))

    def conflicts(self, tenant: str | None = None, status: str | None = None, *,
                  session: ReadSession | None = None) -> list[Conflict]:
        if tenant is not None:
            return self._routed(tenant, lambda kb: kb.conflicts(tenant, status, session=session))
        found = [c for loc, kb in self._each() for c in kb.conflicts(None, status, session=session)
                 if self._lives_at(c.tenant, loc)]
        return sorted(found, key=lambda c: (c.detected_at, c.tenant, c.id), reverse=True)

    def runs(self, limit: int = 100, *, source: str | None = None,
             tenant: str | None = None) -> list[RunRecord]:
        if tenant is not None:
            return self._routed(tenant, lambda kb: kb.runs(limit, source=source, tenant=tenant))
        found = [r for loc, kb in self._each() for r in kb.runs(limit, source=source)
                 if (r.tenant is None and location_key(loc) == location_key(self._placement.default))
                 or (r.tenant is not None and self._lives_at(r.tenant, loc))]
        return sorted(found, key=lambda r: r.started_at, reverse=True)[:limit]

    def check_readable(self) -> None:
        for _, kb in self._each():
            kb.check_readable()

    @property
    def written_generation(self) -> int:
        return max(kb.written_generation for kb in self._handles.values())

    def session(self, at_least: int | None = None) -> ReadSession:
        if at_least is not None:
            raise EvidexError("with tenants on several servers a generation names a write to one of them: "
                              "give at_least to the read (search, answer, resolve, document) instead")
        return ReadSession()  # keyed by lineage, so one session serves every store

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
        if self._owns_tools:
            self._shared_tools.close()

    def __enter__(self) -> PlacedKnowledge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _by_tenant(documents: Iterable[Document]) -> dict[str, list[Document]]:
    """The documents per tenant, in their order: each group goes to its tenant's server."""
    groups: dict[str, list[Document]] = {}
    for d in documents:
        groups.setdefault(d.tenant, []).append(d)
    return groups


def open_knowledge(placement: Placement, **settings: Any) -> PlacedKnowledge:
    """The knowledge base of ``placement``; ``settings`` go to ``KnowledgeBase.open`` for every
    location."""
    return PlacedKnowledge(placement, **settings)


if TYPE_CHECKING:
    # The proof that both implement the whole protocol with compatible signatures: mypy
    # rejects either return when a member is missing or differs (``make typecheck``).
    def _router_is_knowledge(router: PlacedKnowledge) -> Knowledge:
        return router

    def _knowledge_base_is_knowledge(kb: KnowledgeBase) -> Knowledge:
        return kb
