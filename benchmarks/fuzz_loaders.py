"""Long fuzzing run of the loaders (Markdown, HTML, PDF, DOCX, JSONL), the configuration loader,
the evaluation case-file loader and live tools' responses.

    nice -n 10 .venv/bin/python benchmarks/fuzz_loaders.py [--examples 2000] [--atheris-runs 20000]
        [--formats markdown,html,...] [--tool-responses 10000] [--out benchmarks/.work/fuzz.json]
    nice -n 10 .venv/bin/python benchmarks/fuzz_loaders.py --formats casefile --examples 5000 \
        --atheris-runs 0                                      # issue 37's >= 5,000 case files

Three parts, all over the targets and the one outcome check of ``tests/support/fuzz_inputs.py`` (an
input either loads, or is rejected by an ``EvidexError`` of one line; anything else, or a run
over its time budget, is a failure):

1. every named hostile input (zip bombs, PDF stream bombs, deep nesting, alias bombs, huge
   lines, ...) in a process of its own, whose peak resident memory is read from ``wait4``;
2. hypothesis, ``--examples`` inputs per format (mutations of real seed files and inputs built
   from each format's pieces), random seed ``--seed``;
3. atheris (coverage-guided, when installed: ``pip install atheris``), ``--atheris-runs``
   inputs per format in a child process each, starting from the seed file.

4. ``--tool-responses`` generated tool responses (``fuzz_inputs.tool_inputs``: hostile JSON,
   deep nesting, huge numbers, credentials echoed, gzip, chunked, wrong content types, 503s),
   each through the service's ``POST /v1/tools/{id}/call`` and every fifth through ``POST
   /v1/answer`` too (in process, server errors counted as 500s, never raised): every reply
   must be a 200 whose lookup is ok, failed or flagged, one-line and credential-free.

Failing inputs are written to ``--crashes`` for replay. Exit status 1 on any failure or when a
named input's peak memory passes ``--max-rss-mb``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SUPPORT = HERE.parent / "tests" / "support"  # the fuzz targets, shared with the tests
sys.path.insert(0, str(SUPPORT))

import fuzz_inputs as fz  # noqa: E402

_ATHERIS = """
import sys, json, atheris
sys.path.insert(0, {tests!r})
with atheris.instrument_imports():
    import fuzz_inputs as fz
counts = {{}}
def one(data):
    o = fz.run_one({fmt!r}, data, budget_s={budget!r})
    counts[o.kind] = counts.get(o.kind, 0) + 1
    with open({counts_file!r}, "w") as f:  # libFuzzer exits without running atexit handlers
        json.dump(counts, f)
    if o.kind == "failure":
        sys.stderr.write("FAILURE " + o.detail + "\\n")
        raise RuntimeError(o.detail)
atheris.Setup([sys.argv[0], "-runs={runs}", "-rss_limit_mb={rss}", "-max_len={max_len}",
               "-seed={seed}", "-artifact_prefix={crashes}/atheris-{fmt}-", {corpus!r}], one)
atheris.Fuzz()
"""


def run_special(fmt: str, name: str, budget: float) -> dict[str, Any]:
    return {"format": fmt, "name": name, **fz.run_isolated(fmt, fz.SPECIAL[(fmt, name)](), budget)}


def run_hypothesis(fmt: str, examples: int, seed: int, budget: float, crashes: Path) -> dict[str, Any]:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed

    counts: Counter[str] = Counter()
    failures: list[str] = []
    slowest = 0.0

    @hseed(seed)
    @settings(max_examples=examples, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(fz.inputs(fmt))
    def check(data: bytes) -> None:
        nonlocal slowest
        o = fz.run_one(fmt, data, budget_s=budget)
        counts[o.kind] += 1
        slowest = max(slowest, o.seconds)
        if o.kind == "failure":
            name = crashes / f"hypothesis-{fmt}-{hashlib.sha256(data).hexdigest()[:12]}"
            name.write_bytes(data)
            failures.append(f"{o.detail} ({name.name})")

    t0 = time.perf_counter()
    check()
    return {"format": fmt, "examples": sum(counts.values()), **counts,
            "seconds": round(time.perf_counter() - t0, 1), "slowest_s": round(slowest, 2),
            "failures_first": failures[:10]}


def run_atheris(fmt: str, runs: int, seed: int, budget: float, crashes: Path, work: Path) -> dict[str, Any]:
    corpus = work / f"corpus-{fmt}"
    corpus.mkdir(parents=True, exist_ok=True)
    (corpus / "seed").write_bytes(fz.seed(fmt))
    counts_file = work / f"atheris-{fmt}-counts.json"
    counts_file.unlink(missing_ok=True)
    code = _ATHERIS.format(tests=str(SUPPORT), fmt=fmt, budget=budget, runs=runs, rss=3072,
                           max_len=max(4096, 2 * len(fz.seed(fmt))), seed=seed, crashes=str(crashes),
                           corpus=str(corpus), counts_file=str(counts_file))
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    counts = json.loads(counts_file.read_text()) if counts_file.exists() else {}
    failures = [ln for ln in proc.stderr.splitlines() if ln.startswith("FAILURE") or "ERROR:" in ln]
    return {"format": fmt, "runs": sum(counts.values()), **counts, "exit": proc.returncode,
            "seconds": round(time.perf_counter() - t0, 1), "failures_first": failures[:10]}


def run_tool_responses(count: int, seed: int, crashes: Path, work: Path) -> dict[str, Any]:
    """Part 4 (see the module docstring)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed

    work.mkdir(parents=True, exist_ok=True)
    app = fz.ToolApp(Path(__import__("tempfile").mkdtemp(dir=work)))
    codes: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    failures: list[str] = []

    def fail(data: bytes, what: str) -> None:
        name = crashes / f"tool-{hashlib.sha256(data).hexdigest()[:12]}"
        name.write_bytes(data)
        failures.append(f"{what[:200]} ({name.name})")

    @hseed(seed)
    @settings(max_examples=count, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(fz.tool_inputs())
    def check(data: bytes) -> None:
        made = sum(v for k, v in codes.items() if k.startswith("call "))
        sends = [("call", app.call)] + ([("answer", app.answer)] if made % 5 == 0 else [])
        for name, send in sends:
            code, body = send(data)
            codes[f"{name} {code}"] += 1
            if code != 200:
                fail(data, f"{name}: HTTP {code}: {body}")
            elif name == "call":
                statuses[str(body.get("status"))] += 1
                try:
                    fz.check_tool_result(body)
                except AssertionError as exc:
                    fail(data, f"unsafe result: {exc}")

    t0 = time.perf_counter()
    check()
    return {"responses": sum(v for k, v in codes.items() if k.startswith("call ")),
            "http": dict(codes), "lookups": dict(statuses), "failures": len(failures),
            "seconds": round(time.perf_counter() - t0, 1), "failures_first": failures[:10]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=2000, help="hypothesis inputs per format")
    ap.add_argument("--atheris-runs", type=int, default=20000, help="atheris inputs per format (0: skip)")
    ap.add_argument("--formats", default=",".join(fz.FORMATS))
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--budget", type=float, default=20.0, help="seconds one input may take")
    ap.add_argument("--max-rss-mb", type=float, default=1024.0, help="peak memory of one named input")
    ap.add_argument("--skip-special", action="store_true")
    ap.add_argument("--tool-responses", type=int, default=0,
                    help="generated tool responses through the service (0: skip)")
    ap.add_argument("--work", type=Path, default=HERE / ".work" / "fuzz")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    formats = [f for f in args.formats.split(",") if f]
    crashes = args.work / "crashes"
    crashes.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "python": platform.python_version(), "cpus": os.cpu_count(),
                              "seed": args.seed, "budget_s": args.budget}
    failed = False
    if not args.skip_special:
        rows = []
        for fmt, name in fz.SPECIAL:
            if fmt not in formats:
                continue
            r = run_special(fmt, name, args.budget)
            rows.append(r)
            print(f"special {r['format']:8} {r['name']:26} {r['kind']:8} {r.get('seconds', '-'):>6} s "
                  f"{r.get('peak_rss_mb', '-'):>7} MB  {r.get('detail', '')[:90]}", file=sys.stderr,
                  flush=True)
        failed |= any(r["kind"] == "failure" or r.get("peak_rss_mb", 0) > args.max_rss_mb for r in rows)
        report["special"] = rows
    report["hypothesis"] = []
    for fmt in formats if args.examples else []:
        row = run_hypothesis(fmt, args.examples, args.seed, args.budget, crashes)
        print(f"hypothesis {json.dumps(row)}", file=sys.stderr, flush=True)
        failed |= row.get("failure", 0) > 0
        report["hypothesis"].append(row)
    if args.atheris_runs:
        try:
            import atheris  # noqa: F401
        except ImportError:
            report["atheris"] = "not installed (pip install atheris)"
        else:
            report["atheris"] = []
            for fmt in formats:
                row = run_atheris(fmt, args.atheris_runs, args.seed, args.budget, crashes, args.work)
                print(f"atheris {json.dumps(row)}", file=sys.stderr, flush=True)
                failed |= bool(row.get("failure", 0)) or row["exit"] != 0
                report["atheris"].append(row)
    if args.tool_responses:
        row = run_tool_responses(args.tool_responses, args.seed, crashes, args.work)
        print(f"tool responses {json.dumps(row)}", file=sys.stderr, flush=True)
        failed |= row["failures"] > 0
        report["tool_responses"] = row
    report["crash_files"] = sorted(p.name for p in crashes.iterdir())
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
