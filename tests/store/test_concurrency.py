"""Atomic writes seen from other processes, rejected batches and no-op re-ingests.

Real processes ("spawn" context: they get the store location and the environment, nothing
else) share one store, an SQLite file or a PostgreSQL schema (every test runs on both backends):
a writer supersedes a document back and forth between a version whose passages all say
"alpha" and one whose passages all say "beta" while readers search in a loop. No search may ever
show both versions, neither version, or a version with passages missing or extra.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import random
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from actors import PUBLIC_INTERNAL
from backends import Locator, raw
from evidex import Actor, Document, DocumentError, KnowledgeBase

TENANT = "t"
ACTOR = Actor(TENANT, frozenset({"g"}), visibilities=PUBLIC_INTERNAL)
DOC = "policy"
A_PASSAGES, B_PASSAGES = 3, 5
CONCURRENT_SECONDS = 4.0
#: How long past its seconds a process goes on until what it must have done is done (a busy
#: machine does less per second: the tests count what happened, not how fast; a hang guard).
GUARD_S = 600
SPAWN = multiprocessing.get_context("spawn")


def version_doc(k: int, size: int = 1) -> Document:
    """Version k of the contended document: odd k say "alpha" (3 passages), even k say "beta"
    (5 passages); every passage also carries "common" and the marker word n<k>."""
    word, count = ("alpha", A_PASSAGES) if k % 2 else ("beta", B_PASSAGES)
    filler = " ".join(["filler"] * (size - 1))
    text = "\n\n".join(f"common {word} n{k} part{i} {filler}".strip() for i in range(1, count * size + 1))
    return Document(DOC, TENANT, frozenset({"g"}), f"{'A' if k % 2 else 'B'}{k}", text)


STATIC = [
    Document("other", TENANT, frozenset({"g"}), "1", "common gamma\n\nalpha beta gamma elsewhere"),
    Document("hidden", TENANT, frozenset({"h"}), "1", "common alpha beta"),
]


def check_hits(hits: list[Any]) -> str | None:
    """None if the hits of DOC form exactly one complete version, else what is wrong."""
    mine = [h for h in hits if h.document_id == DOC]
    versions = sorted({h.version for h in mine})
    if len(versions) != 1:
        return f"versions {versions} in one search ({len(mine)} hits)"
    v = versions[0]
    k = int(v[1:])
    word, count = ("alpha", A_PASSAGES) if v[0] == "A" else ("beta", B_PASSAGES)
    numbers = sorted(h.passage for h in mine)
    if numbers != list(range(1, count + 1)):
        return f"version {v} with passages {numbers}"
    for h in mine:
        if h.quote.split()[:3] != ["common", word, f"n{k}"]:
            return f"version {v} passage {h.passage} quotes {h.quote!r}"
    return None


# -- worker processes (top-level functions: the spawn context imports this module) -------------
def _writer(path: str, barrier: Any, seconds: float, out: Any, partner: Any = None, need: int = 0) -> None:
    """Supersedes the contended document for ``seconds``, and after that until it has
    superseded ``need`` times and for as long as ``partner`` (a shared count) says other
    processes still need it (at most ``GUARD_S`` more)."""
    kb = KnowledgeBase.open(path)
    barrier.wait()
    end = time.monotonic() + seconds
    k = 1
    superseded = 0
    while time.monotonic() < end or ((superseded < need or (partner is not None and partner.value))
                                      and time.monotonic() < end + GUARD_S):
        k += 1
        superseded += kb.ingest(version_doc(k)).superseded
    kb.close()
    out.put({"role": "writer", "superseded": superseded, "last": k})


def _reader(path: str, barrier: Any, seconds: float, out: Any, partner: Any = None,
            need: tuple[int, int] = (0, 0)) -> None:
    """Searches for ``seconds``, and after that until it has searched ``need[0]`` times and seen
    ``need[1]`` versions (at most ``GUARD_S`` more); then counts itself off ``partner``."""
    kb = KnowledgeBase.open(path)
    searches = 0
    versions: set[str] = set()
    problems: list[str] = []
    queries = [("common", "keyword"), ("alpha beta", "keyword"), ("common alpha beta", "keyword")]
    if kb.stats().get("embedder", "none") != "none":
        # The vector index is replaced in the same transaction ("in every index"): with at most
        # seven readable passages, the vector and hybrid legs return all of them.
        queries += [("common", "vector"), ("alpha beta", "hybrid")]
    for q, mode in queries:  # loads the model and warms the caches before the clock starts
        kb.search(ACTOR, q, limit=50, max_per_document=None, mode=mode)
    barrier.wait()
    end = time.monotonic() + seconds
    modes: set[str] = set()
    while time.monotonic() < end or ((searches < need[0] or len(versions) < need[1])
                                      and time.monotonic() < end + GUARD_S):
        q, mode = queries[searches % len(queries)]
        hits = kb.search(ACTOR, q, limit=50, max_per_document=None, mode=mode)
        problem = check_hits(hits)
        if problem:
            problems.append(f"{q!r} ({mode}): {problem}")
        versions |= {h.version for h in hits if h.document_id == DOC}
        if any(h.document_id == "hidden" for h in hits):
            problems.append(f"{q!r} ({mode}): a hit of a document in another group")
        modes.add(mode)
        searches += 1
    if partner is not None:
        with partner.get_lock():
            partner.value -= 1
    kb.close()
    out.put({"role": "reader", "searches": searches, "versions": len(versions), "modes": sorted(modes),
             "problems": len(problems), "examples": problems[:5]})


def _restorer(path: str, barrier: Any, seconds: float, out: Any, partner: Any, need: int) -> None:
    """Re-ingests version 1 over and over: a no-op until another process supersedes it, then a
    supersede back. Its "is it unchanged?" check races with the other writer. It goes on past
    ``seconds`` until it has superseded ``need`` times (at most ``GUARD_S`` more: on a loaded
    machine the other writer can hold the file's lock for most of the first seconds), and
    counts itself off ``partner`` so the other writer stops too."""
    kb = KnowledgeBase.open(path)
    barrier.wait()
    end = time.monotonic() + seconds
    counts = {"superseded": 0, "unchanged": 0}
    while time.monotonic() < end or (counts["superseded"] < need and time.monotonic() < end + GUARD_S):
        r = kb.ingest(version_doc(1))
        counts["superseded"] += r.superseded
        counts["unchanged"] += r.unchanged
    with partner.get_lock():
        partner.value -= 1
    kb.close()
    out.put({"role": "restorer", **counts})


def _big_writer(path: str, size: int, start: int, committed: Any) -> None:
    kb = KnowledgeBase.open(path)
    k = start
    while True:  # until killed
        k += 1
        kb.ingest(version_doc(k, size))
        committed.set()


def churn_doc(prefix: str, i: int) -> Document:
    rng = random.Random(f"{prefix}-{i}")
    words = ("alpha", "beta", "gamma", "delta", "common")
    text = "\n\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(1, 5)))
                        for _ in range(rng.randint(1, 4)))
    return Document(f"{prefix}{i % 5}", TENANT, frozenset({"g"}), f"v{i}", text)


CHURN_WRITES = 24  # per writer: every document superseded and removed several times


def _churn_writer(path: str, barrier: Any, writes: int, prefix: str, out: Any) -> None:
    """Supersedes and removes its own five documents ``writes`` times (a count, not a duration,
    so a loaded machine slows the test down instead of failing it); reports their final state."""
    kb = KnowledgeBase.open(path)
    barrier.wait()
    final: dict[str, int | None] = {}
    i = 0
    while i < writes:
        i += 1
        d = churn_doc(prefix, i)
        if i % 7 == 0:
            kb.remove(TENANT, d.id)
            final[d.id] = None
        else:
            kb.ingest(d)
            final[d.id] = i
    kb.close()
    out.put({"role": "writer", "prefix": prefix, "writes": i, "final": final})


# -- tests ----------------------------------------------------------------------------------------
def _collect(out: Any, n: int, procs: list[Any], timeout: float) -> list[dict[str, Any]]:
    """The reports of ``n`` processes; stops early when every process has exited (a crashed
    one never reports), kills what still runs at the deadline."""
    reports: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while len(reports) < n and time.monotonic() < deadline:
        try:
            reports.append(out.get(timeout=0.2))
        except queue.Empty:
            if not any(p.is_alive() for p in procs):
                try:
                    while len(reports) < n:
                        reports.append(out.get(timeout=0.5))
                except queue.Empty:
                    break
    for p in procs:
        p.join(timeout=max(0.1, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
    assert len(reports) == n, f"only {len(reports)} of {n} processes reported: {reports}"
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    return reports


def test_readers_never_see_both_versions_or_neither(locate: Locator) -> None:
    path = locate("kb")
    kb = KnowledgeBase.open(path)
    kb.ingest([*STATIC, version_doc(1)])
    kb.close()
    n_readers = 3
    barrier = SPAWN.Barrier(n_readers + 2, timeout=GUARD_S)
    out = SPAWN.Queue()
    # Each process goes on past the seconds until it has done what the checks below count (the
    # writer until every reader has: ``partner`` counts the readers still short).
    partner = SPAWN.Value("i", n_readers)
    procs = [SPAWN.Process(target=_writer, args=(path, barrier, CONCURRENT_SECONDS, out, partner, 20))]
    procs += [SPAWN.Process(target=_reader, args=(path, barrier, CONCURRENT_SECONDS, out, partner, (50, 3)))
              for _ in range(n_readers)]
    for p in procs:
        p.start()
    barrier.wait()  # every process has opened the store: the contended phase starts now
    reports = _collect(out, len(procs), procs, timeout=CONCURRENT_SECONDS + GUARD_S + 60)
    writer = next(r for r in reports if r["role"] == "writer")
    readers = [r for r in reports if r["role"] == "reader"]
    assert all(r["problems"] == 0 for r in readers), readers
    # Not vacuous: the writer really flipped versions many times (and so went through many
    # segment merges), and every reader searched often and saw the document change under it.
    assert writer["superseded"] >= 20, writer
    assert all(r["searches"] >= 50 for r in readers), readers
    assert all(r["versions"] >= 3 for r in readers), readers
    kb = KnowledgeBase.open(path)
    if kb.stats().get("embedder", "none") != "none":
        assert all(r["modes"] == ["hybrid", "keyword", "vector"] for r in readers), readers
    kb.close()
    # Afterwards the store holds exactly the writer's last version.
    kb = KnowledgeBase.open(path)
    hits = kb.search(ACTOR, "common", limit=50, max_per_document=None, mode="keyword")
    assert check_hits(hits) is None
    assert {h.version for h in hits if h.document_id == DOC} == {version_doc(writer["last"]).version}
    kb.close()


def test_a_killed_writer_leaves_no_half_written_version(locate: Locator) -> None:
    """SIGKILL a process in the middle of large supersedes: the store then holds one complete
    version (whichever committed last), identical to a fresh build of it, and an SQLite file
    passes SQLite's integrity check."""
    path = locate("kb")
    kb = KnowledgeBase.open(path)
    kb.ingest([*STATIC, version_doc(1, 40)])
    kb.close()
    for round_, delay in enumerate((0.05, 0.13, 0.31), start=1):
        start = 1000 * round_
        committed = SPAWN.Event()
        p = SPAWN.Process(target=_big_writer, args=(path, 40, start, committed))
        p.start()
        assert committed.wait(timeout=GUARD_S), "the writer never committed"
        time.sleep(delay)
        p.kill()
        p.join()
        if locate.backend == "sqlite":
            with sqlite3.connect(path) as c:
                assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        kb = KnowledgeBase.open(path)
        try:
            current = next(d for d in kb.documents(TENANT) if d.id == DOC)
            k = int(current.version[1:])
            assert k > start
            expected_doc = version_doc(k, 40)
            assert current.content_sha256 == expected_doc.content_sha256
            count = (A_PASSAGES if k % 2 else B_PASSAGES) * 40
            got = kb.search(ACTOR, f"n{k}", limit=50, max_per_document=None, mode="keyword")
            assert [(h.document_id, h.version) for h in got] == [(DOC, current.version)] * 50
            last = kb.search(ACTOR, f"part{count}", limit=50, max_per_document=None, mode="keyword")
            assert [(h.document_id, h.passage) for h in last] == [(DOC, count)]
            assert kb.search(ACTOR, f"part{count + 1}", mode="keyword") == []
            stale = "beta" if k % 2 else "alpha"
            assert [h.document_id for h in kb.search(ACTOR, stale, limit=50, mode="keyword")] == ["other"]
            stats = kb.stats()
            fresh = KnowledgeBase.open(locate(f"fresh-{round_}"))
            fresh.ingest([*STATIC, expected_doc])
            assert stats["passages"] == fresh.stats()["passages"]
            assert stats["documents"] == fresh.stats()["documents"]
            for q in ("common", "alpha beta", f"n{k}", "gamma"):
                mine = [(h.document_id, h.version, h.passage, h.quote, h.score)
                        for h in kb.search(ACTOR, q, limit=50, mode="keyword")]
                theirs = [(h.document_id, h.version, h.passage, h.quote, h.score)
                          for h in fresh.search(ACTOR, q, limit=50, mode="keyword")]
                assert mine == theirs, q
            fresh.close()
        finally:
            kb.close()


# -- rejected batches and no-op re-ingests ---------------------------------------------------------
def _file_state(location: str) -> tuple[int, ...]:
    """(generation, main file size, WAL size) as another connection sees them; for PostgreSQL
    (generation, rows in every store table)."""
    gen = int(raw(location, "SELECT value FROM meta WHERE key = 'generation'")[0][0])
    if location.startswith("postgresql://"):
        tables = ("documents", "document_texts", "passages", "history", "segments", "postings",
                  "tombstones", "vectors", "signatures")
        return (gen, *(int(raw(location, f"SELECT count(*) FROM {t}")[0][0]) for t in tables))
    path = Path(location)
    wal = Path(f"{path}-wal")
    return gen, path.stat().st_size, wal.stat().st_size if wal.exists() else 0


def _data_version(watcher: sqlite3.Connection | None) -> int | None:
    """SQLite's own change counter as another connection sees it (None for PostgreSQL, where
    the generation and row counts of ``_file_state`` stand in)."""
    return None if watcher is None else int(watcher.execute("PRAGMA data_version").fetchone()[0])


def _observe(kb: KnowledgeBase) -> list[tuple[str, str, int, float]]:
    hits = kb.search(ACTOR, "common alpha beta gamma", limit=50, max_per_document=None, mode="keyword")
    return [(h.document_id, h.version, h.passage, h.score) for h in hits]


@pytest.mark.parametrize(
    "batch",
    [
        pytest.param([Document("new", TENANT, {"g"}, "1", "alpha new"),
                      Document("new", TENANT, {"g"}, "2", "beta new")], id="two-new"),
        pytest.param([Document("fresh", TENANT, {"g"}, "1", "common fresh"),
                      Document(DOC, TENANT, {"g"}, "X1", "common superseding"),
                      Document(DOC, TENANT, {"g"}, "X2", "common again")], id="new-then-dup-of-existing"),
        pytest.param([Document(DOC, TENANT, {"g"}, "A1", version_doc(1).text),
                      Document(DOC, TENANT, {"h"}, "A1", version_doc(1).text)],
                     id="same-content-other-groups"),
    ],
)
def test_duplicate_in_batch_rejects_the_whole_batch(locate: Locator, batch: list[Document]) -> None:
    path = locate("kb")
    kb = KnowledgeBase.open(path)
    kb.ingest([*STATIC, version_doc(1)])
    watcher = sqlite3.connect(path) if locate.backend == "sqlite" else None
    data_version = _data_version(watcher)
    before = (_file_state(path), kb.stats(), _observe(kb), kb.documents())
    with pytest.raises(DocumentError, match="twice in the batch"):
        kb.ingest(batch)
    assert _data_version(watcher) == data_version
    assert (_file_state(path), kb.stats(), _observe(kb), kb.documents()) == before
    other = KnowledgeBase.open(path)
    assert _observe(other) == before[2]
    other.close()
    if watcher is not None:
        watcher.close()
    kb.close()


def test_same_id_in_two_tenants_is_not_a_duplicate(locate: Locator) -> None:
    kb = KnowledgeBase.open(locate("kb"))
    r = kb.ingest([Document("x", "t", {"g"}, "1", "alpha"), Document("x", "u", {"g"}, "1", "alpha")])
    assert (r.added, r.superseded) == (2, 0)
    kb.close()


def test_reingesting_the_same_version_and_text_writes_nothing(locate: Locator) -> None:
    path = locate("kb")
    kb = KnowledgeBase.open(path)
    docs = [*STATIC, version_doc(1)]
    first = kb.ingest(docs)
    assert first.added == len(docs)
    for k in range(2, 12):  # some history, segments and a merge before the no-op
        kb.ingest(version_doc(k))
    kb.store.settle()  # the merge (and its checkpoint) runs after the write returns
    docs[-1] = version_doc(11)
    sqlite = locate.backend == "sqlite"
    watcher = sqlite3.connect(path) if sqlite else None
    data_version = _data_version(watcher)
    before = (_file_state(path), kb.stats(), _observe(kb))
    files = (Path(path), Path(f"{path}-wal")) if sqlite else ()
    mtimes = {p: os.stat(p).st_mtime_ns for p in files if p.exists()}
    for _ in range(3):
        # Fresh Document objects, equal in every field: the same version and fingerprint.
        report = kb.ingest([Document(d.id, d.tenant, d.groups, d.version, d.text, language=d.language,
                                     visibility=d.visibility, tags=d.tags) for d in docs])
        assert report.as_dict() == {"added": 0, "superseded": 0, "unchanged": len(docs),
                                    "passages_written": 0, "conflicts": []}
    # Another handle (as another process would) re-ingesting the same is a no-op too.
    other = KnowledgeBase.open(path)
    assert other.ingest(docs[-1]).unchanged == 1
    other.close()
    assert _data_version(watcher) == data_version
    assert (_file_state(path), kb.stats(), _observe(kb)) == before
    assert {p: os.stat(p).st_mtime_ns for p in mtimes} == mtimes
    # The watchers are not blind: a real change is visible to them.
    kb.ingest(version_doc(12))
    if watcher is not None:
        assert _data_version(watcher) != data_version
        watcher.close()
    assert _file_state(path)[0] > before[0][0]
    assert _file_state(path) != before[0]
    kb.close()


@pytest.mark.parametrize("writers", [2, 4])
def test_writer_processes_end_in_the_state_of_a_fresh_build(locate: Locator, writers: int) -> None:
    """Several processes write (supersede, remove, re-add, and merge segments) at the same time
    while a reader searches; the store ends exactly as a fresh build of the final documents."""
    if writers > 2 and locate.backend == "sqlite":
        pytest.skip("SQLite serialises writers in one file lock; two show the contract there")
    path = locate("kb")
    kb = KnowledgeBase.open(path)
    kb.ingest([*STATIC, version_doc(1)])  # the reader checks that "policy" stays whole
    kb.close()
    barrier = SPAWN.Barrier(writers + 2, timeout=GUARD_S)
    out = SPAWN.Queue()
    procs = [SPAWN.Process(target=_churn_writer, args=(path, barrier, CHURN_WRITES, prefix, out))
             for prefix in "pqrs"[:writers]]
    procs.append(SPAWN.Process(target=_reader, args=(path, barrier, 2.5, out)))
    for p in procs:
        p.start()
    barrier.wait()
    reports = _collect(out, len(procs), procs, timeout=240)
    reader = next(r for r in reports if r["role"] == "reader")
    assert reader["problems"] == 0, reader
    final = [churn_doc(r["prefix"], i) for r in reports if r["role"] == "writer"
             for i in r["final"].values() if i is not None]
    assert all(r["writes"] == CHURN_WRITES for r in reports if r["role"] == "writer"), reports
    kb = KnowledgeBase.open(path)
    fresh = KnowledgeBase.open(locate("fresh"))
    fresh.ingest([*STATIC, version_doc(1), *final])
    try:
        if locate.backend == "sqlite":
            with sqlite3.connect(path) as c:
                assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        for key in ("documents", "passages"):
            assert kb.stats()[key] == fresh.stats()[key], key
        for q in ("alpha", "beta gamma", "common", "delta alpha"):
            for match in ("any", "all"):
                mine, theirs = (
                    [(h.document_id, h.version, h.passage, h.score)
                     for h in base.search(ACTOR, q, limit=50, match=match, max_per_document=None,
                                          mode="keyword")]
                    for base in (kb, fresh)
                )
                assert mine == theirs, (q, match)
    finally:
        kb.close()
        fresh.close()


def test_two_writers_on_the_same_document(locate: Locator) -> None:
    """One process keeps restoring version 1 (mostly a no-op), another keeps superseding it:
    both finish without error, readers never see a mixed or partial version, and the file ends
    holding exactly one complete version of the two writers' last writes."""
    path = locate("kb")
    kb = KnowledgeBase.open(path)
    kb.ingest([*STATIC, version_doc(1)])
    kb.close()
    barrier = SPAWN.Barrier(5, timeout=GUARD_S)
    out = SPAWN.Queue()
    partner = SPAWN.Value("i", 1)
    procs = [SPAWN.Process(target=_writer, args=(path, barrier, 2.5, out, partner, 10)),
             SPAWN.Process(target=_restorer, args=(path, barrier, 2.5, out, partner, 3))]
    procs += [SPAWN.Process(target=_reader, args=(path, barrier, 2.5, out)) for _ in range(2)]
    for p in procs:
        p.start()
    barrier.wait()
    reports = _collect(out, len(procs), procs, timeout=GUARD_S + 90)
    readers = [r for r in reports if r["role"] == "reader"]
    writer = next(r for r in reports if r["role"] == "writer")
    restorer = next(r for r in reports if r["role"] == "restorer")
    assert all(r["problems"] == 0 for r in readers), readers
    assert writer["superseded"] >= 10 and restorer["superseded"] >= 3, reports
    kb = KnowledgeBase.open(path)
    try:
        current = next(d for d in kb.documents(TENANT) if d.id == DOC)
        assert current.version in {"A1", version_doc(writer["last"]).version}
        assert current.content_sha256 == version_doc(int(current.version[1:])).content_sha256
        assert check_hits(kb.search(ACTOR, "common", limit=50, max_per_document=None, mode="keyword")) is None
    finally:
        kb.close()
