"""The service's internals: the memory ``_run`` caps and hands back, the denial floor of
``_deps`` (its clock and wait patched where ``_documents`` and ``_resolve`` call it) and the
wire schema's filters (``_schemas``) against the library's. The service itself is tested
over HTTP and through ``evidex.server``'s names in the other files here.

`evidex serve` caps glibc's malloc arenas (benchmarks/RESULTS.md, Hardening: the soak's
resident size crept up with one arena per request thread), unless the operator chose a value."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from evidex.config import Config, load_config
from evidex.model import EvidexError
from evidex.server import _run
from evidex.server._run import MALLOC_ARENAS, limit_malloc_arenas
from service_helpers import (
    auth,
    build_store,
    write_config,
)


def test_serve_sets_the_arena_cap_for_itself_and_its_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    limit_malloc_arenas()
    assert os.environ["MALLOC_ARENA_MAX"] == str(MALLOC_ARENAS)


def test_an_operators_arena_setting_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    limit_malloc_arenas()
    assert os.environ["MALLOC_ARENA_MAX"] == "4"


_FRAGMENT = """
import ctypes
import sys

from evidex.server._run import release_freed_memory

def rss_kb():
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:"))

# Blocks of 60,000 bytes come from glibc's heap (below its mmap threshold); a 1,000-byte
# survivor after each keeps the freed ones from being returned as the heap's top.
kept, freed = [], []
for i in range(3000):
    freed.append(bytes([i % 251]) * 60_000)
    kept.append(bytes([i % 251]) * 1_000)
full = rss_kb()
freed.clear()
before = rss_kb()
release_freed_memory()
after = rss_kb()
print(full, before, after)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
                    reason="malloc_trim is glibc's")
def test_release_hands_freed_heap_memory_back() -> None:
    # A fresh process: the test runner's own heap would blur the figures.
    out = subprocess.run([sys.executable, "-c", _FRAGMENT], capture_output=True, text=True,
                         check=True, env={**os.environ, "MALLOC_ARENA_MAX": "2"})
    full, before, after = (int(x) for x in out.stdout.split())
    freed_kb = 3000 * 60_000 // 1024
    # glibc kept the freed blocks resident (the premise), and the release gave most of them back.
    assert before > full - freed_kb // 4
    assert before - after > freed_kb // 2


def _site_config(tmp_path: Path, **source: Any) -> Config:
    site = tmp_path / "site"
    site.mkdir()
    (site / "a.md").write_text("# Returns\n\nReturns take 30 days.\n", encoding="utf-8")
    config = tmp_path / "knowledge.config.yaml"
    config.write_text(yaml.safe_dump({"sources": [{"id": "site", "type": "files", "path": str(site),
                                                    "include": ["*.md"], "tenant": "acme",
                                                    "groups": ["staff"], **source}]}),
                      encoding="utf-8")
    return load_config(config)


def test_each_sync_of_the_service_releases_freed_memory(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = _site_config(tmp_path)
    site = tmp_path / "site"
    db = str(tmp_path / "kb.db")
    calls: list[int] = []
    monkeypatch.setattr(_run, "release_freed_memory", lambda: calls.append(1))
    run_sync, _ = _run.source_operations(db, cfg)
    assert run_sync(tenant="acme", source=None)["added"] == 1
    (site / "a.md").write_text("# Returns\n\nReturns take 14 days.\n", encoding="utf-8")
    assert run_sync(tenant="acme", source=None)["superseded"] == 1
    assert calls == [1, 1]
    with pytest.raises(EvidexError):
        run_sync(tenant="acme", source="elsewhere")
    assert calls == [1, 1]  # refused before any store was opened: nothing was allocated


def test_each_scheduled_run_releases_freed_memory(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = _site_config(tmp_path, schedule="0 3 * * *")
    calls: list[int] = []
    monkeypatch.setattr(_run, "release_freed_memory", lambda: calls.append(1))
    scheduler = _run.service_scheduler(str(tmp_path / "kb.db"), cfg)
    scheduler.next_due = {job: datetime(2000, 1, 1, tzinfo=UTC) for job in scheduler.jobs}
    records = scheduler.run_pending()
    assert sorted(r.kind for r in records) == ["drift", "sync"]
    assert all(r.ok for r in records)
    assert len(calls) == len(records)  # once after each run, the drift check's included


def test_denials_take_one_floor_of_time_whether_the_document_exists_or_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe timed GET /v1/documents/{id}: an existing unreadable document took measurably
    longer than an unknown id. Every denial (404 there, ``unavailable`` from resolve) now waits
    for one floor from the start of its lookup (raised here to 0.3 s to see it plainly);
    readable documents are not held."""
    from fastapi.testclient import TestClient

    import evidex.server._deps as deps
    import evidex.server._documents as documents_module
    import evidex.server._resolve as resolve_module
    from evidex.config import load_config
    from evidex.server import create_app

    monkeypatch.setattr(deps, "DENIAL_FLOOR_S", 0.3)
    held: list[float] = []  # every denial held to the floor, counted (not timed: a busy machine)

    async def floor(started: float) -> None:
        held.append(started)
        await deps.uniform_denial(started)

    monkeypatch.setattr(documents_module, "uniform_denial", floor)
    monkeypatch.setattr(resolve_module, "uniform_denial", floor)
    db = tmp_path / "kb.db"
    build_store(db, tmp_path / "cache")
    app = create_app(db, load_config(write_config(tmp_path / "config.yaml")).server)
    h = auth("acme-customer-key")
    citation = {"version": "1", "content_sha256": "0" * 64, "passage": 1, "quote": "q"}
    with TestClient(app) as c:
        def timed(method: str, path: str, **kw: Any) -> tuple[float, httpx.Response]:
            t0 = time.perf_counter()
            r = c.request(method, path, headers=h, **kw)
            return time.perf_counter() - t0, r

        for doc_id in ("onboarding-checklist", "no-such-document"):  # internal / unknown
            took, r = timed("GET", f"/v1/documents/{doc_id}")
            assert r.status_code == 404 and took >= 0.3, (doc_id, took)
            took, r = timed("POST", "/v1/resolve", json={**citation, "document_id": doc_id})
            assert r.json()["reason"] == "unavailable" and took >= 0.3, (doc_id, took)
        assert len(held) == 4
        _, r = timed("GET", "/v1/documents/returns-faq")  # public: readable by customers
        assert r.status_code == 200 and len(held) == 4  # not held to the floor


@settings(max_examples=200, deadline=None, database=None)
@given(tag=st.text(max_size=12) | st.sampled_from(["", " a", "a ", "a b", "\u00a0x", "x\u2028", "é"]),
       language=st.from_regex(r"[a-zA-Z-]{0,8}", fullmatch=True) | st.sampled_from(["de", "de-CH", "EN"]))
def test_schema_filters_accept_exactly_what_the_library_accepts(tag: str, language: str) -> None:
    """The wire schema's patterns for filter tags and languages are the library's rules, so a
    body the OpenAPI document calls valid is never refused by the library (and vice versa)."""
    from pydantic import ValidationError

    from evidex.model import Filters as LibraryFilters
    from evidex.model import QueryError
    from evidex.server._schemas import Filters as WireFilters

    def accepted(make: Any) -> bool:
        try:
            make()
        except (ValidationError, QueryError):
            return False
        return True

    assert accepted(lambda: WireFilters(tags=[tag])) == accepted(
        lambda: LibraryFilters(tags=frozenset({tag})))
    assert accepted(lambda: WireFilters(language=language)) == accepted(
        lambda: LibraryFilters(language=language))
