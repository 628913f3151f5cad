"""Live tools against a real local HTTP server: lookups, every way a lookup fails, parameters
that try to reach elsewhere, callers without the claim or of another tenant, resolving after
the value changed, and credentials that never show anywhere."""

from __future__ import annotations

import hashlib
import logging
import re
from typing import Any

import pytest

import tools_helpers
from evidex import Actor, CitationError, EvidexError, KnowledgeBase
from evidex.tools import LiveSource, Toolbox, ToolConfig
from tools_helpers import (
    CUSTOMER,
    GUEST,
    SECRET,
    TOKEN_ENV,
    ToolServer,
    order_tool,
)

server, token = tools_helpers.server, tools_helpers.token  # the shared fixtures, used by name

OTHER_CUSTOMER = Actor("acme", {"customers"}, visibilities={"public"}, claims={"customer_id": "C-2002"})
GLOBEX = Actor("globex", {"customers"}, visibilities={"public"}, claims={"customer_id": "C-1001"})
STAFF = Actor("acme", {"staff"}, visibilities={"public", "internal"}, claims={"customer_id": "C-1001"})


def ask(tools: list[ToolConfig], question: str, actor: Actor = CUSTOMER) -> list[LiveSource]:
    box = Toolbox(tools)
    try:
        return box.start(box.asked(actor, question)).wait()
    finally:
        box.close()


def only(tools: list[ToolConfig], question: str, actor: Actor = CUSTOMER) -> LiveSource:
    found = ask(tools, question, actor)
    assert len(found) == 1, found
    return found[0]


def shown(src: LiveSource) -> str:
    """Everything of a lookup that could reach a caller, a log or a trace."""
    return repr(src) + repr(src.as_dict()) + repr(src.trace())


# -- a lookup ---------------------------------------------------------------------------------------
def test_a_question_asks_and_the_lookup_is_cited(server: ToolServer) -> None:
    before = len(server.requests)
    src = only([order_tool(server)], "Where is my order 12345?")
    assert src.ok and src.quote == "Order 12345: shipped, expected delivery 2026-12-03."
    c = src.citation
    assert c is not None
    assert c["kind"] == "live" and c["tool"] == "orders-ok" and c["quote"] == src.quote
    assert c["parameters"] == {"order_id": "12345"}            # from the question: shown
    assert c["actor_parameters"] == ["customer_id"]             # from the identity: named only
    assert "C-1001" not in repr(c)
    assert c["source_url"] == f"{server.base}/ok/{{customer_id}}/12345"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", c["fetched_at"])
    path, headers = server.requests[before]
    assert path == "/ok/C-1001/12345"                           # the claim went to the system
    assert headers["Authorization"] == f"Bearer {SECRET}"       # ${VAR} filled at call time
    body = b'{"order_id": "12345", "status": "shipped", "delivery_date": "2026-12-03"}'
    assert c["content_sha256"] == hashlib.sha256(body).hexdigest() == src.response_sha256
    assert src.trace() == {"tool": "orders-ok", "status": "ok", "ms": src.trace()["ms"],
                           "response_sha256": c["content_sha256"]}


@pytest.mark.parametrize("question, asked", [
    ("Where is my order 12345?", True),
    ("Wo ist meine BESTELLUNG 12345?", True),                     # case-insensitive words
    ("When is the delivery of 12345 due?", True),
    ("Where is my order?", False),                               # no order number, no default
    ("Is 12345 a prime number?", False),                         # the number but no when-word
    ("How do orderly returns work for 12345?", False),           # whole words only
])
def test_when_words_and_question_parameters_decide(server: ToolServer, question: str, asked: bool) -> None:
    assert bool(Toolbox([order_tool(server)]).asked(CUSTOMER, question)) is asked


def test_phrases_patterns_in_order_prefix_and_defaults(server: ToolServer) -> None:
    tool = order_tool(server, when=["my order", "order status"], parameters={
        "order_id": {"from": "question", "pattern": [r"\bAO-\d{7}\b", r"\b\d{5}\b"], "default": "latest"},
        "customer_id": {"from": "actor", "claim": "customer_id"}})
    box = Toolbox([tool])
    assert not box.asked(CUSTOMER, "How do I return an order?")     # "order" alone is no phrase
    assert box.asked(CUSTOMER, "What is my order status?")[0].question == {"order_id": "latest"}
    # The first pattern wins even when the second matches earlier in the question.
    assert box.asked(CUSTOMER, "my order 12345 or AO-1234567")[0].question == {"order_id": "AO-1234567"}
    sized = order_tool(server, parameters={
        "order_id": {"from": "question", "prefix": r"\b(?:size|größe)", "pattern": r"XL|L|\d{2}",
                     "ignore_case": True},
        "customer_id": {"from": "actor", "claim": "customer_id"}})
    assert Toolbox([sized]).asked(CUSTOMER, "order in Größe 42 please")[0].question == {"order_id": "42"}
    assert not Toolbox([sized]).asked(CUSTOMER, "order 42 please")


def test_tools_are_asked_for_in_parallel(server: ToolServer) -> None:
    """Each ``/gate`` request is answered only once all three are being answered at the same
    time: asked one after another, the first would wait out the gate and the service would
    never see more than one at once. Counted, not timed."""
    server.gate, server.peak = 3, 0
    tools = [order_tool(server, "gate", id=f"gate-{i}", timeout_ms=60_000, retries=0) for i in range(3)]
    with server.held(slow_s=30.0):
        found = ask(tools, "Where is my order 12345?")
    assert [s.status for s in found] == ["ok"] * 3
    assert server.peak == 3                                      # three lookups at once


# -- failures ---------------------------------------------------------------------------------------
def test_slow_service_times_out_within_its_budget(server: ToolServer) -> None:
    """The service holds every request until the test lets it go: the lookup can only have
    returned through its deadline, after exactly its two attempts, not by waiting."""
    tool = order_tool(server, "slow", timeout_ms=200, retries=1)
    with server.held():
        before, answered = len(server.requests), server.answered
        src = only([tool], "Where is my order 12345?")
        assert server.answered == answered                       # the service never answered
        assert len(server.requests) - before == 2                # budget 2 x 200 ms: 2 attempts
    assert src.status == "failed" and "did not answer within 200 ms" in src.detail
    assert src.citation is None and src.quote == ""


def test_dripping_body_counts_against_the_deadline(server: ToolServer) -> None:
    """A byte every 0.1 s keeps each read under the 300 ms timeout; only one deadline for the
    whole lookup ends it. The body takes a minute to drip: the lookup returned long before."""
    tool = order_tool(server, "drip", timeout_ms=300, retries=0)
    server.drip_pad = 600                                        # ~670 bytes: ~67 s at 0.1 s each
    try:
        with server.held(slow_s=0.4):
            answered = server.answered
            src = only([tool], "Where is my order 12345?")
            assert server.answered == answered                   # the body was still dripping
    finally:
        server.drip_pad = 0
    assert src.status == "failed" and "did not answer" in src.detail


def test_server_errors_are_retried_then_fail(server: ToolServer) -> None:
    before = len(server.requests)
    src = only([order_tool(server, "status", url=f"{server.base}/status/500/{{customer_id}}/{{order_id}}",
                           retries=2)], "Where is my order 12345?")
    assert src.status == "failed" and src.detail == "the service answered HTTP 500 (3 attempts)"
    assert len(server.requests) - before == 3
    server.flaky_failures = 1
    src = only([order_tool(server, "flaky", retries=1)], "Where is my order 12345?")
    assert src.ok and "shipped" in src.quote


@pytest.mark.parametrize("code", [401, 403, 404, 302])
def test_other_statuses_fail_at_once(server: ToolServer, code: int) -> None:
    before = len(server.requests)
    kind = "redirect" if code == 302 else "status"
    url = (f"{server.base}/redirect/{{customer_id}}/{{order_id}}" if code == 302
           else f"{server.base}/status/{code}/{{customer_id}}/{{order_id}}")
    src = only([order_tool(server, kind, url=url, retries=3)], "Where is my order 12345?")
    assert src.status == "failed" and src.detail == f"the service answered HTTP {code}"
    assert len(server.requests) - before == 1                    # not retried, not followed


@pytest.mark.parametrize("kind, detail", [
    ("html", "the response is not JSON (content type text/html)"),
    ("badjson", "the response is not valid JSON"),
    ("big", "the response is larger than 2048 bytes"),
    ("stream", "the response is larger than 2048 bytes"),
    ("missing", "the response has no field eta (/delivery_date)"),
    ("list", "the field status (/status) is not a string, number or boolean"),
])
def test_unusable_responses_fail(server: ToolServer, kind: str, detail: str) -> None:
    src = only([order_tool(server, kind)], "Where is my order 12345?")
    assert (src.status, src.detail, src.citation) == ("failed", detail, None)


def test_unreachable_service_fails(server: ToolServer) -> None:
    tool = order_tool(server, url="http://127.0.0.1:9/x/{customer_id}/{order_id}", timeout_ms=300)
    src = only([tool], "Where is my order 12345?")
    assert src.status == "failed" and src.detail.startswith("the service could not be reached (ConnectError)")


def test_injected_instructions_are_flagged_and_never_cited(server: ToolServer) -> None:
    src = only([order_tool(server, "inject")], "Where is my order 12345?")
    assert src.status == "flagged" and src.citation is None and src.flags
    assert "instruction-like" in src.detail


# -- parameters cannot reach elsewhere ---------------------------------------------------------
@pytest.mark.parametrize("question", ["Where is my order 12345/../admin?", "Where is my order 12345?x=1&y=2",
                                      "Where is my order 12345#frag?"])
def test_question_values_are_what_the_pattern_matched(server: ToolServer, question: str) -> None:
    before = len(server.requests)
    src = only([order_tool(server)], question)
    assert src.ok and src.citation and src.citation["parameters"] == {"order_id": "12345"}
    assert server.paths()[before:] == ["/ok/C-1001/12345"]


@pytest.mark.parametrize("value", ["12345/../admin", "12345?x=", "../12345", "12345 ", "1234"])
def test_explicit_values_must_match_the_pattern_whole(server: ToolServer, value: str) -> None:
    box = Toolbox([order_tool(server)])
    before = len(server.requests)
    with pytest.raises(EvidexError, match="does not match its pattern") as info:
        box.call(CUSTOMER, "orders-ok", {"order_id": value})
    assert value not in str(info.value)
    assert len(server.requests) == before


def test_values_are_encoded_as_one_piece_even_under_a_loose_pattern(server: ToolServer) -> None:
    loose = order_tool(server, parameters={"order_id": {"from": "question", "pattern": r"\S+"},
                                           "customer_id": {"from": "actor", "claim": "customer_id"}})
    box = Toolbox([loose])
    before = len(server.requests)
    for value in ("12345/../admin", "12345?x=1&y=2", "a#b%2F"):
        assert box.call(CUSTOMER, loose.id, {"order_id": value}).status == "failed"  # 404: no such order
    assert server.paths()[before:] == ["/ok/C-1001/12345%2F..%2Fadmin", "/ok/C-1001/12345%3Fx%3D1%26y%3D2",
                                       "/ok/C-1001/a%23b%252F"]
    for dots in ("..", "."):
        with pytest.raises(EvidexError):
            box.call(CUSTOMER, loose.id, {"order_id": dots})
    assert len(server.requests) == before + 3


def test_actor_parameters_never_come_from_a_request(server: ToolServer) -> None:
    box = Toolbox([order_tool(server)])
    with pytest.raises(EvidexError, match="verified identity"):
        box.call(CUSTOMER, "orders-ok", {"order_id": "12345", "customer_id": "C-2002"})
    # Naming another customer in the question changes nothing: the claim decides.
    before = len(server.requests)
    src = only([order_tool(server)], "I am customer C-2002, where is my order 99999?")
    assert src.status == "failed" and src.detail == "the service answered HTTP 404"
    assert server.paths()[before:] == ["/ok/C-1001/99999"]
    assert only([order_tool(server)], "where is my order 99999?", OTHER_CUSTOMER).ok


# -- who may use a tool ------------------------------------------------------------------------------
def test_a_caller_without_the_claim_is_not_looked_up(server: ToolServer) -> None:
    before = len(server.requests)
    src = only([order_tool(server)], "Where is my order 12345?", GUEST)
    assert src.status == "needs_claim" and "customer_id" in src.detail and src.citation is None
    assert len(server.requests) == before


def test_another_tenants_or_groups_tool_is_invisible(server: ToolServer) -> None:
    tool = order_tool(server)
    box = Toolbox([tool])
    before = len(server.requests)
    for actor in (GLOBEX, STAFF, Actor("acme", {"customers"}, visibilities={"internal"},
                                       claims={"customer_id": "C-1001"}),
                  Actor("acme", {"customers"}, active=False, visibilities={"public"},
                        claims={"customer_id": "C-1001"})):
        assert box.asked(actor, "Where is my order 12345?") == []
        assert box.usable(actor) == []
        with pytest.raises(EvidexError, match="no tool 'orders-ok' is available to you"):
            box.call(actor, "orders-ok", {"order_id": "12345"})
    with pytest.raises(EvidexError, match="no tool 'nope' is available to you"):
        box.call(CUSTOMER, "nope", {})
    assert len(server.requests) == before
    # An operator of the tool's tenant may call it (with its own claims), another tenant's not.
    assert box.call(STAFF, "orders-ok", {"order_id": "12345"}, operator=True).ok
    with pytest.raises(EvidexError):
        box.call(GLOBEX, "orders-ok", {"order_id": "12345"}, operator=True)


# -- resolving -------------------------------------------------------------------------------------
def test_resolve_looks_up_again(server: ToolServer) -> None:
    box = Toolbox([order_tool(server)])
    src = box.start(box.asked(CUSTOMER, "Where is my order 23456?")).wait()[0]
    cited = src.citation
    assert cited is not None
    assert box.resolve(CUSTOMER, cited).ok
    server.orders["C-1001"]["23456"]["status"] = "returned"
    try:
        res = box.resolve(CUSTOMER, cited)
        assert (res.ok, res.reason) == (False, "source_changed")
        assert res.detail == "the lookup now says: Order 23456: returned, expected delivery 2026-11-20."
        assert box.resolve(OTHER_CUSTOMER, cited).reason == "unavailable"   # not their order: 404
        assert box.resolve(GUEST, cited).reason == "unavailable"            # no claim
        assert box.resolve(GLOBEX, cited).reason == "unavailable"           # other tenant
        assert Toolbox([]).resolve(CUSTOMER, cited).reason == "unavailable"  # tool gone
        del server.orders["C-1001"]["23456"]
        res = box.resolve(CUSTOMER, cited)
        assert res.reason == "unavailable" and "HTTP 404" in res.detail
    finally:
        server.orders["C-1001"]["23456"] = {"order_id": "23456", "status": "delivered",
                                            "delivery_date": "2026-11-20"}
    with pytest.raises(CitationError):
        box.resolve(CUSTOMER, {**cited, "parameters": {"order_id": "12345/../admin"}})
    with pytest.raises(CitationError):
        box.resolve(CUSTOMER, {"kind": "live", "tool": "orders-ok"})


def test_knowledge_base_dispatches_on_kind(server: ToolServer, tmp_path: Any) -> None:
    from evidex import Document

    with KnowledgeBase.open(tmp_path / "kb.db", embedder="none", tools=[order_tool(server)]) as kb:
        kb.ingest([Document("returns", "acme", {"customers"}, "1",
                            "Shipped orders can be returned within 30 days of delivery.",
                            visibility="public")])
        assert [t.id for t in kb.tools()] == ["orders-ok"] and kb.tools(GLOBEX) == []
        live = kb.live_sources(CUSTOMER, "Where is my order 12345?")
        assert [s.status for s in live] == ["ok"]
        assert kb.resolve(CUSTOMER, live[0].citation or {}).ok
        hit = kb.search(CUSTOMER, "returned", mode="keyword")[0]
        assert hit.citation()["kind"] == "passage" and kb.resolve(CUSTOMER, hit.citation()).ok
        with pytest.raises(CitationError, match="kind must be passage or live"):
            kb.resolve(CUSTOMER, {**hit.citation(), "kind": "rumour"})
        assert kb.call_tool(CUSTOMER, "orders-ok", {"order_id": "12345"}).ok


# -- credentials -------------------------------------------------------------------------------------
def test_credentials_never_show(server: ToolServer, caplog: pytest.LogCaptureFixture,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    caplog.set_level(logging.DEBUG)
    tools = [order_tool(server, kind, timeout_ms=200, retries=1)
             for kind in ("ok", "slow", "html", "big", "missing", "inject", "echo", "drip")]
    tools.append(order_tool(server, "status", url=f"{server.base}/status/500/{{customer_id}}/{{order_id}}"))
    tools.append(order_tool(server, "gone", url="http://127.0.0.1:9/{customer_id}/{order_id}"))
    with server.held():  # the slow and dripping ones fail by their deadline, however busy the machine
        found = ask(tools, "Where is my order 12345?")
    assert [s.status for s in found] == ["ok", "failed", "failed", "failed", "failed", "flagged",
                                         "failed", "failed", "failed", "failed"]
    echo = found[6]
    assert echo.detail == "the response repeats a credential of the request; it is not used"
    box = Toolbox(tools)
    cited = found[0].citation or {}
    resolutions = [box.resolve(CUSTOMER, {**cited, "tool": t.id}) for t in tools]
    errors = []
    for bad in ({"order_id": "12345/../admin"}, {"customer_id": SECRET}):
        try:
            box.call(CUSTOMER, "orders-echo", bad)
        except EvidexError as exc:
            errors.append(repr(exc) + str(exc))
    box.close()
    everything = "".join(shown(s) for s in found) + repr(resolutions) + "".join(errors) + caplog.text
    assert "send_request_headers" in caplog.text                 # the client's own log lines were seen
    assert SECRET not in everything
    # A variable that is not set: the lookup fails naming the variable, not a value.
    monkeypatch.delenv(TOKEN_ENV)
    src = only([order_tool(server)], "Where is my order 12345?")
    assert src.status == "failed" and TOKEN_ENV in src.detail


# -- configuration ---------------------------------------------------------------------------------
@pytest.mark.parametrize("change, message", [
    ({"method": "POST"}, "Input should be 'GET'"),
    ({"parameters": {"order_id": {"from": "question", "pattern": r"\d+"},
                     "customer_id": {"from": "question", "pattern": r"C-\d+"}}}, "names the caller"),
    ({"parameters": {"order_id": {"pattern": r"\d+"}, "customer_id": {"from": "actor", "claim": "c"}}},
     "Field required"),
    ({"parameters": {"order_id": {"from": "question"}, "customer_id": {"from": "actor", "claim": "c"}}},
     "needs a pattern"),
    ({"parameters": {"order_id": {"from": "question", "pattern": "("},
                     "customer_id": {"from": "actor", "claim": "c"}}}, "not a valid regular expression"),
    ({"parameters": {"order_id": {"from": "actor", "claim": "c", "pattern": "x"},
                     "customer_id": {"from": "actor", "claim": "c"}}}, "remove pattern"),
    ({"url": "http://user:pw@127.0.0.1/{customer_id}/{order_id}"}, "no user:password@"),
    ({"url": "http://{customer_id}.example/{order_id}"}, "the scheme and host are fixed"),
    ({"url": "http://127.0.0.1/${TOKEN}/{customer_id}/{order_id}"}, "for header values only"),
    ({"url": "ftp://127.0.0.1/{customer_id}/{order_id}"}, "http:// or https://"),
    ({"url": "http://127.0.0.1/{order_id}"}, "not used in the url"),
    ({"headers": {"Authorization": "Bearer $TOKEN"}}, "only allowed as ${VAR}"),
    ({"headers": {"Host": "elsewhere"}}, "not a header name evidex sends"),
    ({"render": "Order {order_id} for {customer_id}"}, "never shows"),
    ({"render": "Order {nothing}"}, "neither a field nor a parameter"),
    ({"fields": {"status": "status"}}, "not a JSON pointer"),
    ({"colour": "red"}, "Extra inputs are not permitted"),
])
def test_configuration_mistakes_are_refused(server: ToolServer, change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        order_tool(server, **change)
