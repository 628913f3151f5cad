"""`evidex mcp` over stdio with the official MCP client: tools, validation, identity from config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from cli_runner import run_cli
from evidex import KnowledgeBase
from service_helpers import BIN, build_store, write_config


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("mcp")
    db = tmp / "kb.db"
    build_store(db, tmp / "cache")
    return {"db": db, "config": write_config(tmp / "config.yaml"), "cache": tmp / "cache"}


def run_session(setup: dict[str, Path], key: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    params = StdioServerParameters(
        command=str(BIN / "evidex"), args=["--db", str(setup["db"]), "mcp", "--config", str(setup["config"])],
        env={"EVIDEX_API_KEY": key, "EVIDEX_CACHE_DIR": str(setup["cache"])})

    async def go() -> dict[str, Any]:
        out: dict[str, Any] = {"results": []}
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            out["tools"] = {t.name: t.input_schema for t in tools.tools}
            for name, args in calls:
                res = await session.call_tool(name, args)
                text = res.content[0].text if res.content else ""
                out["results"].append({"error": res.is_error, "text": text,
                                       "data": res.structured_content})
        return out

    return anyio.run(go)


def test_tools_answer_search_and_resolve_as_the_configured_key(setup: dict[str, Path]) -> None:
    out = run_session(setup, "acme-customer-key", [
        ("search", {"query": "return worn clothing", "mode": "keyword", "top_k": 3}),
        ("answer", {"question": "Can I return a worn jacket?"}),
        ("search", {"query": "zebra widgets", "mode": "keyword"}),
        ("search", {"query": "Einzelzimmer", "mode": "keyword"}),
    ])
    assert set(out["tools"]) == {"search", "resolve", "answer", "feedback"}
    assert out["tools"]["search"]["additionalProperties"] is False
    search, answer, other_tenant, internal = out["results"]
    assert not search["error"] and search["data"]["hits"][0]["document_id"] == "returns-faq"
    assert json.loads(search["text"]) == search["data"]
    assert answer["data"]["status"] == "answered" and answer["data"]["citations"]
    assert other_tenant["data"]["hits"] == []  # globex's documents
    assert internal["data"]["hits"] == []  # internal policy: not for the customer key
    # resolve, in a second session: the citation from the answer holds for this key only.
    citation = {k: v for k, v in answer["data"]["citations"][0].items()
                if k not in ("n", "sentence_start", "sentence_end")}
    again = run_session(setup, "acme-customer-key", [("resolve", citation)])
    assert again["results"][0]["data"]["ok"] is True
    other = run_session(setup, "globex-user-key", [("resolve", citation)])
    assert other["results"][0]["data"]["ok"] is False


def test_tool_arguments_cannot_carry_identity_and_are_validated(setup: dict[str, Path]) -> None:
    out = run_session(setup, "acme-customer-key", [
        ("search", {"query": "salary", "tenant": "globex"}),
        ("search", {"query": "salary", "groups": ["hr"], "visibilities": ["confidential"]}),
        ("search", {"query": "x", "top_k": 500}),
        ("search", {"query": "\x00bad"}),
        ("answer", {}),
        ("nope", {}),
        ("answer", {"question": " ?! "}),  # no words: a mistake, not a decline offering a person
    ])
    msgs = [r["text"] for r in out["results"]]
    assert all(r["error"] for r in out["results"]), msgs
    assert "tenant" in msgs[0] and "Extra inputs are not permitted" in msgs[0]
    assert "groups" in msgs[1]
    assert "top_k" in msgs[2]
    assert "control" in msgs[3] or "character" in msgs[3]
    assert "question" in msgs[4]
    assert "unknown tool" in msgs[5]
    assert "no words" in msgs[6]


def test_mcp_needs_a_configured_key(setup: dict[str, Path]) -> None:
    for env in ({}, {"EVIDEX_API_KEY": "not-configured"}):
        r = run_cli("mcp", "--config", setup["config"], db=setup["db"], env={"PATH": "/usr/bin:/bin", **env},
                    timeout=60)
        assert r.returncode == 1
        assert "EVIDEX_API_KEY" in r.stderr
    # The store is untouched by failed starts.
    kb = KnowledgeBase.open(setup["db"], embed_cache=setup["cache"] / "embeddings.sqlite")
    assert kb.stats()["documents"] > 0
    kb.close()


def test_feedback_tool_rates_the_keys_own_answers(setup: dict[str, Path]) -> None:
    """The answer tool returns a trace id and records the answer; the feedback tool rates it,
    and refuses a trace id no answer of this key has, with one line."""
    params = StdioServerParameters(
        command=str(BIN / "evidex"), args=["--db", str(setup["db"]), "mcp", "--config", str(setup["config"])],
        env={"EVIDEX_API_KEY": "acme-customer-key", "EVIDEX_CACHE_DIR": str(setup["cache"])})

    async def go() -> list[Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            answer = await session.call_tool("answer", {"question": "Can I return a worn jacket?"})
            trace = answer.structured_content["trace_id"]
            rated = await session.call_tool("feedback", {"trace_id": trace, "rating": "not_helpful",
                                                         "note": "quoted the wrong section"})
            unknown = await session.call_tool("feedback", {"trace_id": "0" * 32, "rating": "helpful"})
            bad = await session.call_tool("feedback", {"trace_id": trace, "rating": "helpful",
                                                       "note": "x" * 1001})
            return [trace, rated, unknown, bad]

    trace, rated, unknown, bad = anyio.run(go)
    assert not rated.is_error and rated.structured_content == {"trace_id": trace, "rating": "not_helpful",
                                                               "recorded": True}
    assert unknown.is_error
    assert unknown.content[0].text == "no answer with this trace id was given to this key"
    assert bad.is_error and bad.content[0].text.startswith("invalid arguments: note:")
    kb = KnowledgeBase.open(setup["db"])
    try:
        [given] = kb.store.feedback("acme")
        assert (given.trace_id, given.rating) == (trace, "not_helpful")
        assert given.note == "quoted the wrong section"
    finally:
        kb.close()

