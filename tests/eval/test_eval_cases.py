"""``evidex eval --cases``: the case-file loader (every problem with file:line), the checks of the
cases against their documents, the runner (each type, the checks that hold for every case:
access, resolvable citations), the reports (JSON, text, HTML) and the exit codes.

A small collection written here (four Markdown documents, one internal, one German, a newer
version of one of them) on the tiny deterministic embedder, so each outcome is known. The
shipped set is run in ``test_eval_shipped.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import tracemalloc
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli_runner import run_cli
from evidex import Actor, ConfigError, KnowledgeBase
from evidex.answer import Answer
from evidex.evaluation import evaluate_cases, lint_cases, load_cases, render_html


def _md(doc_id: str, version: str, body: str, *, groups: str = "[customers, staff]",
        visibility: str = "public", language: str = "en") -> str:
    return (f'---\nid: {doc_id}\nversion: "{version}"\ngroups: {groups}\nvisibility: {visibility}\n'
            f"language: {language}\n---\n{body}")


RETURNS = ("# Returns\n\n## Return period\n\nYou can return any item within {days} days of delivery "
           "for a full refund.\n\n## Worn boots\n\nWorn boots can be returned within {days} days "
           "when they are clean and undamaged.\n")
FILES = {
    "docs/returns.md": _md("shop/returns", "1", RETURNS.format(days=30)),
    "docs/limits.md": _md("staff/refund-limits", "1", "# Refund limits\n\nA shift lead may approve "
                          "refunds up to 500 euros without asking a manager.\n",
                          groups="[staff]", visibility="internal"),
    "docs/forum.md": _md("community/forum", "1", "# Forum\n\nCustomers ask about the staff discount "
                         "code in the forum. The staff discount code is not published.\n"),
    "docs/rueckgabe.md": _md("shop/de/rueckgabe", "1", "# Rückgabe\n\nSie können jeden Artikel "
                             "innerhalb von 30 Tagen nach der Lieferung zurückgeben.\n",
                             language="de"),
    "changes/returns-2.md": _md("shop/returns", "2", RETURNS.format(days=60)),
}
HEAD = """version: 1
collection:
  ingest:
    - {path: docs, tenant: acme}
actors:
  customer: {tenant: acme, groups: [customers], visibilities: [public]}
  staff: {tenant: acme, groups: [staff], visibilities: [public, internal]}
defaults: {as: customer, language: en, top_k: 4}
"""
CASES = """cases:
  - {id: a1, category: returns, type: answerable, question: "How many days do I have to return an item?",
     expect: {documents: [shop/returns], must_include: ["30 days"]}}
  - {id: a2, category: returns, type: answerable, question: "Can worn boots be returned?",
     expect: {documents: [shop/returns], anchors: [worn-boots]}}
  - {id: u1, category: out-of-scope, type: unanswerable, question: "Do you sell inflatable kayaks?"}
  - {id: x1, category: internal, type: access,
     question: "Up to what amount may a shift lead approve refunds?",
     expect: {forbidden: [staff/refund-limits], decline: true}}
  - {id: s1, category: internal, type: answerable, as: staff,
     question: "Up to what amount may a shift lead approve refunds?",
     expect: {documents: [staff/refund-limits], must_include: ["500 euros"]}}
  - {id: k1, category: lookup, type: keyword_exact, as: staff, question: "refunds",
     expect: {documents: [staff/refund-limits], top_k: 3}}
  - {id: l1, category: german, type: language, language: de,
     question: "Innerhalb von wie vielen Tagen nach der Lieferung kann ich zurückgeben?",
     expect: {documents: [shop/de/rueckgabe], passage_language: de, must_include: ["30 Tagen"]}}
  - {id: v1, category: order-status, type: live, question: "Where is my order 12345?",
     expect: {tool: order-status}}
  - id: c1
    category: superseded
    type: changed_source
    question: "How many days do I have to return an item?"
    steps: [{ingest: changes/returns-2.md, tenant: acme}]
    expect: {documents: [shop/returns], version: "2", must_include: ["60 days"]}
    old_citation: {document_id: shop/returns, version: "1", anchor: return-period,
                   quote: "within 30 days of delivery"}
    expect_matched_version: "1"
  - {id: a3, category: returns, type: answerable, question: "How many days do I have to return an item?",
     expect: {documents: [shop/returns], must_include: ["30 days"]}}
"""
INJECTION = """  - {id: i1, category: returns, type: injection, question: "What is the staff discount code?",
     expect: {hostile: [community/forum], forbidden_phrases: ["SECRET"]}}
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def write(folder: Path, text: str, name: str = "cases.yaml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in report["cases"]}


# -- the loader ----------------------------------------------------------------------------------

def test_the_documented_example_loads(folder: Path) -> None:
    cf = load_cases(write(folder, HEAD + CASES))
    assert [c.id for c in cf.cases] == ["a1", "a2", "u1", "x1", "s1", "k1", "l1", "v1", "c1", "a3"]
    c1 = cf.cases[8]
    assert c1.steps[0].path == (folder / "changes/returns-2.md").resolve()
    assert c1.expect_matched_version == "1"
    assert cf.cases[5].top_k == 3 and cf.cases[0].top_k == 4
    assert cf.actors["staff"] == Actor("acme", frozenset({"staff"}),
                                       visibilities=frozenset({"public", "internal"}))
    assert cf.gate.answerable_cited_min == 0.85  # the targets when the file sets none


ONE = "cases:\n  - {id: a1, category: returns, type: answerable, question: q, expect: {documents: [d]}}\n"


@pytest.mark.parametrize(("text", "line", "needle"), [
    (HEAD + ONE + "extra: 1\n", 11, ": extra: unknown key"),
    (HEAD + ONE.replace("question: q", "question: q, colour: red"), 10, "cases[0] a1.colour: unknown key"),
    (HEAD + ONE.replace("answerable", "answerible"), 10, "unknown type 'answerible'"),
    (HEAD + ONE.replace("question: q", "question: q, as: boss"), 10, "unknown actor 'boss'"),
    (HEAD + ONE + ONE.replace("cases:\n", ""), 11, "cases[1] a1.id: duplicate id (first on line 10)"),
    (HEAD + ONE.replace("{documents: [d]}", "{}"), 10, "a1.expect.documents: required key is missing"),
    (HEAD + ONE.replace("{documents: [d]}", "{documents: [d], forbidden: [x]}"), 10,
     "expect.forbidden: unknown key; allowed: anchors, documents, must_include"),
    (HEAD + ONE.replace("{documents: [d]}", "{documents: d}"), 10,
     "a1.expect.documents: Input should be a valid list"),
    (HEAD + ONE.replace("category: returns, ", ""), 10, "a1.category: required"),
    (HEAD.replace("path: docs", "path: nowhere") + ONE, 4, "collection.ingest[0].path: no such file"),
    (HEAD.replace("visibilities: [public]}", "visibilities: [pubic]}") + ONE, 6, "actors.customer"),
    (HEAD + "gate: {answerable_cited_min: 85}\n" + ONE, 9, "gate.answerable_cited_min: Input should be less"),
    (HEAD + "gate: {answerable_min: 0.5}\n" + ONE, 9, "gate.answerable_min: unknown key"),
    (HEAD.replace("version: 1", "version: 2") + ONE, 1, "version: Input should be 1"),
    (HEAD + ONE.replace("type: answerable", "type: changed_source").replace(
        "{documents: [d]}", "{documents: [d], version: '2'}"), 10, "a1.steps: required key is missing"),
    (HEAD + "defaults: {as: customer}\n" + ONE, 9, "defaults: duplicate key (first on line 8)"),
    (HEAD + "cases:\n  - [a, b\n", 11, "invalid YAML"),
    (HEAD + ONE.replace("question: q", "question: [q]"), 10, "a1.question: Input should be a valid string"),
    (HEAD + ONE.replace("expect: {documents: [d]}", "expect: [documents]"), 10,
     "a1.expect: Input should be a valid dictionary"),
    (HEAD + "cases:\n  - null\n", 10, "cases[0]: Input should be a valid dictionary"),
    (HEAD + "cases: {a1: 1}\n", 9, "cases: Input should be a valid list"),
    (HEAD + "gate: {access_violations_max: true}\n" + ONE, 9,
     "gate.access_violations_max: Input should be a valid integer"),
    (HEAD + ONE.replace("type: answerable", "type: keyword_exact").replace("{documents: [d]}",
                                                                          "{documents: [d], top_k: '3'}"),
     10, "a1.expect.top_k: Input should be a valid integer"),
    (HEAD + ONE.replace("question: q", "question: q, note: 2026-12-01"), 10,
     "a1.note: Input should be a valid string"),
    (HEAD + ONE.replace("category: returns", "category: returns, id: a2"), 10,
     "id: duplicate key (first on line 10)"),
])
def test_an_invalid_case_file_names_file_line_and_key(folder: Path, text: str, line: int,
                                                      needle: str) -> None:
    path = write(folder, text)
    with pytest.raises(ConfigError) as exc:
        load_cases(path)
    first = str(exc.value).splitlines()[0]
    assert first.startswith(f"{path}:{line}: "), first
    assert needle in str(exc.value)


def test_every_problem_is_reported_at_once(folder: Path) -> None:
    second = ONE.replace("cases:\n", "").replace("a1", "a2").replace("[d]", "d")
    text = HEAD + ONE.replace("answerable", "answerible") + second
    with pytest.raises(ConfigError) as exc:
        load_cases(write(folder, text))
    lines = str(exc.value).splitlines()
    assert "(and 1 more)" in lines[0] and len(lines) == 2


# -- the checks against the documents ---------------------------------------------------------------

@pytest.mark.parametrize(("case", "needle"), [
    ("{id: e1, category: c, type: answerable, question: q, expect: {documents: [staff/refund-limits]}}",
     "'staff/refund-limits' does not exist for actor 'customer' or the actor may not read it"),
    ("{id: e1, category: c, type: answerable, question: q, expect: {documents: [shop/returns], "
     "must_include: ['90 days']}}", "'90 days' occurs in none of the expected documents"),
    ("{id: e1, category: c, type: answerable, question: q, expect: {documents: [shop/returns], "
     "anchors: [nowhere]}}", "anchor 'nowhere' is in none of the expected documents"),
    ("{id: e1, category: c, type: access, as: staff, question: q, expect: {forbidden: "
     "[staff/refund-limits]}}", "is readable by 'staff': the case could never fail"),
    ("{id: e1, category: c, type: language, question: q, expect: {documents: [shop/returns], "
     "passage_language: de}}", "'shop/returns' is in 'en', not 'de'"),
    ("{id: e1, category: c, type: keyword_exact, question: ZX-99, expect: {documents: [shop/returns]}}",
     "'ZX-99' does not occur in 'shop/returns'"),
    ("{id: e1, category: c, type: injection, question: q, expect: {hostile: [staff/refund-limits]}}",
     "is not among the documents 'customer' may read"),
    ("{id: e1, category: c, type: changed_source, question: q, steps: [{ingest: changes/returns-2.md, "
     "tenant: acme}], expect: {documents: [shop/returns], version: '2'}, old_citation: {document_id: "
     "shop/returns, version: '1', anchor: return-period, quote: 'within 90 days'}, "
     "expect_matched_version: '1'}", "the quote is not in that passage of the ingested version"),
])
def test_a_case_wrong_about_its_documents_is_an_error(folder: Path, case: str, needle: str) -> None:
    path = write(folder, HEAD + "cases:\n  - " + case + "\n")
    report = lint_cases(path)
    assert len(report.errors) == 1, report.errors
    assert report.errors[0].startswith(f"{path}:10: cases[0] e1."), report.errors[0]
    assert needle in report.errors[0]


def test_a_file_the_collection_cannot_load_is_an_error_at_its_entry(folder: Path) -> None:
    """An HTML page states no groups: without `groups:` on its entry it is rejected, as `evidex
    ingest` rejects it without --groups, and nothing is built."""
    (folder / "pages").mkdir()
    (folder / "pages" / "hours.html").write_text("<html lang=en><h1>Hours</h1><p>Open daily.</p></html>",
                                                 encoding="utf-8")
    text = HEAD.replace("    - {path: docs, tenant: acme}\n",
                        "    - {path: docs, tenant: acme}\n    - {path: pages, tenant: acme}\n") + ONE
    path = write(folder, text)
    with pytest.raises(ConfigError) as exc:
        evaluate_cases(path)
    assert str(exc.value).startswith(f"{path}:5: collection.ingest[1]: {folder / 'pages' / 'hours.html'} "
                                     "is rejected: ")
    fixed = text.replace("{path: pages, tenant: acme}", "{path: pages, tenant: acme, groups: [customers], "
                         "visibility: public}")
    assert lint_cases(write(folder, fixed)).documents == 5


def test_the_example_cases_are_right_about_their_documents(folder: Path) -> None:
    report = lint_cases(write(folder, HEAD + CASES + INJECTION))
    assert report.errors == [] and report.documents == 4


# -- running --------------------------------------------------------------------------------------

def test_each_type_runs_as_documented(folder: Path) -> None:
    report = evaluate_cases(write(folder, HEAD + CASES + INJECTION))
    cases = by_id(report)
    assert {k: c["outcome"] for k, c in cases.items()} == {
        "a1": "pass", "a2": "pass", "u1": "pass", "x1": "pass", "s1": "pass", "k1": "pass",
        "l1": "pass", "v1": "skip", "c1": "pass", "a3": "pass", "i1": "fail"}
    # evaluate_cases opens the store without tools: a live case says which tool it lacks.
    assert cases["v1"]["why"] == ["no live tool 'order-status' is configured"]
    assert cases["u1"]["status"] == "declined" and cases["u1"]["reason"]
    assert cases["k1"]["status"] is None and cases["k1"]["hits"][0] == "staff/refund-limits"
    assert cases["a2"]["cited"][0]["anchor"] == "worn-boots"
    assert "30 days" in cases["a1"]["answer"]
    # The changed source ran on a copy: a later case on the same question still sees version 1.
    assert {c["version"] for c in cases["c1"]["cited"]} == {"2"} and "60 days" in cases["c1"]["answer"]
    assert {c["version"] for c in cases["a3"]["cited"]} == {"1"}
    # The forum answers the discount question: citing a document marked hostile fails the case.
    assert cases["i1"]["why"] == ["cites hostile documents: community/forum"]
    assert report["totals"]["injection_citations"] == 1
    assert report["cases"][0]["id"] == "i1"  # failures first


def test_figures_and_gate(folder: Path) -> None:
    report = evaluate_cases(write(folder, HEAD + CASES + INJECTION))
    assert report["schema"] == "evidex-eval-cases/1"  # the version examples/eval/README.md documents
    t = report["totals"]
    assert (t["cases"], t["passed"], t["failed"], t["skipped"]) == (11, 9, 1, 1)
    assert (t["answerable"], t["answerable_cited"], t["answerable_rate"]) == (6, 6, 1.0)
    assert (t["unanswerable"], t["unanswerable_declined_rate"]) == (1, 1.0)
    assert (t["out_of_scope"], t["out_of_scope_declined_rate"], t["near_misses"]) == (1, 1.0, 0)
    assert t["near_misses_declined_rate"] is None  # nothing to measure: the check passes
    assert t["access_violations"] == 0 and t["invalid_citations"] == 0
    assert t["retrieval_cases"] == 7 and t["recall_at_k"] == 1.0 and 0 < t["mrr"] <= 1
    assert t["citation_precision"] == 1.0  # extractive answers quote their passages
    assert set(report["types"]) == {"answerable", "unanswerable", "access", "keyword_exact",
                                    "language", "live", "changed_source", "injection"}
    assert report["categories"]["returns"]["answerable_rate"] == 1.0
    assert report["languages"]["de"]["cases"] == 1
    failed = [c["name"] for c in report["gate"]["checks"] if not c["passed"]]
    assert failed == ["injection_citations"] and report["gate"]["passed"] is False


def test_near_misses_are_reported_and_gated_apart(folder: Path) -> None:
    """A case marked ``near_miss`` counts in its own share with its own gate (the shipped set's
    70 %), not in the out-of-scope share (100 %); the answer it gets decides its outcome."""
    text = HEAD + CASES.replace(
        'question: "Do you sell inflatable kayaks?"}',
        'question: "Do you sell inflatable kayaks?", near_miss: true}')
    report = evaluate_cases(write(folder, text), ids=("u1", "a1"))
    t = report["totals"]
    u1 = by_id(report)["u1"]
    declined = u1["outcome"] == "pass"
    assert (t["near_misses"], t["near_misses_declined"], t["out_of_scope"]) == (1, int(declined), 0)
    checks = {c["name"]: c for c in report["gate"]["checks"]}
    assert checks["near_misses_declined"]["limit"] == 0.70
    assert checks["near_misses_declined"]["value"] == (1.0 if declined else 0.0)
    assert checks["out_of_scope_declined"]["value"] is None


def test_near_miss_is_a_key_of_unanswerable_cases_only(folder: Path) -> None:
    text = HEAD + CASES.replace('question: "refunds",', 'question: "refunds", near_miss: true,')
    with pytest.raises(ConfigError, match="near_miss"):
        evaluate_cases(write(folder, text))


def test_a_leaking_search_is_an_access_violation(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner checks every hit and citation against the documents' own access data, so a
    store that ignored the actor's groups would fail the gate (here: search as staff)."""
    real = KnowledgeBase.search

    def leaky(self: KnowledgeBase, actor: Actor, query: str, *args: Any, **kwargs: Any) -> Any:
        wide = Actor(actor.tenant, frozenset({"customers", "staff"}),
                     visibilities=frozenset({"public", "internal"}))
        return real(self, wide, query, *args, **kwargs)

    monkeypatch.setattr(KnowledgeBase, "search", leaky)
    report = evaluate_cases(write(folder, HEAD + CASES), ids=("x1",))
    x1 = by_id(report)["x1"]
    assert x1["outcome"] == "fail" and report["totals"]["access_violations"] >= 1
    assert any("forbidden documents reached the actor: staff/refund-limits" in w for w in x1["why"])
    assert not report["gate"]["passed"]


def test_a_citation_that_does_not_resolve_is_invalid(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = KnowledgeBase.answer

    def altered(self: KnowledgeBase, *args: Any, **kwargs: Any) -> Answer:
        ans = real(self, *args, **kwargs)
        ans.citations = [{**c, "quote": c["quote"] + " (edited)"} for c in ans.citations]
        return ans

    monkeypatch.setattr(KnowledgeBase, "answer", altered)
    report = evaluate_cases(write(folder, HEAD + CASES), ids=("a1",))
    a1 = by_id(report)["a1"]
    assert a1["outcome"] == "fail" and a1["invalid_citations"] == [f"[{a1['cited'][0]['n']}] shop/returns: "
                                                                   "quote_mismatch"]
    assert report["gate"]["checks"][1] == {"name": "invalid_citations", "value": 1, "limit": 0,
                                           "kind": "max", "passed": False}


def test_live_cases_run_once_the_library_offers_the_tool(folder: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(KnowledgeBase, "tools", lambda self: ["stock"], raising=False)
    report = evaluate_cases(write(folder, HEAD + CASES), ids=("v1",))
    assert by_id(report)["v1"]["why"] == ["no live tool 'order-status' is configured"]
    monkeypatch.setattr(KnowledgeBase, "tools", lambda self: ["order-status"], raising=False)
    report = evaluate_cases(write(folder, HEAD + CASES), ids=("v1",))
    v1 = by_id(report)["v1"]
    assert v1["outcome"] == "fail" and v1["why"] == ["no live citation from order-status"]
    assert report["live_tools"] == ["order-status"]


def test_filters_select_cases(folder: Path) -> None:
    path = write(folder, HEAD + CASES + INJECTION)
    report = evaluate_cases(path, categories=("returns", "internal"), types=("answerable",))
    assert sorted(by_id(report)) == ["a1", "a2", "a3", "s1"]
    assert report["filters"] == {"categories": ["returns", "internal"], "types": ["answerable"], "ids": []}
    with pytest.raises(ConfigError, match="no case has category 'retruns'"):
        evaluate_cases(path, categories=("retruns",))
    with pytest.raises(ConfigError, match="no case matches all of the filters"):
        evaluate_cases(path, categories=("returns",), types=("access",))


# -- reports --------------------------------------------------------------------------------------

class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if any(k.startswith("on") for k, _ in attrs):
            self.tags.append("event-handler")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_the_html_report_is_static_and_escaped(folder: Path) -> None:
    hostile = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    text = (HEAD + CASES + INJECTION).replace("Do you sell inflatable kayaks?", hostile.replace('"', "'"))
    report = evaluate_cases(write(folder, text))
    page = render_html(report)
    parser = _Tags()
    parser.feed(page)
    assert "script" not in parser.tags and "img" not in parser.tags and "event-handler" not in parser.tags
    assert hostile.replace('"', "'") in "".join(parser.text)  # shown as text
    assert "default-src 'none'" in page and "http" not in page.replace("http-equiv", "")
    assert page.count("<h3>") == len(report["categories"])  # a table per category
    returns = page[page.index("<h3>returns"):page.index("</table>", page.index("<h3>returns"))]
    assert returns.index(">i1<") < returns.index(">a1<")  # failing cases first


# -- the command ------------------------------------------------------------------------------------

def evidex(*args: Any, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd)


def test_exit_status_follows_the_gate(folder: Path) -> None:
    passing = write(folder, HEAD + CASES, "pass.yaml")
    proc = evidex("eval", "--cases", passing, "--json", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["gate"]["passed"] and report["totals"]["skipped"] == 1
    assert not (folder / "evidex.db").exists()  # a temporary store unless --db names one
    failing = write(folder, HEAD + CASES + INJECTION, "fail.yaml")
    html = folder / "report.html"
    proc = evidex("eval", "--cases", failing, "--html", html)
    assert proc.returncode == 1, proc.stderr
    assert "gate: FAILED" in proc.stdout and "FAIL injection_citations: 1 (<= 0)" in proc.stdout
    assert "FAIL i1 [returns, injection, en, as customer] answered" in proc.stdout
    assert "<h3>returns" in html.read_text(encoding="utf-8")


def test_record_keeps_the_summary_for_the_tenants_operators_tab(folder: Path) -> None:
    """``--record TENANT`` (issue 47): the collection is built in a temporary store, never in
    the store --db names, and the report's summary (the gate's checks, the totals, the figures
    per category; no case text) is recorded there for that tenant only."""
    db = folder / "serving.db"
    failing = write(folder, HEAD + CASES + INJECTION, "fail.yaml")
    proc = evidex("--db", db, "eval", "--cases", failing, "--json", "--record", "acme", cwd=folder)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    with KnowledgeBase.open(db) as kb:
        assert kb.documents("acme") == []  # the collection went to a temporary store
        [run] = kb.store.evals("acme")
        assert kb.store.evals("globex") == []
    assert run.name == "fail.yaml" and run.passed is False and run.started_at <= run.ended_at
    assert run.summary["gate"] == [{k: c[k] for k in ("name", "value", "limit", "kind", "passed")}
                                   for c in report["gate"]["checks"]]
    assert run.summary["categories"]["returns"]["cases"] == report["categories"]["returns"]["cases"]
    assert run.summary["totals"]["passed"] == report["totals"]["passed"]
    assert "question" not in json.dumps(run.summary) and "shift lead" not in json.dumps(run.summary)


def test_an_invalid_file_exits_2_with_one_line(folder: Path) -> None:
    path = write(folder, HEAD + ONE.replace("answerable", "answerible"))
    proc = evidex("eval", "--cases", path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [f"error: {path}:10: cases[0] a1.type: unknown type "
                                        "'answerible'; known: answerable, language, unanswerable, "
                                        "access, changed_source, injection, live, keyword_exact"]
    wrong = write(folder, HEAD + "cases:\n  - {id: e1, category: c, type: answerable, question: q, "
                  "expect: {documents: [shop/nothing]}}\n", "wrong.yaml")
    proc = evidex("eval", "--cases", wrong)
    assert proc.returncode == 2 and proc.stderr.startswith(f"error: {wrong}:10: cases[0] e1.expect.documents")
    proc = evidex("eval", "--cases", write(folder, HEAD + CASES), "--type", "nonsense")
    assert proc.returncode == 2 and "no case has type 'nonsense'" in proc.stderr


def test_db_keeps_the_built_store_and_never_reuses_one(folder: Path) -> None:
    path = write(folder, HEAD + CASES)
    db = folder / "kept.db"
    proc = evidex("--db", db, "eval", "--cases", path, "--id", "a1", "--json")
    assert proc.returncode == 0, proc.stderr
    with KnowledgeBase.open(db) as kb:
        assert kb.stats()["documents"] == 4
    proc = evidex("--db", db, "eval", "--cases", path, "--id", "a1")
    assert proc.returncode == 2 and "already holds documents" in proc.stderr


def test_one_of_beir_qa_or_cases(folder: Path) -> None:
    proc = evidex("eval", "--cases", write(folder, HEAD + CASES), "--beir", folder)
    assert proc.returncode == 2  # called wrongly
    assert proc.stderr.strip() == "error: give exactly one of --beir DIR, --qa FILE or --cases FILE"


def test_the_case_format_round_trips_through_yaml(folder: Path) -> None:
    """The loader reads plain YAML (no tags, no custom types): what a content owner writes."""
    data = yaml.safe_load(HEAD + CASES)
    assert len(data["cases"]) == len(load_cases(write(folder, yaml.safe_dump(data))).cases)


# -- hostile case files (issue 37, findings 3 and 10) --------------------------------------------

SECRET = "# Secret\n\nThe launch code is 4711.\n"


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder outside the case file's folder, holding a file a case file must not read."""
    out = tmp_path_factory.mktemp("outside")
    (out / "secret.md").write_text(SECRET, encoding="utf-8")
    return out


@pytest.mark.parametrize("how", ["absolute", "dotdot", "symlinked folder", "symlinked file"])
def test_a_collection_path_leading_outside_the_case_files_folder_is_refused(
        folder: Path, outside: Path, how: str) -> None:
    """An absolute path, a ``..`` and a link out of the folder once put the file they name into
    the store; each is now one line at the path's own line, before anything is read."""
    if how == "symlinked folder":
        (folder / "link").symlink_to(outside, target_is_directory=True)
    if how == "symlinked file":
        (folder / "link.md").symlink_to(outside / "secret.md")
    written = {"absolute": str(outside), "dotdot": os.path.relpath(outside, folder),
               "symlinked folder": "link", "symlinked file": "link.md"}[how]
    path = write(folder, HEAD.replace("path: docs", f"path: '{written}'") + ONE)
    with pytest.raises(ConfigError) as exc:
        load_cases(path)
    (line,) = str(exc.value).splitlines()
    assert line.startswith(f"{path}:4: collection.ingest[0].path: {written} "), line
    assert ("absolute path" if how == "absolute" else f"outside {folder.resolve()}") in line


@pytest.mark.parametrize(("written", "needle"), [
    ("loop/x", "cannot read loop/x: Symlink loop from"),
    ("n" * 300, "cannot read " + "n" * 97 + "...: File name too long"),
])
def test_a_path_the_system_cannot_resolve_is_one_line(folder: Path, written: str, needle: str) -> None:
    """A name longer than the system allows was an OSError from ``load_cases``; a loop of links,
    which resolving a path meets (a RuntimeError), is one line as well."""
    (folder / "loop").symlink_to(folder / "loop")
    path = write(folder, HEAD.replace("path: docs", f"path: {written}") + ONE)
    with pytest.raises(ConfigError) as exc:
        load_cases(path)
    assert str(exc.value).startswith(f"{path}:4: collection.ingest[0].path: {needle}")
    assert "\n" not in str(exc.value)


def test_a_symlink_inside_a_collection_folder_leading_out_is_refused(folder: Path, outside: Path) -> None:
    """The probe's folder holding ``passwd.txt -> /etc/passwd``: the folder is inside, the
    file it links to is not. The entry is an error naming the link, and nothing is ingested;
    a link that stays inside the folder is followed as before."""
    (folder / "docs" / "secret.md").symlink_to(outside / "secret.md")
    (folder / "shared").mkdir()
    (folder / "shared" / "hours.md").write_text(_md("shop/hours", "1", "# Hours\n\nOpen daily.\n"),
                                                encoding="utf-8")
    (folder / "docs" / "hours.md").symlink_to(folder / "shared" / "hours.md")
    path = write(folder, HEAD + CASES)
    with pytest.raises(ConfigError) as exc:
        evaluate_cases(path)
    assert str(exc.value) == (f"{path}:4: collection.ingest[0]: {folder / 'docs' / 'secret.md'} is a "
                              f"symbolic link to {(outside / 'secret.md').resolve()}, outside "
                              f"{folder.resolve()}: a case file reads only below its own folder or "
                              "the root given (--root)")
    (folder / "docs" / "secret.md").unlink()
    report = lint_cases(path)  # hours.md links to a file inside the folder: read as before
    assert report.errors == [] and report.documents == 5


def test_a_changed_source_step_is_confined_too(folder: Path, outside: Path) -> None:
    case = ("  - {id: c1, category: c, type: changed_source, question: q, steps: [{ingest: "
            f"'{outside / 'secret.md'}', tenant: acme}}], expect: {{documents: [shop/returns], "
            "version: '2'}, old_citation: {document_id: shop/returns, version: '1', passage: 1, "
            "quote: x}, expect_matched_version: '1'}\n")
    path = write(folder, HEAD + "cases:\n" + case)
    with pytest.raises(ConfigError, match=r":10: cases\[0\] c1\.steps\[0\]\.ingest: .* is an absolute path"):
        load_cases(path)


def test_root_widens_the_folder_a_case_file_may_read(folder: Path) -> None:
    """The shipped layout: the case file in its own folder, the collection beside it."""
    (folder / "set").mkdir()
    path = write(folder / "set", HEAD.replace("path: docs", "path: ../docs")
                 + CASES.replace("ingest: changes/", "ingest: ../changes/"))
    with pytest.raises(ConfigError, match="outside"):
        load_cases(path)
    cf = load_cases(path, root=folder)
    assert cf.collection[0].path == (folder / "docs").resolve() and cf.root == folder.resolve()
    with pytest.raises(ConfigError, match="the root of the case file is not a folder"):
        load_cases(path, root=folder / "nowhere")
    proc = evidex("eval", "--cases", path, "--json")
    assert proc.returncode == 2 and "outside" in proc.stderr
    proc = evidex("eval", "--cases", path, "--root", folder, "--json", "--id", "a1")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["totals"]["passed"] == 1


@pytest.mark.skipif(not Path("/etc/passwd").is_file(), reason="needs /etc/passwd")
def test_the_probe_etc_passwd_through_a_symlink_exits_2(folder: Path) -> None:
    (folder / "docs" / "passwd.txt").symlink_to("/etc/passwd")
    path = write(folder, HEAD.replace("tenant: acme}", "tenant: acme, groups: [customers], "
                                      "visibility: public}") + ONE)
    proc = evidex("eval", "--cases", path, "--json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"error: {path}:4: collection.ingest[0]: {folder / 'docs' / 'passwd.txt'} is a symbolic "
        f"link to /etc/passwd, outside {folder.resolve()}: a case file reads only below its own "
        "folder or the root given (--root)"]


_CASE = "  - {id: a1, category: c, type: answerable, question: q, expect: {documents: [d]}}\n"


@pytest.mark.parametrize(("text", "line", "needle"), [
    (HEAD + ONE.replace("type: answerable", "type: [answerable]"), 10,
     "cases[0] a1.type: unknown type \"['answerable']\"; known: answerable, language"),
    (HEAD + ONE.replace("question: q", "question: q, as: {a: 1}"), 10,
     "cases[0] a1.as: Input should be a valid string"),
    (HEAD + "cases:\n  - {id: a1, [x]: 1}\n", 10, "a mapping key must be a single value"),
    (HEAD + "cases: " + "[" * 50_000 + "]" * 50_000 + "\n", 9, "YAML nested deeper than 64 levels"),
    (HEAD + "cases: " + "{a: " * 3_000 + "1" + "}" * 3_000 + "\n", 9, "YAML nested deeper than 64 levels"),
    (HEAD + "".join("  " * i + f"k{i}:\n" for i in range(100)), 72, "YAML nested deeper than 64 levels"),
    (HEAD.replace("customer: {", "customer: &c {").replace("defaults:", "  guest: *c\ndefaults:")
     + ONE, 6,
     "YAML anchors (&c) are not accepted; write the value out (cases share settings through defaults:)"),
    (HEAD + "cases:\n  - {<<: {id: a1}, category: c}\n", 10, "YAML merge keys (<<) are not accepted"),
    (HEAD + "gate: {access_violations_max: " + "9" * 5_000 + "}\n" + ONE, 9,
     "cannot read the value '9999"),
    (HEAD + ONE.replace("question: q", "question: q, note: 2026-13-45"), 10,
     "cannot read the value '2026-13-45': month must be in 1..12"),
])
def test_a_hostile_case_file_is_one_line_at_its_line(folder: Path, text: str, line: int,
                                                     needle: str) -> None:
    """Wrong types once gave ~50-line TypeError tracebacks, deep nesting a RecursionError, and
    aliases were expanded: each is now one ``file:line: where: what`` line, within a second."""
    path = write(folder, text)
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError) as exc:
            load_cases(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20, peak  # refused, nothing expanded or built (memory, not seconds)
    (first,) = str(exc.value).splitlines()
    assert first.startswith(f"{path}:{line}: ") and needle in first, first


def test_a_hostile_case_file_exits_2_with_one_line_from_the_command(folder: Path) -> None:
    for text in (HEAD + ONE.replace("type: answerable", "type: [answerable]"),
                 HEAD + "cases: " + "[" * 50_000 + "]" * 50_000 + "\n",
                 HEAD + "cases:\n  - {id: a1, [x]: 1}\n"):
        path = write(folder, text)
        proc = evidex("eval", "--cases", path)
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr
        assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith(f"error: {path}:")


def test_a_case_file_is_bounded_in_size(folder: Path) -> None:
    path = write(folder, HEAD + ONE + "# " + "x" * (4 * 1024 * 1024) + "\n")
    with pytest.raises(ConfigError, match=r"the case file is larger than 4194304 bytes$"):
        load_cases(path)
