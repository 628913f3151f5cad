"""The service's own numbers for ``GET /metrics`` (``_metrics``), per tenant.

What is counted where it happens (requests by route in ``RequestMetrics``, answers, searches,
vector fallbacks, tool lookups and feedback in their routes) is kept in one registry of the
``prometheus_client`` library; what is already recorded in the store (the run log of syncs and
drift checks, the store's generation and its replicas' lag) is read from it when scraped, so
the scheduler's runs in the main process are seen by every worker alike.

Every series carries a ``tenant`` label, and a scrape answers only the admin key's tenant's
series (``TenantView`` filters the registry). Every other label has a bounded set of values:
route templates of this app (never a path with an id in it), statuses, decline reasons, search
modes, configured tool and source ids, server digests. No question text, no document id, no
trace id, no key name is ever a label: a metric must not be a side door to data.

With several worker processes (``evidex serve --workers N``) the counters live in files of a
shared folder (``prometheus_client``'s multiprocess mode, ``PROMETHEUS_MULTIPROC_DIR``, set by
``serve``) and a scrape sums every worker's, whichever worker answers it.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics
from prometheus_client.exposition import generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from ..knowledge import Knowledge
from ._consistency import server_id
from ._identity import Principal

__all__ = ["MULTIPROC_ENV", "RequestMetrics", "ServiceMetrics", "TenantView"]

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
#: Latency buckets in seconds: a search takes milliseconds, an answer with a model seconds.
_LATENCY = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: A label value that is not one of the words evidex itself writes becomes "other", so a
#: label set stays bounded even if a reason or status were ever built from input.
_WORD = re.compile(r"[a-z][a-z0-9_]{0,39}")
#: How many runs of the log a scrape reads (the newest), per tenant.
_RUNS_READ = 1000


def _word(value: object) -> str:
    return value if isinstance(value, str) and _WORD.fullmatch(value) else "other"


class ServiceMetrics:
    """The counters and histograms of one app (one registry each, so two apps in a process,
    as in the tests, never share series)."""

    def __init__(self) -> None:
        # The ``*_created`` series (when each label set was first seen) double the exposition
        # and tell a dashboard nothing ``process_start_time``-style restarts would not.
        disable_created_metrics()
        self.registry = CollectorRegistry(auto_describe=False)
        r = self.registry
        self.requests = Counter("evidex_http_requests", "HTTP requests answered, by route template, "
                                "method and status", ["tenant", "route", "method", "status"], registry=r)
        self.latency = Histogram("evidex_http_request_duration_seconds", "time from the request's "
                                 "arrival to its last byte, by route template", ["tenant", "route"],
                                 buckets=_LATENCY, registry=r)
        self.answers = Counter("evidex_answers", "answers given, by status (answered, declined) and "
                               "decline reason (none when answered)", ["tenant", "status", "reason"],
                               registry=r)
        self.searches = Counter("evidex_searches", "searches through /v1/search, by mode",
                                ["tenant", "mode"], registry=r)
        self.fallbacks = Counter("evidex_vector_fallbacks", "hybrid searches that returned the "
                                 "keyword ranking, by reason (no_vectors, vector_timeout)",
                                 ["tenant", "reason"], registry=r)
        self.lookups = Counter("evidex_tool_lookups", "live tool lookups (answers and operator "
                               "calls), by tool and outcome (ok, failed, needs_claim, flagged)",
                               ["tenant", "tool", "outcome"], registry=r)
        self.lookup_latency = Histogram("evidex_tool_lookup_duration_seconds", "live tool lookup "
                                        "time, by tool", ["tenant", "tool"], buckets=_LATENCY, registry=r)
        self.feedback = Counter("evidex_feedback", "answer feedback received, by rating",
                                ["tenant", "rating"], registry=r)

    # -- what the routes call -------------------------------------------------------------------
    def request(self, tenant: str, route: str, method: str, status: int, seconds: float) -> None:
        self.requests.labels(tenant, route, method, str(status)).inc()
        self.latency.labels(tenant, route).observe(seconds)

    def answered(self, who: Principal, reply: Mapping[str, Any]) -> None:
        reason = "none" if reply.get("status") == "answered" else _word(reply.get("reason"))
        self.answers.labels(who.actor.tenant, _word(reply.get("status")), reason).inc()

    def searched(self, who: Principal, mode: str, reply: Mapping[str, Any]) -> None:
        self.searches.labels(who.actor.tenant, _word(mode)).inc()
        fallback = reply.get("fallback")
        if fallback:
            self.fallbacks.labels(who.actor.tenant, _word(fallback.get("reason"))).inc()

    def looked_up(self, who: Principal, lookups: Iterable[Any]) -> None:
        """``lookups``: ``tools.LiveSource`` values (tool id, status, ms)."""
        for found in lookups:
            tool = str(found.tool)
            self.lookups.labels(who.actor.tenant, tool, _word(found.status)).inc()
            self.lookup_latency.labels(who.actor.tenant, tool).observe(float(found.ms) / 1000.0)

    def rated(self, who: Principal, rating: str) -> None:
        self.feedback.labels(who.actor.tenant, _word(rating)).inc()

    # -- the scrape -----------------------------------------------------------------------------
    def exposition(self, tenant: str, kb: Knowledge) -> bytes:
        """The text exposition of ``tenant``'s series: the counters of every worker, then what
        the store records."""
        return generate_latest(TenantView(self._counted(), tenant, kb))  # type: ignore[arg-type]

    def _counted(self) -> Any:
        folder = os.environ.get(MULTIPROC_ENV)
        if not folder:
            return self.registry
        from prometheus_client import multiprocess

        merged = CollectorRegistry(auto_describe=False)
        multiprocess.MultiProcessCollector(merged, path=folder)
        return merged


class TenantView:
    """A collector of one tenant's series: the counted ones filtered by their ``tenant`` label,
    and the store's records of that tenant."""

    def __init__(self, counted: Any, tenant: str, kb: Knowledge) -> None:
        self.counted, self.tenant, self.kb = counted, tenant, kb

    def collect(self) -> Iterator[Metric]:
        for family in self.counted.collect():
            mine = [s for s in family.samples if s.labels.get("tenant") == self.tenant]
            if mine:
                copy = Metric(family.name, family.documentation, family.type, family.unit)
                copy.samples = mine
                yield copy
        yield from _store_families(self.kb, self.tenant)


def _seconds(stamp: str) -> float | None:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _store_families(kb: Knowledge, tenant: str) -> Iterator[Metric]:
    runs = kb.runs(_RUNS_READ, tenant=tenant)
    total = CounterMetricFamily("evidex_source_runs", "sync and drift runs in the store's run log "
                                f"(its newest {_RUNS_READ}), by kind and outcome",
                                labels=["tenant", "kind", "outcome"])
    counts: dict[tuple[str, str], int] = {}
    for run in runs:
        key = (_word(run.kind), "ok" if run.ok else "problems")
        counts[key] = counts.get(key, 0) + 1
    for (kind, outcome), n in sorted(counts.items()):
        total.add_metric([tenant, kind, outcome], n)
    yield total
    ended = GaugeMetricFamily("evidex_source_last_run_timestamp_seconds", "when the latest run "
                              "of each source ended (Unix time)", labels=["tenant", "kind", "source"])
    took = GaugeMetricFamily("evidex_source_last_run_duration_seconds", "how long the latest run "
                             "of each source took", labels=["tenant", "kind", "source"])
    ok = GaugeMetricFamily("evidex_source_last_run_ok", "1 when the latest run of each source had "
                           "no problem, else 0", labels=["tenant", "kind", "source"])
    latest: set[tuple[str, str]] = set()
    for run in runs:  # newest first: the first of each (kind, source) is its latest
        if (run.kind, run.source) in latest:
            continue
        latest.add((run.kind, run.source))
        labels = [tenant, _word(run.kind), run.source]
        start, end = _seconds(run.started_at), _seconds(run.ended_at)
        if end is not None:
            ended.add_metric(labels, end)
            if start is not None:
                took.add_metric(labels, max(0.0, end - start))
        ok.add_metric(labels, 1.0 if run.ok else 0.0)
    yield from (ended, took, ok)
    handle = kb.for_tenant(tenant)
    # The tenant's own generation: the store's counts every tenant's writes (issue 45).
    generation = GaugeMetricFamily("evidex_store_generation", "the generation of the tenant's "
                                   "newest write as this worker reads the store (other tenants' "
                                   "writes never move it)", labels=["tenant"])
    with handle.store.read() as view:
        gen = view.tenant_generation(tenant)
    if gen is not None:
        generation.add_metric([tenant], float(gen))
    yield generation
    lag = GaugeMetricFamily("evidex_store_replica_lag_seconds", "how far each replica of the "
                            "tenant's store is behind its primary", labels=["tenant", "server"])
    for s in handle.servers():
        if isinstance(s.get("lag_s"), int | float):
            lag.add_metric([tenant, server_id(str(s["server"]))], float(s["lag_s"]))  # type: ignore[arg-type]
    yield lag


class RequestMetrics:
    """ASGI middleware inside ``Guard`` (which authenticated the caller): counts each
    authenticated request by its route template and status, and times it. Requests without a
    verified caller (401s, the page, ``/healthz``) belong to no tenant and are not counted."""

    def __init__(self, app: Any, metrics: ServiceMetrics) -> None:
        self.app, self.metrics = app, metrics

    def _template(self, scope: dict[str, Any]) -> str:
        """The path template of the app's route that served ``scope`` (FastAPI leaves the
        matched route in the scope); "other" when none did (a made-up path: never the path
        itself, which would let a caller mint series)."""
        path = getattr(scope.get("route"), "path", None)
        return path if isinstance(path, str) else "other"

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        who = scope.get("state", {}).get("principal") if scope["type"] == "http" else None
        if not isinstance(who, Principal):
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = 0

        async def sending(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            self.metrics.request(who.actor.tenant, self._template(scope), str(scope.get("method")),
                                 status or 500, time.perf_counter() - t0)
