"""The HTTP API against a real uvicorn process on 127.0.0.1: identity, tenants, limits, errors.

Every /v1 endpoint is checked for: no credentials, a wrong key and a wrong scheme (401); a body
that tries to name an identity (422); and that a key of one tenant can never see, resolve or
administer the other tenant's data.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
import yaml

from cli_runner import run_cli
from evidex import Document, KnowledgeBase
from service_helpers import (
    BIN,
    JWT_ISSUER,
    JWT_SECRET,
    Server,
    auth,
    build_store,
    start_launcher,
    write_config,
)

ENDPOINTS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("POST", "/v1/search", {"query": "return jacket"}),
    ("POST", "/v1/answer", {"question": "Can I return a worn jacket?"}),
    ("POST", "/v1/resolve", {"document_id": "returns-faq", "version": "3", "content_sha256": "0" * 64,
                             "passage": 1, "quote": "x"}),
    ("GET", "/v1/documents/returns-faq", None),
    ("DELETE", "/v1/documents/no-such-doc", None),
    ("POST", "/v1/sync", {}),
    ("GET", "/v1/drift", None),
    ("GET", "/v1/session", None),
]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("service")
    db = tmp / "kb.db"
    build_store(db, tmp / "cache")
    config = write_config(tmp / "config.yaml", max_body_bytes=4096, rate_limit_per_minute=100_000,
                          failed_auth_per_minute=100_000)  # the tests below fail credentials on purpose
    server, calls = start_launcher(tmp, db, config)
    try:
        yield {"url": server.url, "server": server, "calls": calls, "db": db, "tmp": tmp}
    finally:
        server.stop()


@pytest.fixture
def client(service: dict[str, Any]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=service["url"], timeout=300) as c:
        yield c


def _call(c: httpx.Client, method: str, path: str, body: Any, headers: dict[str, str]) -> httpx.Response:
    return c.request(method, path, json=body, headers=headers) if body is not None else \
        c.request(method, path, headers=headers)


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS, ids=[f"{m} {p}" for m, p, _ in ENDPOINTS])
@pytest.mark.parametrize("headers", [
    {}, auth("not-a-key"), {"Authorization": "Basic YWNtZTpzdGFmZg=="}, {"Authorization": "Bearer"},
    {"Authorization": "acme-staff-key"},
], ids=["none", "unknown-key", "basic", "empty-bearer", "no-scheme"])
def test_every_endpoint_refuses_missing_or_bad_credentials(client: httpx.Client, method: str, path: str,
                                                            body: Any, headers: dict[str, str]) -> None:
    r = _call(client, method, path, body, headers)
    assert r.status_code == 401, r.text
    assert r.json() == {"detail": "missing or invalid credentials"}
    assert r.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize(("method", "path", "body"), [e for e in ENDPOINTS if e[2] is not None],
                         ids=[p for m, p, b in ENDPOINTS if b is not None])
@pytest.mark.parametrize("smuggled", [{"tenant": "globex"}, {"groups": ["hr"]}, {"actor": {"tenant": "x"}},
                                      {"visibilities": ["confidential"]}])
def test_bodies_cannot_carry_an_identity(client: httpx.Client, method: str, path: str, body: dict[str, Any],
                                         smuggled: dict[str, Any]) -> None:
    r = _call(client, method, path, {**body, **smuggled}, auth("acme-admin-key"))
    assert r.status_code == 422, r.text
    assert any(e["type"] == "extra_forbidden" for e in r.json()["detail"])


def test_query_string_cannot_carry_an_identity(client: httpx.Client) -> None:
    # Unknown query parameters are ignored by the API; the identity stays the key's.
    r = client.post("/v1/search?tenant=globex&groups=staff", json={"query": "zebra", "mode": "keyword"},
                    headers=auth("acme-staff-key"))
    assert r.status_code == 200
    assert r.json()["hits"] == []
    r = client.post("/v1/search", json={"query": "zebra", "mode": "keyword"}, headers=auth("globex-user-key"))
    assert {h["document_id"] for h in r.json()["hits"]} == {"returns-faq", "globex-secret"}


def _search(c: httpx.Client, key: str, query: str, **extra: Any) -> dict[str, Any]:
    r = c.post("/v1/search", json={"query": query, **extra}, headers=auth(key))
    assert r.status_code == 200, r.text
    return r.json()


def test_search_shape_and_access(client: httpx.Client) -> None:
    res = _search(client, "acme-customer-key", "return worn clothing", top_k=3, mode="keyword",
                  filters={"language": "en", "tags": ["faq"]}, explain=True)
    assert res["evidence"] in ("weak", "strong")
    assert 1 <= len(res["hits"]) <= 3
    for i, h in enumerate(res["hits"], start=1):
        assert h["rank"] == i
        assert h["document_id"] == "returns-faq"
        assert {"document_id", "version", "content_sha256", "passage", "quote", "start", "end",
                "heading_path", "anchor", "title", "source_url", "score", "flags", "explain"} <= set(h)
    # Customers never see internal or confidential documents, staff see internal but not hr's.
    customer = _search(client, "acme-customer-key", "Gehaltsbänder Reisekosten Einzelzimmer onboarding")
    assert {h["document_id"] for h in customer["hits"]}.isdisjoint(
        {"salary-bands", "reisekosten-richtlinie", "onboarding", "team-note-weekly"})
    staff = _search(client, "acme-staff-key", "Einzelzimmer", mode="keyword")
    assert staff["hits"] and staff["hits"][0]["document_id"] == "reisekosten-richtlinie"
    assert all(h["document_id"] != "salary-bands" for h in
               _search(client, "acme-staff-key", "salary bands", mode="keyword")["hits"])


def test_search_never_crosses_tenants(client: httpx.Client) -> None:
    acme = _search(client, "acme-staff-key", "zebra widgets budget", mode="keyword", evidence=True)
    assert acme["hits"] == [] and acme["evidence"] == "none"
    globex = _search(client, "globex-user-key", "return worn jacket Nordkap ERR-401", mode="keyword")
    assert {h["document_id"] for h in globex["hits"]} <= {"returns-faq", "globex-secret"}
    assert all(h["version"] == "g1" for h in globex["hits"])


def test_resolve_follows_the_callers_tenant_and_access(client: httpx.Client) -> None:
    hit = _search(client, "acme-customer-key", "worn clothing", mode="keyword")["hits"][0]
    citation = {k: hit[k] for k in ("document_id", "version", "content_sha256", "passage", "quote",
                                    "start", "end", "heading_path", "anchor", "title", "source_url")}
    ok = client.post("/v1/resolve", json=citation, headers=auth("acme-customer-key")).json()
    assert ok == {"ok": True, "reason": None, "detail": "", "current_version": "3", "matched_version": None}
    # The other tenant holds a document with the same id: the citation must not resolve there.
    # The other tenant has its own document with this id: checked against that one, never acme's.
    other = client.post("/v1/resolve", json=citation, headers=auth("globex-user-key")).json()
    assert other["ok"] is False and other["reason"] == "source_changed"
    assert other["current_version"] == "g1" and other["matched_version"] is None
    err = _search(client, "acme-customer-key", "ERR-401", mode="keyword")["hits"][0]
    err_citation = {k: err[k] for k in citation}
    assert client.post("/v1/resolve", json=err_citation, headers=auth("acme-customer-key")).json()["ok"]
    only_acme = client.post("/v1/resolve", json=err_citation, headers=auth("globex-user-key")).json()
    assert only_acme == {"ok": False, "reason": "unavailable",
                         "detail": "the document is not available to you",
                         "current_version": None, "matched_version": None}
    changed = client.post("/v1/resolve", json={**citation, "quote": citation["quote"] + " extra"},
                          headers=auth("acme-customer-key")).json()
    assert changed["reason"] == "quote_mismatch"
    # A hit object with score and rank is not a citation: refused rather than half-checked.
    r = client.post("/v1/resolve", json=hit, headers=auth("acme-customer-key"))
    assert r.status_code == 422


def test_session_names_the_configured_caller(client: httpx.Client) -> None:
    """What the page checks a typed key against: the identity the configuration gives it."""
    assert client.get("/v1/session", headers=auth("acme-customer-key")).json() == {
        "name": "key:acme-customer", "tenant": "acme", "admin": False}
    assert client.get("/v1/session", headers=auth("globex-admin-key")).json() == {
        "name": "key:globex-admin", "tenant": "globex", "admin": True}


def test_documents_endpoint(client: httpx.Client) -> None:
    r = client.get("/v1/documents/returns-faq", headers=auth("acme-customer-key"))
    assert r.status_code == 200
    doc = r.json()
    assert doc["version"] == "3" and doc["title"] == "Returns and refunds FAQ"
    assert [p["passage"] for p in doc["passages"]] == sorted(p["passage"] for p in doc["passages"])
    assert len(doc["passages"]) >= 5 and all(p["quote"] for p in doc["passages"])
    assert "groups" not in doc
    g = client.get("/v1/documents/returns-faq", headers=auth("globex-user-key")).json()
    assert g["version"] == "g1" and len(g["passages"]) == 1 and "zebra" in g["passages"][0]["quote"]
    for key, doc_id in [("acme-customer-key", "salary-bands"), ("acme-staff-key", "salary-bands"),
                        ("acme-staff-key", "globex-secret"), ("globex-user-key", "salary-bands"),
                        ("acme-customer-key", "no-such-document")]:
        r = client.get(f"/v1/documents/{doc_id}", headers=auth(key))
        assert r.status_code == 404, (key, doc_id)
        assert r.json() == {"detail": "no such document is available to you"}


def test_flagged_passages_are_marked(client: httpx.Client) -> None:
    doc = client.get("/v1/documents/team-note-weekly", headers=auth("acme-staff-key")).json()
    assert any(p["flags"] for p in doc["passages"])


def test_answer_and_decline(client: httpx.Client) -> None:
    ans = client.post("/v1/answer", json={"question": "Can I return a worn jacket?"},
                      headers=auth("acme-customer-key")).json()
    assert ans["status"] == "answered" and ans["citations"]
    assert {c["document_id"] for c in ans["citations"]} <= {"returns-faq", "sku-1001", "sku-1002"}
    other = client.post("/v1/answer", json={"question": "Can I return a worn jacket?"},
                        headers=auth("globex-user-key")).json()
    assert all(c["document_id"] == "returns-faq" and c["version"] == "g1" for c in other["citations"])
    none = client.post("/v1/answer", json={"question": "zebra widgets quarterly budget"},
                       headers=auth("acme-staff-key")).json()
    # The test embedder always finds some vector neighbour, so the decline is for weak evidence.
    assert none["status"] == "declined" and none["reason"] in ("no_evidence", "weak_evidence")
    assert none["citations"] == [] and none["handoff"]
    assert none["trace"]["available"]
    assert all(a["document_id"] not in ("globex-secret",) and a["version"] != "g1"
               for a in none["trace"]["available"])
    # A decline offers related reading apart from its citations: passages the caller may read,
    # never flagged ones, each resolving now; an answer offers none.
    # Related only when something found is on the question's topic (the first decision).
    on_topic = (none["trace"]["decision"].get("on_topic") or {}).get("verdict")
    if none["reason"] in ("weak_evidence", "not_stated") and on_topic:
        assert 1 <= len(none["related"]) <= 3
    if not on_topic:
        assert none["related"] == []
    for c in none["related"]:
        assert c["kind"] == "passage" and c["document_id"] != "globex-secret"
        resolved = client.post("/v1/resolve", json=c, headers=auth("acme-staff-key")).json()
        assert resolved["ok"], c
    flagged = {p["passage"] for p in client.get("/v1/documents/team-note-weekly",
                                                 headers=auth("acme-staff-key")).json()["passages"]
               if p["flags"]}
    assert not any(c["document_id"] == "team-note-weekly" and c["passage"] in flagged
                   for c in none["related"])
    assert ans["related"] == []


def test_search_decides_only_when_asked(client: httpx.Client) -> None:
    """A plain search ranks only (evidence null); evidence: true (or explain) adds the level,
    with the same hits."""
    plain = _search(client, "acme-customer-key", "return worn clothing", mode="keyword")
    asked = _search(client, "acme-customer-key", "return worn clothing", mode="keyword", evidence=True)
    assert plain["evidence"] is None and asked["evidence"] in ("weak", "strong")
    assert plain["hits"] == asked["hits"]
    r = client.post("/v1/search", json={"query": "x", "evidence": "yes"}, headers=auth("acme-customer-key"))
    assert r.status_code == 422


def test_admin_operations_need_admin_and_stay_in_tenant(service: dict[str, Any],
                                                        client: httpx.Client) -> None:
    calls: Path = service["calls"]
    for key in ("acme-customer-key", "acme-staff-key", "globex-user-key"):
        assert client.post("/v1/sync", json={}, headers=auth(key)).status_code == 403
        assert client.get("/v1/drift", headers=auth(key)).status_code == 403
        assert client.delete("/v1/documents/returns-faq", headers=auth(key)).status_code == 403
    assert not calls.exists()
    r = client.post("/v1/sync", json={"source": "wiki"}, headers=auth("globex-admin-key"))
    assert r.status_code == 200 and r.json() == {"tenant": "globex", "added": 0}
    assert client.get("/v1/drift", headers=auth("acme-admin-key")).json()["tenant"] == "acme"
    logged = [json.loads(line) for line in calls.read_text().splitlines()]
    assert logged == [{"op": "sync", "tenant": "globex", "source": "wiki"}, {"op": "drift", "tenant": "acme"}]


def test_remove_is_admin_and_tenant_scoped(service: dict[str, Any], client: httpx.Client) -> None:
    kb = KnowledgeBase.open(service["db"], embed_cache=service["tmp"] / "cache" / "embeddings.sqlite")
    kb.ingest([Document("shared-id", t, frozenset({"staff"}), "1", f"removable {t} text", visibility="public")
               for t in ("acme", "globex")])
    kb.close()
    r = client.delete("/v1/documents/shared-id", headers=auth("globex-admin-key"))
    assert r.status_code == 200 and r.json() == {"removed": True, "document_id": "shared-id"}
    assert client.get("/v1/documents/shared-id", headers=auth("globex-user-key")).status_code == 404
    assert client.get("/v1/documents/shared-id", headers=auth("acme-staff-key")).status_code == 200
    assert client.delete("/v1/documents/shared-id", headers=auth("globex-admin-key")).status_code == 404
    assert client.delete("/v1/documents/shared-id", headers=auth("acme-admin-key")).status_code == 200


def test_validation_errors_are_422_with_messages(client: httpx.Client) -> None:
    h = auth("acme-staff-key")
    for body in ({"query": "x", "top_k": 0}, {"query": "x", "top_k": "6"}, {"query": "x", "mode": "sql"},
                 {"query": 5}, {}, {"query": "x", "filters": {"language": "de", "owner": "x"}}):
        r = client.post("/v1/search", json=body, headers=h)
        assert r.status_code == 422, body
        assert r.json()["detail"][0]["msg"]
    many = " ".join(f"word{i}" for i in range(30))
    r = client.post("/v1/search", json={"query": many}, headers=h)  # the library's query contract
    assert r.status_code == 422 and "words" in r.json()["detail"]
    r = client.post("/v1/search", content=b"{not json", headers={**h, "Content-Type": "application/json"})
    assert r.status_code == 422
    r = client.post("/v1/answer", json={"question": "\x00\x01"}, headers=h)
    assert r.status_code == 422
    for blank in ("", "   ", " ?! "):  # a mistake, never a decline offering a person
        r = client.post("/v1/answer", json={"question": blank}, headers=h)
        assert r.status_code == 422 and "no words" in r.json()["detail"], (blank, r.text)


def test_openapi_bounds_are_the_ones_the_service_applies(client: httpx.Client) -> None:
    """Each case was valid by the OpenAPI document and refused anyway (or the other way round)."""
    h = auth("acme-staff-key")
    spec = client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    # filters: the library's rules for tags and languages are in the schema.
    tag_rule = re.compile(schemas["Filters"]["properties"]["tags"]["items"]["pattern"])
    assert not tag_rule.match("") and not tag_rule.match(" faq") and tag_rule.match("faq")
    for filters in ({"tags": [""]}, {"tags": ["faq "]}, {"language": "English"}):
        r = client.post("/v1/search", json={"query": "jacket", "filters": filters}, headers=h)
        assert r.status_code == 422 and r.json()["detail"][0]["type"] == "string_pattern_mismatch", r.text
    # query: the schema's length is the library's.
    assert schemas["SearchRequest"]["properties"]["query"]["maxLength"] == 200
    assert client.post("/v1/search", json={"query": "x" * 201}, headers=h).json()["detail"][0]["type"] == \
        "string_too_long"
    # quote: at most what fits the body limit (4096 bytes here), stated and applied.
    quote = schemas["Citation"]["properties"]["quote"]
    assert quote["maxLength"] == 256 and "4096 bytes" in spec["info"]["description"]
    citation = {"document_id": "returns-faq", "version": "3", "content_sha256": "0" * 64, "passage": 1}
    r = client.post("/v1/resolve", json={**citation, "quote": "q" * 256}, headers=h)
    assert r.status_code == 200 and r.json()["reason"] == "source_changed"
    r = client.post("/v1/resolve", json={**citation, "quote": "q" * 257}, headers=h)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "quote"]
    # integers: 601.0 is the integer 601 in JSON; 601.5 is not an integer.
    r = client.post("/v1/resolve", json={**citation, "passage": 601.0, "quote": "q"}, headers=h)
    assert r.status_code == 200, r.text
    r = client.post("/v1/search", json={"query": "jacket", "top_k": 3.0, "mode": "keyword"}, headers=h)
    assert r.status_code == 200 and len(r.json()["hits"]) <= 3
    for bad in (601.5, "601", True):
        assert client.post("/v1/resolve", json={**citation, "passage": bad, "quote": "q"},
                           headers=h).status_code == 422
    # a body that is not JSON text at all is the documented 422, like malformed JSON (was 400).
    for body in (b'{"query": "\xff"}', b"[" * 2000 + b"]" * 2000, b"{not json"):
        r = client.post("/v1/search", content=body, headers={**h, "Content-Type": "application/json"})
        assert r.status_code == 422 and r.json()["detail"][0]["type"] == "json_invalid", (body[:20], r.text)
    # 405 names every method of the path: a document is GET and DELETE.
    for method in ("OPTIONS", "PATCH", "PUT"):
        r = client.request(method, "/v1/documents/returns-faq", headers=h)
        assert r.status_code == 405 and r.headers["allow"] == "DELETE, GET", (method, r.headers)
    documented = {m.upper() for m in spec["paths"]["/v1/documents/{document_id}"]}
    assert documented == {"GET", "DELETE"}
    assert client.request("OPTIONS", "/v1/search", headers=h).headers["allow"] == "POST"


def test_body_size_limit(client: httpx.Client) -> None:
    h = auth("acme-staff-key")
    r = client.post("/v1/search", json={"query": "x" * 5000}, headers=h)
    assert r.status_code == 413
    assert r.json()["detail"] == "the request body is larger than 4096 bytes"

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while it streams
        yield b'{"query": "'
        for _ in range(10):
            yield b"y" * 1000
        yield b'"}'

    r = client.post("/v1/search", content=chunks(), headers={**h, "Content-Type": "application/json"})
    assert r.status_code == 413


def test_jwt_bearer_tokens(client: httpx.Client) -> None:
    now = int(time.time())
    good = {"iss": JWT_ISSUER, "exp": now + 300, "sub": "u1", "tenant": "globex", "groups": ["staff"]}
    token = jwt.encode(good, JWT_SECRET, algorithm="HS256")
    res = _search(client, token, "zebra", mode="keyword")
    # The JWT visibilities are configured (public only): the internal budget stays hidden.
    assert {h["document_id"] for h in res["hits"]} == {"returns-faq"}
    bad = [
        jwt.encode({**good, "exp": now - 3600}, JWT_SECRET, algorithm="HS256"),
        jwt.encode({**good, "iss": "https://other.test"}, JWT_SECRET, algorithm="HS256"),
        jwt.encode(good, "another-secret-of-at-least-32-bytes!!", algorithm="HS256"),
        jwt.encode({k: v for k, v in good.items() if k != "exp"}, JWT_SECRET, algorithm="HS256"),
        jwt.encode({**good, "tenant": 7}, JWT_SECRET, algorithm="HS256"),
        jwt.encode(good, None, algorithm="none"),
    ]
    for t in bad:
        r = client.post("/v1/search", json={"query": "zebra"}, headers=auth(t))
        assert r.status_code == 401, t
    admin_claim = jwt.encode({**good, "groups": ["staff", "admins"]}, JWT_SECRET, algorithm="HS256")
    assert client.get("/v1/drift", headers=auth(admin_claim)).status_code == 403


def test_no_stack_traces_and_no_text_in_logs(service: dict[str, Any], client: httpx.Client) -> None:
    r = client.post("/v1/sync", json={"source": "boom"}, headers=auth("acme-admin-key"))
    assert r.status_code == 500
    assert r.json() == {"detail": "internal error"}
    _search(client, "acme-staff-key", "Nordkap unusualword")
    client.post("/v1/answer", json={"question": "Secretquestionword about returns?"},
                headers=auth("acme-staff-key"))
    client.get("/v1/documents/confidential-doc-name", headers=auth("acme-staff-key"))
    time.sleep(0.3)
    logs = service["server"].logs()
    for secret in ("confidential failure text", "unusualword", "Secretquestionword", "confidential-doc-name",
                   "acme-staff-key", "Traceback", "Clothing can be returned"):
        assert secret not in logs, secret
    records = [json.loads(line) for line in logs.splitlines() if line.startswith("{")]
    failure = [x for x in records if x["event"] == "unhandled_error"]
    assert failure and failure[-1]["error"] == "RuntimeError"
    requests = [x for x in records if x["event"] == "request"]
    assert {"method", "route", "status", "ms"} <= set(requests[-1])
    assert any(x.get("key") == "key:acme-staff" and x.get("tenant") == "acme" for x in requests)


def test_healthz_openapi_and_page(client: httpx.Client) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    spec = client.get("/openapi.json").json()
    paths = set(spec["paths"])
    assert {"/v1/search", "/v1/answer", "/v1/resolve", "/v1/documents/{document_id}", "/v1/sync", "/v1/drift",
            "/healthz"} <= paths
    assert spec["components"]["schemas"]["SearchRequest"]["additionalProperties"] is False
    assert spec["components"]["schemas"]["SearchRequest"]["examples"]
    page = client.get("/")
    assert page.status_code == 200 and "script-src 'self'" in page.headers["content-security-policy"]
    assert '"allowedLinkHosts": ["help.example.com"]' in page.text
    assert client.get("/static/app.js").status_code == 200


def serve_example(tmp_path: Path, retrieval: dict[str, Any] | None = None, **server_settings: Any) -> Server:
    """`evidex serve` (one worker) over the example store, with these server settings (and
    this ``retrieval:`` section)."""
    db = tmp_path / "kb.db"
    build_store(db, tmp_path / "cache")
    config = write_config(tmp_path / "config.yaml", **server_settings)
    if retrieval is not None:
        data = yaml.safe_load(config.read_text(encoding="utf-8"))
        config.write_text(yaml.safe_dump({**data, "retrieval": retrieval}), encoding="utf-8")
    return Server([str(BIN / "evidex"), "--db", str(db), "serve", "--config", str(config)],
                  {"EVIDEX_CACHE_DIR": str(tmp_path / "cache")}, tmp_path / "serve.log")


def test_search_fusion_defaults_to_the_configured_one(tmp_path: Path) -> None:
    """A deployment that configures RRF gets RRF from a plain /v1/search body (its default was
    the library's convex fusion whatever the configuration said); a body may still choose."""
    # The vector leg's deadline out of reach: a miss on a busy machine returns the keyword
    # ranking (the busy-suite run saw it), and this test is about fusion, not the deadline.
    server = serve_example(tmp_path, retrieval={"fuse": "rrf", "rrf_k": 10,
                                                "vector": {"timeout_ms": 600_000}})
    try:
        with httpx.Client(base_url=server.url, timeout=300) as c:
            def ranked(**extra: Any) -> list[tuple[str, int, float]]:
                r = c.post("/v1/search", json={"query": "return a worn jacket", "mode": "hybrid", **extra},
                           headers=auth("acme-staff-key"))
                assert r.status_code == 200, r.text
                return [(h["document_id"], h["passage"], h["score"]) for h in r.json()["hits"]]

            plain = ranked()
            assert plain and plain == ranked(fusion="rrf", rrf_k=10)
            assert all(score <= 2 / 11 for _, _, score in plain)  # two legs, 1 / (10 + rank) each
            assert plain == ranked(fusion="rrf")  # each field left out is the configured one
            assert plain != ranked(rrf_k=60)
            assert plain != ranked(fusion="convex")
    finally:
        server.stop()


def test_cli_serve_rate_limit_and_unwired_admin(tmp_path: Path) -> None:
    server = serve_example(tmp_path, rate_limit_per_minute=5)
    try:
        with httpx.Client(base_url=server.url, timeout=300) as c:
            r = c.post("/v1/sync", json={}, headers=auth("acme-admin-key"))
            assert r.status_code == 501 and "without sources" in r.json()["detail"]
            h = auth("acme-staff-key")
            statuses = [c.post("/v1/search", json={"query": "jacket"}, headers=h).status_code
                        for _ in range(6)]
            assert statuses == [200] * 5 + [429]
            limited = c.post("/v1/search", json={"query": "jacket"}, headers=auth("acme-staff-key"))
            assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
            # Buckets are per key: another key is not affected.
            assert c.post("/v1/search", json={"query": "jacket"},
                          headers=auth("acme-customer-key")).status_code == 200
        assert "evidex serving" in server.logs()
    finally:
        server.stop()


def test_serve_on_a_port_in_use_is_one_error_line(tmp_path: Path) -> None:
    """Another service on the port: one `error:` line before anything claims to serve (uvicorn
    alone printed "evidex serving ..." and then its own bind error), exit status 1."""
    db = tmp_path / "kb.db"
    build_store(db, tmp_path / "cache")
    config = write_config(tmp_path / "config.yaml")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run_cli("serve", "--config", config, "--port", port, "--no-schedule", db=db,
                       env={**os.environ, "EVIDEX_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 1 and proc.stdout == "", (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr.splitlines() == [f"error: cannot listen on 127.0.0.1:{port}: address already in use"]


def test_serve_refuses_a_bad_thread_count_at_start(tmp_path: Path) -> None:
    """EVIDEX_EMBED_THREADS=abc is the deployment's mistake: one line at start, not an error shown
    to the first client who asks."""
    db = tmp_path / "kb.db"
    build_store(db, tmp_path / "cache")
    config = write_config(tmp_path / "config.yaml")
    proc = run_cli("serve", "--config", config, "--port", "0", "--no-schedule", db=db,
                   env={**os.environ, "EVIDEX_CACHE_DIR": str(tmp_path / "cache"),
                        "EVIDEX_EMBED_THREADS": "abc"})
    assert proc.returncode == 1 and proc.stdout == "", (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr.splitlines() == ["error: EVIDEX_EMBED_THREADS must be a positive integer, got 'abc'"]


def test_failed_credentials_are_limited_per_address_before_any_check(tmp_path: Path) -> None:
    """Past the budget of failed credential checks, an address gets 429 for every /v1 request,
    also with a valid key: answering a guess with 200 or 401 would let guessing go on."""
    server = serve_example(tmp_path, failed_auth_per_minute=3)
    try:
        with httpx.Client(base_url=server.url, timeout=300) as c:
            good = auth("acme-staff-key")
            assert c.post("/v1/search", json={"query": "jacket"}, headers=good).status_code == 200
            bad = [c.post("/v1/search", json={"query": "jacket"}, headers=auth(f"guess-{i}")).status_code
                   for i in range(4)]
            assert bad == [401, 401, 401, 429]
            refused = c.post("/v1/search", json={"query": "jacket"}, headers=good)
            assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
            assert "failed credential checks" in refused.json()["detail"]
            # Successful requests never used up the failure budget, and pages outside /v1 stay up.
            assert c.get("/healthz").status_code == 200
    finally:
        server.stop()


def _from(address: str, base_url: str) -> httpx.Client:
    """A client whose connections come from ``address`` (any of 127.0.0.0/8 on Linux loopback)."""
    return httpx.Client(base_url=base_url, timeout=300, transport=httpx.HTTPTransport(local_address=address))


def test_forwarded_for_is_ignored_unless_the_peer_is_a_trusted_proxy(tmp_path: Path) -> None:
    """The probe's finding: rotating X-Forwarded-For from 127.0.0.1 dodged the failed-credential
    limit (60 x 401, never 429), and naming another client's address got that client blocked.
    Without ``trusted_proxies`` the header is ignored and the limit keys on the real peer."""
    server = serve_example(tmp_path, failed_auth_per_minute=3)
    try:
        with _from("127.0.0.1", server.url) as attacker, _from("127.0.0.3", server.url) as victim:
            rotating = [attacker.post("/v1/search", json={"query": "jacket"},
                                      headers={**auth(f"guess-{i}"), "X-Forwarded-For": f"10.0.0.{i}"}
                                      ).status_code for i in range(6)]
            assert rotating == [401, 401, 401, 429, 429, 429]
            framed = attacker.post("/v1/search", json={"query": "jacket"},
                                   headers={**auth("guess"), "X-Forwarded-For": "127.0.0.3"})
            assert framed.status_code == 429
            assert victim.post("/v1/search", json={"query": "jacket"},
                               headers=auth("acme-staff-key")).status_code == 200
    finally:
        server.stop()


def test_a_trusted_proxy_names_the_client_and_nobody_else_can(tmp_path: Path) -> None:
    server = serve_example(tmp_path, failed_auth_per_minute=3, trusted_proxies=["127.0.0.1"])
    try:
        with _from("127.0.0.1", server.url) as proxy, _from("127.0.0.2", server.url) as direct:
            def via_proxy(client_ip: str, key: str) -> int:
                return proxy.post("/v1/search", json={"query": "jacket"},
                                  headers={**auth(key), "X-Forwarded-For": client_ip}).status_code

            assert [via_proxy("10.0.0.1", f"guess-{i}") for i in range(4)] == [401, 401, 401, 429]
            # Another client behind the same proxy is its own address, and so is the proxy.
            assert via_proxy("10.0.0.2", "acme-staff-key") == 200
            assert proxy.post("/v1/search", json={"query": "jacket"},
                              headers=auth("acme-staff-key")).status_code == 200
            # A client that is not a trusted proxy cannot name an address: its own is counted.
            spoofed = [direct.post("/v1/search", json={"query": "jacket"},
                                   headers={**auth(f"guess-{i}"), "X-Forwarded-For": "10.0.0.2"}
                                   ).status_code for i in range(4)]
            assert spoofed == [401, 401, 401, 429]
            assert via_proxy("10.0.0.2", "acme-staff-key") == 200
    finally:
        server.stop()


@pytest.mark.parametrize("bad", ["*", "proxy.example.com", "10.0.0.0/33"])
def test_trusted_proxies_are_addresses_or_networks(tmp_path: Path, bad: str) -> None:
    from evidex.config import load_config
    from evidex.model import ConfigError

    config = write_config(tmp_path / "config.yaml", trusted_proxies=["10.1.2.3", "fd00::/8", bad])
    with pytest.raises(ConfigError, match=r"server\.trusted_proxies.*never '\*'"):
        load_config(config)


