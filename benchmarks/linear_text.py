"""Time per doubling of pathological text on every text path (issue 45, findings 2, 7, 8).

    .venv/bin/python benchmarks/linear_text.py [--sizes 20000,40000,80000] [--rounds 3]

For each path (sentence splitting, answer types, early pronouns, identifiers, answer display,
grounding markers, the ingest bounds, the page's Markdown under Node when it is installed) and
each unit (repeated punctuation, long runs, nested marks), the text is the unit repeated to
each size; the figure is the best of ``--rounds`` CPU times (``time.process_time``: another
process on the machine does not count) and the ratio of each size to the one before. Linear
work doubles (ratio about 2); quadratic work quadruples. End to end, ``KnowledgeBase.ingest``
and ``answer`` of one passage of ". " (the issue's case) on a SQLite store with the test
embedder. Prints one table; ``--json`` prints the rows.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from evidex import Actor, Document, KnowledgeBase
from evidex.answer._grounding import supporting_span
from evidex.decide._spans import _refers_back, identifier_only, shown
from evidex.decide._types import asked, stated
from evidex.ingest._limits import check_text
from evidex.ingest._sentences import sentence_spans
from evidex.model import DocumentError

UNITS = (". ", "x-", "**- ", "[1]", " ", "1.", "- ", "'", "A1", "a.", "3. ", "A-1", "aa-", "__ ")
PATHS: dict[str, Callable[[str], object]] = {
    "sentences": sentence_spans, "types": stated, "asked": asked, "refers_back": _refers_back,
    "identifier": identifier_only, "shown": shown,
    "grounding": lambda t: supporting_span(t, "Returns within 30 days.", str.split),
    "check_text": check_text,
}
APP = Path(__file__).resolve().parents[1] / "src" / "evidex" / "server" / "static" / "app.js"


def cpu(call: Callable[[str], object], text: str, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.process_time()
        with contextlib.suppress(DocumentError):  # refused by a bound: the time to refuse it counts
            call(text)
        best = min(best, time.process_time() - t0)
    return best


def page(sizes: list[int]) -> list[dict[str, object]]:
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        return []
    source = APP.read_text(encoding="utf-8")
    tail = "    return runs;\n  }\n"
    end = source.index(tail, source.index("function markdownRuns")) + len(tail)
    functions = source[source.index("  const INLINE = "):end]
    script = functions + """
const out = [];
for (const u of UNITS) {
  for (const n of SIZES) {
    const text = u.repeat(Math.floor(n / u.length)) + "x";
    let best = Infinity;
    for (let r = 0; r < 3; r++) {
      const t0 = process.cpuUsage(); markdownRuns(text); const d = process.cpuUsage(t0);
      best = Math.min(best, (d.user + d.system) / 1e6);
    }
    out.push({path: "page", unit: u, size: n, seconds: best});
  }
}
console.log(JSON.stringify(out));
"""
    units = ["**- ", "__- ", "*a ", "_a ", "** ", "| "]
    script = script.replace("UNITS", json.dumps(units)).replace("SIZES", json.dumps(sizes))
    done = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=3600, check=True)
    return list(json.loads(done.stdout))


def end_to_end(kilobytes: list[int]) -> list[dict[str, object]]:
    """The issue's case: one passage of ". " ingested and asked about."""
    rows: list[dict[str, object]] = []
    actor = Actor("t", frozenset({"g"}), visibilities=frozenset({"public"}))
    with tempfile.TemporaryDirectory() as tmp:  # first use (imports, caches) outside the figures
        kb = KnowledgeBase.open(Path(tmp) / "kb.db", embedder="hash-test")
        kb.ingest([Document("w", "t", frozenset({"g"}), "1", "Returns are accepted within 30 days.",
                            visibility="public")], split="document")
        kb.answer(actor, "how long can I return items?")
        kb.close()
    for kb_size in kilobytes:
        with tempfile.TemporaryDirectory() as tmp:
            kb = KnowledgeBase.open(Path(tmp) / "kb.db", embedder="hash-test")
            text = "Returns are accepted within 30 days. " + ". " * (kb_size * 512)
            t0 = time.process_time()
            doc = Document("d", "t", frozenset({"g"}), "1", text, visibility="public")
            kb.ingest([doc], split="document")
            ingest = time.process_time() - t0
            t0 = time.process_time()
            kb.answer(actor, "how long can I return items?")
            answer = time.process_time() - t0
            kb.close()
        rows.append({"path": "ingest", "unit": ". ", "size": kb_size * 1024, "seconds": ingest})
        rows.append({"path": "answer", "unit": ". ", "size": kb_size * 1024, "seconds": answer})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="20000,40000,80000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    rows: list[dict[str, object]] = []
    for name, call in PATHS.items():
        for unit in UNITS:
            for n in sizes:
                text = unit * (n // len(unit)) + "a"
                rows.append({"path": name, "unit": unit, "size": n, "seconds": cpu(call, text, args.rounds)})
    rows += page([s * 5 for s in sizes])
    rows += end_to_end([6, 12, 24])
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    worst: dict[str, tuple[float, str]] = {}
    by: dict[tuple[str, str], list[dict[str, object]]] = {}
    for r in rows:
        by.setdefault((str(r["path"]), str(r["unit"])), []).append(r)
    print(f"{'path':12} {'unit':8} " + " ".join(f"{'size':>8} {'CPU s':>8} {'ratio':>6}" for _ in sizes))
    for (path, unit), series in by.items():
        cells, before = [], None
        for r in series:
            sec = float(r["seconds"])  # type: ignore[arg-type]
            ratio = sec / before if before and before > 0.002 else float("nan")
            before = sec
            cells.append(f"{r['size']:>8} {sec:8.4f} {ratio:6.2f}")
            if ratio == ratio and (path not in worst or ratio > worst[path][0]):
                worst[path] = (ratio, unit)
        print(f"{path:12} {unit!r:8} " + " ".join(cells))
    print("\nworst ratio per doubling (series whose smaller size took over 2 ms):")
    for path, (ratio, unit) in sorted(worst.items()):
        print(f"  {path:12} {ratio:5.2f}  ({unit!r})")


if __name__ == "__main__":
    main()
