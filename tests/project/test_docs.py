"""The documentation cannot drift (issue 39): the site builds strictly, its generated references are
current, and every code block in README.md and docs/ either runs here or says why it does not.

A block is marked by an HTML comment on the line before its fence:

* ``<!-- run: python -->``: executed (in a fresh folder, default embedding model);
* ``<!-- run: config -->``: a YAML block loaded as a whole ``knowledge.config.yaml``;
* ``<!-- run: demo -->``: a console block of ``$ command`` lines and their output, run in the
  `make run` demo (tests/support/demo_helpers.py) and compared line by line; ``EVIDEX_UPDATE_DOCS=1``
  rewrites the output from the demo;
* ``<!-- run: demo-sh -->``: shell commands run in the demo, each must succeed (``http://127.0.0.1:8000``
  is the demo's service);
* ``<!-- not run: REASON -->``: not run, for the reason given.

In the demo the commands run in a folder holding the demo's store as ``evidex.db`` and its
configuration as ``examples/knowledge.config.yaml`` (with the test's ports), with ``evidex`` and
``.venv/bin/evidex`` the installed command, as a user who ran `make run` in the checkout has them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from demo_helpers import USER_CACHE_DIR, Demo, running_demo
from evidex.config import load_config
from evidex.embed import DEFAULT_EMBEDDER
from service_helpers import BIN, ROOT

DOCS = ROOT / "docs"
FILES = [ROOT / "README.md", *sorted(p for p in DOCS.rglob("*.md") if "reference" not in p.parts)]
FENCE = re.compile(
    r"(?:^[ ]*<!-- (?P<kind>run|not run): ?(?P<arg>[^\n]*?) -->\n)?"
    r"^(?P<indent>[ ]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.M | re.S)
KINDS = {"python", "config", "demo", "demo-sh"}


@dataclass
class Block:
    path: Path
    line: int
    kind: str | None
    arg: str
    lang: str
    body: str
    start: int  # offsets of the body in the file
    end: int

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        body = "\n".join(ln[len(m["indent"]):] for ln in m["body"].splitlines())
        out.append(Block(path, text.count("\n", 0, m.start("body")), m["kind"], (m["arg"] or "").strip(),
                         m["lang"], body, m.start("body"), m.end("body")))
    return out


ALL = [b for p in FILES for b in blocks(p)]


def of(kind: str) -> list[Block]:
    return [b for b in ALL if b.kind == "run" and b.arg == kind]


def test_every_code_block_runs_or_says_why_not() -> None:
    assert len(ALL) >= 20  # the pattern finds the blocks at all
    unmarked = [b.id for b in ALL if b.kind is None]
    assert not unmarked, f"code blocks neither run nor marked `<!-- not run: reason -->`: {unmarked}"
    bad = [b.id for b in ALL if (b.kind == "run" and b.arg not in KINDS)
           or (b.kind == "not run" and len(b.arg.split()) < 3)]
    assert not bad, f"unknown run kind, or a reason of fewer than three words: {bad}"
    # No indented code block hides from the markers: fenced blocks only.
    for path in FILES:
        text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
        assert not re.search(r"\n\n    [^\s*-]", text), f"{path}: an indented code block"


@pytest.mark.parametrize("block", of("python"), ids=lambda b: b.id)
def test_python_blocks_run(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVIDEX_EMBEDDER", DEFAULT_EMBEDDER)
    monkeypatch.setenv("EVIDEX_CACHE_DIR", str(USER_CACHE_DIR))
    exec(compile(block.body, block.id, "exec"), {"__name__": "__docs__"})


@pytest.mark.parametrize("block", of("config"), ids=lambda b: b.id)
def test_config_blocks_load(block: Block, tmp_path: Path) -> None:
    path = tmp_path / "knowledge.config.yaml"
    path.write_text(block.body + "\n", encoding="utf-8")
    load_config(path)


# -- the demo -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Demo, Path]]:
    if not of("demo") and not of("demo-sh"):
        pytest.skip("no demo blocks")
    with running_demo(tmp_path_factory.mktemp("docs-demo")) as demo:
        here = tmp_path_factory.mktemp("docs-cwd")
        (here / "examples").mkdir()
        # The vector leg's and the quotes' deadline (4 s) out of reach: on a busy machine a miss
        # declines by words alone, and these blocks show what the demo prints, not the deadline
        # (tests/retrieve/test_vector_fallback.py checks that).
        config = demo.config.read_text(encoding="utf-8")
        generous = config.replace("vector: { index: embeddings, timeout_ms: 4000 }",
                                  "vector: { index: embeddings, timeout_ms: 600000 }")
        assert generous != config, "the example configuration's vector deadline moved"
        (here / "examples" / "knowledge.config.yaml").write_text(generous, encoding="utf-8")
        (here / ".venv").symlink_to(Path(sys.prefix))
        yield demo, here


def _run(demo: Demo, here: Path, command: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **demo.env, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "COLUMNS": "200"}
    env.pop("EVIDEX_DEMO_KEY", None)
    # The demo's store as the checkout's ./evidex.db; the commands read it, never write it.
    db = here / "evidex.db"
    if not db.exists():
        db.symlink_to(demo.db)
    # The service `make run` serves on :8000 is the demo's, on its own port.
    command = command.replace("http://127.0.0.1:8000", demo.url)
    return subprocess.run(["bash", "-c", command], cwd=here, capture_output=True, text=True, env=env,
                          timeout=300)


def _commands(body: str) -> list[tuple[list[str], str, list[str]]]:
    """(the command's lines as written, the command, expected output lines) for each ``$ `` line
    (with ``\\`` continuations)."""
    out: list[tuple[list[str], str, list[str]]] = []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        assert line.startswith("$ "), f"output before a command: {line!r}"
        written = [line]
        cmd = line[2:]
        while cmd.endswith("\\"):
            i += 1
            written.append(lines[i])
            cmd = cmd[:-1] + " " + lines[i].strip()
        i += 1
        expected = []
        while i < len(lines) and not lines[i].startswith("$ "):
            expected.append(lines[i])
            i += 1
        out.append((written, cmd, expected))
    return out


#: A decimal figure in a demo's output (a score, a similarity).
_FIGURE = re.compile(r"(?<![\w.])(\d+\.\d{2,})(?![\w.])")


def _same_output(got: list[str], expected: list[str]) -> bool:
    """The same lines, words and order, with each decimal figure within 0.01 of the document's
    (issue 45, finding 12): an embedding computed on another CPU prints similarity 0.851 where
    docs/answers.md shows 0.847. Decisions, ranks and texts still have to be equal."""
    if len(got) != len(expected):
        return False
    for a, b in zip(got, expected, strict=True):
        pa, pb = _FIGURE.split(a), _FIGURE.split(b)
        if len(pa) != len(pb) or pa[0::2] != pb[0::2]:
            return False
        if any(abs(float(x) - float(y)) > 0.01 + 1e-9 for x, y in zip(pa[1::2], pb[1::2], strict=True)):
            return False
    return True


def test_demo_figures_may_differ_in_the_last_digit_only() -> None:
    def line(doc: str, score: str, similarity: str, verdict: str) -> list[str]:
        return [f"  [1] {doc} #5: {score} (similarity {similarity}, coverage 1.000) {verdict}"]

    shown = line("shop/returns", "0.331", "0.898", "on topic")
    assert _same_output(line("shop/returns", "0.329", "0.902", "on topic"), shown)
    assert not _same_output(line("shop/returns", "0.331", "0.898", "off topic"), shown)
    assert not _same_output(line("shop/returns", "0.331", "0.798", "on topic"), shown)
    assert not _same_output(line("shop/size-guide", "0.331", "0.898", "on topic"), shown)


def _vnni() -> bool:
    """Whether this CPU has VNNI int8 dot products (Zen 4 has them, Zen 3 does not)."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8").split()
    except OSError:
        return True
    return "avx512_vnni" in flags or "avx_vnni" in flags


# The demo blocks were printed on a CPU with VNNI. Without it the embedder's vectors still move
# by ~0.001 of cosine: the int8 products are exact on every CPU since graph v2, but each layer
# re-quantizes its activations, which turns the CPUs' last-bit float differences into code flips
# (1e-7 of input noise moves the output by 4e-4 of cosine: benchmarks/RESULTS.md, issue 25's
# row). That reorders the third passage of one --explain block. Strict: once the vectors agree,
# this xfail fails and must go.
@pytest.mark.xfail(not _vnni(), strict=True,
                   reason="the embedder's vectors differ by ~0.001 on CPUs without VNNI (RESULTS, issue 25)")
@pytest.mark.slow
def test_demo_examples_are_what_the_demo_prints(demo_dir: tuple[Demo, Path]) -> None:
    demo, here = demo_dir
    update = os.environ.get("EVIDEX_UPDATE_DOCS") == "1"
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        new = text
        for block in reversed([b for b in blocks(path) if b.kind == "run" and b.arg == "demo"]):
            parts = []
            for written, cmd, expected in _commands(block.body):
                proc = _run(demo, here, cmd)
                got = [ln.rstrip() for ln in demo.as_make_run(proc.stdout).rstrip("\n").splitlines()]
                if not update:
                    assert _same_output(got, [ln.rstrip() for ln in expected]), (
                        f"{block.id}: `{cmd}` printed (EVIDEX_UPDATE_DOCS=1 rewrites the block):\n"
                        + "\n".join(got) + f"\n{proc.stderr}")
                parts.append("\n".join([*written, *got]))
            new = new[:block.start] + "\n".join(parts) + "\n" + new[block.end:]
        if update and new != text:
            path.write_text(new, encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("block", of("demo-sh"), ids=lambda b: b.id)
def test_demo_commands_succeed(block: Block, demo_dir: tuple[Demo, Path]) -> None:
    demo, here = demo_dir
    script = re.sub(r"\\\n\s*", " ", block.body)
    for cmd in [c for c in script.splitlines() if c.strip() and not c.lstrip().startswith("#")]:
        proc = _run(demo, here, cmd)
        assert proc.returncode == 0, f"{block.id}: `{cmd}` failed:\n{proc.stdout}\n{proc.stderr}"


# -- the site -------------------------------------------------------------------------------------
def test_the_site_builds_strictly_with_current_references() -> None:
    """`make docs`: the generated references are current and MkDocs builds in strict mode."""
    proc = subprocess.run(["make", "--no-print-directory", "-o", "install", "docs"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_broken_link_or_a_stale_reference_fails_the_build(tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(DOCS, site / "docs")
    shutil.copy(ROOT / "mkdocs.yml", site / "mkdocs.yml")
    shutil.copy(ROOT / "ARCHITECTURE.md", site / "ARCHITECTURE.md")
    (site / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "knowledge.config.yaml", site / "examples")
    page = site / "docs" / "concepts.md"
    broken = page.read_text(encoding="utf-8") + "\nSee [nowhere](no-such-page.md).\n"
    page.write_text(broken, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "out")], cwd=site, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0 and "no-such-page.md" in proc.stdout + proc.stderr
    ref = site / "docs" / "reference" / "cli.md"
    ref.write_text(ref.read_text(encoding="utf-8").replace("## `evidex search`", "## `evidex find`"),
                   encoding="utf-8")
    check = subprocess.run([sys.executable, str(ROOT / "docs" / "gen_reference.py"), "--check",
                            "--docs", str(site / "docs")], capture_output=True, text=True, timeout=600)
    assert check.returncode == 1 and "docs/reference/cli.md" in check.stderr


# -- the front door and the figures -------------------------------------------------------------------
def test_the_readme_first_screen_gets_a_newcomer_to_an_answer() -> None:
    """Issue 39: the README was 1,432 lines opening with a paragraph of internals. Its first
    screen (40 lines) now holds the command, the address, the demo key and questions to try."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first = "\n".join(text.splitlines()[:40])
    for needed in ("make run", "http://127.0.0.1:8000/", "evidex-demo-customer", "Ask a person",
                   "docs/assets/page.png", "make test"):
        assert needed in first, needed
    commands = [b for b in blocks(ROOT / "README.md") if b.lang == "sh" and b.start < len(first)]
    assert sum(len(b.body.split("\n")) for b in commands[:1]) <= 3  # to an answered question
    for internal in ("SQLite", "BM25", "embedding", "onnx", "tokenizer", "pydantic", "fusion", "WAL"):
        assert internal.lower() not in first.lower(), internal
    assert len(text.splitlines()) <= 120
    assert (ROOT / "docs" / "assets" / "page.png").stat().st_size > 10_000


def test_results_show_current_figures_first_and_keep_every_run() -> None:
    results = (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
    history = (ROOT / "benchmarks" / "RESULTS-history.md").read_text(encoding="utf-8")
    assert len(results.splitlines()) <= 300
    table = results.split("## Every target, newest figure first", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in table.splitlines() if r.startswith("| ") and not r.startswith("| issue")]
    assert len(rows) >= 20
    for row in rows:  # issue, target, figure, state, command, date
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert len(cells) == 6 and re.fullmatch(r"2026-\d\d-\d\d", cells[5]) and cells[4], row
    # Sections moved out of RESULTS.md by issue 39 are all in the history, unchanged.
    for heading in ("Lead, session 19 (2026-12-02)", "Soak (issue 27): what grew, and the fix",
                    "Sync and re-sync of 10,000 documents (issue 5)",
                    "1,000,000 passages, keyword (issue 2) — session 11"):
        assert heading in history, heading
