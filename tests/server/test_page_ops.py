"""The Operators tab and answer feedback on the page, in Debian's headless Chromium against a real
``evidex serve`` with sources configured: an admin key sees its own tenant's sources (last sync,
next check, drift), open conflicts with both quotes, the handoff queue, citations that stopped
resolving and feedback, and nothing of the other tenant's; a non-admin key sees no tab and gets
403 from the endpoints behind it. Hostile text (a question, a note, a conflict quote) stays text.
Screenshots go to test-artifacts/."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml
from playwright.sync_api import Page

from evidex import Document, KnowledgeBase
from evidex.model import Conflict, ConflictSide, sha256_text
from evidex.store import AnswerRecord, EvalRecord, HandoffRecord, NoticeRecord, RunRecord
from page_helpers import ask, sign_in, tab
from service_helpers import BIN, ROOT, Server, auth, build_store, write_config

ARTIFACTS = ROOT / "test-artifacts"
HOSTILE = '<img src=x onerror="window.pwned=1">'


def _conflict(kb: KnowledgeBase, tenant: str, a: tuple[str, str], b: tuple[str, str]) -> None:
    sides = []
    for doc_id, value in (a, b):
        [stored] = [d for d in kb.documents(tenant) if d.id == doc_id]
        view = kb.document(_any_actor(tenant), doc_id)
        assert view is not None
        p = view.passages[0]
        sides.append(ConflictSide(doc_id, stored.version, p.number, sha256_text(p.text), value, p.text))
    kb.store.record_conflicts([Conflict(0, tenant, "duration", ("returns",), sides[0], sides[1],
                                        "2026-12-07T09:00:00+00:00")])


def _summary(categories: dict[str, tuple[int, int]], passed: bool) -> dict[str, Any]:
    """An evaluation summary as ``record_summary`` writes it: per category (answerable cases,
    cited), the totals, and the gate's checks."""
    def figures(n: int, ok: int) -> dict[str, Any]:
        return {"cases": n, "passed": ok, "failed": n - ok, "skipped": 0, "pass_rate": ok / n,
                "answerable": n, "answerable_cited": ok, "answerable_rate": ok / n, "unanswerable": 0,
                "unanswerable_declined": 0, "unanswerable_declined_rate": None}
    n, ok = sum(c[0] for c in categories.values()), sum(c[1] for c in categories.values())
    gate = [{"name": "access_violations", "value": 0, "limit": 0, "kind": "max", "passed": True},
            {"name": "answerable_cited", "value": ok / n, "limit": 0.85, "kind": "min", "passed": passed}]
    return {"gate": gate, "totals": {**figures(n, ok), "access_violations": 0, "invalid_citations": 0,
                                     "injection_citations": 0},
            "categories": {name: figures(*c) for name, c in categories.items()}}


def _any_actor(tenant: str) -> Any:
    from evidex import Actor

    return Actor(tenant, frozenset({"staff"}), visibilities=frozenset({"public", "internal"}))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("ops-page")
    db = tmp / "kb.db"
    build_store(db, tmp / "cache")
    kb = KnowledgeBase.open(db, embed_cache=tmp / "cache" / "embeddings.sqlite")
    kb.ingest([Document("policy-a", "acme", frozenset({"staff"}), "1",
                        f"Unworn jackets can be returned within 30 days. {HOSTILE}", title="Policy A",
                        visibility="public", language="en"),
               Document("policy-b", "acme", frozenset({"staff"}), "1",
                        "Unworn jackets can be returned within 60 days.", title="Policy B",
                        visibility="public", language="en"),
               Document("gone-doc", "acme", frozenset({"staff"}), "1", "A page that will be removed.",
                        title="Gone", visibility="public", language="en")])
    _conflict(kb, "acme", ("policy-a", "30 days"), ("policy-b", "60 days"))
    _conflict(kb, "globex", ("returns-faq", "90 days"), ("globex-secret", "4 million"))
    kb.record_run(RunRecord("sync", "help-centre", "acme", "2026-12-07T08:00:00+00:00",
                            "2026-12-07T08:00:05+00:00", False, {"added": 3, "superseded": 1, "removed": 0},
                            ("help/returns.html: HTTP 503 Service Unavailable\nretry later",)))
    kb.record_run(RunRecord("drift", "help-centre", "acme", "2026-12-07T09:00:00+00:00",
                            "2026-12-07T09:00:01+00:00", True, {"changed": 2}))
    kb.record_run(RunRecord("sync", "globex-wiki", "globex", "2026-12-07T08:00:00+00:00",
                            "2026-12-07T08:00:01+00:00", True, {"added": 9}))
    gone = next(d for d in kb.documents("acme") if d.id == "gone-doc")
    kb.store.record_answer(AnswerRecord("acme", "a" * 32, "key:acme-customer", "What was on the gone page?",
                                        "answered", None, "2026-12-07T10:00:00+00:00", {},
                                        ({"document_id": "gone-doc", "version": gone.version, "passage": 1,
                                          "content_sha256": "0" * 64},)))
    kb.remove("acme", "gone-doc")
    kb.store.record_handoff(HandoffRecord("acme", "HO-ACME-1", "key:acme-customer", f"Refund for {HOSTILE}?",
                                          True, "2026-12-07T11:00:00+00:00", ()))
    kb.store.record_handoff(HandoffRecord("globex", "HO-GLOBEX-1", "key:globex-user", "Globex zebra refund?",
                                          False, "2026-12-07T11:00:00+00:00", ()))
    told = "2026-12-07T09:00:02+00:00"
    kb.store.record_notices([
        NoticeRecord("acme", "help-centre", "Help centre team", "webhook", told, True, None, {"changed": 2}),
        NoticeRecord("acme", "help-centre", "Help centre team", "email", told, False,
                     f"SMTP 550 mailbox unavailable {HOSTILE}", {"changed": 2}),
        NoticeRecord("acme", "help-centre", "Help centre team", "webhook", "2026-12-06T09:00:02+00:00", True,
                     None, {"new": 7}),  # an older notice: not the latest, not shown
        NoticeRecord("globex", "globex-wiki", "Globex docs", "webhook", told, True, None, {"new": 4})])
    kb.store.record_eval(EvalRecord("acme", "cases.yaml", "2026-12-07T07:00:00+00:00",
                                    "2026-12-07T07:01:00+00:00", False,
                                    _summary({"returns": (4, 3), HOSTILE: (2, 2)}, passed=False)))
    kb.store.record_eval(EvalRecord("acme", "older-cases.yaml", "2026-12-06T07:00:00+00:00",
                                    "2026-12-06T07:01:00+00:00", True,
                                    _summary({"returns": (1, 1)}, passed=True)))
    kb.store.record_eval(EvalRecord("globex", "globex-zebra-cases.yaml", "2026-12-07T08:00:00+00:00",
                                    "2026-12-07T08:01:00+00:00", True,
                                    _summary({"zebra": (9, 9)}, passed=True)))
    kb.close()
    config = write_config(tmp / "config.yaml", rate_limit_per_minute=100_000)
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["sources"] = [
        {"id": "help-centre", "type": "files", "path": str(ROOT / "examples" / "collection" / "help"),
         "tenant": "acme", "groups": ["customers"], "visibility": "public", "schedule": "hourly",
         "owner": "Help centre team"},
        {"id": "globex-wiki", "type": "files", "path": str(ROOT / "examples" / "collection" / "notes"),
         "tenant": "globex", "groups": ["staff"], "visibility": "public", "owner": "Globex docs"}]
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    server = Server([str(BIN / "evidex"), "--db", str(db), "--config", str(config), "serve", "--no-schedule"],
                    {"EVIDEX_CACHE_DIR": str(tmp / "cache")}, tmp / "serve.log")
    try:
        yield {"url": server.url}
    finally:
        server.stop()


def _open_ops(page: Page) -> None:
    page.click("#view-ops")
    for part in ("sources", "conflicts", "handoffs", "citations", "feedback", "evaluation"):
        page.wait_for_selector(f"#ops-{part} .ops-body[data-loaded]")


def test_endpoints_are_admin_only_and_tenant_scoped(site: dict[str, Any]) -> None:
    with httpx.Client(base_url=site["url"], timeout=30) as c:
        for path in ("/v1/ops/sources", "/v1/ops/handoffs", "/v1/ops/citations", "/v1/ops/evaluations"):
            assert c.get(path).status_code == 401
            assert c.get(path, headers=auth("acme-staff-key")).status_code == 403, path
        acme = c.get("/v1/ops/sources", headers=auth("acme-admin-key")).json()["sources"]
        assert [s["id"] for s in acme] == ["help-centre"]
        [s] = acme
        assert s["owner"] == "Help centre team" and s["next_sync"] and s["sync_schedule"] == "hourly"
        assert s["last_sync"]["first_problem"] == "help/returns.html: HTTP 503 Service Unavailable"
        assert s["last_drift"]["counts"] == {"changed": 2}
        globex = c.get("/v1/ops/sources", headers=auth("globex-admin-key")).json()["sources"]
        assert [s["id"] for s in globex] == ["globex-wiki"]
        assert [h["reference"] for h in c.get("/v1/ops/handoffs", headers=auth("globex-admin-key")).json()
                ["handoffs"]] == ["HO-GLOBEX-1"]
        broken = c.get("/v1/ops/citations", headers=auth("acme-admin-key")).json()["citations"]
        assert [(b["document_id"], b["why"], b["answers"]) for b in broken] == [("gone-doc", "removed", 1)]
        assert c.get("/v1/ops/citations", headers=auth("globex-admin-key")).json()["citations"] == []
        told = s["owner_told"]
        assert [(n["route"], n["delivered"]) for n in told] == [("webhook", True), ("email", False)]
        assert {n["sent_at"] for n in told} == {"2026-12-07T09:00:02+00:00"}  # the latest notice only
        [g] = globex
        assert [n["owner"] for n in g["owner_told"]] == ["Globex docs"]
        evals = c.get("/v1/ops/evaluations", headers=auth("acme-admin-key")).json()["evaluations"]
        assert [e["name"] for e in evals] == ["cases.yaml", "older-cases.yaml"]
        assert evals[0]["passed"] is False and evals[0]["categories"]["returns"]["answerable_cited"] == 3
        assert [e["name"] for e in c.get("/v1/ops/evaluations", headers=auth("globex-admin-key")).json()
                ["evaluations"]] == ["globex-zebra-cases.yaml"]


def test_operators_tab_shows_the_tenants_sources_conflicts_handoffs_and_citations(page: Page) -> None:
    sign_in(page, "acme-admin-key")
    assert page.locator("#view-ops").is_visible()
    _open_ops(page)
    assert not page.locator("#ask").is_visible() and page.locator("#ops").is_visible()
    assert page.inner_text("#ops-tenant") == "tenant acme"
    sources = page.inner_text("#ops-sources")
    assert "help-centre (files)" in sources and "Help centre team" in sources
    assert "HTTP 503 Service Unavailable" in sources and "retry later" not in sources  # the first line
    assert "added 3, superseded 1, removed 0" in sources and "hourly" in sources and "changed 2" in sources
    assert "stale: 2 change(s) since the last sync" in sources  # the drift check found it changed
    conflict = page.locator("#ops-conflicts .conflict")
    assert conflict.count() == 1
    quotes = conflict.locator("blockquote").all_inner_texts()
    assert quotes[0].startswith("Unworn jackets can be returned within 30 days.") and HOSTILE in quotes[0]
    assert quotes[1] == "Unworn jackets can be returned within 60 days."
    assert "policy-a, version 1, passage" in conflict.inner_text() and "60 days" in conflict.inner_text()
    handoffs = page.inner_text("#ops-handoffs")
    assert "HO-ACME-1" in handoffs and f"Refund for {HOSTILE}?" in handoffs and "yes" in handoffs
    citations = page.inner_text("#ops-citations")
    assert "gone-doc" in citations and "document removed" in citations
    told = page.locator("#ops-sources .owner-told")
    assert told.locator("[data-delivered=yes]").count() == 1
    assert told.locator("[data-delivered=no]").count() == 1
    told_text = told.inner_text()
    assert "Told Help centre team of 2 changed" in told_text and "2026-12-07 09:00 UTC" in told_text
    assert "webhook" in told_text and "email" in told_text and "not delivered" in told_text
    assert f"SMTP 550 mailbox unavailable {HOSTILE}" in told_text and "7 new" not in told_text
    evaluation = page.inner_text("#ops-evaluation")
    assert page.get_attribute("#ops-evaluation [data-passed]", "data-passed") == "no"
    assert "gate failed" in evaluation and "cases.yaml" in evaluation and "older-cases" not in evaluation
    assert "2026-12-07 07:00 UTC" in evaluation and "5 of 6 cases passed" in evaluation
    assert "answerable_cited" in evaluation and "at least 85 %" in evaluation and "83.3 %" in evaluation
    assert "access_violations\t0\tat most 0\tpass" in evaluation  # a count, not a share
    rows = page.locator("#ops-evaluation table").nth(1).locator("tbody tr").all_inner_texts()
    assert [r.split("\t")[:4] for r in rows] == [[HOSTILE, "2", "2", "2/2 (100 %)"],  # by name
                                                  ["returns", "4", "3", "3/4 (75 %)"]]
    everything = page.inner_text("#ops")
    for other in ("globex", "GLOBEX", "zebra", "Globex docs", "4 million", "4 new"):
        assert other not in everything
    assert page.evaluate("window.pwned") is None and page.locator("#ops img").count() == 0
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "operators-tab.png"), full_page=True)
    page.click("#view-ask")
    assert page.locator("#ask").is_visible() and not page.locator("#ops").is_visible()


def test_feedback_buttons_record_and_the_tab_lists_them(browser: Any, site: dict[str, Any]) -> None:
    with tab(browser, site["url"] + "/") as pg:
        sign_in(pg, "acme-customer-key")
        assert not pg.locator("#view-ops").is_visible()  # not an admin key: no tab
        ask(pg, "Can I return a worn jacket?")
        pg.fill("#feedback-note", f"Clear, thanks {HOSTILE}")
        pg.click("#feedback-not-helpful")
        pg.wait_for_selector("#feedback-status[data-recorded]")
        assert pg.get_attribute("#feedback-status", "data-recorded") == "not_helpful"
        assert pg.locator("#feedback-helpful").is_disabled()
        ARTIFACTS.mkdir(exist_ok=True)
        pg.screenshot(path=str(ARTIFACTS / "answer-feedback.png"), full_page=True)
    with tab(browser, site["url"] + "/") as pg:
        sign_in(pg, "acme-admin-key")
        _open_ops(pg)
        listed = pg.inner_text("#ops-feedback")
        assert "not helpful" in listed and "Can I return a worn jacket?" in listed
        assert f"Clear, thanks {HOSTILE}" in listed and pg.evaluate("window.pwned") is None
    with tab(browser, site["url"] + "/") as pg:
        sign_in(pg, "globex-admin-key")
        _open_ops(pg)
        assert "No feedback yet." in pg.inner_text("#ops-feedback")
        assert "HO-GLOBEX-1" in pg.inner_text("#ops-handoffs") and "HO-ACME" not in pg.inner_text("#ops")
        assert "worn jacket" not in pg.inner_text("#ops")


def test_signing_out_and_in_as_a_non_admin_hides_the_tab(page: Page) -> None:
    sign_in(page, "acme-admin-key")
    _open_ops(page)
    page.click("#sign-out")
    sign_in(page, "acme-staff-key")
    assert not page.locator("#view-ops").is_visible() and not page.locator("#ops").is_visible()
    assert page.inner_text("#ops") == "" or "help-centre" not in page.inner_text("#ops")
    assert page.locator("#ops .ops-body[data-loaded]").count() == 0 or \
        page.locator("#ops-sources .ops-body").inner_text() == ""
