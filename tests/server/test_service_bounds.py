"""The service under a slow tool and towards customers (issue 37, findings 1 and 16): a live
lookup holds no store handle and no request thread while it waits, so another tenant's search
goes on as before; a server path (a files source's ``file://`` URL) reaches admin keys only.
A real `evidex serve` process, a real tools service (tests/support/tools_helpers.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from evidex import Document, KnowledgeBase
from service_helpers import BIN, Server, auth, build_store, write_config
from tools_helpers import SECRET, TOKEN_ENV, ToolServer, order_tool

SLOW_S = 2.5
ORDER_QUESTION = "Where is my order 12345?"


@pytest.fixture(scope="module")
def slow_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One worker with the default two store handles, and a tools service that answers after
    ``SLOW_S``, or when the test lets it (within the tool's deadline, so every lookup waits)."""
    tmp = tmp_path_factory.mktemp("slow-tool")
    db = tmp / "kb.db"
    build_store(db, tmp / "cache")
    tools = ToolServer()
    tools.slow_s = SLOW_S
    config = write_config(tmp / "config.yaml", rate_limit_per_minute=100_000,
                          failed_auth_per_minute=100_000, tool_hosts=[tools.base])
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    for key in data["server"]["api_keys"]:
        key["claims"] = {"customer_id": "C-1001"}
    data["tools"] = [order_tool(tools, "slow", timeout_ms=60_000, retries=0).model_dump(
        by_alias=True, exclude_none=True, mode="json")]
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    server = Server([str(BIN / "evidex"), "--db", str(db), "serve", "--config", str(config)],
                    {"EVIDEX_CACHE_DIR": str(tmp / "cache"), TOKEN_ENV: SECRET}, tmp / "server.log")
    try:
        yield {"url": server.url, "tools": tools}
    finally:
        server.stop()
        tools.close()


def test_a_slow_tool_does_not_stall_another_tenants_search(slow_service: dict[str, Any]) -> None:
    """Finding 1: six questions to a tool answering in seconds held both store handles of the
    worker while they waited, and another tenant's plain search waited for a handle (8 ms
    became 11.8 s). The tools service now holds all six lookups until the test lets them go:
    another tenant's searches are answered while all six are still waiting (had a lookup held
    a handle, they could not be), counted rather than timed."""
    url, tools = slow_service["url"], slow_service["tools"]
    search = {"query": "zebra widgets returned", "top_k": 3}
    answers: list[httpx.Response] = []

    def ask() -> None:
        with httpx.Client(base_url=url, timeout=120) as own:
            answers.append(own.post("/v1/answer", json={"question": ORDER_QUESTION},
                                    headers=auth("acme-customer-key")))

    askers = [threading.Thread(target=ask) for _ in range(6)]
    with tools.held(slow_s=90.0), httpx.Client(base_url=url, timeout=60) as c:
        answered = tools.answered
        for t in askers:
            t.start()
        deadline = time.monotonic() + 300  # a hang guard
        while tools.active < 6:                                  # every lookup is under way
            assert time.monotonic() < deadline, f"{tools.active} lookups under way"
            time.sleep(0.02)
        for _ in range(8):
            r = c.post("/v1/search", json=search, headers=auth("globex-user-key"))
            assert r.status_code == 200, r.text
        assert tools.active == 6 and tools.answered == answered  # all six still waiting
    for t in askers:
        t.join()
    assert len(answers) == 6 and all(r.status_code == 200 for r in answers)
    assert {r.json()["citations"][0]["tool"] for r in answers} == {"orders-slow"}


def test_file_paths_reach_admin_keys_only(tmp_path: Path) -> None:
    """Finding 16: a files source without base_url cites its file by its server path
    (file:///srv/...); a customer key saw it in every hit. Now they see the document id."""
    from fastapi.testclient import TestClient

    from evidex.config import load_config
    from evidex.server import create_app

    db = tmp_path / "kb.db"
    build_store(db, tmp_path / "cache")
    path_url = (tmp_path / "srv" / "returns.md").as_uri()
    with KnowledgeBase.open(db, embed_cache=tmp_path / "cache" / "embeddings.sqlite") as kb:
        kb.ingest([Document("srv-returns", "acme", frozenset({"customers", "staff"}), "1",
                            "Zebra tents may be returned within 60 days.", title="Tent returns",
                            visibility="public", language="en", source_url=path_url)])
    app = create_app(db, load_config(write_config(tmp_path / "config.yaml")).server)
    ask = {"query": "zebra tents returned", "top_k": 3}
    with TestClient(app) as c:
        def hit(key: str) -> dict[str, Any]:
            hits = c.post("/v1/search", json=ask, headers=auth(key)).json()["hits"]
            return next(h for h in hits if h["document_id"] == "srv-returns")

        def document(key: str) -> dict[str, Any]:
            return c.get("/v1/documents/srv-returns", headers=auth(key)).json()

        customer = hit("acme-customer-key")
        assert customer["source_url"] is None and customer["title"] == "Tent returns"
        assert document("acme-customer-key")["source_url"] is None
        answer = c.post("/v1/answer", json={"question": "Can zebra tents be returned?"},
                        headers=auth("acme-customer-key")).json()
        assert path_url not in str(answer)
        assert hit("acme-admin-key")["source_url"] == path_url
        assert document("acme-admin-key")["source_url"] == path_url
