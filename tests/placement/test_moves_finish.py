"""Tenant moves that always finish (issue 45, findings 3, 4 and 11), on SQLite files and the
real ``evidex`` command.

``--write-config --to-replica`` wrote a flow mapping with plain URLs its own reader could not
read back; a move killed after the configuration was written failed on re-run with "already
on ..."; ``move-tenant nosuchtenant`` "succeeded" and left a permanent moved mark; a frozen
tenant's write held its store handle for 120 s."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import evidex.placement._router as placement_router  # the router owns the move wait and its clock
from actors import PUBLIC_INTERNAL
from backends import raw
from evidex import Actor, Document, KnowledgeBase, TenantMoved
from evidex.config import StoreConfig, StoreLocation, load_config, write_placement
from evidex.placement import SERVICE_MOVE_WAIT_S, Placement, move_tenant, open_knowledge

EVIDEX = Path(sys.executable).parent / "evidex"
URLS = [
    "postgresql://u@/db?password=P1&host=/tmp/x&port=5433&schema=evx",
    "postgresql://u@h1:5432,h2:5433/db?target_session_attrs=read-write",
    "postgresql://u@h/db?options=-c%20search_path%3Dx#frag",
    "postgresql://u@h/db?application_name=a, b [c] {d}: e",
    "postgresql:///db?user=u&host=/run/postgresql",
]


@pytest.mark.parametrize("replicas", [(), ("postgresql://u@r1/db?password=P2&host=/tmp/y",
                                             "postgresql://u@r2/db?application_name=x, y #z")])
def test_the_config_writer_reads_back_what_it_wrote(tmp_path: Path, replicas: tuple[str, ...]) -> None:
    """Finding 3: each location written, then re-read by the same parser; the next write over
    it works too (it failed after the first --to-replica switch)."""
    config = tmp_path / "knowledge.config.yaml"
    config.write_text("# stores\nstore:\n  default: evidex.db  # main\n  tenants:\n    globex: g.db\n")
    for tenant in ("acme", "globex", "on", "a b"):
        for url in URLS:
            write_placement(config, tenant, StoreLocation(url=url, replicas=replicas))
            store = load_config(config).store
            assert store is not None
            assert store.tenants[tenant].url == url and tuple(store.tenants[tenant].replicas) == replicas
    text = config.read_text()
    assert "# stores" in text and "# main" in text


def _docs(tenant: str, n: int) -> list[Document]:
    return [Document(f"d{i}", tenant, frozenset({"g"}), "1", f"alpha beta {tenant} number {i}")
            for i in range(n)]


def _evidex(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(EVIDEX), "--config", str(config), *args], capture_output=True, text=True,
                          timeout=300, cwd=config.parent)


def test_a_move_killed_after_the_config_write_finishes_with_the_same_command(tmp_path: Path) -> None:
    a, b = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    with KnowledgeBase.open(a) as kb:
        kb.ingest(_docs("acme", 12) + _docs("globex", 3))
    config = tmp_path / "knowledge.config.yaml"
    config.write_text(f"store:\n  default: {json.dumps(a)}\n")

    class Killed(Exception):
        pass

    def switched(report: object) -> None:  # the configuration is written, then the process dies
        write_placement(config, "acme", StoreLocation(url=b))
        raise Killed()

    with pytest.raises(Killed):
        move_tenant("acme", StoreLocation(url=a), StoreLocation(url=b), switched=switched)
    assert load_config(config).store.tenants["acme"].url == b  # type: ignore[union-attr]
    assert raw(a, "SELECT count(*) FROM documents WHERE tenant = 'acme'") == [(12,)]  # not removed yet
    again = _evidex(config, "move-tenant", "acme", "--to", b, "--write-config", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["state"] == "done"
    assert raw(a, "SELECT count(*) FROM documents WHERE tenant = 'acme'") == [(0,)]
    assert raw(b, "SELECT count(*) FROM documents WHERE tenant = 'acme'") == [(12,)]
    assert raw(a, "SELECT count(*) FROM documents WHERE tenant = 'globex'") == [(3,)]
    done = _evidex(config, "move-tenant", "acme", "--to", b)
    assert done.returncode == 1 and "already on" in done.stderr and "--from" in done.stderr


def test_moving_an_unknown_tenant_is_an_error_that_leaves_no_mark(tmp_path: Path) -> None:
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    with KnowledgeBase.open(a) as kb:
        kb.ingest(_docs("acme", 2))
    config = tmp_path / "knowledge.config.yaml"
    config.write_text(f"store:\n  default: {json.dumps(str(a))}\n")
    moved = _evidex(config, "move-tenant", "nosuchtenant", "--to", str(b))
    assert moved.returncode == 1
    assert moved.stderr.strip().splitlines() == [moved.stderr.strip()]
    assert "'nosuchtenant' has no documents" in moved.stderr
    assert raw(a, "SELECT count(*) FROM tenant_moves") == [(0,)]
    assert not b.exists()


def test_a_frozen_tenants_writes_fail_fast_in_the_service(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding 4: a move killed mid-freeze left the tenant ``moving``; each write then waited
    120 s holding a store handle. The service's handles wait a couple of seconds, then the
    write fails (503 with Retry-After over HTTP); another tenant is served meanwhile. The
    placement's clock is the test's: the waits are counted, not timed."""

    class Clock:
        now, sleeps = 0.0, 0

        def monotonic(self) -> float:
            return self.now

        def sleep(self, seconds: float) -> None:
            self.sleeps += 1
            self.now += seconds

    clock = Clock()
    monkeypatch.setattr(placement_router, "time", clock)
    a, b = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    with KnowledgeBase.open(a) as kb:
        kb.ingest(_docs("acme", 3) + _docs("globex", 3))
        kb.store.mark_tenant("acme", "moving", b, ())
    where = Placement.of(StoreConfig.model_validate({"default": a}), None)
    with open_knowledge(where, move_wait_s=SERVICE_MOVE_WAIT_S) as kb:
        with pytest.raises(TenantMoved, match="is being moved"):
            kb.remove("acme", "d1")
        # Given up once SERVICE_MOVE_WAIT_S had passed (was 120 s: 600 waits of 0.2 s).
        assert SERVICE_MOVE_WAIT_S < clock.now <= SERVICE_MOVE_WAIT_S + 0.2 + 1e-9, clock.now
        assert clock.sleeps <= round(SERVICE_MOVE_WAIT_S / 0.2) + 1
        assert kb.remove("globex", "d1")
        hits = kb.search(Actor("globex", frozenset({"g"}), visibilities=PUBLIC_INTERNAL), "alpha",
                         mode="keyword")
        assert len(hits) == 2
