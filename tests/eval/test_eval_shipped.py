"""The shipped evaluation set (``examples/eval/cases.yaml`` on ``examples/shop``) as CI runs it:
its cases are right about the documents, and evidex holds the set's gate.

The run uses what a user gets: the default embedding model (not the tests' tiny one) and the
persistent embedding cache (``$EVIDEX_CACHE_DIR`` as it was before the tests' own fixture
replaced it, else ``~/.cache/evidex``), so only the first run on a machine embeds the ~460
passages. The whole set runs once per session; the tests read its report.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evidex.embed import DEFAULT_EMBEDDER, default_cache_path
from evidex.evaluation import evaluate_cases, render_text

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "examples" / "eval" / "cases.yaml"
#: Read at import, before the autouse fixture points the cache at a temporary folder.
USER_CACHE = default_cache_path()


@pytest.fixture(scope="module")
def shipped() -> dict[str, Any]:
    # The set's collection is examples/shop, beside the case file's folder: the examples
    # folder is the root it may read below.
    return evaluate_cases(CASES, embedder=DEFAULT_EMBEDDER, embed_cache=USER_CACHE,
                          root=ROOT / "examples")


def _failed(report: dict[str, Any]) -> str:
    checks = [c for c in report["gate"]["checks"] if not c["passed"]]
    return "; ".join(f"{c['name']} = {c['value']}" for c in checks)


def test_the_shipped_cases_are_right_about_the_documents() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "eval" / "check_cases.py")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "error:" not in proc.stdout


def test_the_shipped_set_releases_nothing_it_must_not(shipped: dict[str, Any]) -> None:
    """What must hold today whatever the answers' quality: no passage the actor may not read,
    no released citation that does not resolve, every case run (only live cases wait)."""
    t = shipped["totals"]
    assert t["access_violations"] == 0, render_text(shipped)
    assert t["invalid_citations"] == 0, render_text(shipped)
    assert {c["type"] for c in shipped["cases"] if c["outcome"] == "skip"} <= {"live"}
    assert shipped["store"]["embedder"] == DEFAULT_EMBEDDER and t["cases"] == 218


@pytest.mark.xfail(strict=True, reason=(
    "the answers miss the gate (measured 2026-12-05, issue 36: multilingual-e5-small-int8, "
    "extractive, adaptive fusion; benchmarks/RESULTS.md): answerable cited 69 % (100/144, gate "
    "85 %), out of scope declined 8/22 (gate 100 %), near misses declined 4/13 (gate 70 %), 5 of "
    "19 categories below 60 % (cross-language, payment, returns, superseded, warranty); 0 "
    "injection citations, 0 access violations, 0 invalid citations. The decisions are fitted "
    "for the most answered questions with 97 % of off-topic questions declined; on this "
    "collection most out-of-scope questions are on its subjects, and raising the bar declines "
    "answerable ones at the same rate (the trade-off is in the results file)."
))
def test_the_shipped_set_holds_its_gate(shipped: dict[str, Any]) -> None:
    assert shipped["gate"]["passed"], _failed(shipped)
