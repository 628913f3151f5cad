"""Live lookups inside answers (library): the lookup is the first numbered source, quoted
verbatim and cited with kind live, followed by the passages; every way a lookup cannot be used
declines the whole answer honestly, with the handoff, and never answers from passages instead."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tools_helpers
from evidex import Actor, Document, KnowledgeBase
from tools_helpers import (
    CUSTOMER,
    GUEST,
    SECRET,
    ToolServer,
    order_tool,
)

server, token = tools_helpers.server, tools_helpers.token  # the shared fixtures, used by name

RETURNS = "Shipped orders can be returned within 30 days of delivery."
TRACKING = "As soon as your parcel leaves our warehouse we send you an email with the tracking link."


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("live-answers") / "kb.db"
    with KnowledgeBase.open(path, embedder="none") as kb:
        kb.ingest([Document("returns", "acme", {"customers"}, "1", RETURNS, title="Returns",
                            visibility="public", language="en"),
                   Document("tracking", "acme", {"customers"}, "1", f"# Where is my order?\n\n{TRACKING}",
                            title="Order tracking", visibility="public", language="en")],
                  split="heading")
    return path


def answer(db: Path, tools: list[Any], question: str,
           actor: Actor = CUSTOMER) -> tuple[dict[str, Any], KnowledgeBase]:
    kb = KnowledgeBase.open(db, tools=tools)
    return kb.answer(actor, question).as_dict(), kb


def test_the_lookup_is_cited_first_and_the_passages_follow(db: Path, server: ToolServer) -> None:
    ans, kb = answer(db, [order_tool(server)],
                     "Order 12345: can shipped orders be returned within 30 days of delivery?")
    with kb:
        assert ans["status"] == "answered", ans
        assert ans["text"] == ("Order 12345: shipped, expected delivery 2026-12-03. [1] "
                               f"{RETURNS} [2]")
        live, passage = ans["citations"]
        assert live["n"] == 1 and live["kind"] == "live" and live["tool"] == "orders-ok"
        assert live["quote"] == "Order 12345: shipped, expected delivery 2026-12-03."
        assert live["parameters"] == {"order_id": "12345"} and live["actor_parameters"] == ["customer_id"]
        assert passage["n"] == 2 and passage["kind"] == "passage" and passage["document_id"] == "returns"
        for c in ans["citations"]:
            assert kb.resolve(CUSTOMER, {k: v for k, v in c.items() if k != "n"}).ok
        # The trace: tool, status, timing and the response hash; no response text.
        ms = ans["trace"]["live"][0]["ms"]
        assert ans["trace"]["live"] == [{"tool": "orders-ok", "status": "ok", "ms": ms,
                                         "response_sha256": live["content_sha256"]}]
        assert "2026-12-03" not in json.dumps(ans["trace"])
        assert SECRET not in json.dumps(ans) and "C-1001" not in json.dumps(ans)


def test_a_lookup_answers_alone_when_no_passage_does(db: Path, server: ToolServer) -> None:
    ans, kb = answer(db, [order_tool(server)], "Delivery date of 12345?")
    kb.close()
    assert ans["status"] == "answered"
    assert ans["text"] == "Order 12345: shipped, expected delivery 2026-12-03. [1]"
    assert [c["kind"] for c in ans["citations"]] == ["live"]
    assert ans["trace"]["passages_declined"] in ("no_evidence", "weak_evidence")


def test_questions_that_ask_for_no_tool_answer_from_passages(db: Path, server: ToolServer) -> None:
    before = len(server.requests)
    ans, kb = answer(db, [order_tool(server)], "Can shipped orders be returned?")
    kb.close()
    assert ans["status"] == "answered" and [c["kind"] for c in ans["citations"]] == ["passage"]
    assert "live" not in ans["trace"] and len(server.requests) == before


@pytest.mark.parametrize("kind, detail", [
    ("html", "not JSON"), ("status", "HTTP 500"), ("missing", "no field eta"),
    ("inject", "instruction-like text"), ("markup", "output contract"), ("big", "larger than"),
])
def test_a_lookup_that_cannot_be_used_declines_the_whole_answer(db: Path, server: ToolServer, kind: str,
                                                                detail: str) -> None:
    url = f"{server.base}/status/500/{{customer_id}}/{{order_id}}" if kind == "status" else None
    tool = order_tool(server, kind, **({"url": url} if url else {}))
    # The passages would answer the tracking part: they must not stand in for the lookup.
    ans, kb = answer(db, [tool], "Where is my order 12345? When is its delivery?")
    kb.close()
    assert ans["status"] == "declined" and ans["reason"] == "tool_unavailable", ans
    assert ans["citations"] == [] and ans["handoff"] == "Please contact a person on the support team."
    assert ans["text"] == ("I can't check that right now: the live lookup it needs did not give a "
                           "usable answer.")
    assert detail in ans["detail"] and ans["detail"].startswith(f"{tool.id}: ")
    # The markup lookup worked; its text is what the answer refuses to release.
    assert ans["trace"]["live"][0]["status"] == {"inject": "flagged", "markup": "ok"}.get(kind, "failed")
    everything = json.dumps(ans)
    assert "Ignore all previous" not in everything and "<b>" not in everything and SECRET not in everything
    assert TRACKING not in everything


def test_a_caller_without_the_claim_is_told_to_sign_in(db: Path, server: ToolServer) -> None:
    before = len(server.requests)
    ans, kb = answer(db, [order_tool(server)], "Where is my order 12345?", GUEST)
    kb.close()
    assert (ans["status"], ans["reason"]) == ("declined", "tool_needs_sign_in")
    assert ans["text"] == "I can't look that up for you: the lookup needs a signed-in customer."
    assert "customer_id" in ans["detail"] and ans["handoff"]
    assert len(server.requests) == before


def test_a_failing_tool_costs_at_most_its_budget(db: Path, server: ToolServer) -> None:
    """The service holds the lookup until the test lets it go: the answer can only have come
    through the lookup's deadline (two attempts of 200 ms), never by waiting for the service."""
    tool = order_tool(server, "slow", timeout_ms=200, retries=1)
    with KnowledgeBase.open(db, tools=[tool]) as kb, server.held():
        before, answered = len(server.requests), server.answered
        ans = kb.answer(CUSTOMER, "Where is my order 12345?")
        assert server.answered == answered and len(server.requests) - before == 2
    assert ans.reason == "tool_unavailable" and "did not answer within 200 ms" in ans.detail


def test_several_tools_and_one_fails(db: Path, server: ToolServer) -> None:
    ans, kb = answer(db, [order_tool(server), order_tool(server, "html")], "Where is my order 12345?")
    kb.close()
    assert ans["reason"] == "tool_unavailable" and ans["detail"].startswith("orders-html: ")
    assert [t["status"] for t in ans["trace"]["live"]] == ["ok", "failed"]
    ans, kb = answer(db, [order_tool(server), order_tool(server, "ok", id="orders-again")],
                     "Where is my order 12345?")
    kb.close()
    assert ans["status"] == "answered" and [c["n"] for c in ans["citations"]][:2] == [1, 2]
    assert [c["tool"] for c in ans["citations"][:2]] == ["orders-ok", "orders-again"]


def test_nothing_of_a_lookup_reaches_the_store(tmp_path: Path, server: ToolServer) -> None:
    path = tmp_path / "kb.db"
    with KnowledgeBase.open(path, embedder="none", tools=[order_tool(server)]) as kb:
        kb.ingest([Document("returns", "acme", {"customers"}, "1", RETURNS, title="Returns",
                            visibility="public", language="en")])
        ans = kb.answer(CUSTOMER, "Where is my order 12345? Can shipped orders be returned?")
        assert ans.citations[0]["kind"] == "live"
        assert kb.resolve(CUSTOMER, {k: v for k, v in ans.citations[0].items() if k != "n"}).ok
        stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert RETURNS.encode() in stored                       # the store is readable as bytes
    for value in ("expected delivery 2026-12-03", "orders-ok", ans.citations[0]["content_sha256"], "C-1001"):
        assert value.encode() not in stored, value
