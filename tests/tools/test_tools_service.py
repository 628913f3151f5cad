"""Live tools through the service (`evidex serve` with a tools: section), the CLI and the
configuration file: admin endpoints, resolving live citations over HTTP, identity claims from
API keys and JWTs, file:line errors, and credentials that never reach a log."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
import yaml

from cli_runner import clean_env, run_cli
from evidex.config import load_config
from evidex.model import ConfigError
from service_helpers import BIN, JWT_ISSUER, JWT_SECRET, Server, auth, build_store, sha, write_config
from tools_helpers import SECRET, TOKEN_ENV, ToolServer, order_tool

EVIDEX = str(BIN / "evidex")
CLAIMS = {"acme-customer-key": {"customer_id": "C-1001"}, "acme-admin-key": {"customer_id": "C-1001"}}


def tool_entries(ts: ToolServer) -> list[dict[str, Any]]:
    """orders-ok, and orders-html (not JSON) which only questions about a "parcel" ask for."""
    return [order_tool(ts, "ok"), order_tool(ts, "html", when=["parcel"])]


def dumped(ts: ToolServer) -> list[dict[str, Any]]:
    return [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tool_entries(ts)]


def full_config(path: Path, ts: ToolServer) -> Path:
    write_config(path, rate_limit_per_minute=100_000, failed_auth_per_minute=100_000)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    for key in data["server"]["api_keys"]:
        name = key["name"] + "-key"
        if name in CLAIMS:
            key["claims"] = CLAIMS[name]
    data["server"]["jwt"]["claims"] = {"customer_id": "cid"}
    data["server"]["tool_hosts"] = [ts.base]
    data["tools"] = dumped(ts)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tool_server() -> Iterator[ToolServer]:
    s = ToolServer()
    yield s
    s.close()


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, tool_server: ToolServer) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("tools-service")
    db = tmp / "kb.db"
    build_store(db, tmp / "cache")
    config = full_config(tmp / "config.yaml", tool_server)
    server = Server([EVIDEX, "--db", str(db), "serve", "--config", str(config)],
                    {"EVIDEX_CACHE_DIR": str(tmp / "cache"), TOKEN_ENV: SECRET}, tmp / "server.log")
    try:
        yield {"url": server.url, "server": server, "config": config, "db": db, "tmp": tmp}
    finally:
        server.stop()


@pytest.fixture
def client(service: dict[str, Any]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=service["url"], timeout=30) as c:
        yield c


def test_admins_list_their_tenants_tools_without_header_values(client: httpx.Client) -> None:
    r = client.get("/v1/tools", headers=auth("acme-admin-key"))
    assert r.status_code == 200, r.text
    tools = r.json()["tools"]
    assert [t["id"] for t in tools] == ["orders-ok", "orders-html"]
    assert tools[0]["headers"] == ["Authorization"] and "${" not in r.text and SECRET not in r.text
    assert tools[0]["parameters"]["customer_id"] == {"from": "actor", "claim": "customer_id"}
    assert client.get("/v1/tools", headers=auth("acme-customer-key")).status_code == 403
    assert client.get("/v1/tools", headers=auth("globex-admin-key")).json() == {"tools": []}


def test_admin_calls_run_as_the_key(client: httpx.Client, tool_server: ToolServer) -> None:
    r = client.post("/v1/tools/orders-ok/call", json={"parameters": {"order_id": "12345"}},
                    headers=auth("acme-admin-key"))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "ok" and body["citation"]["kind"] == "live"
    assert body["quote"] == "Order 12345: shipped, expected delivery 2026-12-03."
    failed = client.post("/v1/tools/orders-html/call", json={"parameters": {"order_id": "12345"}},
                         headers=auth("acme-admin-key")).json()
    assert failed["status"] == "failed" and "not JSON" in failed["detail"]
    bad = client.post("/v1/tools/orders-ok/call", json={"parameters": {"order_id": "12345/../admin"}},
                      headers=auth("acme-admin-key"))
    assert bad.status_code == 422 and "does not match its pattern" in bad.text
    forged = client.post("/v1/tools/orders-ok/call",
                         json={"parameters": {"order_id": "12345", "customer_id": "C-2002"}},
                         headers=auth("acme-admin-key"))
    assert forged.status_code == 422 and "verified identity" in forged.text
    extra = client.post("/v1/tools/orders-ok/call", json={"parameters": {}, "tenant": "globex"},
                        headers=auth("acme-admin-key"))
    assert extra.status_code == 422
    for key in ("globex-admin-key",):
        r = client.post("/v1/tools/orders-ok/call", json={"parameters": {"order_id": "12345"}},
                        headers=auth(key))
        assert r.status_code == 404
    assert client.post("/v1/tools/orders-ok/call", json={"parameters": {"order_id": "12345"}},
                       headers=auth("acme-customer-key")).status_code == 403
    assert client.post("/v1/tools/nope/call", json={"parameters": {}},
                       headers=auth("acme-admin-key")).status_code == 404


def test_live_citations_resolve_over_http_as_the_caller(client: httpx.Client,
                                                         tool_server: ToolServer) -> None:
    cited = client.post("/v1/tools/orders-ok/call", json={"parameters": {"order_id": "23456"}},
                        headers=auth("acme-admin-key")).json()["citation"]
    r = client.post("/v1/resolve", json=cited, headers=auth("acme-customer-key"))
    assert r.status_code == 200 and r.json()["ok"] is True, r.text
    for key in ("acme-staff-key", "globex-user-key"):        # not in the tool's groups / tenant
        assert client.post("/v1/resolve", json=cited, headers=auth(key)).json()["reason"] == "unavailable"
    tool_server.orders["C-1001"]["23456"]["status"] = "lost"
    try:
        res = client.post("/v1/resolve", json=cited, headers=auth("acme-customer-key")).json()
        assert res["reason"] == "source_changed" and "Order 23456: lost" in res["detail"]
    finally:
        tool_server.orders["C-1001"]["23456"]["status"] = "delivered"
    extra = client.post("/v1/resolve", json={**cited, "score": 1}, headers=auth("acme-customer-key"))
    assert extra.status_code == 422
    bad = client.post("/v1/resolve", json={**cited, "parameters": {"order_id": "1/../2"}},
                      headers=auth("acme-customer-key"))
    assert bad.status_code == 422
    # A JWT's mapped claim is the caller's verified customer id.
    now = int(time.time())
    token = jwt.encode({"iss": JWT_ISSUER, "exp": now + 300, "sub": "u7", "tenant": "acme",
                        "groups": ["customers"], "cid": "C-1001"}, JWT_SECRET, algorithm="HS256")
    assert client.post("/v1/resolve", json=cited, headers=auth(token)).json()["ok"] is True
    other = jwt.encode({"iss": JWT_ISSUER, "exp": now + 300, "sub": "u8", "tenant": "acme",
                        "groups": ["customers"], "cid": "C-2002"}, JWT_SECRET, algorithm="HS256")
    assert client.post("/v1/resolve", json=cited, headers=auth(other)).json()["reason"] == "unavailable"
    # A passage citation still resolves with its kind, and without it.
    hit = client.post("/v1/search", json={"query": "return", "mode": "keyword"},
                      headers=auth("acme-customer-key")).json()["hits"][0]
    citation = {k: v for k, v in hit.items() if k not in ("score", "rank", "language", "page", "flags")}
    assert citation["kind"] == "passage"
    for c in (citation, {k: v for k, v in citation.items() if k != "kind"}):
        assert client.post("/v1/resolve", json=c, headers=auth("acme-customer-key")).json()["ok"] is True


def test_the_service_log_never_holds_the_credential(service: dict[str, Any], client: httpx.Client) -> None:
    client.post("/v1/tools/orders-html/call", json={"parameters": {"order_id": "12345"}},
                headers=auth("acme-admin-key"))
    logs = service["server"].logs()
    assert "/v1/tools" in logs and SECRET not in logs


# -- configuration file ------------------------------------------------------------------------------
def test_tool_mistakes_name_file_and_line(tmp_path: Path, tool_server: ToolServer) -> None:
    good = full_config(tmp_path / "good.yaml", tool_server)
    assert [t.id for t in load_config(good).tools] == ["orders-ok", "orders-html"]
    base = yaml.safe_load(good.read_text(encoding="utf-8"))

    def tool0(**change: Any) -> Any:
        def edit(d: dict[str, Any]) -> None:
            d["tools"][0].update(change)
        return edit

    def caller(d: dict[str, Any]) -> None:
        d["tools"][0]["parameters"]["customer_id"] = {"from": "question", "pattern": "C-\\d+"}

    def no_source(d: dict[str, Any]) -> None:
        del d["tools"][0]["parameters"]["order_id"]["from"]

    def twice(d: dict[str, Any]) -> None:
        d["tools"][1]["id"] = "orders-ok"

    def no_hosts(d: dict[str, Any]) -> None:
        del d["server"]["tool_hosts"]

    def bad_claim(d: dict[str, Any]) -> None:
        d["server"]["api_keys"][0]["claims"] = {"customer id": "C-1"}

    # (edit, expected key and message, a word on the line the error names)
    cases = {
        "host": (tool0(url="http://evil.example/ok/{customer_id}/{order_id}"),
                 "tools[0].url: the host http://evil.example is not in server.tool_hosts", "url:"),
        "method": (tool0(method="POST"), "tools[0].method: Input should be 'GET'", "method:"),
        "source": (no_source, "tools[0].parameters.order_id.from: required key is missing", "order_id:"),
        "caller": (caller, "tools[0].parameters: parameter 'customer_id' names the caller", "parameters:"),
        "unknown": (tool0(verb="GET"), "tools[0].verb: unknown key", "verb:"),
        "twice": (twice, "tools: tool id 'orders-ok' is used twice", "tools:"),
        "no hosts": (no_hosts, "tools[0].url: the host http://127.0.0.1", "url:"),
        "claims": (bad_claim, "server.api_keys[0].claims: claim name 'customer id'", "claims:"),
    }
    for name, (edit, message, word) in cases.items():
        data = yaml.safe_load(yaml.safe_dump(base))
        edit(data)
        path = tmp_path / f"{name.replace(' ', '-')}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        with pytest.raises(ConfigError) as info:
            load_config(path)
        first = str(info.value).splitlines()[0]
        where, _, rest = first.partition(": ")
        file, line = where.rsplit(":", 1)
        assert file == str(path) and rest.startswith(message), (name, first)
        assert word in path.read_text(encoding="utf-8").splitlines()[int(line) - 1], (name, first)


# -- CLI -----------------------------------------------------------------------------------------------
def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env=clean_env(**{TOKEN_ENV: SECRET, **(env or {})}))


def test_cli_tools_list_and_call(tmp_path: Path, tool_server: ToolServer) -> None:
    config = str(full_config(tmp_path / "config.yaml", tool_server))
    listed = run("--config", config, "tools", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [t["id"] for t in json.loads(listed.stdout)["tools"]] == ["orders-ok", "orders-html"]
    ok = run("--config", config, "tools", "call", "orders-ok", "--param", "order_id=12345",
             "--claim", "customer_id=C-1001", "--json")
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    assert data["status"] == "ok" and data["citation"]["parameters"] == {"order_id": "12345"}
    assert tool_server.paths()[-1] == "/ok/C-1001/12345"
    human = run("--config", config, "tools", "call", "orders-ok", "--param", "order_id=12345",
                "--claim", "customer_id=C-1001")
    assert human.stdout.startswith("Order 12345: shipped, expected delivery 2026-12-03.\n")
    no_claim = run("--config", config, "tools", "call", "orders-ok", "--param", "order_id=12345")
    assert no_claim.returncode == 1 and no_claim.stdout.startswith("needs_claim: ")
    failed = run("--config", config, "tools", "call", "orders-html", "--param", "order_id=12345",
                 "--claim", "customer_id=C-1001")
    assert failed.returncode == 1 and "not JSON" in failed.stdout
    for args, message in [
        (["--param", "order_id=12345/../admin"], "does not match its pattern"),
        (["--param", "order_id"], "--param takes NAME=VALUE"),
        (["--param", "customer_id=C-2002", "--param", "order_id=12345"], "verified identity"),
    ]:
        r = run("--config", config, "tools", "call", "orders-ok", *args)
        usage = "NAME=VALUE" in message  # called wrongly: exit status 2, as every usage error
        assert r.returncode == (2 if usage else 1), r.stderr
        assert r.stderr.startswith("error: ") and message in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    assert "no tool 'nope'" in run("--config", config, "tools", "call", "nope").stderr
    assert "give --config" in run("tools", "list").stderr
    unset = run("--config", config, "tools", "call", "orders-ok", "--param", "order_id=12345",
                "--claim", "customer_id=C-1001", env={TOKEN_ENV: ""})
    assert unset.returncode == 1 and TOKEN_ENV in unset.stdout
    everything = listed.stdout + ok.stdout + human.stdout + failed.stdout + no_claim.stdout + unset.stdout
    assert SECRET not in everything + listed.stderr + ok.stderr


def test_demo_key_carries_the_customer_claim() -> None:
    cfg = load_config(Path(__file__).resolve().parents[2] / "examples" / "knowledge.config.yaml")
    assert cfg.server is not None
    customer = next(k for k in cfg.server.api_keys if k.key_sha256 == sha("evidex-demo-customer"))
    assert customer.claims == {"customer_id": "C-1001"}
    assert [t.id for t in cfg.tools] == ["order-status", "stock"]


# -- the bundled example ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """examples/tools_service.py on a free port, and the demo configuration pointing at it."""
    import os
    import sys

    from service_helpers import EXAMPLES, free_port

    tmp = tmp_path_factory.mktemp("demo")
    port = free_port()
    env = {**os.environ, "ACME_TOOLS_TOKEN": "demo-token-for-tests"}
    proc = subprocess.Popen([sys.executable, str(EXAMPLES / "tools_service.py"), "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300  # a hang guard: start-up is slow on a busy machine
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the example tools service did not start") from None
                time.sleep(0.1)
        text = (EXAMPLES / "knowledge.config.yaml").read_text(encoding="utf-8")
        config = tmp / "knowledge.config.yaml"
        config.write_text(text.replace("127.0.0.1:8081", f"127.0.0.1:{port}"), encoding="utf-8")
        yield config, {"ACME_TOOLS_TOKEN": "demo-token-for-tests"}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_example_tools_serve_the_evaluation_sets_live_cases(demo: tuple[Path, dict[str, str]]) -> None:
    from evidex import Actor
    from evidex.tools import Toolbox
    from service_helpers import EXAMPLES

    config, env = demo
    cases = yaml.safe_load((EXAMPLES / "eval" / "cases.yaml").read_text(encoding="utf-8"))
    actors = {name: Actor(a["tenant"], frozenset(a["groups"]), visibilities=frozenset(a["visibilities"]),
                          claims=a.get("claims") or {}) for name, a in cases["actors"].items()}
    live = [c for c in cases["cases"] if c["type"] == "live"]
    assert len(live) == 6
    box = Toolbox(load_config(config).tools, environ=env)
    try:
        for case in live:
            actor = actors[case.get("as", cases["defaults"]["as"])]
            found = box.start(box.asked(actor, case["question"])).wait()
            assert [(s.tool, s.status) for s in found] == [(case["expect"]["tool"], "ok")], case["id"]
            assert found[0].citation and found[0].citation["kind"] == "live"
        asked = box.start(box.asked(actors["guest"], "Where is my order AO-2604117?")).wait()
        assert [s.status for s in asked] == ["needs_claim"]
        src = box.start(box.asked(actors["customer"], "Where is my order 12345?")).wait()[0]
        assert src.quote == "Order 12345: shipped, expected delivery 2026-12-03."
        other = box.start(box.asked(actors["customer"], "Where is my order AO-2609001?")).wait()[0]
        assert other.status == "failed" and "404" in other.detail     # another customer's order
        stock = box.start(box.asked(actors["customer"], "Is JK-1107 in size L in stock in Hamburg?")).wait()
        assert stock[0].quote == "Stormline 3L Jacket, men (JK-1107), size L, Hamburg store: 3 in stock."
        # Questions about the policies do not ask for a lookup.
        for q in ("How long will the store hold my click and collect order?",
                  "Can I check whether a store has an item in stock?", "How do I cancel an order?"):
            assert box.asked(actors["customer"], q) == [], q
    finally:
        box.close()
    wrong = Toolbox(load_config(config).tools, environ={"ACME_TOOLS_TOKEN": "wrong"})
    assert wrong.call(actors["customer"], "stock", {"product": "JK-1107"}).detail == \
        "the service answered HTTP 401"
    wrong.close()


# -- answers everywhere: HTTP, MCP, CLI, the web page ----------------------------------------------------
def test_http_answers_cite_the_lookup(client: httpx.Client, service: dict[str, Any]) -> None:
    r = client.post("/v1/answer", json={"question": "Where is my order 12345?"},
                    headers=auth("acme-customer-key"))
    assert r.status_code == 200, r.text
    ans = r.json()
    assert ans["status"] == "answered" and ans["text"].startswith(
        "Order 12345: shipped, expected delivery 2026-12-03. [1]")
    live = ans["citations"][0]
    assert live["kind"] == "live" and live["tool"] == "orders-ok" and live["n"] == 1
    assert client.post("/v1/resolve", json={k: v for k, v in live.items() if k != "n"},
                       headers=auth("acme-customer-key")).json()["ok"] is True
    # A JWT without the mapped claim: the lookup needs a signed-in customer.
    token = jwt.encode({"iss": JWT_ISSUER, "exp": int(time.time()) + 300, "sub": "u9", "tenant": "acme",
                        "groups": ["customers"]}, JWT_SECRET, algorithm="HS256")
    declined = client.post("/v1/answer", json={"question": "Where is my order 12345?"},
                           headers=auth(token)).json()
    assert (declined["status"], declined["reason"]) == ("declined", "tool_needs_sign_in")
    # Staff are not in the tool's groups: for them the question asks for no lookup.
    staff = client.post("/v1/answer", json={"question": "Where is my order 12345?"},
                        headers=auth("acme-staff-key")).json()
    assert all(c.get("kind") == "passage" for c in staff["citations"])
    assert SECRET not in service["server"].logs() + r.text


def _mcp_answer(db: Path, config: Path, cache: Path, key: str, question: str) -> dict[str, Any]:
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=EVIDEX, args=["--db", str(db), "mcp", "--config", str(config)],
        env={"EVIDEX_API_KEY": key, "EVIDEX_CACHE_DIR": str(cache), TOKEN_ENV: SECRET})

    async def go() -> dict[str, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            res = await session.call_tool("answer", {"question": question})
            assert not res.is_error, res.content
            assert res.structured_content is not None
            ans = dict(res.structured_content)
            # Each citation resolves through MCP too (a live one by looking up again, as the key).
            ans["resolved"] = []
            answer_only = {"n", "sentence_start", "sentence_end"}  # as the tool's description says
            for c in ans.get("citations", []):
                got = await session.call_tool("resolve", {k: v for k, v in c.items()
                                                          if k not in answer_only})
                assert not got.is_error, got.content
                ans["resolved"].append(dict(got.structured_content or {}))
            return ans

    return anyio.run(go)


def test_mcp_answers_cite_the_lookup(service: dict[str, Any]) -> None:
    ans = _mcp_answer(service["db"], service["config"], service["tmp"] / "cache", "acme-customer-key",
                      "Where is my order 12345?")
    assert ans["status"] == "answered" and ans["citations"][0]["kind"] == "live"
    assert ans["citations"][0]["quote"] == "Order 12345: shipped, expected delivery 2026-12-03."
    assert ans["resolved"] and all(r["ok"] for r in ans["resolved"]), ans["resolved"]


def test_cli_ask_with_a_claim(service: dict[str, Any]) -> None:
    base = ["--db", str(service["db"]), "--config", str(service["config"]), "ask",
            "Where is my order 12345?", "--tenant", "acme", "--groups", "customers",
            "--visibilities", "public"]
    env = {"EVIDEX_CACHE_DIR": str(service["tmp"] / "cache")}
    r = run(*base, "--claim", "customer_id=C-1001", "--json", env=env)
    assert r.returncode == 0, r.stderr
    ans = json.loads(r.stdout)
    assert ans["citations"][0]["kind"] == "live"
    human = run(*base, "--claim", "customer_id=C-1001", env=env)
    assert human.stdout.startswith("Order 12345: shipped, expected delivery 2026-12-03. [1]")
    assert "  [1] live lookup orders-ok at " in human.stdout
    guest = run(*base, env=env)
    assert "the lookup needs a signed-in customer" in guest.stdout
    assert "reason: tool_needs_sign_in" in guest.stdout
    bad = run(*base, "--claim", "customer_id", env=env)
    assert bad.returncode == 2 and bad.stderr.startswith("error: --claim takes NAME=VALUE")


def test_the_page_shows_a_live_lookup(service: dict[str, Any]) -> None:
    from playwright.sync_api import sync_playwright

    from service_helpers import ROOT

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                    args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(service["url"] + "/")
        page.fill("#api-key", "acme-customer-key")
        page.keyboard.press("Enter")
        page.wait_for_selector("#app:not([hidden])")
        page.fill("#question", "Where is my order 12345?")
        page.keyboard.press("Enter")
        page.wait_for_selector("#answer [data-status]")
        assert page.inner_text("#answer .answer-text").startswith("Order 12345: shipped")
        assert "live lookup" in page.inner_text("#answer .sources")
        page.locator("#answer .answer-text .chip").first.click()
        page.wait_for_selector("#resolve-badge[data-state]")
        meta = page.inner_text("#passage dl")
        assert "live lookup" in meta and "Fetched" in meta and "order_id = 12345" in meta
        assert "Version" not in meta and "C-1001" not in meta
        assert page.inner_text("#resolve-badge") == "current"
        assert page.inner_text(".section-text") == "Order 12345: shipped, expected delivery 2026-12-03."
        (ROOT / "test-artifacts").mkdir(exist_ok=True)
        page.screenshot(path=str(ROOT / "test-artifacts" / "answer-with-live-lookup.png"), full_page=True)
        # A failed lookup: the reason and the handoff, no chips.
        page.fill("#question", "Where is my parcel 12345?")
        page.keyboard.press("Enter")
        page.wait_for_selector("#answer .declined")
        assert "did not give a usable answer" in page.inner_text("#answer .declined")
        assert page.locator("#answer .chip").count() == 0
        browser.close()
        assert errors == []


def test_evidex_eval_runs_the_live_cases_against_the_example_tools(
        demo: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """`evidex eval --cases` with a configuration's tools: the six live cases are run, not
    skipped, and each answer cites its lookup; the report names the tools it had."""
    from evidex.evaluation import evaluate_cases
    from service_helpers import EXAMPLES

    config, env = demo
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    report = evaluate_cases(EXAMPLES / "eval" / "cases.yaml", types=("live",), embedder="hash-test",
                            tools=load_config(config).tools, root=EXAMPLES)
    live = report["types"]["live"]
    assert (live["cases"], live["skipped"], live["passed"]) == (6, 0, 6), report["cases"]
    assert report["live_tools"] == ["order-status", "stock"]
    assert report["totals"]["invalid_citations"] == 0 and report["totals"]["access_violations"] == 0
