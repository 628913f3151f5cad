"""``GET /metrics`` scraped from a real ``evidex serve`` process and read with prometheus_client's
own parser: admin keys only, each its own tenant's series, bounded labels, no question text."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from evidex import Document, KnowledgeBase
from evidex.store import RunRecord
from service_helpers import BIN, Server, auth, build_store, write_config

QUESTION = "Can I return a worn jacket?"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("metrics")
    db = tmp / "kb.db"
    build_store(db, tmp / "cache")
    kb = KnowledgeBase.open(db)
    kb.record_run(RunRecord("sync", "help-centre", "acme", "2026-12-07T10:00:00+00:00",
                            "2026-12-07T10:00:04+00:00", True, {"added": 3}))
    kb.record_run(RunRecord("sync", "globex-wiki", "globex", "2026-12-07T10:00:00+00:00",
                            "2026-12-07T10:00:01+00:00", False, {}, ("wiki: HTTP 500",)))
    kb.close()
    config = write_config(tmp / "config.yaml", rate_limit_per_minute=100_000)
    server = Server([str(BIN / "evidex"), "--db", str(db), "serve", "--config", str(config)],
                    {"EVIDEX_CACHE_DIR": str(tmp / "cache")}, tmp / "serve.log")
    try:
        with httpx.Client(base_url=server.url, timeout=60) as c:
            for key in ("acme-customer-key", "acme-staff-key"):
                assert c.post("/v1/search", json={"query": "return jacket", "mode": "keyword"},
                              headers=auth(key)).status_code == 200
            assert c.post("/v1/search", json={"query": "return jacket"},
                          headers=auth("acme-customer-key")).status_code == 200
            assert c.post("/v1/answer", json={"question": QUESTION},
                          headers=auth("acme-customer-key")).status_code == 200
            assert c.post("/v1/search", json={"query": "zebra"},
                          headers=auth("globex-user-key")).status_code == 200
            assert c.get("/v1/documents/no-such", headers=auth("globex-user-key")).status_code == 404
        yield {"url": server.url, "db": db, "cache": tmp / "cache"}
    finally:
        server.stop()


def _scrape(url: str, key: str) -> dict[str, Any]:
    r = httpx.get(url + "/metrics", headers=auth(key), timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(r.text)}
    return {"text": r.text, "families": families}


def _samples(scrape: dict[str, Any], name: str) -> list[Any]:
    return list(scrape["families"][name].samples) if name in scrape["families"] else []


def test_metrics_need_an_admin_key(service: dict[str, Any]) -> None:
    r = httpx.get(service["url"] + "/metrics", timeout=30)
    assert r.status_code == 401 and r.json() == {"detail": "missing or invalid credentials"}
    assert httpx.get(service["url"] + "/metrics", headers=auth("not-a-key"), timeout=30).status_code == 401
    r = httpx.get(service["url"] + "/metrics", headers=auth("acme-customer-key"), timeout=30)
    assert r.status_code == 403 and "admin" in r.json()["detail"]


def test_acme_admin_sees_its_requests_answers_searches_runs_and_store(service: dict[str, Any]) -> None:
    scrape = _scrape(service["url"], "acme-admin-key")
    requests = {(s.labels["route"], s.labels["method"], s.labels["status"]): s.value
                for s in _samples(scrape, "evidex_http_requests") if s.name.endswith("_total")}
    assert requests[("/v1/search", "POST", "200")] == 3
    assert requests[("/v1/answer", "POST", "200")] == 1
    buckets = [s for s in _samples(scrape, "evidex_http_request_duration_seconds")
               if s.name.endswith("_count") and s.labels["route"] == "/v1/search"]
    assert buckets and buckets[0].value == 3
    answers = [s for s in _samples(scrape, "evidex_answers") if s.name.endswith("_total")]
    assert sum(s.value for s in answers) == 1
    assert all(s.labels["status"] in ("answered", "declined") for s in answers)
    modes = {s.labels["mode"]: s.value for s in _samples(scrape, "evidex_searches")
             if s.name.endswith("_total")}
    assert modes == {"keyword": 2, "hybrid": 1}
    runs = {(s.labels["kind"], s.labels["outcome"]): s.value for s in _samples(scrape, "evidex_source_runs")
            if s.name.endswith("_total")}
    assert runs == {("sync", "ok"): 1}
    took = {s.labels["source"]: s.value for s in _samples(scrape, "evidex_source_last_run_duration_seconds")}
    assert took == {"help-centre": 4.0}
    [gen] = _samples(scrape, "evidex_store_generation")
    assert gen.value >= 1


def test_no_series_of_another_tenant_and_no_question_text(service: dict[str, Any]) -> None:
    for key, tenant, other in (("acme-admin-key", "acme", "globex"), ("globex-admin-key", "globex", "acme")):
        scrape = _scrape(service["url"], key)
        labels = [s.labels for f in scrape["families"].values() for s in f.samples]
        assert labels and all(lab.get("tenant") == tenant for lab in labels), key
        assert other not in scrape["text"]
        assert QUESTION not in scrape["text"] and "jacket" not in scrape["text"]
        assert "no-such" not in scrape["text"]  # a document id from a path is never a label
    globex = _scrape(service["url"], "globex-admin-key")
    routes = {s.labels["route"] for s in _samples(globex, "evidex_http_requests")}
    assert "/v1/documents/{document_id}" in routes or "/v1/documents/{document_id:path}" in routes
    runs = {(s.labels["kind"], s.labels["outcome"]) for s in _samples(globex, "evidex_source_runs")
            if s.name.endswith("_total")}
    assert runs == {("sync", "problems")}


def test_labels_stay_bounded_for_made_up_paths(service: dict[str, Any]) -> None:
    for i in range(5):
        httpx.get(service["url"] + f"/v1/made-up-{i}", headers=auth("acme-staff-key"), timeout=30)
    scrape = _scrape(service["url"], "acme-admin-key")
    routes = {s.labels["route"] for s in _samples(scrape, "evidex_http_requests")}
    assert not any("made-up" in r for r in routes)
    assert "other" in routes


def _generation(url: str, key: str) -> float:
    [gen] = _samples(_scrape(url, key), "evidex_store_generation")
    return float(gen.value)


def test_a_tenants_store_generation_never_moves_with_another_tenants_writes(
        service: dict[str, Any]) -> None:
    """Issue 45: the store's generation counts every tenant's writes, so a scrape shows the
    tenant's own (its newest write): acme's writes, to the store and through the service, move
    acme's and leave globex's where it was."""
    url = service["url"]
    acme, globex = _generation(url, "acme-admin-key"), _generation(url, "globex-admin-key")
    with KnowledgeBase.open(service["db"], embed_cache=service["cache"] / "embeddings.sqlite") as kb:
        kb.ingest([Document(f"scratch-{i}", "acme", frozenset({"staff"}), "1", f"Scratch page {i}.",
                            visibility="public", language="en") for i in range(2)])
    assert _generation(url, "acme-admin-key") > acme
    assert _generation(url, "globex-admin-key") == globex
    deleted = httpx.delete(url + "/v1/documents/scratch-0", headers=auth("acme-admin-key"), timeout=60)
    assert deleted.status_code == 200, deleted.text
    written = int(deleted.headers["x-evidex-written-generation"])
    assert _generation(url, "acme-admin-key") == written
    assert _generation(url, "globex-admin-key") == globex < written
