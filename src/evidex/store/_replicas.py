"""A store over a PostgreSQL primary and its streaming read replicas.

PostgreSQL's own streaming replication copies the primary's every page to hot standbys; evidex
only decides where each call goes:

* **Writes** (ingest, sync, remove, merges, migrations, records) and the reads writers make
  (which documents are unchanged, source entries, recorded conflicts and runs, document lists)
  go to the primary. A primary that does not answer fails the call within
  ``ReplicaSettings.timeout_s`` with one ``ServerUnavailable`` saying writes are refused until
  it is back; reads go on.
* **Reads** (``read``: search, answer, resolve, document, stats, evaluation) go to a healthy
  replica, taken in turn. A read that must include a generation (``at_least``, what the
  caller's ``ReadSession`` needs, or this handle's own last write: read your writes) takes a
  replica whose snapshot has replayed it, waiting up to ``wait_s`` for one, else the primary;
  it is never served an older snapshot. A replica's snapshot is a consistent committed state
  of the primary: the same pages, the same passage ids, the same generation numbers, so
  results and scores equal the primary's at the same generation.
* **Health**: a background thread probes every server each ``probe_s``: the primary's
  generation, each replica's generation and replay lag. A replica lagging more than
  ``max_lag_s`` (or ``max_lag_generations``), failing a probe, or failing a read is skipped
  until a probe finds it well again. A read that fails on a replica because the server went
  away raises ``ReadFailed``, which the caller retries once on another server
  (``KnowledgeBase``). With no replica usable, reads go to the primary (logged once per
  change); with the primary down as well, to the freshest replica that answers, whatever its
  lag, unless the read needs a generation none has replayed.

Lag in time is taken two ways and the larger counts: PostgreSQL's (``now()`` minus the commit
time of the last transaction replayed, while WAL waits to be replayed) and evidex's own,
which needs no clock agreement between servers: how long ago the probe first saw the primary
past the replica's generation.

Caches: each server has its own ``PostgresStore`` handle, so its segment cache and vector
blocks only ever hold that server's snapshots. The ranking caches a ``KnowledgeBase`` keeps
above them are keyed by access-signature versions and passage ids, which are equal on every
server of one lineage at equal generations (physical replication), so they serve all of them.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg
from psycopg import sql

from ..model import IngestReport, ReadFailed, ServerUnavailable, StoreError
from ._contract import DocumentWrite, HistoryEntry, SourceEntry, StoredDocument
from ._location import redacted, scrubbed, split_url
from ._postgres import PostgresStore, lineage_of, server_name
from ._session import ReadSession
from ._tenants import Mark
from ._view import SQLView

__all__ = ["ReplicaSettings", "ReplicatedStore", "is_connection_error"]

logger = logging.getLogger("evidex.store")
T = TypeVar("T")

#: SQLSTATEs of a server going away (admin or crash shutdown, cannot connect now) and of a
#: standby cancelling a read that conflicts with what it replays.
_GONE = ("57P01", "57P02", "57P03")
_RECOVERY_CONFLICT = ("40001",)


@dataclass(frozen=True, slots=True)
class ReplicaSettings:
    """How reads are spread and when a replica is skipped (the configuration's ``store:``)."""

    #: A replica further behind its primary than this many seconds is skipped.
    max_lag_s: float = 10.0
    #: ... or than this many generations (None: no bound in generations).
    max_lag_generations: int | None = None
    #: How long a read that must include a generation waits for a replica that has it before
    #: it goes to the primary.
    wait_s: float = 1.0
    #: Connecting, and waiting for a pooled connection, give up after this: a primary that is
    #: down fails a write within it.
    timeout_s: float = 4.0
    #: Seconds between two health probes of every server.
    probe_s: float = 1.0


def is_connection_error(exc: BaseException) -> bool:
    """Whether ``exc`` says the server went away (not that the query was wrong)."""
    if isinstance(exc, ServerUnavailable | psycopg.InterfaceError):
        return True
    if isinstance(exc, psycopg.OperationalError):
        state = exc.sqlstate
        return state is None or state.startswith("08") or state in _GONE
    return False


def _retryable_read(exc: BaseException) -> bool:
    return is_connection_error(exc) or (isinstance(exc, psycopg.Error) and exc.sqlstate in _RECOVERY_CONFLICT)


class _Server:
    """One server as the router sees it."""

    def __init__(self, role: str, url: str) -> None:
        self.role = role
        self.url = url
        self.name = f"{role} {server_name(url_conninfo(url))}"
        self.store: PostgresStore | None = None
        self.state = "starting"  # ok, lagging, down (or starting: not probed yet)
        self.error = ""
        self.generation: int | None = None
        #: Each tenant's generation on this server (``_tenants.TENANT_GENERATION``), for its admin.
        self.tenants: dict[str, int] | None = None
        self.lag_s: float | None = None
        self.since = time.time()
        #: The probe's own connection (never one of the store's pooled ones).
        self.probe_conn: psycopg.Connection | None = None
        #: The thread of this server's latest probe, and when it started: one that has not
        #: returned (a hung server) is not started again, and the server counts as down.
        self.prober: threading.Thread | None = None
        self.probe_started = 0.0

    def describe(self) -> dict[str, object]:
        return {"role": self.role, "server": self.name, "url": redacted(self.url), "state": self.state,
                "generation": self.generation, "tenant_generations": dict(self.tenants or {}),
                "lag_s": None if self.lag_s is None else round(self.lag_s, 3),
                "error": self.error or None, "since": round(self.since, 3)}


def url_conninfo(url: str) -> str:
    return split_url(url)[0]


def _primary_call() -> Any:
    """A method that is the primary store's own method of the same name (with its signature and
    documentation there), with the primary's connection failure reported as the others are.
    One per name: the name it is bound to is the method it calls."""

    class Forward:
        def __set_name__(self, owner: type, name: str) -> None:
            self.name = name

        def __get__(self, store: Any, owner: type | None = None) -> Any:
            name = self.name
            return lambda *args, **kwargs: store._on_primary(lambda s: getattr(s, name)(*args, **kwargs))

    return Forward()


class ReplicatedStore:
    """The ``Store`` contract over a primary and its streaming replicas (module docstring)."""

    def __init__(self, primary: str, replicas: Sequence[str], *, analyzer: str | None = None,
                 embedder: str | None = None, dimension: int = 0,
                 create_embedder: tuple[str, int] = ("none", 0),
                 settings: ReplicaSettings | None = None, pool_size: int = 4) -> None:
        if not replicas:
            raise StoreError("a replicated store needs at least one replica URL")
        self.settings = settings or ReplicaSettings()
        self.lineage = lineage_of(primary)
        self._pool_size = pool_size
        self._open_args = {"analyzer": analyzer, "embedder": embedder, "dimension": dimension,
                           "create_embedder": create_embedder}
        self._primary = _Server("primary", primary)
        self._replicas = [_Server("replica", u) for u in replicas]
        names = [self._primary.name, *(r.name for r in self._replicas)]
        if len(set(names)) != len(names):
            raise StoreError("the primary and every replica must be different servers")
        self.label = self._primary.name
        self._lock = threading.Lock()
        self._opening = threading.Lock()  # one handle per server, whichever thread opens it
        self._log_lock = threading.Lock()
        self._turn = itertools.count()
        self._on_primary_logged = False
        self._ready = False  # the first probe sets every state: nothing to log before it
        #: (time, primary generation) of recent probes: when the primary passed a generation.
        self._history: collections.deque[tuple[float, int]] = collections.deque(maxlen=4096)
        self._open_primary()
        for r in self._replicas:
            self._open_replica(r)
        if self._primary.store is None and not any(r.store for r in self._replicas):
            raise self._nobody()
        self._stop = threading.Event()
        self._closed = False
        self.probe()
        self._ready = True
        self._log_reads_target()
        self._monitor = threading.Thread(target=self._probe_loop, name="evidex-replicas", daemon=True)
        self._monitor.start()

    # -- opening ----------------------------------------------------------------------------------
    def _open_primary(self) -> PostgresStore | None:
        s = self._primary
        if s.store is not None:
            return s.store
        with self._opening:
            if s.store is None:
                try:
                    s.store = PostgresStore(s.url, pool_size=self._pool_size,
                                            connect_timeout=self.settings.timeout_s, role="primary",
                                            **self._open_args)  # type: ignore[arg-type]
                except ServerUnavailable as exc:
                    self._set(s, "down", _first_line(exc))
                    return None
        self._set(s, "ok")
        return s.store

    def _open_replica(self, s: _Server) -> None:
        with self._opening:
            if s.store is not None:
                return
            try:
                s.store = PostgresStore(s.url, read_only=True, lineage=self.lineage, role="replica",
                                        pool_size=self._pool_size, connect_timeout=self.settings.timeout_s)
            except StoreError as exc:  # down, or not yet holding the store (replaying its creation)
                self._set(s, "down", _first_line(exc))

    # -- what the store is ------------------------------------------------------------------------
    def _model_source(self) -> PostgresStore:
        for s in (self._primary, *self._replicas):
            if s.store is not None:
                return s.store
        raise ServerUnavailable("no server of the store is open")

    @property
    def analyzer(self) -> str:
        return self._model_source().analyzer

    @property
    def embedder(self) -> str:
        return self._model_source().embedder

    @property
    def dimension(self) -> int:
        return self._model_source().dimension

    @property
    def written(self) -> int:
        return self._primary.store.written if self._primary.store is not None else 0

    def servers(self) -> list[dict[str, object]]:
        """Every server with its role, state, generation and lag as last seen."""
        return [s.describe() for s in (self._primary, *self._replicas)]

    # -- health -----------------------------------------------------------------------------------
    def _set(self, s: _Server, state: str, error: str = "") -> None:
        error = scrubbed(error, s.url)  # a driver's message may quote the connection string
        with self._lock:
            changed = s.state != state
            s.state, s.error = state, error
            if changed:
                s.since = time.time()
        if not self._ready:
            return
        if changed and state != "ok":
            logger.warning("%s is %s: %s", s.name, state, error or "")
        elif changed:
            logger.info("%s is %s again", s.name, "serving reads" if s.role == "replica" else "up")
        self._log_reads_target()

    def _log_reads_target(self) -> None:
        """Log once when reads fall back to the primary for want of a replica, and once when a
        replica serves again."""
        if not self._ready:
            return
        with self._log_lock:  # replicas are probed on threads of their own: one message per change
            none = not any(r.state == "ok" for r in self._replicas)
            if none and not self._on_primary_logged:
                self._on_primary_logged = True
                logger.warning("no replica of %s can serve reads: they go to the primary", self.label)
            elif not none and self._on_primary_logged:
                self._on_primary_logged = False
                logger.info("replicas of %s serve reads again", self.label)

    def _probe_loop(self) -> None:
        while not self._stop.wait(self.settings.probe_s):
            try:
                self.probe()
            except Exception:  # the monitor must outlive any one failure; it is logged
                logger.exception("probing the servers of %s failed", self.label)

    def _probe_conn(self, s: _Server) -> psycopg.Connection:
        if s.probe_conn is None or s.probe_conn.closed:
            s.probe_conn = psycopg.connect(url_conninfo(s.url), autocommit=True,
                                           connect_timeout=max(1, round(self.settings.timeout_s)))
        return s.probe_conn

    def _probe_query(self, s: _Server, query: sql.Composable) -> tuple[Any, ...]:
        try:
            row = self._probe_conn(s).execute(query).fetchone()
        except psycopg.Error:
            if s.probe_conn is not None:
                s.probe_conn.close()
                s.probe_conn = None
            raise
        assert row is not None
        return tuple(row)

    def probe(self) -> None:
        """Look at every server once: generations, replay lag, reachability.

        Each server is looked at on its own thread and given ``timeout_s`` to answer: a server
        that is hung (it accepts, but never answers) is down once that passes, so writes fail
        at once instead of waiting for it, and it never keeps the others from being looked at.
        The primary goes first (its generation measures the replicas' lag)."""
        self._probe_all([self._primary])
        self._probe_all(self._replicas)

    def _probe_all(self, servers: Sequence[_Server]) -> None:
        timeout = self.settings.timeout_s
        started = []
        for s in servers:
            if s.prober is not None and s.prober.is_alive():  # still waiting for the last answer
                if time.monotonic() - s.probe_started > timeout:
                    self._set(s, "down", f"did not answer within {timeout:g} s")
                continue
            work = self._probe_primary if s.role == "primary" else self._probe_replica
            s.prober = threading.Thread(target=self._probe_guarded, args=(work, s), daemon=True,
                                        name=f"evidex-probe-{s.role}")
            s.probe_started = time.monotonic()
            s.prober.start()
            started.append(s)
        deadline = time.monotonic() + timeout
        for s in started:
            assert s.prober is not None
            s.prober.join(max(0.0, deadline - time.monotonic()))
            if s.prober.is_alive():
                self._set(s, "down", f"did not answer within {timeout:g} s")

    def _probe_guarded(self, work: Callable[[_Server], None], s: _Server) -> None:
        try:
            work(s)
        except Exception:  # a probe thread must not die silently; the server's state stands
            logger.exception("probing %s failed", s.name)

    def _gen_query(self) -> sql.Composable:
        """The store's generation and each tenant's (``_tenants.TENANT_GENERATION``) on a server."""
        return sql.SQL("SELECT (SELECT value FROM {0}.meta WHERE key = 'generation'), (SELECT "
                       "json_object_agg(substr(key, 12), value::bigint) FROM {0}.meta WHERE key LIKE "
                       "'generation:%')").format(sql.Identifier(self._schema()))

    def _probe_primary(self, p: _Server) -> None:
        try:
            value, p.tenants = self._probe_query(p, self._gen_query())
            p.generation = int(value)
            self._history.append((time.monotonic(), p.generation))
            if p.store is None:
                self._open_primary()
            elif p.state != "ok":
                if p.state == "down":  # back: fresh connections (not at the first probe: its pool is new)
                    p.store.reconnect()
                self._set(p, "ok")
        except (psycopg.Error, OSError, TypeError, ValueError) as exc:
            self._set(p, "down", _first_line(exc))

    def _probe_replica(self, r: _Server) -> None:
        replica_q = sql.SQL("{}, pg_is_in_recovery(), CASE WHEN pg_last_wal_receive_lsn() IS NULL "
                            "OR pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn() THEN 0 ELSE "
                            "extract(epoch FROM now() - pg_last_xact_replay_timestamp()) END").format(
                                self._gen_query())
        try:
            value, tenants, standby, wal_lag = self._probe_query(r, replica_q)
        except (psycopg.Error, OSError) as exc:
            self._set(r, "down", _first_line(exc))
            return
        if not standby:
            self._set(r, "down", "not a standby (promoted?): its writes are not the primary's")
            return
        if value is None:
            self._set(r, "down", "holds no evidex store yet (replaying its creation)")
            return
        r.generation, r.tenants = int(value), tenants
        r.lag_s = max(float(wal_lag or 0.0), self._behind_for(r.generation))
        if r.store is None:
            self._open_replica(r)
            if r.store is None:
                return
        primary_gen = self._primary.generation if self._primary.state == "ok" else None
        behind = None if primary_gen is None else primary_gen - r.generation
        limit = self.settings.max_lag_generations
        too_far = limit is not None and behind is not None and behind > limit
        if r.state == "down":  # back: fresh connections, the old pool's may all be dead
            r.store.reconnect()
        if r.lag_s > self.settings.max_lag_s or too_far:
            gens = f", {behind} generations" if behind else ""
            self._set(r, "lagging", f"{r.lag_s:.1f} s behind{gens}")
        else:
            self._set(r, "ok")

    def _behind_for(self, generation: int) -> float:
        """Seconds since a probe first saw the primary past ``generation`` (0 if never)."""
        for at, gen in self._history:
            if gen > generation:
                return time.monotonic() - at
        return 0.0

    def _schema(self) -> str:
        return split_url(self._primary.url)[1]

    # -- reads ------------------------------------------------------------------------------------
    @contextmanager
    def read(self, at_least: int | None = None, latest: bool = False,
             session: ReadSession | None = None) -> Iterator[SQLView]:
        # Reads include the caller's writes: the session's, when it knows its caller (the
        # service: one key's write never makes another key, another tenant, wait for the
        # primary); else this handle's own (a script, a command).
        per_caller = session is not None and session.memory is not None and bool(session.caller)
        own = None if per_caller else (self.written or None)
        caller_needs = session.need(self.lineage) if session else None
        wanted = [g for g in (at_least, caller_needs, own) if g is not None]
        need = max(wanted) if wanted else None
        server, cm, view = self._choose(need, latest)
        if session is not None:
            session.read(server.name, int(view.generation))  # type: ignore[call-overload]
        try:
            yield view
        except BaseException as exc:
            failed = server.role == "replica" and _retryable_read(exc)
            # Ending the snapshot may fail too when the server went away; the read's own error
            # is the one that says what happened, and it is raised.
            with contextlib.suppress(Exception):
                cm.__exit__(type(exc), exc, exc.__traceback__)
            if failed:
                self._set(server, "down", f"a read failed: {_first_line(exc)}")
                raise ReadFailed(f"{server.name} failed during a read: {_first_line(exc)}") from exc
            raise
        else:
            try:
                cm.__exit__(None, None, None)
            except Exception as exc:
                # Ending a read-only snapshot whose every read succeeded: the server went away
                # after the read, which stands; the server is skipped from now on.
                if not is_connection_error(exc):
                    raise
                self._set(server, "down", _first_line(exc))

    def _choose(self, need: int | None, latest: bool
                ) -> tuple[_Server, AbstractContextManager[SQLView], SQLView]:
        """The server, its snapshot's context manager (entered) and the view, for one read."""
        if not latest:
            deadline = time.monotonic() + self.settings.wait_s
            pause = 0.002
            while True:
                usable = [r for r in self._replicas if r.state == "ok" and r.store is not None]
                if usable:
                    start = next(self._turn) % len(usable)
                    for r in usable[start:] + usable[:start]:
                        got = self._enter(r, need)
                        if got is not None:
                            return r, *got
                if need is None or not usable or time.monotonic() >= deadline:
                    break
                time.sleep(pause)  # replay usually takes milliseconds: look again soon
                pause = min(pause * 2, 0.05)
        # A primary known to be down is not tried (a hung one would hold the read for the whole
        # connection timeout); the probe finds it again when it answers.
        up = self._primary.state != "down" and self._open_primary() is not None
        got = self._enter(self._primary, need) if up else None
        if got is not None:
            return self._primary, *got
        # The primary is down too: the freshest replica that answers, whatever its lag, unless
        # the read needs a generation none of them has.
        for r in sorted(self._replicas, key=lambda r: -(r.generation or -1)):
            if r.store is None:
                self._open_replica(r)
            if r.store is not None:
                got = self._enter(r, need)
                if got is not None:
                    return r, *got
        if need is not None:
            raise ServerUnavailable(f"the primary {self._primary.name} is down and no replica has "
                                    f"replayed generation {need} (the caller's last write) yet")
        raise self._nobody()

    def _nobody(self) -> ServerUnavailable:
        return ServerUnavailable(f"no server of the store answers: {self._primary.name}: "
                                 f"{self._primary.error}")

    def _enter(self, s: _Server, need: int | None) -> tuple[AbstractContextManager[SQLView], SQLView] | None:
        """``s``'s snapshot when it includes ``need`` and has the store's model; None (the
        snapshot closed again) when it does not or the server fails (then marked down)."""
        assert s.store is not None
        cm = s.store._open_view()
        try:
            view = cm.__enter__()
        except Exception as exc:
            if not is_connection_error(exc):
                raise
            self._set(s, "down", _first_line(exc))
            return None
        gen = int(view.generation)  # type: ignore[call-overload]
        if s.role == "primary" and need is not None and gen < need:
            cm.__exit__(None, None, None)
            raise StoreError(f"the store is at generation {gen}; generation {need} was never committed "
                             "here (it names a write to another store)")
        if s.role == "replica":
            s.generation = max(s.generation or 0, gen)
            primary = self._primary.store
            # A replica still before a re-embed or reindex the primary made: not for this read.
            stale = primary is not None and (s.store.embedder, s.store.analyzer) != (primary.embedder,
                                                                                     primary.analyzer)
            if stale or (need is not None and gen < need):
                cm.__exit__(None, None, None)
                return None
        return cm, view

    # -- writes and writers' reads: the primary -----------------------------------------------------
    def _writer(self) -> PostgresStore:
        # A primary the probe or a failed call found down fails at once (the probe, each
        # ``probe_s``, finds it again when it answers), not after a connection timeout.
        if self._primary.state == "down":
            raise self._down_error(self._primary.error)
        store = self._open_primary()
        if store is None:
            raise self._down_error(self._primary.error)
        return store

    def _down_error(self, detail: str) -> ServerUnavailable:
        return ServerUnavailable(f"the {self._primary.name} is unavailable, so writes are refused until "
                                 f"it is back (reads continue on the replicas): {detail}")

    def _on_primary(self, fn: Callable[[PostgresStore], T]) -> T:
        store = self._writer()
        try:
            return fn(store)
        except Exception as exc:
            if not is_connection_error(exc):
                raise
            self._set(self._primary, "down", _first_line(exc))
            raise self._down_error(_first_line(exc)) from None

    def apply(self, writes: Sequence[DocumentWrite], *, keep_history: bool = True,
              sources: Sequence[SourceEntry] = (), moving: bool = False,
              history: Sequence[tuple[str, str, HistoryEntry]] = (),
              session: ReadSession | None = None) -> IngestReport:
        return self._on_primary(lambda s: s.apply(writes, keep_history=keep_history, sources=sources,
                                                  moving=moving, history=history, session=session))

    def remove(self, tenant: str, doc_id: str, session: ReadSession | None = None) -> bool:
        return self._on_primary(lambda s: s.remove(tenant, doc_id, session))

    def remove_documents(self, tenant: str, doc_ids: Sequence[str], *, moving: bool = False) -> int:
        return self._on_primary(lambda s: s.remove_documents(tenant, doc_ids, moving=moving))

    def mark_tenant(self, tenant: str, state: str | None, location: str = "",
                    replicas: Sequence[str] = ()) -> None:
        self._on_primary(lambda s: s.mark_tenant(tenant, state, location, replicas))

    def tenant_marks(self) -> dict[str, Mark]:
        return self._on_primary(lambda s: s.tenant_marks())

    def unchanged(self, writes: Sequence[DocumentWrite]) -> set[tuple[str, str]]:
        return self._on_primary(lambda s: s.unchanged(writes))

    def live_passages(self) -> list[tuple[int, str]]:
        return self._on_primary(lambda s: s.live_passages())

    def switch_vectors(self, model: str, dimension: int, vectors: dict[int, Any],
                       session: ReadSession | None = None) -> bool:
        return self._on_primary(lambda s: s.switch_vectors(model, dimension, vectors, session))

    def reindex(self, analyzer: str, session: ReadSession | None = None) -> int:
        return self._on_primary(lambda s: s.reindex(analyzer, session))

    def source_entries(self, source: str | None = None) -> list[SourceEntry]:
        return self._on_primary(lambda s: s.source_entries(source))

    def record_conflicts(self, conflicts: Sequence[Any]) -> list[Any]:
        return self._on_primary(lambda s: s.record_conflicts(conflicts))

    def conflicts(self, tenant: str | None = None) -> list[Any]:
        return self._on_primary(lambda s: s.conflicts(tenant))

    def dismiss_conflict(self, tenant: str, conflict_id: int, by: str) -> bool:
        return self._on_primary(lambda s: s.dismiss_conflict(tenant, conflict_id, by))

    def restore_history(self, entries: Sequence[tuple[str, str, HistoryEntry]]) -> None:
        self._on_primary(lambda s: s.restore_history(entries))

    def optimize(self) -> None:
        self._on_primary(lambda s: s.optimize())

    def settle(self) -> None:
        self._on_primary(lambda s: s.settle())

    def integrity(self) -> list[str]:
        return self._on_primary(lambda s: s.integrity())

    # The records beside the index (``Records``) live on the primary only: its own calls.
    record_run = _primary_call()
    runs = _primary_call()
    claim_run = _primary_call()
    conflict_rows = _primary_call()
    restore_conflicts = _primary_call()
    operator_records = _primary_call()
    restore_operator_records = _primary_call()
    remove_records = _primary_call()
    record_answer = _primary_call()
    answer_records = _primary_call()
    record_feedback = _primary_call()
    feedback = _primary_call()
    record_handoff = _primary_call()
    handoffs = _primary_call()
    record_notices = _primary_call()
    notices = _primary_call()
    record_eval = _primary_call()
    evals = _primary_call()

    def iter_documents(self, tenant: str | None = None) -> Iterator[StoredDocument]:
        return iter(self._on_primary(lambda s: list(s.iter_documents(tenant))))

    # -- inspection -------------------------------------------------------------------------------
    def stats(self) -> dict[str, object]:
        """The counts as a reading server sees them, and every server's state."""
        for s in [r for r in self._replicas if r.state == "ok"] + [self._primary]:
            if s.store is None:
                continue
            try:
                counts = s.store.stats()
            except Exception as exc:
                if not is_connection_error(exc):
                    raise
                self._set(s, "down", _first_line(exc))
                continue
            return {**counts, "path": redacted(self._primary.url), "counted_on": s.name,
                    "servers": self.servers()}
        raise self._nobody()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._monitor.join(timeout=5)
        for s in (self._primary, *self._replicas):
            hung = s.prober is not None and s.prober.is_alive()
            if s.probe_conn is not None and not hung:  # a hung probe's is left to its thread
                s.probe_conn.close()
            if s.store is not None:
                s.store.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
