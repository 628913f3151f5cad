"""Read replicas on real servers: a PostgreSQL primary and two streaming hot standbys made with
``pg_basebackup`` (tests/pgcluster.py), replay paused with ``pg_wal_replay_pause()`` to make
lag on purpose, a replica killed and restarted, the primary stopped.

Properties: a read a replica serves equals the primary's read at the same generation (hits,
scores, citations and how they resolve), through a handle whose caches saw both servers; the
permission-exact properties hold on a replica; a supersede is never seen half-applied; a read
that needs a generation is never served an older snapshot.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors import PUBLIC_INTERNAL
from evidex import Actor, Document, KnowledgeBase, ServerUnavailable
from evidex.store import ReadSession, RecentWrites, ReplicaSettings
from pgcluster import Cluster, PgServer, wait_replayed
from service_helpers import BIN, Server, auth, sha
from strategies import Scenario, ref_bm25, results, scenarios, visible

pytestmark = pytest.mark.usefixtures("pg_url")  # skips with the other PostgreSQL tests


FAST = ReplicaSettings(max_lag_s=3600, wait_s=0.2, probe_s=0.1, timeout_s=3)
#: How long a test waits for what the probes (each ``probe_s``) or the servers will do: a hang
#: guard, minutes. No test asserts how fast anything happened (issue 45: a busy machine is
#: slow, not wrong); they count what happened: which server answered, what was tried.
GUARD_S = 300


def _until(done: Callable[[], object], *why: object) -> None:
    """Wait for ``done()`` (a hang guard of ``GUARD_S``: the failure says ``why``)."""
    deadline = time.monotonic() + GUARD_S
    while not done():
        assert time.monotonic() < deadline, why
        time.sleep(0.05)


def _counting(kb: KnowledgeBase, role: str) -> list[str]:
    """The calls the replicated store of ``kb`` makes to its ``role`` servers' stores from now
    on: snapshots opened (reads), and writes and writers' reads (``apply``, ``unchanged``)."""
    calls: list[str] = []
    servers = [kb.store._primary] if role == "primary" else kb.store._replicas  # type: ignore[attr-defined]

    def counted(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*a: object, **kw: object) -> Any:
            calls.append(name)
            return real(*a, **kw)
        return call

    for server in servers:
        for name in ("_open_view", "apply", "unchanged"):
            setattr(server.store, name, counted(name, getattr(server.store, name)))
    return calls


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[PgServer, PgServer, PgServer]]:
    c = Cluster()
    try:
        p = c.primary("p")
        yield p, c.replica(p, "r1"), c.replica(p, "r2")
    finally:
        c.close()


@pytest.fixture(autouse=True)
def _servers_back(servers: tuple[PgServer, ...]) -> Iterator[None]:
    """After each test every server runs and replays again, whatever the test did to them and
    however it ended: a failure stays that test's, it does not take the next tests' servers."""
    yield
    for s in servers:
        pid = s.pid()
        if pid is not None and psutil.pid_exists(pid):
            with contextlib.suppress(psutil.NoSuchProcess):
                if psutil.Process(pid).status() == psutil.STATUS_STOPPED:  # a SIGSTOP left
                    for proc in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
                        proc.resume()
        if not s.running():
            s.start()
    _resumed(*servers[1:])


def _schema() -> str:
    return f"t_{uuid.uuid4().hex[:12]}"


def _open(p: PgServer, replicas: list[PgServer], schema: str, settings: ReplicaSettings = FAST,
          **kw: object) -> KnowledgeBase:
    """The replicated handle on a store the primary created (and the replicas replayed)."""
    KnowledgeBase.open(p.url(schema)).close()
    for r in replicas:
        if r.running():
            wait_replayed(p, r)
    return KnowledgeBase.open(p.url(schema), replicas=[r.url(schema) for r in replicas],
                              replica_settings=settings, **kw)


def _doc(i: int, version: str = "1", text: str = "", tenant: str = "t", groups: tuple[str, ...] = ("g",)
         ) -> Document:
    return Document(f"d{i}", tenant, frozenset(groups), version,
                    text or f"alpha beta number {i}\n\ngamma delta part {i % 5}")


STAFF = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)


def _resumed(*replicas: PgServer) -> None:
    for r in replicas:
        if r.running() and r.sql("SELECT pg_is_wal_replay_paused()")[0][0]:
            r.resume_replay()


# -- routing ------------------------------------------------------------------------------------
def test_reads_go_to_replicas_writes_to_the_primary_and_say_where(servers: tuple[PgServer, ...]) -> None:
    p, r1, r2 = servers
    with _open(p, [r1, r2], _schema()) as kb:
        report = kb.ingest([_doc(i) for i in range(6)])
        assert report.generation is not None and kb.written_generation == report.generation
        seen = set()
        for _ in range(6):
            s = kb.session()
            hits = kb.search(STAFF, "alpha gamma", session=s)
            assert hits and len(s.served) == 1
            served = s.served[0]
            assert served.generation >= report.generation  # this handle's own write
            seen.add(served.server)
        assert seen == {_name("replica", r1), _name("replica", r2)}  # both, in turn
        assert [(s["role"], s["state"]) for s in kb.servers()] == [
            ("primary", "ok"), ("replica", "ok"), ("replica", "ok")], kb.servers()
        assert kb.stats()["documents"] == 6


def test_a_read_that_needs_a_generation_is_never_served_older(servers: tuple[PgServer, ...]) -> None:
    """Replay paused on both replicas: a read at the write's generation waits ``wait_s`` and is
    served by the primary; a read that needs nothing is served by a replica's older snapshot;
    once replay resumes, the replica serves the new generation."""
    p, r1, r2 = servers
    schema = _schema()
    with _open(p, [r1, r2], schema) as kb, KnowledgeBase.open(p.url(schema)) as writer:
        writer.ingest([_doc(i) for i in range(4)])
        wait_replayed(p, r1), wait_replayed(p, r2)
        r1.pause_replay(), r2.pause_replay()
        try:
            report = writer.ingest(_doc(0, "2", "omega supersedes zero"))
            gen = report.generation
            assert gen is not None
            asked = _counting(kb, "replica")
            s = kb.session()
            started = time.monotonic()
            hits = kb.search(STAFF, "omega", at_least=gen, mode="keyword", session=s)
            waited = time.monotonic() - started
            assert [h.document_id for h in hits] == ["d0"] and hits[0].version == "2"
            assert s.served[0].server.startswith("primary") and s.served[0].generation >= gen
            # Both replicas were asked, and asked again, before the primary served the read: it
            # waited (``wait_s`` at least; how much longer is the machine's, not a decision).
            assert asked.count("_open_view") >= 2 and waited >= FAST.wait_s, (asked, waited)
            s = kb.session()
            # No need: a replica, from before the write.
            assert kb.search(STAFF, "omega", mode="keyword", session=s) == []
            assert s.served[0].server.startswith("replica") and s.served[0].generation == gen - 1
            s = kb.session(at_least=gen)  # the same through a session
            assert kb.document(STAFF, "d0", session=s).version == "2"  # type: ignore[union-attr]
            assert s.served[0].server.startswith("primary")
        finally:
            _resumed(r1, r2)
        wait_replayed(p, r1), wait_replayed(p, r2)
        s = kb.session()
        assert kb.search(STAFF, "omega", at_least=gen, mode="keyword", session=s)[0].version == "2"
        assert s.served[0].server.startswith("replica") and s.served[0].generation >= gen


def test_a_lagging_replica_is_skipped_until_it_catches_up(servers: tuple[PgServer, ...]) -> None:
    p, r1, r2 = servers
    schema = _schema()
    lag = ReplicaSettings(max_lag_s=0.5, wait_s=0.0, probe_s=0.1, timeout_s=3)
    with _open(p, [r1, r2], schema, lag) as kb, KnowledgeBase.open(p.url(schema)) as writer:
        r1.pause_replay()
        try:
            writer.ingest(_doc(1))
            wait_replayed(p, r2)  # r2 has the write: once probed it is ok, however slow its replay was
            _until(lambda: (_state(kb, r1), _state(kb, r2)) == ("lagging", "ok"), kb.servers())
            for _ in range(6):  # every read goes to the other replica
                s = kb.session()
                kb.search(STAFF, "alpha", session=s)
                assert s.served[0].server.endswith(f":{r2.port}/postgres"), s.served
        finally:
            r1.resume_replay()
        _until(lambda: _state(kb, r1) == "ok", kb.servers())


def _name(role: str, server: PgServer) -> str:
    return f"{role} {server.cluster.root}:{server.port}/postgres"


def _state(kb: KnowledgeBase, server: PgServer) -> str:
    return next(str(s["state"]) for s in kb.servers()
                if str(s["server"]).endswith(f":{server.port}/postgres"))


def test_all_replicas_down_reads_go_to_the_primary_logged_once(servers: tuple[PgServer, ...],
                                                               caplog: pytest.LogCaptureFixture) -> None:
    p, r1, r2 = servers
    schema = _schema()
    lag = ReplicaSettings(max_lag_s=0.3, wait_s=0.0, probe_s=0.1, timeout_s=3)
    with _open(p, [r1, r2], schema, lag) as kb, KnowledgeBase.open(p.url(schema)) as writer:
        caplog.set_level(logging.INFO, "evidex.store")
        r1.pause_replay(), r2.pause_replay()
        try:
            writer.ingest(_doc(1))
            _until(lambda: {_state(kb, r1), _state(kb, r2)} == {"lagging"}, kb.servers())
            for _ in range(5):
                s = kb.session()
                assert kb.search(STAFF, "alpha", session=s)
                assert s.served[0].server.startswith("primary")
        finally:
            _resumed(r1, r2)
        # The message is logged right after the state changes: wait for it, not for a while.
        _until(lambda: any("serve reads again" in r.getMessage() for r in caplog.records), kb.servers())
    to_primary = [r for r in caplog.records if "they go to the primary" in r.getMessage()]
    back = [r for r in caplog.records if "serve reads again" in r.getMessage()]
    assert len(to_primary) == 1 and len(back) == 1, [r.getMessage() for r in caplog.records]


# -- failures -----------------------------------------------------------------------------------
def test_a_killed_replica_fails_no_read_and_rejoins_after_restart(servers: tuple[PgServer, ...]) -> None:
    """Readers on four threads while one replica is SIGKILLed: a read it was serving is run
    again on another server, so no read fails; restarted, it serves again."""
    p, r1, r2 = servers
    schema = _schema()
    with _open(p, [r1, r2], schema) as kb:
        kb.ingest([_doc(i) for i in range(20)])
        stop = threading.Event()
        failures: list[BaseException] = []
        reads = [0]
        handles = [KnowledgeBase(kb.store) for _ in range(4)]  # shared store, own caches

        def reader(h: KnowledgeBase) -> None:
            while not stop.is_set():
                try:
                    assert len(h.search(STAFF, "alpha", mode="keyword")) == 6
                    reads[0] += 1
                except BaseException as exc:  # counted, never raised in the thread
                    failures.append(exc)

        threads = [threading.Thread(target=reader, args=(h,)) for h in handles]
        for t in threads:
            t.start()
        try:
            _until(lambda: reads[0] >= 8 or failures, failures)  # the readers are reading
            r1.kill()
            killed = reads[0]
            _until(lambda: _state(kb, r1) == "down", kb.servers())
            down = reads[0]
            _until(lambda: reads[0] >= down + 8 or failures, failures)  # and go on reading
        finally:
            stop.set()
            for t in threads:
                t.join()
            if not r1.running():
                r1.start()
        assert failures == [] and reads[0] >= killed + 8
        _until(lambda: _state(kb, r1) == "ok", [(x["state"], x["error"]) for x in kb.servers()])
        served = set()
        for _ in range(4):
            s = kb.session()
            kb.search(STAFF, "alpha", session=s)
            served.add(s.served[0].server)
        assert any(x.endswith(f":{r1.port}/postgres") for x in served), (
            served, [(x["server"], x["state"], x["error"]) for x in kb.servers()])


def test_the_primary_stopped_writes_fail_at_once_with_one_error_reads_continue(
        servers: tuple[PgServer, ...]) -> None:
    p, r1, r2 = servers
    schema = _schema()
    with _open(p, [r1, r2], schema) as kb:
        kb.ingest([_doc(i) for i in range(3)])
        wait_replayed(p, r1), wait_replayed(p, r2)
        p.stop()
        asked = _counting(kb, "primary")
        try:
            for attempt in range(3):
                before = len(asked)
                with pytest.raises(ServerUnavailable) as err:
                    kb.ingest(_doc(9))
                # Fails at once: the first attempt (unless a probe came first) is what finds the
                # primary gone; once it is known down, no write asks it again.
                assert len(asked) - before <= (1 if attempt == 0 else 0), (attempt, asked)
                message = str(err.value)
                assert "\n" not in message and "writes are refused until it is back" in message
                assert "reads continue on the replicas" in message
            assert len(kb.search(STAFF, "number", mode="keyword")) == 3  # the replicas answer
            assert kb.document(STAFF, "d1") is not None
        finally:
            p.start()
        _writes_again(kb)
        assert kb.search(STAFF, "alpha", at_least=kb.written_generation)


def _primary(kb: KnowledgeBase) -> dict[str, object]:
    return next(s for s in kb.servers() if s["role"] == "primary")


def _writes_again(kb: KnowledgeBase) -> None:
    """Wait until the probe finds the primary again and a write goes through."""
    deadline = time.monotonic() + GUARD_S
    while True:
        try:
            kb.ingest(_doc(9))
            return
        except ServerUnavailable:
            assert time.monotonic() < deadline
            time.sleep(0.1)


def test_a_hung_primary_is_down_within_the_timeout_and_the_replicas_go_on(
        servers: tuple[PgServer, ...]) -> None:
    """The primary's processes stopped with SIGSTOP (a hung server: it accepts connections and
    never answers): within ``timeout_s`` and one probe it is down, writes then fail at once with
    the one error, the replicas are still probed and serve reads (the caller's own writes
    included); resumed, writes go through again."""
    p, r1, r2 = servers
    schema = _schema()
    with _open(p, [r1, r2], schema) as kb:
        kb.ingest([_doc(i) for i in range(3)])
        wait_replayed(p, r1), wait_replayed(p, r2)
        root = psutil.Process(p.pid())
        procs = [root, *root.children(recursive=True)]
        for proc in procs:
            proc.suspend()
        try:
            started = time.monotonic()
            _until(lambda: _primary(kb)["state"] == "down", kb.servers())
            # Down by the timeout (no connection failed: it never answered), not by chance.
            assert f"did not answer within {FAST.timeout_s:g} s" in str(_primary(kb)["error"])
            asked = _counting(kb, "primary")
            with pytest.raises(ServerUnavailable, match="writes are refused until it is back"):
                kb.ingest(_doc(9))
            assert asked == []  # at once: the hung primary is not asked (it would hold the write)
            for _ in range(4):
                s = kb.session()
                assert len(kb.search(STAFF, "number", mode="keyword", session=s)) == 3
                assert s.served[0].server.startswith("replica")
            # The replicas are still looked at: a probe of each ends after the primary hung.
            assert all(r.probe_started > started for r in kb.store._replicas)  # type: ignore[attr-defined]
        finally:
            for proc in procs:
                proc.resume()
        _writes_again(kb)


# -- properties ---------------------------------------------------------------------------------
@st.composite
def histories(draw: st.DrawFn) -> list[tuple[str, int, int]]:
    """Steps: (write, document, version) over five documents of two access signatures, and
    (pause|resume, 0, 0) of the replica's replay."""
    step = st.one_of(
        st.tuples(st.sampled_from(["add", "add", "remove"]), st.integers(0, 4), st.integers(1, 3)),
        st.tuples(st.sampled_from(["pause", "resume"]), st.just(0), st.just(0)))
    return draw(st.lists(step, min_size=2, max_size=8))


QUERIES = ("alpha", "gamma beta", "delta v2", "omega")
READERS = (STAFF, Actor("t", frozenset({"g"})), Actor("t", frozenset({"h"}), visibilities=PUBLIC_INTERNAL))


def _observe(kb: KnowledgeBase, tenant: str, **kw: object) -> tuple[int, list[object]]:
    """What the readers get (keyword and hybrid hits with scores, and every hit's citation
    re-resolved), and the generation it was read at."""
    out: list[object] = []
    gens = set()
    for actor in READERS:
        who = Actor(tenant, actor.groups, visibilities=actor.visibilities)
        for q in QUERIES:
            for mode in ("keyword", "hybrid"):
                s = kb.session()
                hits = kb.search(who, q, mode=mode, **kw, session=s)  # type: ignore[arg-type]
                resolved = [kb.resolve(who, h.citation(), **kw, session=s).as_dict() for h in hits]  # type: ignore[arg-type]
                gens.update(x.generation for x in s.served)
                out.append([(h.document_id, h.version, h.passage, h.score, h.content_sha256) for h in hits])
                out.append(resolved)
    assert len(gens) == 1, gens  # one generation for the whole look (nothing written meanwhile)
    return gens.pop(), out


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(histories(), st.integers(0, 2**31))
def test_replica_reads_equal_primary_reads_at_the_same_generation(servers: tuple[PgServer, ...],
                                                                  history: list[tuple[str, int, int]],
                                                                  seed: int) -> None:
    """Writes to the primary with the replica's replay paused and resumed at random: after
    each step, a read the replica serves (its snapshot at generation g) equals the primary's
    read at g (hits, versions, passages, float scores, and every citation's resolution), and
    a handle that read from both servers in turn holds no cache of one in the other's reads."""
    p, r1, _ = servers
    kb, primary = _shared_store(p, r1)
    expected = _EXPECTED
    tenant = f"t{uuid.uuid4().hex[:8]}"  # this example's own: others' documents are unreadable
    rnd = random.Random(seed)
    live: dict[int, int] = {}
    paused = False
    try:
        for op, i, v in history:
            if op == "pause":
                r1.pause_replay()
                paused = True
            elif op == "resume":
                r1.resume_replay()
                paused = False
            elif op == "add":
                groups = ("g",) if i % 2 else ("g", "h")
                text = f"alpha beta v{v} doc {i}\n\ngamma delta v{v} " + " ".join(
                    rnd.choice(["alpha", "omega", "beta"]) for _ in range(rnd.randint(1, 5)))
                primary.ingest(_doc(i, str(v), text, tenant=tenant, groups=groups))
                live[i] = v
            elif primary.remove(tenant, f"d{i}"):
                live.pop(i, None)
            # The primary's read now is the primary at the newest generation: record it.
            gen, seen = _observe(primary, tenant)
            expected[(tenant, gen)] = seen
            if not paused:  # replaying: let it finish, so one look sees one generation
                wait_replayed(p, r1)
            # The replica's read now (replay maybe paused): equal to the primary's at its gen.
            s = kb.session()
            kb.search(STAFF, "alpha", session=s)
            if s.served[0].server.startswith("replica"):
                rgen, got = _observe(kb, tenant)
                if (tenant, rgen) in expected:  # generations of this example's writes
                    assert got == expected[(tenant, rgen)], (history, rgen)
            # And the same handle at the newest generation, from the primary if need be: the
            # caches it filled from the replica never leak into it.
            newest = primary.written_generation
            rgen, got = _observe(kb, tenant, at_least=newest)
            assert got == expected[(tenant, rgen)]
    finally:
        _resumed(r1)


_SHARED: dict[str, KnowledgeBase] = {}
_EXPECTED: dict[tuple[str, int], list[object]] = {}


def _shared_store(p: PgServer, r1: PgServer) -> tuple[KnowledgeBase, KnowledgeBase]:
    """One store for every example (each writes its own tenant), opened once: the replicated
    handle and a plain handle on the primary."""
    if "kb" not in _SHARED:
        schema = _schema()
        _SHARED["kb"] = _open(p, [r1], schema, ReplicaSettings(max_lag_s=3600, wait_s=0.0, probe_s=0.2))
        _SHARED["primary"] = KnowledgeBase.open(p.url(schema))
    return _SHARED["kb"], _SHARED["primary"]


@pytest.fixture(scope="module", autouse=True)
def _close_shared() -> Iterator[None]:
    yield
    for kb in _SHARED.values():
        kb.close()
    _SHARED.clear()
    _EXPECTED.clear()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(scenarios())
def test_permission_exact_statistics_hold_on_a_replica(servers: tuple[PgServer, ...],
                                                       scenario: Scenario) -> None:
    """The permission-exact property (test_permission_exact) read from a replica: scores are
    textbook BM25 over exactly the passages the actor may read under the filters, whatever
    unreadable documents the store holds."""
    import math
    import re

    p, r1, _ = servers
    actor, flt, vis, hid, qs = scenario
    schema = _schema()
    KnowledgeBase.open(p.url(schema), analyzer="exact", embedder="none").close()
    with KnowledgeBase.open(p.url(schema)) as primary:
        for batch in (hid[: len(hid) // 2] + vis, hid[len(hid) // 2:]):
            if batch:
                primary.ingest(batch)
        wait_replayed(p, r1)
    readable = [d for d in vis if visible(actor, flt, d)]
    with KnowledgeBase.open(p.url(schema), replicas=[r1.url(schema)],
                            replica_settings=ReplicaSettings(wait_s=0.0, probe_s=5)) as kb:
        for q in qs:
            s = kb.session()
            full = kb.search(actor, q.text, limit=50, match=q.match, filters=q.filters,
                             max_per_document=None, mode="keyword", session=s)
            assert not s.served or s.served[0].server.startswith("replica")
            want = ref_bm25(readable, re.findall(r"[a-z]+", q.text.lower()), q.match)
            got = {(h.document_id, h.passage): h.score for h in full}
            assert set(got) == set(want), q
            for key, score in got.items():
                assert math.isclose(score, want[key], rel_tol=1e-9, abs_tol=0.0)
            assert results(kb, actor, q) == results(kb, actor, q)


def test_a_supersede_is_never_seen_half_applied_on_a_replica(servers: tuple[PgServer, ...]) -> None:
    """Documents of 4 passages, each passage naming the document's version, superseded again and
    again on the primary while readers search a replica: every hit's passage names the version
    its hit reports, and every document read has 4 passages of one version."""
    p, r1, _ = servers
    schema = _schema()
    with _open(p, [r1], schema, ReplicaSettings(wait_s=0.0, probe_s=0.2)) as kb, \
            KnowledgeBase.open(p.url(schema)) as writer:

        def doc(i: int, v: int) -> Document:
            return Document(f"d{i}", "t", frozenset({"g"}), str(v), "\n\n".join(
                f"marker version{v} part {k} of d{i}" for k in range(4)))

        writer.ingest([doc(i, 0) for i in range(5)])
        stop = threading.Event()
        torn: list[str] = []
        reads = [0]

        def reader() -> None:
            h = KnowledgeBase(kb.store)
            while not stop.is_set():
                for hit in h.search(STAFF, "marker part", limit=20, mode="keyword", max_per_document=None):
                    if f"version{hit.version} " not in hit.quote:
                        torn.append(f"{hit.document_id} v{hit.version}: {hit.quote}")
                view = h.document(STAFF, f"d{random.randrange(5)}")
                assert view is not None
                versions = {p.text.split()[1] for p in view.passages}
                if len(view.passages) != 4 or versions != {f"version{view.version}"}:
                    torn.append(f"{view.document_id} v{view.version}: {versions}")
                reads[0] += 1

        threads = [threading.Thread(target=reader) for _ in range(2)]
        for t in threads:
            t.start()
        try:
            for v in range(1, 40):
                writer.ingest([doc(i, v) for i in random.sample(range(5), 3)])
        finally:
            stop.set()
            for t in threads:
                t.join()
        assert torn == [] and reads[0] > 10


# -- the command line ------------------------------------------------------------------------------
def test_the_next_command_reads_the_last_ones_write_another_caller_need_not(servers: tuple[PgServer, ...],
                                                                             tmp_path: Path) -> None:
    """``evidex ingest`` then ``evidex search`` (two processes) with the replica's replay
    paused: the search reads the ingest's write (the primary answers, and says so); a caller
    with no memory of that write is served by the replica, as old as it is."""
    p, r1, _ = servers
    schema = _schema()
    KnowledgeBase.open(p.url(schema), embedder="none").close()
    wait_replayed(p, r1)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Policy\n\nOmega returns within ten days.\n", encoding="utf-8")

    # A replica behind by a paused replay is, by PostgreSQL's measure (the time since the last
    # transaction it replayed), as far behind as the primary was idle: no bound on lag here.
    config = tmp_path / "config.yaml"
    store = {"default": {"url": p.url(schema), "replicas": [r1.url(schema)]}, "max_lag_s": 3600}
    config.write_text(yaml.safe_dump({"store": store}), encoding="utf-8")

    def evidex(cache: str, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "EVIDEX_CACHE_DIR": str(tmp_path / cache)}
        return subprocess.run([str(BIN / "evidex"), "--config", str(config), *args], capture_output=True,
                              text=True, timeout=120, env=env)

    search = ("search", "omega", "--tenant", "t", "--groups", "g", "--visibilities", "public,internal",
              "--json")
    r1.pause_replay()
    try:
        assert evidex("mine", "ingest", str(docs), "--tenant", "t", "--groups", "g").returncode == 0
        mine = evidex("mine", *search)
        assert mine.returncode == 0 and len(json.loads(mine.stdout)["hits"]) == 1, mine.stderr
        assert "served by primary" in mine.stderr
        other = evidex("other", *search)
        assert other.returncode == 0 and json.loads(other.stdout)["hits"] == [], other.stderr
        assert "served by replica" in other.stderr
    finally:
        _resumed(r1)


def test_one_callers_write_slows_no_other_caller(servers: tuple[PgServer, ...]) -> None:
    """Issue 45, finding 5: read-your-writes was per store handle, so after one acme write
    while the replica lagged every caller on that worker (globex included) waited for the
    primary. With callers known (the service's sessions), only the writer's reads need it."""
    p, r1, _ = servers
    schema = _schema()
    kb = _open(p, [r1], schema)
    memory = RecentWrites(30.0)
    globex = Actor("globex", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)
    try:
        kb.ingest([_doc(i, tenant="globex") for i in range(3)])
        wait_replayed(p, r1)
        r1.pause_replay()
        # Each request has its own session of its caller; the write's is remembered by caller.
        kb.ingest(_doc(50, tenant="acme"), session=ReadSession(memory=memory, caller="acme-admin\x1facme"))
        mine = ReadSession(memory=memory, caller="acme-admin\x1facme")
        acme = Actor("acme", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)
        assert len(kb.search(acme, "alpha", mode="keyword", session=mine)) == 1
        assert mine.served[-1].server.startswith("primary")
        other = ReadSession(memory=memory, caller="globex-user\x1fglobex")
        assert len(kb.search(globex, "alpha", mode="keyword", session=other)) == 3
        assert [s.server.split()[0] for s in other.served] == ["replica"]  # not made to wait
    finally:
        _resumed(r1)
        kb.close()


# -- the service ----------------------------------------------------------------------------------
def test_the_service_reads_each_keys_own_writes_on_any_replica(servers: tuple[PgServer, ...],
                                                              tmp_path: Path) -> None:
    """``evidex serve`` over a primary and two replicas: an admin key syncs a changed file and
    reads the document back, replay paused on both replicas at random; it never reads the old
    version, and the response names the server and generation. Another key's reads, which wrote
    nothing, are served by a replica, as old as it is."""
    p, r1, r2 = servers
    schema = _schema()
    KnowledgeBase.open(p.url(schema), embedder="hash-test").close()
    wait_replayed(p, r1), wait_replayed(p, r2)
    docs = tmp_path / "docs"
    docs.mkdir()
    policy = docs / "policy.md"
    keys = {"admin-key": {"admin": True}, "reader-key": {}}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "sources": [{"id": "docs", "type": "files", "path": str(docs), "tenant": "acme", "groups": ["staff"],
                     "visibility": "internal"}],
        "store": {"default": {"url": p.url(schema), "replicas": [r1.url(schema), r2.url(schema)]},
                  "replica_wait_ms": 300},
        "server": {"api_keys": [{"key_sha256": sha(k), "name": k, "tenant": "acme", "groups": ["staff"],
                                 "visibilities": ["public", "internal"], **v} for k, v in keys.items()]},
    }), encoding="utf-8")
    policy.write_text("---\nid: policy\nversion: '0'\n---\n# Policy\n\nReturns within 10 days.\n")
    server = Server([str(BIN / "evidex"), "--config", str(config), "serve", "--no-schedule"],
                    {"EVIDEX_CACHE_DIR": str(tmp_path / "cache"), "EVIDEX_EMBEDDER": "hash-test"},
                    tmp_path / "server.log")
    rnd = random.Random(3)
    paused = 0
    try:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            assert c.post("/v1/sync", json={}, headers=auth("admin-key")).status_code == 200  # version 0
            wait_replayed(p, r1), wait_replayed(p, r2)
            for i in range(1, 11):
                if rnd.random() < 0.6:
                    r1.pause_replay(), r2.pause_replay()
                    paused += 1
                try:
                    policy.write_text(f"---\nid: policy\nversion: '{i}'\n---\n# Policy\n\nReturns within "
                                      f"{i + 10} days.\n")
                    synced = c.post("/v1/sync", json={}, headers=auth("admin-key"))
                    assert synced.status_code == 200, synced.text
                    written = int(synced.headers["x-evidex-written-generation"])
                    read = c.get("/v1/documents/policy", headers=auth("admin-key"))
                    assert read.status_code == 200 and read.json()["version"] == str(i), (i, read.text)
                    assert int(read.headers["x-evidex-generation"]) >= written
                    role = read.headers["x-evidex-server"].split()[0]
                    other = c.get("/v1/documents/policy", headers=auth("reader-key"))
                    if r1.sql("SELECT pg_is_wal_replay_paused()")[0][0]:
                        assert role == "primary"  # no replica had the write: the primary answered
                        assert other.headers["x-evidex-server"].startswith("replica")
                        assert other.json()["version"] == str(i - 1)  # the other key: as old as it is
                finally:
                    _resumed(r1, r2)
            health = c.get("/v1/health", headers=auth("admin-key"))
            assert health.status_code == 200
            ids = {s["id"] for s in health.json()["servers"]}
            assert {s["role"] for s in health.json()["servers"]} == {"primary", "replica"} and len(ids) == 3
            assert c.get("/v1/health", headers=auth("reader-key")).status_code == 403
        assert paused >= 3
    finally:
        _resumed(r1, r2)
        server.stop()


def test_health_and_metrics_show_each_tenant_its_own_generation(servers: tuple[PgServer, ...],
                                                                tmp_path: Path) -> None:
    """Issue 45: the store's generation counts every tenant's writes, so ``/v1/health`` and
    ``/metrics`` show a tenant's admin its own (the newest of its writes each server holds).
    ``evidex serve`` over a primary and two replicas shared by acme and globex: acme's writes
    move what acme is shown, on every server once replayed; what globex is shown stays."""
    p, r1, r2 = servers
    schema = _schema()
    with KnowledgeBase.open(p.url(schema), embedder="hash-test") as kb:
        kb.ingest([_doc(i, tenant="acme", groups=("staff",)) for i in range(3)]
                  + [_doc(i, tenant="globex", groups=("staff",)) for i in range(2)])
        globex_written = kb.written_generation
    wait_replayed(p, r1), wait_replayed(p, r2)
    keys = {"acme-admin-key": "acme", "globex-admin-key": "globex"}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "store": {"default": {"url": p.url(schema), "replicas": [r1.url(schema), r2.url(schema)]}},
        "server": {"api_keys": [{"key_sha256": sha(k), "name": k, "tenant": t, "groups": ["staff"],
                                 "visibilities": ["public", "internal"], "admin": True}
                                for k, t in keys.items()]},
    }), encoding="utf-8")
    server = Server([str(BIN / "evidex"), "--config", str(config), "serve", "--no-schedule"],
                    {"EVIDEX_CACHE_DIR": str(tmp_path / "cache"), "EVIDEX_EMBEDDER": "hash-test"},
                    tmp_path / "server.log")

    def health(c: httpx.Client, key: str, gen: int) -> list[object]:
        """The generations ``key`` is shown once every server is probed at ``gen`` or later (a
        hang guard: the probes run each second)."""
        deadline = time.monotonic() + GUARD_S
        while True:
            r = c.get("/v1/health", headers=auth(key))
            assert r.status_code == 200, r.text
            shown = r.json()["servers"]
            if len(shown) == 3 and all(s["state"] == "ok" and (s["generation"] or 0) >= gen for s in shown):
                return [s["generation"] for s in shown]
            assert time.monotonic() < deadline, shown
            time.sleep(0.2)

    def metric(c: httpx.Client, key: str) -> float:
        r = c.get("/metrics", headers=auth(key))
        assert r.status_code == 200, r.text
        [line] = [ln for ln in r.text.splitlines() if ln.startswith("evidex_store_generation{")]
        return float(line.rsplit(" ", 1)[1])

    try:
        with httpx.Client(base_url=server.url, timeout=60) as c:
            globex = health(c, "globex-admin-key", globex_written)
            assert globex == [globex_written] * 3
            assert metric(c, "globex-admin-key") == globex_written
            written = []
            for i in range(3):
                r = c.delete(f"/v1/documents/d{i}", headers=auth("acme-admin-key"))
                assert r.status_code == 200, r.text
                written.append(int(r.headers["x-evidex-written-generation"]))
            assert written[0] > globex_written
            assert health(c, "acme-admin-key", written[-1]) == [written[-1]] * 3
            assert metric(c, "acme-admin-key") == written[-1]
            # Every server is past acme's writes now: globex is shown what it was shown before.
            assert health(c, "globex-admin-key", globex_written) == globex
            assert metric(c, "globex-admin-key") == globex_written
    finally:
        server.stop()
