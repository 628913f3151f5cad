"""Tenants placed on several servers, and moved between them online, on two independent real
PostgreSQL servers (tests/pgcluster.py) and on SQLite files.

What must hold: a tenant's documents, statistics, records and citations live on its server only;
every ``Knowledge`` call is routed by tenant (the type check in test_knowledge_protocol.py); a
move with reads and writes going on loses no acknowledged write, duplicates nothing, never
fails a read, and leaves the old server empty; a move interrupted at any step finishes when run
again; the configuration is rewritten in place, comments kept.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from backends import raw
from evidex import Document, KnowledgeBase, StoreError, TenantMoved
from evidex.config import StoreLocation, load_config
from evidex.placement import PlacedKnowledge, move_tenant, open_knowledge
from evidex.store import RunRecord, redacted
from pgcluster import PgServer
from placed import actor as _actor
from placed import fresh_schemas
from placed import placement_of as _placement
from placed import tenant_doc as _doc

EVIDEX = Path(sys.executable).parent / "evidex"


@pytest.fixture
def urls(two: tuple[PgServer, PgServer], pg_url: str) -> tuple[str, str]:
    return fresh_schemas(two)




# -- placement ----------------------------------------------------------------------------------
def test_each_tenant_lives_on_its_own_server_only(urls: tuple[str, str]) -> None:
    a, b = urls
    with open_knowledge(_placement(a, acme=b)) as kb:
        assert isinstance(kb, PlacedKnowledge)
        report = kb.ingest([_doc(t, i) for t in ("acme", "globex") for i in range(5)])
        assert report.added == 10
        kb.record_run(RunRecord("sync", "s", "acme", "2024-01-01T00:00:00+00:00", "2024-01-01T00:00:01+00:00",
                                True))
        assert raw(b, "SELECT DISTINCT tenant FROM documents") == [("acme",)]
        assert raw(a, "SELECT DISTINCT tenant FROM documents") == [("globex",)]
        assert raw(b, "SELECT tenant FROM runs") == [("acme",)] and raw(a, "SELECT tenant FROM runs") == []
        # Permission-exact statistics of each tenant come from its server alone: the scores
        # equal those of a store holding that tenant only.
        with KnowledgeBase.open(a.replace("schema=", "schema=x")) as alone:
            alone.ingest([_doc("acme", i) for i in range(5)])
            want = [(h.document_id, h.passage, h.score) for h in alone.search(_actor("acme"), "alpha gamma",
                                                                                 mode="keyword")]
        got = [(h.document_id, h.passage, h.score) for h in kb.search(_actor("acme"), "alpha gamma",
                                                                         mode="keyword")]
        assert got == want and got
        hit = kb.search(_actor("acme"), "number 3", mode="keyword")[0]
        assert kb.resolve(_actor("acme"), hit.citation()).ok
        assert kb.document(_actor("acme"), "d3") is not None
        assert kb.remove("globex", "d4") and raw(a, "SELECT count(*) FROM documents") == [(4,)]
        stats = kb.stats()
        assert stats["documents"] == 9
        assert [s["placed"] for s in stats["servers"]] == [["(default)"], ["acme"]]
        assert kb.check().ok
        assert {d.tenant for d in kb.documents()} == {"acme", "globex"}
        assert kb.server_of("acme") == redacted(b) and kb.server_of("globex") == redacted(a)


# -- moving ---------------------------------------------------------------------------------------
def _until(done: Callable[[], bool], within_s: float = 300.0) -> None:
    """Wait for ``done`` (a count reached), however slow the machine; a bound only against a hang."""
    deadline = time.monotonic() + within_s
    while not done() and time.monotonic() < deadline:
        time.sleep(0.05)


class Load:
    """Writes and reads of one tenant through a handle on the *old* placement while a move
    runs: every acknowledged write is remembered; every failed call is kept."""

    def __init__(self, kb: KnowledgeBase, tenant: str, seed: int) -> None:
        self.kb, self.tenant, self.rnd = kb, tenant, random.Random(seed)
        self.expected: dict[str, str] = {}  # doc id -> version, after every acknowledged write
        self.errors: list[BaseException] = []
        self.reads = self.writes = 0
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def writer(self) -> None:
        n = 1000
        while not self.stop.is_set():
            op = self.rnd.random()
            try:
                if op < 0.6 or not self.expected:
                    doc = _doc(self.tenant, n, "1", f"fresh write {n} alpha")
                    self.kb.ingest(doc)
                    self.expected[doc.id] = "1"
                    n += 1
                elif op < 0.85:
                    victim = self.rnd.choice(sorted(self.expected))
                    v = str(int(self.expected[victim]) + 1)
                    self.kb.ingest(Document(victim, self.tenant, frozenset({"g"}), v,
                                            f"superseded {v} alpha"))
                    self.expected[victim] = v
                else:
                    victim = self.rnd.choice(sorted(self.expected))
                    assert self.kb.remove(self.tenant, victim)
                    del self.expected[victim]
                self.writes += 1
            except BaseException as exc:  # kept, never raised in the thread
                self.errors.append(exc)
                return

    def reader(self) -> None:
        while not self.stop.is_set():
            try:
                self.kb.search(_actor(self.tenant), "alpha", mode="keyword")
                self.kb.document(_actor(self.tenant), "d0")
                self.reads += 1
            except BaseException as exc:
                self.errors.append(exc)
                return


def test_a_move_with_reads_and_writes_going_on_loses_and_duplicates_nothing(urls: tuple[str, str]) -> None:
    a, b = urls
    old = _placement(a)
    with open_knowledge(old) as kb:
        kb.ingest([_doc(t, i) for t in ("acme", "globex") for i in range(150)])
        kb.ingest([_doc("acme", i, "2", f"second version {i} alpha") for i in range(0, 150, 3)])
        kb.record_run(RunRecord("sync", "s", "acme", "2024-01-01T00:00:00+00:00", "2024-01-01T00:00:01+00:00",
                                True))
    load = Load(open_knowledge(old), "acme", 7)
    load.expected.update({f"d{i}": "2" if i % 3 == 0 else "1" for i in range(150)})
    threads = [threading.Thread(target=load.writer), threading.Thread(target=load.reader)]
    for t in threads:
        t.start()
    try:
        # Counted, not timed: on a busy machine 0.3 s may hold no write at all.
        _until(lambda: (load.writes >= 6 and load.reads >= 6) or bool(load.errors))
        report = move_tenant("acme", old.location("acme"), StoreLocation(url=b))
        moved_at = load.writes
        # Writes and reads after the switch go on: through the mark.
        _until(lambda: (load.writes >= moved_at + 5 and load.reads >= 11) or bool(load.errors))
    finally:
        load.stop.set()
        for t in threads:
            t.join()
        load.kb.close()
    assert load.errors == [], load.errors[:3]
    assert load.writes > 10 and load.reads > 10
    assert report.state == "done" and report.counts is not None and not report.counts.mismatches
    assert report.citations_checked > 0 and report.searches_checked > 0
    assert report.removed_from_source > 0
    # Every acknowledged write is on the new server, once; nothing of acme is left on the old.
    got = dict(raw(b, "SELECT doc_id, version FROM documents WHERE tenant = 'acme'"))
    assert got == load.expected
    assert raw(b, "SELECT count(*), count(DISTINCT doc_id) FROM documents") == [(len(got), len(got))]
    assert raw(a, "SELECT count(*) FROM documents WHERE tenant = 'acme'") == [(0,)]
    assert raw(a, "SELECT count(*) FROM passages p JOIN documents d USING (dkey) "
                  "WHERE d.tenant = 'acme'") == [(0,)]
    assert raw(a, "SELECT count(*) FROM documents WHERE tenant = 'globex'") == [(150,)]
    assert raw(b, "SELECT count(*) FROM runs WHERE tenant = 'acme'") == [(1,)]
    assert raw(a, "SELECT state FROM tenant_moves WHERE tenant = 'acme'") == [("moved",)]
    with open_knowledge(_placement(a, acme=b)) as new, KnowledgeBase.open(b) as direct:
        assert new.check().ok
        assert len(new.search(_actor("acme"), "alpha", limit=50, mode="keyword")) == 50
        # A plain handle on the old server says where the tenant went, in one line.
        with KnowledgeBase.open(a) as stale, pytest.raises(TenantMoved, match="has moved to"):
            stale.search(_actor("acme"), "alpha")
        with KnowledgeBase.open(a) as stale, pytest.raises(TenantMoved):
            stale.ingest(_doc("acme", 5000))
        assert direct.stats()["documents"] == len(got)


def test_a_move_refuses_a_store_that_indexes_otherwise(urls: tuple[str, str]) -> None:
    a, b = urls
    with KnowledgeBase.open(a) as kb:
        kb.ingest(_doc("acme", 1))
    KnowledgeBase.open(b, analyzer="exact").close()
    with pytest.raises(StoreError, match=r"analyzer 'exact'"):
        move_tenant("acme", StoreLocation(url=a), StoreLocation(url=b))
    assert raw(a, "SELECT count(*) FROM tenant_moves") == [(0,)]


def test_moving_between_sqlite_files_and_back(tmp_path: Path) -> None:
    a, b = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    with KnowledgeBase.open(a) as kb:
        kb.ingest([_doc(t, i) for t in ("acme", "globex") for i in range(10)])
    there = move_tenant("acme", StoreLocation(url=a), StoreLocation(url=b), keep_source=True)
    assert there.state == "done" and there.removed_from_source == 0
    assert raw(a, "SELECT count(*) FROM documents WHERE tenant = 'acme'") == [(10,)]  # kept, frozen
    with KnowledgeBase.open(b) as kb:
        kb.ingest(_doc("acme", 50))
    back = move_tenant("acme", StoreLocation(url=b), StoreLocation(url=a))
    assert back.state == "done" and back.counts is not None and back.counts.documents == 11
    assert raw(a, "SELECT count(*) FROM documents WHERE tenant = 'acme'") == [(11,)]
    assert raw(a, "SELECT count(*) FROM tenant_moves") == [(0,)]  # served here again
    assert raw(b, "SELECT tenant, state FROM tenant_moves") == [("acme", "moved")]
    with open_knowledge(_placement(a)) as kb:
        assert len(kb.search(_actor("acme"), "alpha", limit=20, mode="keyword")) == 11


# -- the configuration and the command line --------------------------------------------------------
def test_move_tenant_command_writes_the_configuration_and_stats_summarise_all(urls: tuple[str, str],
                                                                             tmp_path: Path) -> None:
    a, b = urls
    config = tmp_path / "knowledge.config.yaml"
    config.write_text(f"# where the stores are\nstore:\n  default: {json.dumps(a)}  # the main one\n"
                      "  tenants:\n    globex: " + json.dumps(a) + "\nretrieval:\n  top_k: 4\n")

    def evidex(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(EVIDEX), "--config", str(config), *args], capture_output=True, text=True,
                              timeout=300)

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(4):
        (docs / f"p{i}.md").write_text(f"# Policy {i}\n\nReturns within {i + 10} days, alpha.\n")
    assert evidex("ingest", str(docs), "--tenant", "acme", "--groups", "everyone").returncode == 0
    moved = evidex("move-tenant", "acme", "--to", b, "--write-config", "--json")
    assert moved.returncode == 0, moved.stderr
    out = json.loads(moved.stdout)
    assert out["state"] == "done"
    assert out["verified"]["documents"] == 4 and out["verified"]["mismatches"] == []
    text = config.read_text()
    assert "# where the stores are" in text and "# the main one" in text
    assert load_config(config).store.tenants["acme"].url == b  # type: ignore[union-attr]
    stats = evidex("stats", "--json")
    data = json.loads(stats.stdout)
    assert data["documents"] == 4
    assert [s["placed"] for s in data["servers"]] == [["(default)", "globex"], ["acme"]]
    one = evidex("stats", "--tenant", "acme")
    assert one.returncode == 0 and "server: " in one.stderr and "documents: 4" in one.stdout
    checked = evidex("check")
    assert checked.returncode == 0, checked.stderr
    found = evidex("search", "returns days", "--tenant", "acme", "--groups", "everyone", "--visibilities",
                   "public,internal", "--json")
    assert found.returncode == 0 and json.loads(found.stdout)["hits"], found.stderr
    again = evidex("move-tenant", "acme", "--to", b)
    assert again.returncode == 1 and "already on" in again.stderr
    # Back to the default store, keeping the copy on b: the line to change is printed (the
    # file keeps saying b), and a caller of the old placement follows the tenant back.
    back = evidex("move-tenant", "acme", "--to", a, "--keep-source")
    assert back.returncode == 0, back.stderr
    assert f"acme: {json.dumps(a)}" in back.stdout and "(kept on the old store)" in back.stdout
    assert raw(b, "SELECT count(*) FROM documents WHERE tenant = 'acme'") == [(4,)]
    assert raw(a, "SELECT count(*) FROM documents WHERE tenant = 'acme'") == [(4,)]
    assert load_config(config).store.tenants["acme"].url == b  # type: ignore[union-attr]
    found = evidex("search", "returns days", "--tenant", "acme", "--groups", "everyone", "--visibilities",
                   "public,internal", "--json")
    assert found.returncode == 0 and len(json.loads(found.stdout)["hits"]) == 4, found.stderr
