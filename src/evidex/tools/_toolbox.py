"""The configured tools of one process: which a question asks for, the lookups (run on worker
threads, so several tools and the search can overlap), live citations and their resolution.

A lookup never raises for a failure of the remote system: it becomes a ``LiveSource`` whose
``status`` says what happened, with a ``detail`` safe to show (no credentials, no response
text). Nothing of a response is stored anywhere; its text lives in the answer and citation
only, and the trace gets tool id, status, timing and the response's SHA-256.

Lookups are bounded so that a slow tool service degrades only its own tenant's answers: a tool
runs at most ``max_concurrent`` lookups at once, a tenant at most ``per_tenant``, the process at
most ``workers`` (one thread each, never queued behind others); a lookup past a limit is
declined at once. Each lookup ends by its deadline whatever the service does (``_http``), and
callers wait for it without holding anything else (``Pending.wait_async``).
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import hashlib
import threading
import time
import unicodedata
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..ingest import scan
from ..model import Actor, CitationError, EvidexError, Resolution, can_access
from ._config import ToolConfig
from ._http import fetch, fill_headers, new_client
from ._params import Bound, bind, explicit_values, mentions, question_values, question_words
from ._render import fields_of, parse_json, render
from ._url import build_url, display_url

if TYPE_CHECKING:
    import httpcore

__all__ = ["LIVE_KIND", "MIN_SECRET_OVERLAP", "PER_TENANT", "WORKERS", "LiveSource", "Pending", "Toolbox",
           "compare", "repeats_secret"]

LIVE_KIND = "live"
#: How long past a lookup's own deadline its caller waits for the worker to report.
_GRACE_S = 0.02
Status = Literal["ok", "failed", "needs_claim", "flagged"]


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class LiveSource:
    """One lookup's outcome. ``status``: ``ok`` (``quote`` and ``citation`` are set),
    ``failed`` (the system did not give a usable answer), ``needs_claim`` (the caller lacks a
    verified claim the tool needs; nothing was requested), ``flagged`` (the response holds
    instruction-like text: never used as a source)."""

    tool: str
    status: Status
    quote: str = ""
    citation: dict[str, Any] | None = None
    detail: str = ""
    flags: tuple[str, ...] = ()
    ms: float = 0.0
    response_sha256: str | None = None
    parameters: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def trace(self) -> dict[str, Any]:
        """What an answer's trace records: never the response or the rendered text."""
        return {"tool": self.tool, "status": self.status, "ms": round(self.ms, 1),
                "response_sha256": self.response_sha256}

    def as_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "status": self.status, "quote": self.quote,
                "citation": self.citation, "detail": self.detail, "flags": list(self.flags),
                "ms": round(self.ms, 1), "response_sha256": self.response_sha256}


class Pending:
    """Lookups under way (``Toolbox.start``); ``wait`` returns them in the order asked, each
    by its own deadline at the latest."""

    def __init__(self, items: list[tuple[Bound, Future[LiveSource] | LiveSource, float, float]]) -> None:
        self._items = items

    def __len__(self) -> int:
        return len(self._items)

    async def wait_async(self) -> list[LiveSource]:
        """``wait`` for an event loop: the caller's task is suspended, no thread is held while
        the lookups run."""
        jobs = [asyncio.wrap_future(job) for _, job, _, _ in self._items if isinstance(job, Future)]
        if jobs:
            last = max(deadline for _, _, _, deadline in self._items)
            await asyncio.wait(jobs, timeout=max(0.0, last + _GRACE_S - time.monotonic()))
        return self.wait()

    def wait(self) -> list[LiveSource]:
        out = []
        for bound, job, started, deadline in self._items:
            if isinstance(job, LiveSource):
                out.append(job)
                continue
            try:
                out.append(job.result(timeout=max(0.0, deadline + _GRACE_S - time.monotonic())))
            except FutureTimeout:
                job.cancel()
                t = bound.tool
                out.append(LiveSource(t.id, "failed", detail=f"the service did not answer within "
                                      f"{t.timeout_ms} ms ({t.retries + 1} attempts allowed)",
                                      ms=(time.monotonic() - started) * 1000,
                                      parameters=dict(bound.question)))
        return out


def _redact(text: str, secrets: Sequence[str]) -> str:
    for s in secrets:
        if s:
            text = text.replace(s, "[redacted]")
    return text


#: The shortest run of a credential that, found in a response's text, counts as the credential
#: repeated (a token cut at the response's end, or split by other characters).
MIN_SECRET_OVERLAP = 8


def _folded(text: str) -> str:
    """Letters and digits only, compatibility-normalised and case-folded: a credential echoed
    upper-cased, with a NUL or a space inside, or in full-width letters folds to the same."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).casefold() if ch.isalnum())


def repeats_secret(text: str, secrets: Sequence[str]) -> bool:
    """Whether ``text`` holds any of ``secrets``, or a run of ``MIN_SECRET_OVERLAP`` of its
    characters, once both are folded (``_folded``)."""
    folded = _folded(text)
    for secret in secrets:
        s = _folded(secret)
        if not s:
            continue
        if len(s) <= MIN_SECRET_OVERLAP:
            if s in folded:
                return True
            continue
        runs = {s[i:i + MIN_SECRET_OVERLAP] for i in range(len(s) - MIN_SECRET_OVERLAP + 1)}
        if any(folded[i:i + MIN_SECRET_OVERLAP] in runs
               for i in range(len(folded) - MIN_SECRET_OVERLAP + 1)):
            return True
    return False


class _Slots:
    """Lookups under way per tool, per tenant and in all: a lookup is started only when all
    three are below their limits (checked and counted under one lock)."""

    def __init__(self, per_tenant: int, total: int) -> None:
        self.per_tenant, self.total = per_tenant, total
        self._lock = threading.Lock()
        self._tools: dict[str, int] = {}
        self._tenants: dict[str, int] = {}
        self._all = 0

    def take(self, t: ToolConfig) -> str | None:
        """None when a lookup of ``t`` may start now (and is counted), else why not."""
        with self._lock:
            if self._tools.get(t.id, 0) >= t.max_concurrent:
                return (f"{t.max_concurrent} lookups of this tool are already under way (its "
                        "max_concurrent); try again shortly")
            if self._tenants.get(t.tenant, 0) >= self.per_tenant:
                return (f"{self.per_tenant} lookups of this tenant's tools are already under way "
                        "(the limit per tenant); try again shortly")
            if self._all >= self.total:
                return f"{self.total} lookups are already under way (the limit of this service)"
            self._tools[t.id] = self._tools.get(t.id, 0) + 1
            self._tenants[t.tenant] = self._tenants.get(t.tenant, 0) + 1
            self._all += 1
            return None

    def give(self, t: ToolConfig) -> None:
        with self._lock:
            self._tools[t.id] -= 1
            self._tenants[t.tenant] -= 1
            self._all -= 1

    def under_way(self) -> int:
        with self._lock:
            return self._all


#: Lookups of one tenant's tools under way at once in one process, by default.
PER_TENANT = 16
#: Lookups under way at once in one process (one thread each), by default.
WORKERS = 64


class Toolbox:
    """The tools of a configuration, with the HTTP client and worker threads they share.
    Thread-safe; one per process is enough (``close`` when done). ``per_tenant`` and
    ``workers`` bound the lookups under way (see the module docstring)."""

    def __init__(self, tools: Sequence[ToolConfig], *, environ: Mapping[str, str] | None = None,
                 workers: int = WORKERS, per_tenant: int = PER_TENANT) -> None:
        seen: set[str] = set()
        for t in tools:
            if not isinstance(t, ToolConfig):
                raise EvidexError(f"a tool must be a ToolConfig, got {type(t).__name__}")
            if t.id in seen:
                raise EvidexError(f"tool id {t.id!r} is used twice")
            seen.add(t.id)
        self.tools: tuple[ToolConfig, ...] = tuple(tools)
        self._environ = environ
        self._workers = workers
        self._slots = _Slots(per_tenant, workers)
        self._lock = threading.Lock()
        self._client: httpcore.ConnectionPool | None = None
        self._pool: ThreadPoolExecutor | None = None

    # -- which tools ------------------------------------------------------------------------------
    def get(self, tool_id: str) -> ToolConfig | None:
        return next((t for t in self.tools if t.id == tool_id), None)

    def usable(self, actor: Actor) -> list[ToolConfig]:
        """The tools ``actor`` may use: the one access rule, as for a document."""
        return [t for t in self.tools if can_access(actor, t.tenant, t.groups, t.visibility)]

    def asked(self, actor: Actor, question: str) -> list[Bound]:
        """The tools ``question`` asks for that ``actor`` may use, with their parameters."""
        words = question_words(question)
        out = []
        for tool in self.usable(actor):
            if not mentions(tool, words):
                continue
            values = question_values(tool, question)
            if values is not None:
                out.append(bind(tool, actor, values))
        return out

    # -- lookups ----------------------------------------------------------------------------------
    def start(self, bounds: Sequence[Bound]) -> Pending:
        """Start the lookups on worker threads (a tool without a needed claim is not called)."""
        items: list[tuple[Bound, Future[LiveSource] | LiveSource, float, float]] = []
        if any(not b.missing_claims for b in bounds):
            self._http()  # the first use builds the client; never inside a lookup's deadline
        for b in bounds:
            started = time.monotonic()
            deadline = started + b.tool.timeout_ms / 1000 * (b.tool.retries + 1)
            busy = None if b.missing_claims else self._slots.take(b.tool)
            if b.missing_claims:
                job: Future[LiveSource] | LiveSource = LiveSource(
                    b.tool.id, "needs_claim", parameters=dict(b.question),
                    detail=f"this lookup needs a signed-in caller whose identity carries "
                           f"{', '.join(b.missing_claims)}")
            elif busy is not None:
                job = LiveSource(b.tool.id, "failed", detail=busy, parameters=dict(b.question))
            else:
                job = self._executor().submit(self._lookup, b, started, deadline)
                # Given back when the lookup ends, or when it is cancelled before it started.
                job.add_done_callback(lambda _, t=b.tool: self._slots.give(t))
            items.append((b, job, started, deadline))
        return Pending(items)

    def under_way(self) -> int:
        """Lookups running now (for tests and benchmarks)."""
        return self._slots.under_way()

    def lookup(self, bound: Bound) -> LiveSource:
        return self.start([bound]).wait()[0]

    def call(self, actor: Actor, tool_id: str, parameters: Mapping[str, object], *,
             operator: bool = False) -> LiveSource:
        """One lookup with explicit question parameters. ``operator``: an admin of the tool's
        tenant (groups and visibility are not checked; actor parameters still come from the
        actor's own claims)."""
        return self.lookup(self.called(actor, tool_id, parameters, operator=operator))

    def called(self, actor: Actor, tool_id: str, parameters: Mapping[str, object], *,
               operator: bool = False) -> Bound:
        """The lookup ``call`` makes, checked and bound, not started (``start`` it)."""
        tool = self.get(tool_id) if isinstance(tool_id, str) else None
        allowed = tool is not None and (
            (actor.active and actor.tenant == tool.tenant) if operator
            else can_access(actor, tool.tenant, tool.groups, tool.visibility))
        if tool is None or not allowed:
            # The same answer for unknown and not allowed: no probing for other tenants' tools.
            raise EvidexError(f"no tool {tool_id!r} is available to you")
        return bind(tool, actor, explicit_values(tool, parameters))

    def _lookup(self, b: Bound, started: float, deadline: float) -> LiveSource:
        t = b.tool
        secrets: tuple[str, ...] = ()

        def failed(detail: str, status: Status = "failed", **more: Any) -> LiveSource:
            return LiveSource(t.id, status, detail=_redact(detail, secrets),
                              ms=(time.monotonic() - started) * 1000, parameters=dict(b.question),
                              **more)

        try:
            headers, secrets = fill_headers(t.headers, self._environ)
            url = build_url(t.url, {**b.question, **b.actor})
        except EvidexError as exc:
            return failed(str(exc))
        got = fetch(self._http(), url, headers, timeout_s=t.timeout_ms / 1000, retries=t.retries,
                    max_bytes=t.max_response_bytes, deadline=deadline)
        if not got.ok:
            return failed(got.detail)
        fetched_at = _now()
        digest = hashlib.sha256(got.body).hexdigest()
        try:
            doc = parse_json(got.body)
            quote = render(t.render, {**b.question, **fields_of(doc, t.fields)})
        except EvidexError as exc:
            return failed(str(exc), response_sha256=digest)
        if repeats_secret(quote, secrets):
            return failed("the response repeats a credential of the request; it is not used",
                          response_sha256=digest)
        flags = scan(quote)
        if flags:
            return failed("the response holds instruction-like text; it is not used as a source",
                          "flagged", quote=quote, flags=flags, response_sha256=digest)
        citation = {
            "kind": LIVE_KIND, "tool": t.id, "title": t.description,
            "parameters": dict(b.question), "actor_parameters": sorted(b.actor),
            "fetched_at": fetched_at, "content_sha256": digest, "quote": quote,
            "source_url": display_url(t.url, b.question, frozenset(t.actor_parameters())),
        }
        return LiveSource(t.id, "ok", quote, citation, ms=(time.monotonic() - started) * 1000,
                          response_sha256=digest, parameters=dict(b.question))

    # -- resolving --------------------------------------------------------------------------------
    def resolve(self, actor: Actor, citation: Mapping[str, Any]) -> Resolution:
        """Look the cited value up again, as ``actor``: ``ok`` when the rendered text is the
        same, ``source_changed`` (with the current text) when it is not, ``unavailable`` when
        the actor may not use the tool (any more) or the system gives no usable answer."""
        again = self.resolving(actor, citation)
        if isinstance(again, Resolution):
            return again
        return compare(self.lookup(again), citation)

    def resolving(self, actor: Actor, citation: Mapping[str, Any]) -> Bound | Resolution:
        """The lookup that re-checks ``citation`` (``start`` it, then ``compare``), or the
        resolution when there is nothing to look up."""
        tool_id, params, quote = (citation.get("tool"), citation.get("parameters"),
                                  citation.get("quote"))
        if not isinstance(tool_id, str) or not isinstance(params, Mapping) or not isinstance(quote, str):
            raise CitationError("this is not a live citation: it needs tool (a string), parameters "
                                "(an object) and quote (a string)")
        tool = self.get(tool_id)
        if tool is None or not can_access(actor, tool.tenant, tool.groups, tool.visibility):
            return Resolution(False, "unavailable", "the tool is not available to you")
        try:
            values = explicit_values(tool, params)
        except EvidexError as exc:
            raise CitationError(f"this is not a citation of tool {tool_id!r}: {exc}") from None
        return bind(tool, actor, values)

    # -- resources --------------------------------------------------------------------------------
    def _http(self) -> httpcore.ConnectionPool:
        with self._lock:
            if self._client is None:
                self._client = new_client()
            return self._client

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="evidex-tool")
            return self._pool

    def close(self) -> None:
        """Stop the worker threads (without waiting for lookups a caller gave up on) and close
        the HTTP client. Using the toolbox afterwards starts them again."""
        with self._lock:
            pool, client = self._pool, self._client
            self._pool = self._client = None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if client is not None:
            client.close()


def compare(now: LiveSource, citation: Mapping[str, Any]) -> Resolution:
    """A live citation against the lookup made again now (``Toolbox.resolving``)."""
    if not now.ok:
        return Resolution(False, "unavailable", f"the lookup cannot be repeated now: {now.detail}")
    if now.quote != citation.get("quote"):
        return Resolution(False, "source_changed", f"the lookup now says: {now.quote}")
    return Resolution(True, None, "")
