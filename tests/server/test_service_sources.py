"""The service wired to configured sources: admin sync and drift over HTTP, confined to the
admin key's tenant (a real `evidex serve` process and a real folder of Markdown files)."""

from __future__ import annotations

from pathlib import Path

import httpx
import yaml

from actors import PUBLIC_INTERNAL
from evidex import Actor, KnowledgeBase
from service_helpers import BIN, GLOBEX, KEYS, Server, auth, sha


def test_admin_sync_and_drift_run_only_their_tenants_sources(tmp_path: Path) -> None:
    help_dir = tmp_path / "help"
    help_dir.mkdir()
    (help_dir / "shipping.md").write_text("# Shipping\n\nParcels to Iceland take nine days.\n",
                                          encoding="utf-8")
    db = tmp_path / "kb.db"
    kb = KnowledgeBase.open(db, embedder="hash-test")
    kb.ingest(GLOBEX, split="paragraph")  # globex has documents but no configured source
    kb.close()
    keys = [{"key_sha256": sha(k), "name": k.removesuffix("-key"), **v} for k, v in KEYS.items()]
    config = tmp_path / "knowledge.config.yaml"
    config.write_text(yaml.safe_dump({
        "sources": [{"id": "help", "type": "files", "path": str(help_dir), "include": ["**/*.md"],
                     "split": "heading", "tenant": "acme", "groups": ["customers"],
                     "visibility": "public", "language": "en", "owner": "web@example.com"}],
        "retrieval": {"embedder": "hash-test"},
        "server": {"api_keys": keys},
    }), encoding="utf-8")
    server = Server([str(BIN / "evidex"), "--db", str(db), "--config", str(config), "serve"],
                    {"EVIDEX_CACHE_DIR": str(tmp_path / "cache")}, tmp_path / "server.log")
    try:
        url = server.url
        drift = httpx.get(f"{url}/v1/drift", headers=auth("acme-admin-key"), timeout=60)
        assert drift.status_code == 200, drift.text
        # The page is new: drift reports it and writes nothing.
        assert drift.json()["new"] == 1 and drift.json()["drifted"] is True
        synced = httpx.post(f"{url}/v1/sync", json={}, headers=auth("acme-admin-key"), timeout=60)
        assert synced.status_code == 200, synced.text
        assert synced.json()["added"] == 1
        hits = httpx.post(f"{url}/v1/search", json={"query": "Iceland parcels", "mode": "keyword"},
                          headers=auth("acme-customer-key"), timeout=30).json()["hits"]
        assert [h["document_id"] for h in hits] == ["help/shipping.md"]
        again = httpx.get(f"{url}/v1/drift", headers=auth("acme-admin-key"), timeout=60).json()
        assert again["unchanged"] == 1 and again["new"] == 0 and again["drifted"] is False
        # Another tenant's admin can neither run nor name acme's source.
        for body in ({}, {"source": "help"}):
            other = httpx.post(f"{url}/v1/sync", json=body, headers=auth("globex-admin-key"), timeout=30)
            assert other.status_code == 422, other.text
        assert httpx.get(f"{url}/v1/drift", headers=auth("globex-admin-key"), timeout=30).status_code == 422
        # A non-admin key of the right tenant may not sync.
        assert httpx.post(f"{url}/v1/sync", json={}, headers=auth("acme-staff-key"),
                          timeout=30).status_code == 403
    finally:
        server.stop()
    with KnowledgeBase.open(db) as kb:
        found = kb.search(Actor("globex", {"staff"}, visibilities=PUBLIC_INTERNAL), "Iceland", mode="keyword")
        assert list(found) == []
