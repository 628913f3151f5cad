"""``X-Evidex-Generation`` is per caller (issue 45, finding 6): the store's generation counts
every tenant's writes on a server the tenants share, and showing it let one tenant watch
another's writes. A caller now only ever sees generations of its own writes: right after a
write, its reads say they included it; another tenant's writes never change what it is shown.
The real app over a real SQLite store (one store, both tenants on it)."""

from __future__ import annotations

from pathlib import Path

import httpx
from fastapi.testclient import TestClient

from evidex import Document, KnowledgeBase
from evidex.config import load_config
from evidex.server import create_app
from service_helpers import auth, build_store, write_config

SEARCH = {"query": "zebra widgets returned", "top_k": 3}


def _acme_documents(db: Path, cache: Path, n: int) -> None:
    with KnowledgeBase.open(db, embed_cache=cache / "embeddings.sqlite") as kb:
        kb.ingest([Document(f"scratch-{i}", "acme", frozenset({"staff"}), "1",
                            f"Scratch page {i} about tents.", visibility="public", language="en")
                   for i in range(n)])


def _search(c: TestClient, key: str) -> httpx.Response:
    r = c.post("/v1/search", json=SEARCH, headers=auth(key))
    assert r.status_code == 200, r.text
    assert r.headers["x-evidex-server"].startswith("store ")  # which server answered: still said
    return r


def test_a_tenant_never_sees_another_tenants_write_counter(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    build_store(db, tmp_path / "cache")
    _acme_documents(db, tmp_path / "cache", 3)
    app = create_app(db, load_config(write_config(tmp_path / "config.yaml")).server)
    with TestClient(app) as c:
        # globex has written nothing: it is shown no generation, before or after acme's writes.
        assert "x-evidex-generation" not in _search(c, "globex-user-key").headers
        written = []
        for i in range(3):
            r = c.delete(f"/v1/documents/scratch-{i}", headers=auth("acme-admin-key"))
            assert r.status_code == 200, r.text
            written.append(int(r.headers["x-evidex-written-generation"]))
            # acme's own read right after its write says it included that write.
            read = c.get("/v1/documents/returns-faq", headers=auth("acme-admin-key"))
            assert int(read.headers["x-evidex-generation"]) == written[-1]
            assert "x-evidex-generation" not in _search(c, "globex-user-key").headers
            assert "x-evidex-generation" not in _search(c, "globex-admin-key").headers
        assert written == sorted(written) and len(set(written)) == 3
        # globex writes once: it is shown that write's generation, and acme's later writes
        # (which move the shared store's counter on) do not change what globex sees.
        r = c.delete("/v1/documents/globex-secret", headers=auth("globex-admin-key"))
        assert r.status_code == 200, r.text
        own = int(r.headers["x-evidex-written-generation"])
        assert own > written[-1]
        assert int(_search(c, "globex-admin-key").headers["x-evidex-generation"]) == own
        _acme_documents(db, tmp_path / "cache", 1)  # scratch-0 again: the counter moves on
        r = c.delete("/v1/documents/scratch-0", headers=auth("acme-admin-key"))
        assert int(r.headers["x-evidex-written-generation"]) > own
        assert int(_search(c, "globex-admin-key").headers["x-evidex-generation"]) == own
        # another key of the same tenant did not write: it is shown nothing either.
        assert "x-evidex-generation" not in _search(c, "globex-user-key").headers
