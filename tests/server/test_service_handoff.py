"""The service's handoff and conflicts endpoints, and the page's handoff button, against a real
`evidex serve` process, a real webhook receiver and Debian's headless Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from playwright.sync_api import sync_playwright

from evidex import Document, KnowledgeBase
from notify_helpers import webhook_receiver
from service_helpers import BIN, Server, auth, build_store, write_config

DECLINED = "Who won the football world cup in 1954?"
CARE = Document(
    "care-reproof",
    "acme",
    frozenset({"staff"}),
    "1",
    "# Re-proofing\n\nRe-proof your waterproof shell jacket every 12 months with the spray-on product.\n",
    title="Caring for shell jackets",
    visibility="internal",
    language="en",
)
SHELL = Document(
    "shell-care",
    "acme",
    frozenset({"staff"}),
    "1",
    "# Care\n\nRe-proof your waterproof shell jacket every 6 months with the spray-on product.\n",
    title="Shell jacket",
    visibility="internal",
    language="en",
)
#: A restricted document of a group the tenant's admin key is not in: its conflict with the
#: care page is listed to that admin, its sentence is not.
MEMO = Document(
    "board-memo",
    "acme",
    frozenset({"board"}),
    "1",
    "# Re-proofing costs\n\nRe-proof your waterproof shell jacket every 24 months with the "
    "spray-on product, the board decided in secret.\n",
    title="Board memo",
    visibility="restricted",
    language="en",
)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("handoff")
    db = tmp / "kb.db"
    build_store(db, tmp / "cache")
    with KnowledgeBase.open(db, embed_cache=tmp / "cache" / "embeddings.sqlite") as kb:
        kb.ingest([CARE, SHELL], split="heading")
        kb.ingest([MEMO], split="heading")
    config = write_config(tmp / "config.yaml")
    with webhook_receiver() as (hooks, url):
        data = yaml.safe_load(config.read_text(encoding="utf-8"))
        data["answer"] = {
            "handoff": {
                "webhook": url + "/support",
                "secret_env": "HANDOFF_SECRET",
                "message": "A person can take it from here.",
                "per_key_per_hour": 3,
            }
        }
        config.write_text(yaml.safe_dump(data), encoding="utf-8")
        server = Server(
            [str(BIN / "evidex"), "--db", str(db), "serve", "--config", str(config)],
            {"EVIDEX_CACHE_DIR": str(tmp / "cache"), "HANDOFF_SECRET": "shh"},
            tmp / "serve.log",
        )
        try:
            yield {"url": server.url, "hooks": hooks, "server": server}
        finally:
            server.stop()


def test_declined_answer_offers_a_handoff_that_reaches_the_route(service: dict[str, Any]) -> None:
    url, hooks = service["url"], service["hooks"]
    ans = httpx.post(
        f"{url}/v1/answer", json={"question": DECLINED}, headers=auth("acme-customer-key"), timeout=60
    ).json()
    assert ans["status"] == "declined" and ans["handoff_available"] is True
    assert ans["handoff"] == "A person can take it from here." and len(ans["trace_id"]) == 32
    body = {
        "question": DECLINED,
        "trace_ids": [ans["trace_id"]],
        "conversation": [
            {"role": "user", "text": DECLINED},
            {
                "role": "evidex",
                "status": "declined",
                "trace_id": ans["trace_id"],
                "text": "a passage the support person may not read",
            },
        ],
    }
    before = len(hooks.received)
    sent = httpx.post(f"{url}/v1/handoff", json=body, headers=auth("acme-customer-key"), timeout=60)
    assert sent.status_code == 200, sent.text
    ref = sent.json()["reference"]
    payload = hooks.json()
    assert len(hooks.received) == before + 1 and payload["reference"] == ref
    assert payload["question"] == DECLINED and payload["trace_ids"] == [ans["trace_id"]]
    assert payload["tenant"] == "acme" and payload["caller"] == "key:acme-customer"
    assert "may not read" not in hooks.received[-1][2].decode()  # evidex's turns go by trace id only
    assert "X-Evidex-Signature" in hooks.received[-1][1]
    # Bad input is refused whole; identity never comes from the body.
    for bad in (
        {"question": ""},
        {"question": "q", "tenant": "globex"},
        {"question": "q", "trace_ids": ["x"] * 51},
        {"question": "q", "trace_ids": ["z" * 32]},  # not a trace id: refused, not passed on
        {"question": "q", "trace_ids": ["abc"]},  # nor dropped unsaid
    ):
        assert (
            httpx.post(
                f"{url}/v1/handoff", json=bad, headers=auth("acme-customer-key"), timeout=30
            ).status_code
            == 422
        )
    assert httpx.post(f"{url}/v1/handoff", json=body, timeout=30).status_code == 401


def test_handoffs_are_rate_limited_per_key(service: dict[str, Any]) -> None:
    url = service["url"]
    codes = [
        httpx.post(
            f"{url}/v1/handoff", json={"question": f"q{i}"}, headers=auth("acme-staff-key"), timeout=60
        ).status_code
        for i in range(4)
    ]
    assert codes == [200, 200, 200, 429]
    # Another key has its own allowance.
    assert (
        httpx.post(
            f"{url}/v1/handoff", json={"question": "q"}, headers=auth("globex-user-key"), timeout=60
        ).status_code
        == 200
    )


def test_a_handoff_names_only_its_callers_answers_and_a_resend_is_the_first_one(
        service: dict[str, Any]) -> None:
    """Finding 11: trace ids were not checked against the caller's traces (any 32 hex digits,
    another key's answer), a whitespace-only question was delivered, and an identical resend
    became a second handoff."""
    url, hooks = service["url"], service["hooks"]

    def post(path: str, body: dict[str, Any], key: str) -> httpx.Response:
        return httpx.post(f"{url}{path}", json=body, headers=auth(key), timeout=60)

    mine = post("/v1/answer", {"question": DECLINED}, "acme-admin-key").json()["trace_id"]
    theirs = post("/v1/answer", {"question": DECLINED}, "globex-admin-key").json()["trace_id"]
    same_tenant = post("/v1/answer", {"question": DECLINED}, "acme-staff-key").json()["trace_id"]
    before = len(hooks.received)
    for bad in ({"question": "Who repairs tents?", "trace_ids": [theirs]},
                {"question": "Who repairs tents?", "trace_ids": [same_tenant]},
                {"question": "Who repairs tents?", "trace_ids": ["0123456789abcdef" * 2]},
                {"question": "Who repairs tents?", "conversation": [
                    {"role": "evidex", "status": "declined", "trace_id": theirs}]},
                {"question": " \n\t "}):
        assert post("/v1/handoff", bad, "acme-admin-key").status_code == 422, bad
    body = {"question": "Who repairs tents?", "trace_ids": [mine]}
    first = post("/v1/handoff", body, "acme-admin-key")
    again = post("/v1/handoff", body, "acme-admin-key")
    assert first.status_code == again.status_code == 200, (first.text, again.text)
    assert again.json()["reference"] == first.json()["reference"]
    assert len(hooks.received) == before + 1


def test_conflicts_are_listed_and_dismissed_by_the_tenants_admin(service: dict[str, Any]) -> None:
    url = service["url"]
    listed = httpx.get(f"{url}/v1/conflicts", headers=auth("acme-admin-key"), timeout=30)
    assert listed.status_code == 200, listed.text
    [c] = [
        c
        for c in listed.json()["conflicts"]
        if {s["document_id"] for s in c["sides"]} == {"care-reproof", "shell-care"}
    ]
    assert {s["value"] for s in c["sides"]} == {"every 12 months", "every 6 months"}
    assert httpx.get(f"{url}/v1/conflicts", headers=auth("acme-staff-key"), timeout=30).status_code == 403
    assert httpx.get(f"{url}/v1/conflicts", headers=auth("globex-admin-key"), timeout=30).json() == {
        "conflicts": []
    }
    other = httpx.post(f"{url}/v1/conflicts/{c['id']}/dismiss", headers=auth("globex-admin-key"), timeout=30)
    assert other.status_code == 404
    done = httpx.post(f"{url}/v1/conflicts/{c['id']}/dismiss", headers=auth("acme-admin-key"), timeout=30)
    assert done.status_code == 200 and done.json() == {"dismissed": c["id"]}
    left = httpx.get(
        f"{url}/v1/conflicts?status=dismissed", headers=auth("acme-admin-key"), timeout=30
    ).json()
    assert [x["id"] for x in left["conflicts"]] == [c["id"]]


def test_an_admin_sees_the_sentences_of_the_documents_it_may_read_only(service: dict[str, Any]) -> None:
    """An admin key is an actor too: GET /v1/documents/board-memo is 404 for it, so the
    conflicts listing must not quote that document either (ids and values only, as owners get)."""
    url = service["url"]
    admin = auth("acme-admin-key")
    assert httpx.get(f"{url}/v1/documents/board-memo", headers=admin, timeout=30).status_code == 404
    listed = httpx.get(f"{url}/v1/conflicts?status=all", headers=admin, timeout=30).json()["conflicts"]
    with_memo = [c for c in listed if "board-memo" in {s["document_id"] for s in c["sides"]}]
    assert with_memo, listed
    for c in with_memo:
        memo, other = sorted(c["sides"], key=lambda s: s["document_id"] != "board-memo")
        assert memo["value"] == "every 24 months" and memo["sentence"] is None
        assert other["sentence"] and "secret" not in str(c) and c["subject"] == []
    readable = [c for c in listed if c not in with_memo]
    assert readable and all(s["sentence"] for c in readable for s in c["sides"])


def test_a_configuration_that_offers_nobody_shows_no_handoff_button(tmp_path: Path) -> None:
    """`when_no_evidence: say_so` (decline, offer no person) with a handoff route configured: a
    declined answer offers no handoff, so the page must not show the button either."""
    db = tmp_path / "kb.db"
    build_store(db, tmp_path / "cache")
    config = write_config(tmp_path / "config.yaml")
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["answer"] = {"when_no_evidence": "say_so",
                      "handoff": {"webhook": "http://127.0.0.1:9/unused", "message": "A person can help."}}
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    server = Server([str(BIN / "evidex"), "--db", str(db), "serve", "--config", str(config)],
                    {"EVIDEX_CACHE_DIR": str(tmp_path / "cache")}, tmp_path / "serve.log")
    try:
        ans = httpx.post(f"{server.url}/v1/answer", json={"question": DECLINED},
                         headers=auth("acme-customer-key"), timeout=60).json()
    finally:
        server.stop()
    assert ans["status"] == "declined" and ans["handoff"] is None
    assert ans["handoff_available"] is False


def test_the_page_button_sends_the_conversation_and_shows_the_reference(service: dict[str, Any]) -> None:
    url, hooks = service["url"], service["hooks"]
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url + "/")
            page.fill("#api-key", "acme-customer-key")
            page.keyboard.press("Enter")
            page.wait_for_selector("#app:not([hidden])")
            for question in ("Can I return a worn jacket?", DECLINED):
                page.fill("#question", question)
                page.keyboard.press("Enter")
                page.wait_for_function(
                    "() => { const a = document.querySelector('#answer');"
                    " return a.querySelector('[data-status]') && !a.textContent.includes('Answering'); }"
                )
            page.click("#handoff-button")
            page.wait_for_selector("#handoff-status[data-reference]")
            ref = page.get_attribute("#handoff-status", "data-reference")
            assert f"Your reference: {ref}" in page.inner_text("#handoff-status")
            assert errors == []
        finally:
            browser.close()
    payload = hooks.json()
    assert payload["reference"] == ref and payload["question"] == DECLINED
    turns = payload["conversation"]
    assert [t["role"] for t in turns] == ["user", "evidex", "user", "evidex"]
    assert [t.get("status") for t in turns[1::2]] == ["answered", "declined"]
    assert all("text" not in t for t in turns[1::2]) and turns[0]["text"] == "Can I return a worn jacket?"
    assert payload["trace_ids"] == [t["trace_id"] for t in turns[1::2]]
