"""Answer feedback through a real ``evidex serve`` on real SQLite: ``POST /v1/feedback`` rates the
caller's own answers only, ``GET /v1/feedback`` shows an admin its tenant's only, and
``evidex feedback export`` writes a draft that ``evidex eval --cases`` loads and runs unchanged."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from cli_runner import run_cli
from evidex import KnowledgeBase
from evidex.evaluation import load_cases
from evidex.store import HandoffRecord
from service_helpers import BIN, EXAMPLES, Server, auth, build_store, write_config

ANSWERED = "Can I return a worn jacket?"
DECLINED = "What is the boiling point of mercury on Mars?"
#: The limits docs/operating.md states: a note of at most 1,000 characters, 120 ratings an hour per key.
MAX_NOTE_CHARS = 1000
PER_KEY_PER_HOUR = 120


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("feedback")
    db = tmp / "kb.db"
    build_store(db, tmp / "cache")
    config = write_config(tmp / "config.yaml", rate_limit_per_minute=100_000)
    # The answers below must not depend on the machine's load: a vector-leg deadline it never misses.
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["retrieval"] = {"vector": {"timeout_ms": 600_000}}
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    server = Server([str(BIN / "evidex"), "--db", str(db), "serve", "--config", str(config)],
                    {"EVIDEX_CACHE_DIR": str(tmp / "cache")}, tmp / "serve.log")
    try:
        with httpx.Client(base_url=server.url, timeout=300) as c:
            yield {"c": c, "db": db, "tmp": tmp, "cache": tmp / "cache"}
    finally:
        server.stop()


def _ask(c: httpx.Client, key: str, question: str) -> dict[str, Any]:
    r = c.post("/v1/answer", json={"question": question}, headers=auth(key))
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def _rate(c: httpx.Client, key: str, trace_id: str, rating: str, note: str | None = None) -> httpx.Response:
    body: dict[str, Any] = {"trace_id": trace_id, "rating": rating}
    if note is not None:
        body["note"] = note
    return c.post("/v1/feedback", json=body, headers=auth(key))


def test_feedback_is_the_askers_and_stays_in_its_tenant(service: dict[str, Any]) -> None:
    c = service["c"]
    answered = _ask(c, "acme-customer-key", ANSWERED)
    assert answered["status"] == "answered" and len(answered["trace_id"]) == 32
    declined = _ask(c, "acme-customer-key", DECLINED)
    assert declined["status"] == "declined"
    globex = _ask(c, "globex-user-key", "Can zebra widgets be returned?")
    r = _rate(c, "acme-customer-key", answered["trace_id"], "helpful")
    assert r.status_code == 200 and r.json() == {"trace_id": answered["trace_id"], "rating": "helpful",
                                                 "recorded": True}
    assert _rate(c, "acme-customer-key", declined["trace_id"], "not_helpful",
                 "I wanted the <b>real</b> figure").status_code == 200
    assert _rate(c, "globex-user-key", globex["trace_id"], "not_helpful", "globex only").status_code == 200
    # Another key of the same tenant, or of another tenant, cannot rate the answer: the same 404.
    for key in ("acme-staff-key", "globex-user-key", "acme-admin-key"):
        r = _rate(c, key, answered["trace_id"], "not_helpful")
        assert r.status_code == 404, key
        assert r.json() == {"detail": "no answer with this trace id was given to this key"}
    listed = c.get("/v1/feedback", headers=auth("acme-admin-key")).json()["feedback"]
    assert {f["trace_id"] for f in listed} == {answered["trace_id"], declined["trace_id"]}
    mine = next(f for f in listed if f["trace_id"] == answered["trace_id"])
    assert mine["rating"] == "helpful" and mine["answer"]["question"] == ANSWERED
    assert mine["answer"]["cited"] and "quote" not in mine["answer"]["cited"][0]
    other = c.get("/v1/feedback", headers=auth("globex-admin-key")).json()["feedback"]
    assert [f["trace_id"] for f in other] == [globex["trace_id"]]
    assert c.get("/v1/feedback", headers=auth("acme-customer-key")).status_code == 403
    # Rating again replaces the rating.
    assert _rate(c, "acme-customer-key", answered["trace_id"], "helpful", "clear").status_code == 200
    again = c.get("/v1/feedback", headers=auth("acme-admin-key")).json()["feedback"]
    assert [f["note"] for f in again if f["trace_id"] == answered["trace_id"]] == ["clear"]
    service["traces"] = {"answered": answered["trace_id"], "declined": declined["trace_id"],
                         "globex": globex["trace_id"]}


def test_bad_feedback_gets_a_clear_4xx(service: dict[str, Any]) -> None:
    c = service["c"]
    trace = _ask(c, "acme-staff-key", ANSWERED)["trace_id"]
    r = _rate(c, "acme-staff-key", trace, "helpful", "x" * (MAX_NOTE_CHARS + 1))
    assert r.status_code == 422
    [problem] = r.json()["detail"]
    assert problem["loc"] == ["body", "note"] and str(MAX_NOTE_CHARS) in problem["msg"]
    assert _rate(c, "acme-staff-key", "0" * 32, "helpful").status_code == 404
    r = _rate(c, "acme-staff-key", "not-a-trace", "helpful")
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "trace_id"]
    r = _rate(c, "acme-staff-key", trace, "great")
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "rating"]
    r = c.post("/v1/feedback", json={"trace_id": trace, "rating": "helpful", "tenant": "globex"},
               headers=auth("acme-staff-key"))
    assert r.status_code == 422 and r.json()["detail"][0]["type"] == "extra_forbidden"
    assert c.post("/v1/feedback", json={"trace_id": trace, "rating": "helpful"}).status_code == 401
    r = c.get("/v1/feedback", params={"since": "yesterday"}, headers=auth("acme-admin-key"))
    assert r.status_code == 422 and r.json()["detail"].startswith("since must be an ISO 8601 date")


def test_feedback_export_round_trips_into_eval(service: dict[str, Any]) -> None:
    traces = service.get("traces")
    assert traces, "runs after test_feedback_is_the_askers_and_stays_in_its_tenant"
    tmp: Path = service["tmp"]
    c = service["c"]
    staff = _ask(c, "acme-staff-key", ANSWERED)["trace_id"]
    assert _rate(c, "acme-staff-key", staff, "not_helpful", "too long").status_code == 200
    # A declined answer later handed off (and rated not helpful): nothing related to expect, so
    # it is kept as a comment, not dropped.
    kb = KnowledgeBase.open(service["db"])
    [declined] = kb.store.answer_records("acme", trace_id=traces["declined"])
    kb.store.record_handoff(HandoffRecord("acme", "H-1", declined.caller, DECLINED, True,
                                          "2026-12-07T12:00:00+00:00", (traces["declined"],)))
    kb.close()
    folder = tmp / "drafts"
    shutil.copytree(EXAMPLES / "collection", folder / "collection")
    out = folder / "feedback.yaml"
    env_db = service["db"]
    r = run_cli("feedback", "export", "--since", "2000-01-01", "--tenant", "acme", "--ingest", "collection",
                "--out", out, db=env_db)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"wrote {out}: 1 helpful, 1 to-label, 0 candidate, 1 commented\n"
    text = out.read_text(encoding="utf-8")
    assert "globex" not in text and "zebra" not in text  # no other tenant's feedback
    data = yaml.safe_load(text)
    by_trace = {c["note"].split("trace ")[1][:32]: c for c in data["cases"]}
    helpful = by_trace[traces["answered"]]
    assert helpful["type"] == "answerable" and helpful["category"] == "feedback-helpful"
    assert "returns-faq" in helpful["expect"]["documents"] and helpful["question"] == ANSWERED
    labelled = by_trace[staff]
    assert labelled["category"] == "feedback-to-label" and labelled["type"] == "unanswerable"
    assert "too long" in labelled["note"] and labelled["as"] == "asker2"
    assert f"# {traces['declined']}" in text and DECLINED in text.split("# Not written as cases:")[1]
    assert data["actors"] == {
        "asker1": {"tenant": "acme", "groups": ["customers"], "visibilities": ["public"]},
        "asker2": {"tenant": "acme", "groups": ["staff"], "visibilities": ["internal", "public"]}}
    loaded = load_cases(out)  # as written, no edit
    assert len(loaded.cases) == len(data["cases"])
    run = run_cli("eval", "--cases", out, "--json", db=None, env=None, timeout=600)
    assert run.returncode in (0, 1), run.stderr  # 1: the draft's own gate; it ran every case
    assert '"cases"' in run.stdout
    # --like: the shipped set's collection (HTML, PDF and Word files take their groups and
    # visibility from it), rebased on where the drafts are written; it loads as written.
    like = folder / "like.yaml"
    r = run_cli("feedback", "export", "--since", "2000-01-01", "--tenant", "acme", "--like",
                EXAMPLES / "eval" / "cases.yaml", "--out", like, db=env_db)
    assert r.returncode == 0, r.stderr
    [site] = [e for e in yaml.safe_load(like.read_text(encoding="utf-8"))["collection"]["ingest"]
              if e["path"].endswith("shop/site")]
    assert site["groups"] == ["customers", "staff"] and site["visibility"] == "public"
    assert (like.parent / site["path"]).resolve() == (EXAMPLES / "shop" / "site").resolve()
    assert [e.path for e in load_cases(like, root="/").collection] == [  # acme's folders only
        e.path for e in load_cases(EXAMPLES / "eval" / "cases.yaml", root=EXAMPLES).collection
        if e.tenant == "acme"]
    assert "other-tenant" not in like.read_text(encoding="utf-8")
    both = run_cli("feedback", "export", "--since", "2000-01-01", "--tenant", "acme", "--like", like,
                   "--ingest", "collection", "--out", like, db=env_db)
    assert both.returncode != 0 and "not both" in both.stderr
    # Nothing to export is said in one line, as is a bad date.
    r = run_cli("feedback", "export", "--since", "2999-01-01", "--tenant", "acme", "--ingest", "collection",
                "--out", folder / "none.yaml", db=env_db)
    assert r.returncode == 1 and r.stderr.startswith("error: no feedback or handoff since 2999-01-01")
    r = run_cli("feedback", "export", "--since", "last week", "--tenant", "acme", "--ingest", "collection",
                "--out", folder / "none.yaml", db=env_db)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "ISO 8601" in r.stderr


def test_feedback_is_rate_limited_per_key(service: dict[str, Any]) -> None:
    c = service["c"]
    trace = _ask(c, "globex-admin-key", "Can zebra widgets be returned?")["trace_id"]
    codes = [_rate(c, "globex-admin-key", trace, "helpful").status_code for _ in range(PER_KEY_PER_HOUR)]
    assert codes == [200] * PER_KEY_PER_HOUR
    r = _rate(c, "globex-admin-key", trace, "helpful")
    assert r.status_code == 429 and int(r.headers["retry-after"]) > 0
    assert _rate(c, "acme-customer-key", service["traces"]["answered"], "helpful").status_code == 200
