"""Loader fuzzing, the short run of ``make test`` (the long one is ``benchmarks/fuzz_loaders.py``).

Every input to the Markdown, HTML, PDF, Word and JSONL loaders, the configuration loader and the
evaluation case-file loader either loads or is refused with a one-line ``EvidexError``
(``fuzz_inputs.run_one``; a configuration or case file: one line per problem): never another
exception, never minutes of work, and a case file that loads names no path outside its folder. Hypothesis runs
derandomized (the same inputs every run); the named hostile inputs are the benchmark's, the
memory-hungry ones in a process of their own whose peak memory is bounded.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import fuzz_inputs as fz

SHORT = settings(max_examples=30, derandomize=True, deadline=None, database=None,
                 suppress_health_check=list(HealthCheck))

#: Named inputs whose loader could take memory in proportion to what they unpack or declare:
#: run in a child process, whose peak resident memory after the input must stay under this
#: much above what it had before the input.
MEMORY: dict[tuple[str, str], float] = {
    ("docx", "zip-bomb"): 200.0,
    ("docx", "zip-bomb-under-limit"): 400.0,
    ("pdf", "stream-bomb"): 400.0,
    ("markdown", "long-line"): 600.0,
    ("config", "alias-bomb"): 200.0,
    # Issue 37: refused by their element and word bounds, in memory well below 20 x the
    # input's size + 300 MB (the ingest target, benchmarks/ingest_memory.py).
    ("docx", "many-paragraphs"): 100.0,
    ("docx", "many-paragraphs-small"): 100.0,
    ("markdown", "tiny-words"): 250.0,
    ("markdown", "tiny-words-paragraphs"): 250.0,
    ("jsonl", "tiny-words-line"): 250.0,
}
#: Named inputs that take long to build or parse at full size; the benchmark runs those.
SLOW = {("html", "many-headings"), ("markdown", "headings"), ("jsonl", "many-lines"),
        ("casefile", "many-cases")}


@pytest.mark.parametrize("fmt", fz.FORMATS)
def test_mutated_and_generated_inputs_load_or_get_one_line_errors(fmt: str) -> None:
    @SHORT
    @given(fz.inputs(fmt))
    def run(data: bytes) -> None:
        outcome = fz.run_one(fmt, data, budget_s=30)
        assert outcome.kind != "failure", outcome.detail

    run()


NAMED = [k for k in fz.SPECIAL if k not in MEMORY and k not in SLOW]


#: Case files cost milliseconds each, and every wrong type deep in one was a traceback once
#: (issue 37): more of them than of the other formats.
CASE_FILES = settings(SHORT, max_examples=150)


def test_generated_case_files_load_or_get_errors_at_their_line() -> None:
    @CASE_FILES
    @given(fz.inputs("casefile"))
    def run(data: bytes) -> None:
        outcome = fz.run_one("casefile", data, budget_s=30)
        assert outcome.kind != "failure", outcome.detail

    run()


@pytest.mark.parametrize(("fmt", "name"), NAMED, ids=[f"{f}-{n}" for f, n in NAMED])
def test_named_hostile_input(fmt: str, name: str) -> None:
    outcome = fz.run_one(fmt, fz.SPECIAL[(fmt, name)](), budget_s=30)
    assert outcome.kind != "failure", outcome.detail


@pytest.mark.parametrize(("fmt", "name"), list(MEMORY), ids=[f"{f}-{n}" for f, n in MEMORY])
def test_bombs_are_refused_in_bounded_memory(fmt: str, name: str) -> None:
    row = fz.run_isolated(fmt, fz.SPECIAL[(fmt, name)](), budget_s=60, timeout_s=300)
    assert row["kind"] != "failure", row["detail"]
    grew = float(row["peak_rss_mb"]) - float(row["base_rss_mb"])  # type: ignore[arg-type]
    assert grew < MEMORY[(fmt, name)], row


# -- tool responses (issue 37): lookups never raise, the service never answers 500 ---------------
TOOL_EXAMPLES = settings(max_examples=300, derandomize=True, deadline=None, database=None,
                         suppress_health_check=list(HealthCheck))


def test_tool_responses_are_lookups_that_never_raise() -> None:
    @TOOL_EXAMPLES
    @given(fz.tool_inputs())
    def run(data: bytes) -> None:
        outcome = fz.run_one(fz.TOOL, data, budget_s=10)
        assert outcome.kind == "ok", outcome.detail

    run()


def test_tool_responses_through_the_service_are_never_a_500(tmp_path: Path) -> None:
    app = fz.ToolApp(tmp_path)

    @settings(max_examples=60, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(fz.tool_inputs())
    def run(data: bytes) -> None:
        for send in (app.call, app.answer):
            code, body = send(data)
            assert code == 200, body
        fz.check_tool_result(app.call(data)[1])

    run()
    # The hostile responses of the issue, each through both endpoints.
    for data in (b"\x00" + b"[" * 30_000, b"\x01" + b'{"status": "' + b"0" * 60_000_000 + b'"}'):
        assert [send(data)[0] for send in (app.call, app.answer)] == [200, 200]
