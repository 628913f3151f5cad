"""The page renders any passage in linear time (issue 45, finding 7): one 200 KB passage of
"**- " froze the tab for 21.5 s, because the page's inline-Markdown pattern scanned from every
"**" to the end of the line. The page's own functions (static/app.js: the inline pattern and
``markdownRuns``) run here under Node on pathological passages; the bound is CPU time of that
process (not wall-clock: another process on the machine does not count), far above what linear
work takes and far below quadratic work on these sizes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "src" / "evidex" / "server" / "static" / "app.js"
NODE = shutil.which("node") or shutil.which("nodejs")

UNITS = ["**- ", "__- ", "*a ", "_a ", "`", "** ", "**a", "*- ", "_- ", "| ", "|-", "- **", "# **"]


def _page_functions() -> str:
    """``INLINE``, ``STYLE_OF_GROUP``, the table patterns, ``inlineRuns`` and ``markdownRuns`` as
    app.js defines them."""
    source = APP.read_text(encoding="utf-8")
    start = source.index("  const INLINE = ")
    tail = "    return runs;\n  }\n"
    return source[start:source.index(tail, source.index("function markdownRuns")) + len(tail)]


@pytest.mark.skipif(NODE is None, reason="the page's JavaScript runs under Node, which is not installed")
def test_the_page_renders_pathological_passages_in_linear_time() -> None:
    script = _page_functions() + """
const units = UNITS_JSON;
const out = {};
for (const u of units) {
  for (const n of [200000, 400000]) {
    const text = u.repeat(Math.floor(n / u.length)) + "x";
    const t0 = process.cpuUsage();
    const runs = markdownRuns(text);
    const used = process.cpuUsage(t0);
    out[u + "@" + n] = [(used.user + used.system) / 1e6, runs.length];
  }
}
console.log(JSON.stringify(out));
""".replace("UNITS_JSON", json.dumps(UNITS))
    done = subprocess.run([str(NODE), "-e", script], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    for key, (seconds, runs) in json.loads(done.stdout).items():
        assert seconds < 5, f"{key}: {seconds:.1f} s of CPU"
        assert runs >= 1


@pytest.mark.skipif(NODE is None, reason="the page's JavaScript runs under Node, which is not installed")
def test_the_page_still_shows_inline_marks() -> None:
    script = _page_functions() + """
const text = "**Returns** are *free* within `30` days, __always__ and _soon_.";
console.log(JSON.stringify(markdownRuns(text).map((r) => [text.slice(r.a, r.b), r.style])));
"""
    done = subprocess.run([str(NODE), "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    shown = [tuple(r) for r in json.loads(done.stdout)]
    assert ("Returns", "strong") in shown and ("free", "em") in shown and ("30", "code") in shown
    assert ("always", "strong") in shown and ("soon", "em") in shown


def test_every_decline_reason_has_page_text() -> None:
    """Finding 10: ``not_stated`` had no text (the page said "The question was not answered.");
    ``timeout`` (the answer check ran out of time) is a reason too."""
    source = APP.read_text(encoding="utf-8")
    block = source[source.index("const REASONS = {"):source.index("};", source.index("const REASONS = {"))]
    reasons = set(re.findall(r"^\s+([a-z_]+):", block, re.MULTILINE))
    assert {"no_evidence", "weak_evidence", "invalid_model_output", "context_budget", "generator_error",
            "no_answer_in_sources", "not_stated", "timeout", "tool_unavailable",
            "tool_needs_sign_in"} <= reasons
    assert "related reading" in block[block.index("timeout:"):].splitlines()[0]
