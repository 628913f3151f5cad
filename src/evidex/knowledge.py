"""``Knowledge``: what the CLI, the service, MCP, sources and evaluation call on a knowledge base.

Two things implement it, and neither is a subclass of the other: ``KnowledgeBase`` over one
store, and ``placement.PlacedKnowledge`` over tenants placed on several stores, which holds a
``KnowledgeBase`` per store and routes each call by tenant. Callers name this protocol, so
either can be handed to them. The type checker proves that both implement every member with a
compatible signature (``make typecheck``; ``tests/placement/test_knowledge_protocol.py``): a
method added here and forgotten by the router fails the check instead of silently acting on
one store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from .answer import Answer, AnswerSettings, OpenAIConfig, OpenAIGenerator
from .check import CheckReport
from .ingest import DEFAULT_MAX_SECTION_CHARS
from .kb import KnowledgeBase
from .model import (
    Actor,
    Conflict,
    Document,
    DocumentView,
    Filters,
    IngestReport,
    Resolution,
    SearchResults,
)
from .query import QueryLimits
from .retrieve import DEFAULT_FUSION, Fusion
from .store import ReadSession, RunRecord, SourceEntry, Store, StoredDocument
from .tools import LiveSource, Toolbox, ToolConfig

__all__ = ["Knowledge"]



class Knowledge(Protocol):
    """A knowledge base as its callers see it (``KnowledgeBase`` documents each member)."""

    # -- what spans no tenant's data ------------------------------------------------------------
    @property
    def store(self) -> Store:
        """The default location's store: records that belong to no tenant (the scheduler's
        claims) live there. A tenant's data is read through ``for_tenant(tenant).store``."""

    @property
    def analyzer(self) -> str: ...

    @property
    def answer_settings(self) -> AnswerSettings: ...

    @property
    def toolbox(self) -> Toolbox: ...

    def tools(self, actor: Actor | None = None) -> list[ToolConfig]: ...

    def live_sources(self, actor: Actor, question: str) -> list[LiveSource]: ...

    def call_tool(self, actor: Actor, tool_id: str, parameters: Mapping[str, object], *,
                  operator: bool = False) -> LiveSource: ...

    # -- writing -------------------------------------------------------------------------------
    def ingest(self, documents: Iterable[Document] | Document, split: str = "paragraph", *,
               max_section_chars: int = DEFAULT_MAX_SECTION_CHARS, keep_history: bool | None = None,
               sources: Sequence[SourceEntry] = (), batch_size: int | None = None,
               progress: Callable[[int, int], None] | None = None,
               identify_languages: bool = False, session: ReadSession | None = None) -> IngestReport: ...

    def unchanged(self, documents: Iterable[Document], split: str = "paragraph", *,
                  max_section_chars: int = DEFAULT_MAX_SECTION_CHARS) -> set[tuple[str, str]]: ...

    def remove(self, tenant: str, document_id: str, *, session: ReadSession | None = None) -> bool: ...

    def dismiss_conflict(self, tenant: str, conflict_id: int, by: str) -> bool: ...

    def record_run(self, run: RunRecord) -> int: ...

    def reembed(self, model: str, progress: Callable[[int, int], None] | None = None, *,
                session: ReadSession | None = None) -> int: ...

    def reindex(self, analyzer: str, *, session: ReadSession | None = None) -> int: ...

    def optimize(self) -> None: ...

    # -- reading -------------------------------------------------------------------------------
    def search(self, actor: Actor, query: str, limit: int = 6, *, match: str = "any",
               mode: str = "hybrid", filters: Filters | Mapping[str, Any] | None = None,
               max_per_document: int | None = 2, explain: bool = False,
               fusion: Fusion | str = DEFAULT_FUSION, rrf_k: int = 60, window: int = 50,
               alpha: float = 0.5, limits: QueryLimits | None = None, rerank: bool = False,
               evidence: bool = False, at_least: int | None = None,
               session: ReadSession | None = None) -> SearchResults: ...

    def answer(self, actor: Actor, question: str, generator: str = "extractive", *,
               filters: Filters | Mapping[str, Any] | None = None,
               settings: AnswerSettings | None = None,
               openai: OpenAIGenerator | OpenAIConfig | None = None,
               live: Sequence[LiveSource] | None = None, at_least: int | None = None,
               session: ReadSession | None = None) -> Answer: ...

    def resolve(self, actor: Actor, citation: Mapping[str, Any], *, at_least: int | None = None,
                session: ReadSession | None = None) -> Resolution: ...

    def document(self, actor: Actor, document_id: str, *, at_least: int | None = None,
                 session: ReadSession | None = None) -> DocumentView | None: ...

    def documents(self, tenant: str | None = None) -> list[StoredDocument]: ...

    def source_entries(self, source: str | None = None) -> list[SourceEntry]: ...

    def conflicts(self, tenant: str | None = None, status: str | None = None, *,
                  session: ReadSession | None = None) -> list[Conflict]: ...

    def runs(self, limit: int = 100, *, source: str | None = None,
             tenant: str | None = None) -> list[RunRecord]: ...

    @property
    def written_generation(self) -> int: ...

    def session(self, at_least: int | None = None) -> ReadSession: ...

    # -- where the data is, and the operators' view ---------------------------------------------
    def for_tenant(self, tenant: str) -> KnowledgeBase: ...

    def server_of(self, tenant: str) -> str: ...

    def servers(self) -> list[dict[str, object]]: ...

    def check_readable(self) -> None: ...

    def stats(self) -> dict[str, object]: ...

    def check(self) -> CheckReport: ...

    def close(self) -> None: ...

    def __enter__(self) -> Knowledge: ...

    def __exit__(self, *exc: object) -> None: ...


