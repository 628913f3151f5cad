"""Peak memory and time of ingesting the hostile files of issue 37, through the CLI and through a
running service's POST /v1/sync, against the target: at most 20 x the file's size + 300 MB.

    .venv/bin/python benchmarks/ingest_memory.py [--peer /work/main/.venv/bin/evidex] [--timeout 300]

The files (written to disk in pieces, so this process stays small): a Word file of 2 million
one-word paragraphs (about 370 KB, 110 MB unpacked) and one of 200,000; 10 MB of one-letter
words as one Markdown paragraph, as Markdown paragraphs of 5,000 words, and as one JSON Lines
record. Each is ingested alone into a new store (the default embedder, as `evidex ingest`
does).

- CLI: `evidex ingest FILE` in a child process whose peak resident memory (``VmHWM``, read at
  its exit) is reported whole, start-up included.
- Service: `evidex serve` with a files source (or records source) holding the file; the
  service's peak is reset (``/proc/PID/clear_refs``) after start-up and a warm-up sync of an
  empty folder, then ``POST /v1/sync`` runs; reported is the peak minus the resident memory
  before the sync.

A run killed at ``--timeout`` seconds is reported as such (what main did with these files).
With ``--peer``, the same runs with another build's evidex, side by side.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from _service import free_port, wait_healthy

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "support"))

import fuzz_inputs as fz  # noqa: E402

EVIDEX = str(Path(sys.executable).with_name("evidex"))
MB = 1024 * 1024
ADMIN = "bench-admin-key"
_CHILD = """
import atexit, runpy, sys
def hwm():
    kb = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    sys.stderr.write(f"\\nVMHWM_KB {kb}\\n")
atexit.register(hwm)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def tiny_words_file(path: Path, megabytes: int = 10, paragraph_words: int = 0, jsonl: bool = False) -> None:
    """``fuzz_inputs.tiny_words``, written in pieces."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    total = megabytes * 500_000
    with path.open("w", encoding="utf-8") as f:
        f.write('{"id": "tiny", "text": "' if jsonl else "")
        for start in range(0, total, 10_000):
            words = [letters[i % 26] for i in range(start, min(total, start + 10_000))]
            if paragraph_words:
                f.write("".join(w + ("\\n\\n" if jsonl else "\n\n") if (start + j + 1) % paragraph_words == 0
                                else w + " " for j, w in enumerate(words)))
            else:
                f.write(" ".join(words) + " ")
        f.write('"}\n' if jsonl else "\n")


def hostile_files(folder: Path) -> list[Path]:
    out = []
    for name, n in (("paragraphs-2m.docx", 2_000_000), ("paragraphs-200k.docx", 200_000)):
        (folder / name).write_bytes(fz.docx_paragraphs(n))
        out.append(folder / name)
    for name, kw in (("tiny-words.md", {}), ("tiny-words-paragraphs.md", {"paragraph_words": 5_000}),
                     ("tiny-words-line.jsonl", {"jsonl": True})):
        tiny_words_file(folder / name, **kw)  # type: ignore[arg-type]
        out.append(folder / name)
    return out


def cli(evidex: str, file: Path, tmp: Path, timeout: float) -> dict[str, Any]:
    """`evidex ingest FILE` in a child; its peak (``VmHWM``) is polled while it runs, so a run
    killed at ``timeout`` still reports the peak it had reached."""
    db = tmp / f"cli-{file.name}.db"
    # The build's own interpreter: its evidex script imports the evidex installed beside it.
    python = str(Path(evidex).with_name("python"))
    args = [python, "-c", _CHILD, evidex, "--db", str(db), "ingest", str(file), "--tenant", "acme",
            "--groups", "staff"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0.0
    while proc.poll() is None and time.perf_counter() - t0 < timeout:
        with contextlib.suppress(OSError, StopIteration):  # the child exiting meanwhile
            peak = max(peak, _status(proc.pid, "VmHWM"))
        time.sleep(0.1)
    if proc.poll() is None:
        proc.kill()
        proc.communicate()
        return {"seconds": timeout, "peak_mb": peak, "outcome": f"killed after {timeout:g} s"}
    out, err = proc.communicate()
    seconds = time.perf_counter() - t0
    at_exit = next((int(ln.split()[1]) for ln in err.splitlines() if ln.startswith("VMHWM_KB")), 0)
    said = [ln.split(": ", 1)[-1] for ln in (out + err).splitlines() if ln.startswith("rejected")]
    said = said or [ln for ln in out.splitlines() if ln.startswith("added")]
    return {"seconds": seconds, "peak_mb": max(peak, at_exit / 1024), "outcome": " / ".join(said)[:200]}


def _status(pid: int, field: str) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith(field + ":")) / 1024


def service(evidex: str, file: Path, tmp: Path, timeout: float) -> dict[str, Any]:
    folder = tmp / f"src-{file.name}"
    folder.mkdir()
    records = file.suffix == ".jsonl"
    source = {"id": "docs", "type": "records" if records else "files", "path": str(folder), "tenant": "acme",
              "groups": ["staff"]}
    if records:
        source["fields"] = {"id": "id", "text": "text"}
    config = tmp / f"config-{file.name}.yaml"
    config.write_text(yaml.safe_dump({"sources": [source], "server": {"api_keys": [{
        "key_sha256": hashlib.sha256(ADMIN.encode()).hexdigest(), "tenant": "acme", "groups": ["staff"],
        "admin": True}]}}), encoding="utf-8")
    db = tmp / f"serve-{file.name}.db"
    subprocess.run([evidex, "--db", str(db), "ingest", str(HERE.parent / "examples" / "collection"),
                    "--tenant", "acme", "--groups", "staff"], check=True, capture_output=True)
    port = free_port()
    log = tmp / f"serve-{file.name}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([evidex, "--db", str(db), "serve", "--config", str(config),
                                 "--port", str(port), "--no-schedule"], stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {ADMIN}"}
    try:
        wait_healthy(proc, url, log)
        httpx.post(url + "/v1/sync", json={}, headers=headers, timeout=timeout)  # warm: an empty folder
        shutil.copy(file, folder / file.name)
        with open(f"/proc/{proc.pid}/clear_refs", "w") as f:
            f.write("5")  # the peak starts again from what is resident now
        before = _status(proc.pid, "VmRSS")
        t0 = time.perf_counter()
        try:
            r = httpx.post(url + "/v1/sync", json={}, headers=headers, timeout=timeout)
            outcome = (json.dumps({k: r.json().get(k) for k in ("added", "skipped", "errors")})
                       if r.status_code == 200 else f"HTTP {r.status_code}")
            skipped = [s["reason"] for src in r.json().get("sources", []) for s in src.get("skipped", [])] \
                if r.status_code == 200 else []
            outcome += (" " + skipped[0][:120]) if skipped else ""
        except httpx.TimeoutException:
            outcome = f"no reply after {timeout:g} s (the peak is the one reached by then)"
        seconds = time.perf_counter() - t0
        peak = _status(proc.pid, "VmHWM")
        return {"seconds": seconds, "before_mb": before, "peak_mb": peak, "grew_mb": peak - before,
                "outcome": outcome}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer", default=None, help="another build's evidex, run the same way")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds one ingest or sync may take")
    args = ap.parse_args()
    print(f"# ingest memory — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, Python "
          f"{platform.python_version()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}\n")
    builds = [("this tree", EVIDEX)] + ([("peer", args.peer)] if args.peer else [])
    rows = []
    with tempfile.TemporaryDirectory(prefix="evidex-ingest-memory-") as tmp_name:
        tmp = Path(tmp_name)
        files = hostile_files(tmp)
        for file in files:
            target = 20 * file.stat().st_size / MB + 300
            for name, evidex in builds:
                c = cli(evidex, file, tmp, args.timeout)
                s = service(evidex, file, Path(tempfile.mkdtemp(dir=tmp)), args.timeout)
                rows.append((file.name, file.stat().st_size / MB, target, name, c, s))
                print(f"{file.name} {name}: cli {json.dumps(c)} service {json.dumps(s)}", file=sys.stderr,
                      flush=True)
    print("| file | size (MB) | target (MB) | build | CLI peak (MB) | CLI s | /v1/sync growth (MB) | "
          "sync s | within target | outcome (CLI) |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---|---|")
    for file_name, size, target, name, c, s in rows:
        cli_peak = f"{c['peak_mb']:.0f}"
        within = (c["peak_mb"] <= target and s.get("grew_mb", 1e9) <= target
                  and "killed" not in c["outcome"] and "no reply" not in s["outcome"])
        print(f"| {file_name} | {size:.2f} | {target:.0f} | {name} | {cli_peak} | {c['seconds']:.1f} | "
              f"{s.get('grew_mb', 0):.0f} | {s['seconds']:.1f} | {'yes' if within else 'NO'} | "
              f"{c['outcome'][:90]} |")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
