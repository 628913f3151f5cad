"""``evidex ask`` and ``evidex eval --qa``, run as real subprocesses against a temporary SQLite
store built by ``evidex ingest examples/collection --tenant acme --split heading``.

``ask --json`` prints ``Answer.as_dict()``: the keys the issue names (status, text, citations,
reason, handoff, trace) plus ``detail``, the one-line explanation of a decline (empty when
answered). The ``openai`` generator is pointed at a real loopback server through the
``EVIDEX_OPENAI_*`` environment variables.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cli_runner import run_cli, run_parallel
from evidex import Actor, EvidexError, KnowledgeBase
from evidex.answer import DECLINE_TEXT, AnswerSettings
from evidex.evaluation import load_qa

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
ASK_KEYS = {"status", "text", "citations", "reason", "handoff", "trace"}
#: Extra keys emitted by Answer.as_dict(): the decline's why, and its related reading (passages
#: offered as not an answer, never cited).
EMITTED_KEYS = ASK_KEYS | {"detail", "related"}
CITATION_KEYS = {"kind", "document_id", "version", "content_sha256", "passage", "quote", "start", "end",
                 "heading_path", "anchor", "title", "source_url"}
CUSTOMER = ("--tenant", "acme", "--groups", "customers", "--visibilities", "public")
WORN = "Can I return a worn jacket?"
ABSENT = "Who won the football world cup?"
SALARY_MARKERS = ("52,000", "Band E1", "Salary bands 2026")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Set explicitly (a module fixture runs before the autouse per-test environment)."""
    out = {k: v for k, v in os.environ.items()
           if k != "EVIDEX_DB" and not k.startswith("EVIDEX_OPENAI_") and k != "OPENAI_API_KEY"}
    out.update(PYTHONIOENCODING="utf-8", EVIDEX_EMBEDDER="hash-test",
               EVIDEX_CACHE_DIR=str(tmp_path_factory.mktemp("ask-embed-cache")))
    # The quotes' embedding has a deadline (retrieval.vector.timeout_ms, 4 s); on a machine whose
    # cores are busy it passes and the answer is declined (issue 45, finding 12). These tests
    # check answers and their output, not the deadline (tests/retrieve/test_vector_fallback.py
    # does), so it is out of reach here: ten minutes, from a configuration every command reads.
    config = tmp_path_factory.mktemp("ask-config") / "generous-deadline.yaml"
    config.write_text("retrieval:\n  vector:\n    timeout_ms: 600000\n", encoding="utf-8")
    out["EVIDEX_CONFIG"] = str(config)
    return out


def run(env: dict[str, str], *args: Any, db: Path | None = None, stdin: str = "",
        **extra_env: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, db=db, stdin=stdin, env={**env, **extra_env})


def run_many(env: dict[str, str], calls: Sequence[tuple[tuple[Any, ...], dict[str, Any]]]
             ) -> list[subprocess.CompletedProcess[str]]:
    """Independent invocations at once (each is mostly interpreter start-up)."""
    return run_parallel(calls, run=functools.partial(run, env))


def ok_json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def assert_one_error_line(proc: subprocess.CompletedProcess[str], needle: str = "") -> str:
    assert proc.returncode != 0, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error:"), lines[0]
    assert needle.lower() in lines[0].lower(), (needle, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def db(env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ask-cli") / "kb.db"
    proc = run(env, "ingest", EXAMPLES / "collection", "--tenant", "acme", "--split", "heading", db=path)
    assert proc.returncode == 0, proc.stderr
    return path


def ask_json(env: dict[str, str], db: Path, question: str, *actor: str, **extra_env: str) -> dict[str, Any]:
    data = ok_json(run(env, "ask", question, *actor, "--json", db=db, **extra_env))
    assert isinstance(data, dict)
    assert set(data) == EMITTED_KEYS, sorted(data)
    return data


# -- ask ------------------------------------------------------------------------------------------


def test_ask_json_answered(env: dict[str, str], db: Path) -> None:
    data = ask_json(env, db, WORN, *CUSTOMER)
    assert data["status"] == "answered", data
    assert data["reason"] is None and data["handoff"] is None and data["detail"] == ""
    assert "returns-faq" in {c["document_id"] for c in data["citations"]}
    markers = {int(n) for n in re.findall(r"\[(\d+)\]", data["text"])}
    assert markers == {c["n"] for c in data["citations"]}
    assert "<" not in data["text"] and ">" not in data["text"]
    customer = Actor("acme", frozenset({"customers"}), visibilities=frozenset({"public"}))
    with KnowledgeBase.open(db) as kb:
        for c in data["citations"]:
            assert set(c) == CITATION_KEYS | {"n", "sentence_start", "sentence_end"}
            assert c["quote"] not in json.dumps(data["trace"], ensure_ascii=False)
            res = kb.resolve(customer, {k: v for k, v in c.items() if k != "n"})
            assert res.ok, res
    assert data["trace"]["generator"] == "extractive"


def test_ask_json_declined(env: dict[str, str], db: Path) -> None:
    custom, nobody = (ok_json(p) for p in run_many(env, [
        (("ask", ABSENT, *CUSTOMER, "--handoff", "Call +49 30 1234567.", "--json"), {"db": db}),
        (("ask", WORN, "--tenant", "globex", "--groups", "customers,staff", "--visibilities",
          "public,internal", "--json"), {"db": db}),
    ]))
    for data in (custom, nobody):
        assert set(data) == EMITTED_KEYS, sorted(data)
        assert data["status"] == "declined"
        assert data["reason"] in ("no_evidence", "weak_evidence")
        assert data["text"] == DECLINE_TEXT
        assert data["citations"] == []
        assert data["detail"]
    assert nobody["handoff"] == AnswerSettings().handoff
    assert custom["handoff"] == "Call +49 30 1234567."
    assert nobody["reason"] == "no_evidence"
    assert nobody["trace"]["available"] == []


def test_ask_groups_are_comma_separated_and_decide_access(env: dict[str, str], db: Path) -> None:
    question = "What are the salary bands for engineering?"
    staff, hr = run_many(env, [
        (("ask", question, "--tenant", "acme", "--groups", "staff,customers", "--visibilities",
          "public,internal", "--json"), {"db": db}),
        (("ask", question, "--tenant", "acme", "--groups", "staff,hr",
          "--visibilities", "public,internal,confidential", "--json"), {"db": db}),
    ])
    assert set(ok_json(staff)) == EMITTED_KEYS
    assert not any(m in staff.stdout for m in SALARY_MARKERS)
    assert "salary-bands" not in staff.stdout
    both = ok_json(hr)
    available = {r["document_id"] for r in both["trace"]["available"]}
    assert "salary-bands" in available, available  # the second group counted
    assert not any(m in json.dumps(both["trace"]) for m in SALARY_MARKERS)  # ids only, no text


def test_ask_human_output(env: dict[str, str], db: Path) -> None:
    """The quotes' embedding has a deadline (``retrieval.vector.timeout_ms``); on a busy machine
    it passed and words alone declined the worn-boots answer (issue 45, finding 12). What is
    checked here is the output's form, so the deadline is out of reach: a configuration gives
    it ten minutes."""
    config = env["EVIDEX_CONFIG"]
    proc, declined = run_many(env, [(("--config", config, "ask", WORN, *CUSTOMER), {"db": db}),
                                    (("--config", config, "ask", ABSENT, *CUSTOMER), {"db": db})])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert re.search(r"\[\d+\]", lines[0])
    assert any(re.match(r"\s+\[\d+\] returns-faq v3 #\d+", line) for line in lines[1:]), proc.stdout
    proc = declined
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == DECLINE_TEXT
    assert re.search(r"reason: (no_evidence|weak_evidence)", proc.stdout)
    assert AnswerSettings().handoff in proc.stdout


def test_ask_errors_are_one_line(env: dict[str, str], db: Path) -> None:
    cases = [
        (("ask", WORN, *CUSTOMER, "--generator", "magic"), "generator"),
        (("ask", WORN, "--tenant", "acme", "--groups", "customers", "--visibilities", "secret"), "visibilit"),
        # A question without words is a mistake, not a question the collection lacks the answer to:
        # never the decline that offers a person.
        (("ask", "", *CUSTOMER), "no words"),
        (("ask", "  ?! ", *CUSTOMER), "no words"),
        # OpenAI's service without a key would decline every question: a configuration error.
        (("ask", WORN, *CUSTOMER, "--generator", "openai"), "EVIDEX_OPENAI_API_KEY"),
    ]
    procs = run_many(env, [(args, {"db": db}) for args, _ in cases])
    for (_, needle), proc in zip(cases, procs, strict=True):
        assert_one_error_line(proc, needle)


# -- ask --generator openai against a loopback server --------------------------------------------


class Server:
    def __init__(self, reply: Any) -> None:
        self.requests: list[dict[str, Any]] = []
        self.reply = reply
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                srv.requests.append({"headers": {k.lower(): v for k, v in self.headers.items()},
                                     "body": body})
                content = srv.reply(json.loads(body["messages"][1]["content"])["sources"])
                data = json.dumps({"id": "x", "object": "chat.completion", "created": 0,
                                   "model": body["model"],
                                   "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant",
                                                            "content": json.dumps(content)}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def env(self) -> dict[str, str]:
        return {"EVIDEX_OPENAI_BASE_URL": f"http://127.0.0.1:{self.httpd.server_address[1]}/v1",
                "EVIDEX_OPENAI_MODEL": "gpt-4o-mini", "EVIDEX_OPENAI_API_KEY": "cli-key"}


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[Server] = []

    def start(reply: Any) -> Server:
        servers.append(Server(reply))
        return servers[-1]

    yield start
    for s in servers:
        s.httpd.shutdown()
        s.httpd.server_close()


def _cite_worn(sources: list[dict[str, Any]]) -> dict[str, Any]:
    n = next(s["id"] for s in sources if "Worn items are not accepted" in s["quote"])
    return {"answer": f"Worn items are not accepted unless they arrived damaged. [{n}]", "citations": [n]}


def test_ask_openai_generator_from_environment(env: dict[str, str], db: Path, serve: Any) -> None:
    server = serve(_cite_worn)
    data = ask_json(env, db, WORN, *CUSTOMER, "--generator", "openai", **server.env())
    assert len(server.requests) == 1
    req = server.requests[0]
    assert req["headers"]["authorization"] == "Bearer cli-key"
    assert req["body"]["model"] == "gpt-4o-mini"
    assert data["status"] == "answered", data
    assert data["trace"]["generator"] == "openai"
    assert [c["document_id"] for c in data["citations"]] == ["returns-faq"]
    n = data["citations"][0]["n"]
    assert data["text"] == f"Worn items are not accepted unless they arrived damaged. [{n}]"


def test_ask_openai_invalid_output_is_declined(env: dict[str, str], db: Path, serve: Any) -> None:
    server = serve(lambda sources: {"answer": "Worn jackets can always be returned.", "citations": [1]})
    data = ask_json(env, db, WORN, *CUSTOMER, "--generator", "openai", **server.env())
    assert len(server.requests) == 1
    assert data["status"] == "declined" and data["reason"] == "invalid_model_output"
    assert data["text"] == DECLINE_TEXT and data["citations"] == []
    assert data["trace"]["violations"]


# -- eval --qa ------------------------------------------------------------------------------------

QUESTIONS = [
    {"question": WORN, "expected": [{"document_id": "returns-faq"}]},
    {"question": "When will I get my refund?", "expected": [{"document_id": "returns-faq", "passage": 4}]},
    {"question": "Which plan includes API access?", "expected": [{"document_id": "error-codes"}]},
    {"question": "Is the rain jacket Nordkap waterproof?", "expected": [{"document_id": "sku-1001"}]},
    {"question": ABSENT, "unanswerable": True},
    {"question": "What is the capital of Australia?", "unanswerable": True},
]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def qa(env: dict[str, str], db: Path, path: Path, *extra: str,
       **extra_env: str) -> subprocess.CompletedProcess[str]:
    return run(env, "eval", "--qa", path, "--tenant", "acme", "--groups", "customers",
               "--visibilities", "public", *extra, "--json", db=db, **extra_env)


def test_eval_qa_reports_answered_declined_and_no_invalid_release(
        env: dict[str, str], db: Path, tmp_path: Path) -> None:
    result = ok_json(qa(env, db, write_jsonl(tmp_path / "qa.jsonl", QUESTIONS)))
    assert result["questions"] == 6 and result["answerable"] == 4 and result["unanswerable"] == 2
    assert result["answered_with_expected_citation"] == 4, result["failures"]
    assert result["declined_unanswerable"] == 2, result["failures"]
    assert result["released_with_invalid_citation"] == 0
    assert result["answers_released"] >= 4
    assert result["failures"] == []


def test_eval_qa_counts_misses(env: dict[str, str], db: Path, tmp_path: Path) -> None:
    """The figures can go down: wrong expectations are counted as misses."""
    rows = [
        {"question": WORN, "expected": [{"document_id": "salary-bands"}]},
        {"question": "When will I get my refund?",
         "expected": [{"document_id": "returns-faq", "passage": 99}]},
        {"question": "When will I get my refund?", "unanswerable": True},
    ]
    result = ok_json(qa(env, db, write_jsonl(tmp_path / "miss.jsonl", rows)))
    assert result["answered_with_expected_citation"] == 0
    assert result["declined_unanswerable"] == 0
    assert result["released_with_invalid_citation"] == 0
    assert len(result["failures"]) == 3


def test_eval_qa_with_a_misbehaving_model_releases_nothing(
        env: dict[str, str], db: Path, tmp_path: Path, serve: Any) -> None:
    server = serve(lambda sources: {"answer": "Everything can be returned at any time, no questions asked.",
                                    "citations": [sources[0]["id"]]})
    path = write_jsonl(tmp_path / "qa.jsonl", QUESTIONS)
    result = ok_json(qa(env, db, path, "--generator", "openai", **server.env()))
    assert server.requests, "the model was asked"
    assert result["answers_released"] == 0
    assert result["released_with_invalid_citation"] == 0
    assert result["answered_with_expected_citation"] == 0
    assert result["declined_unanswerable"] == 2


MALFORMED: dict[str, Any] = {
    "invalid_json": "{not json",
    "not_an_object": ["a list, not an object"],
    "no_question": {"expected": [{"document_id": "returns-faq"}]},
    "blank_question": {"question": "   ", "unanswerable": True},
    "neither": {"question": WORN},
    "both": {"question": WORN, "expected": [{"document_id": "returns-faq"}], "unanswerable": True},
    "expected_without_document_id": {"question": WORN, "expected": [{"passage": 3}]},
    "expected_not_an_object": {"question": WORN, "expected": ["returns-faq"]},
    "unanswerable_not_true": {"question": WORN, "unanswerable": "yes"},
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_load_qa_rejects_malformed_sets(tmp_path: Path, name: str) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [QUESTIONS[0], MALFORMED[name]])
    with pytest.raises(EvidexError, match=r"bad\.jsonl:2"):
        load_qa(path)


def test_load_qa_accepts_the_question_set(tmp_path: Path) -> None:
    items = load_qa(write_jsonl(tmp_path / "qa.jsonl", QUESTIONS))
    assert [i["unanswerable"] for i in items] == [False] * 4 + [True] * 2


def test_eval_qa_malformed_set_is_a_one_line_error(env: dict[str, str], db: Path, tmp_path: Path) -> None:
    caller = ("--tenant", "acme", "--groups", "customers", "--visibilities", "public", "--json")
    paths = {name: write_jsonl(tmp_path / f"bad-{name}.jsonl", [QUESTIONS[0], MALFORMED[name]])
             for name in ("invalid_json", "neither", "expected_without_document_id")}
    good = write_jsonl(tmp_path / "qa.jsonl", QUESTIONS[:1])
    procs = run_many(env, [(("eval", "--qa", path, *caller), {"db": db}) for path in paths.values()] + [
        (("eval", "--qa", tmp_path / "missing.jsonl", *caller), {"db": db}),
        (("eval", "--qa", good, "--json"), {"db": db}),
    ])
    for (name, path), proc in zip(paths.items(), procs, strict=False):
        line = assert_one_error_line(proc)
        assert f"{path.name}:2" in line, (name, line)
    assert_one_error_line(procs[-2])
    assert_one_error_line(procs[-1], "--tenant")
