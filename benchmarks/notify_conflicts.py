"""Conflict detection at ingestion on the shop collection: its cost and what it finds.

Ingests examples/shop as its README does (versions, site, staff, other tenant; heading split;
the default embedder; the files read in each run) into a fresh SQLite store, the variants
alternating: detection off; on;
on with the values read from passages forgotten first (every passage is scanned). Prints wall
and CPU times per run. ``--cold`` gives every run an empty embedding cache (the first ingest of
a collection: the model embeds every passage); without it the cache is warm (a re-build from
the same texts). Then re-ingests everything unchanged (nothing is recomputed).
Finally lists the conflicts found, marking the planted ones (examples/shop/README.md).

    .venv/bin/python benchmarks/notify_conflicts.py --runs 5
    .venv/bin/python benchmarks/notify_conflicts.py --runs 3 --cold

``--dump FILE`` writes every conflict found (all fields, in the order found) on the shop with
the default embedder and keyword-only, on the check set and on the first 1,500 SciFact abstracts
(with the default embedder and keyword-only, four batches), each once more with loose rules
(lower subject and similarity thresholds, no ratio limit: many more pairs reach every test):
run once per tree and compare the files, to show a change to detection finds exactly what the
other tree finds. ``--cache DIR`` keeps the embedding cache between runs. Fix the hash seed
when comparing with a tree older than 2026-12-02: there, ties between equally rare words
(keyword-only stores) followed string hashing, so fell either way from one process to the next.

    export PYTHONHASHSEED=0
    PYTHONPATH=/tmp/base/src .venv/bin/python benchmarks/notify_conflicts.py --dump /tmp/main.json
    .venv/bin/python benchmarks/notify_conflicts.py --dump /tmp/branch.json
    cmp /tmp/main.json /tmp/branch.json

``--postgres URL`` keeps the --dump stores in that PostgreSQL server instead (one schema each).

``--sync`` measures what `make run` does instead: a sync of examples/knowledge.config.yaml from
the example site (examples/site_server.py, in a thread on a free port), its PDF and its wiki
folder into a fresh store, detection off and on alternating, the embedding cache warm.

    .venv/bin/python benchmarks/notify_conflicts.py --sync --runs 6
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from evidex import Document, KnowledgeBase
from evidex._writes import Writer
from evidex.ingest import load_paths

try:  # detection's module: evidex.conflicts since 2026-12 (an older tree is measured too)
    from evidex.conflicts import _detect as _conflicts
except ImportError:
    from evidex.retrieve import _conflicts  # type: ignore[no-redef]

SHOP = Path(__file__).resolve().parents[1] / "examples" / "shop"
RUNS = [
    ("versions", {"tenant": "acme"}),
    ("site", {"tenant": "acme", "groups": ["customers", "staff"], "visibility": "public", "language": "en"}),
    ("staff", {"tenant": "acme", "groups": ["staff"], "visibility": "internal", "language": "en"}),
    ("other-tenant", {"tenant": "globex"}),
]
SET = Path(__file__).resolve().parent / "data" / "conflict-set"
#: The check set's true conflicts (its README): pairs of (document id, value).
SET_TRUE = [{tuple(side) for side in pair}
            for pair in json.loads((SET / "expected.json").read_text(encoding="utf-8"))]
PLANTED = [
    ({"shop/care-guide", "shop/de/pflege"}, {"shop/products/stormline-jacket"}),
    ({"stores/hamburg.html"}, {"pdf/store-flyer-hamburg.pdf"}),
]


def load_one(folder: str, extra: dict) -> list:
    """The documents of one of the README's ingests, read from the shop's files."""
    base = {"tenant": None, "groups": None, "visibility": None, "language": None, "version": None}
    return load_paths([SHOP / folder], {**base, **extra}).documents


def load() -> list[list]:
    return [load_one(folder, extra) for folder, extra in RUNS]


#: CPU time spent inside the knowledge base's detection step (``_writes.Writer.detect``: the
#: read view after the write, the documents' titles, ``find_conflicts``, recording), summed per
#: ingest: less exposed to a shared machine than the difference of two whole ingests.
DETECT_CPU = [0.0]
_detect = Writer.detect


def _timed_detect(self: Writer, *args: object) -> object:
    start = time.process_time()
    try:
        return _detect(self, *args)
    finally:
        DETECT_CPU[0] += time.process_time() - start


Writer.detect = _timed_detect  # type: ignore[method-assign,assignment]


def clear_memory() -> None:
    """Forget the values read from passages in this process, as a new process would. (Either
    tree's way: the same script measures an older tree, run with its src on PYTHONPATH.)"""
    clear = getattr(_conflicts, "clear_value_cache", None)
    if clear is None:
        clear = getattr(getattr(_conflicts, "_value_sentences", None), "cache_clear", None)
    if clear is not None:
        clear()


def forget_values(cache: Path) -> None:
    """Empty what the cache file keeps besides vectors (a tree without that part: nothing)."""
    with sqlite3.connect(cache) as conn:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'derived'").fetchone():
            conn.execute("DELETE FROM derived")
    conn.close()


def ingest(folder: Path, detect: bool, cache: Path) -> tuple[float, float, float, float, float, list]:
    """The README's four ingests from the shop's files: (wall, wall of the unchanged re-ingest,
    CPU of the index step, detection's own CPU, CPU of reading the files, conflicts found).
    The files are read inside the run, as ``evidex ingest`` does, and their CPU kept apart:
    the index step is the ingest of documents already read."""
    db = folder / f"shop-{detect}-{time.monotonic_ns()}.db"
    found = []
    # As in a fresh process: no passage's values read by an earlier run (in memory).
    clear_memory()
    with KnowledgeBase.open(db, detect_conflicts=detect, embed_cache=cache) as kb:
        DETECT_CPU[0] = 0.0
        batches, reading = [], 0.0
        t0, c0 = time.perf_counter(), time.process_time()
        for name, extra in RUNS:
            r0 = time.process_time()
            batches.append(load_one(name, extra))
            reading += time.process_time() - r0
            found += kb.ingest(batches[-1], split="heading", batch_size=500).conflicts
        first, own = time.perf_counter() - t0, DETECT_CPU[0]
        cpu = time.process_time() - c0 - reading
        t0 = time.perf_counter()
        for docs in batches[1:]:  # the current collection again (versions/ would supersede)
            again = kb.ingest(docs, split="heading", batch_size=500)
            assert again.added == again.superseded == 0 and not again.conflicts
        return first, time.perf_counter() - t0, cpu, own, reading, found


def sync_runs(runs: int) -> None:
    """``--sync``: detection's share of `make run`'s sync of the example configuration."""
    import importlib.util
    import socket
    import threading

    from evidex.config import load_config
    from evidex.sources import sync

    examples = SHOP.parent
    spec = importlib.util.spec_from_file_location("site_server", examples / "site_server.py")
    assert spec and spec.loader
    site = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(site)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    httpd = site.server(port)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    times: dict[bool, list[tuple[float, float, float]]] = {False: [], True: []}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            text = (examples / "knowledge.config.yaml").read_text(encoding="utf-8")
            text = text.replace("127.0.0.1:8765", f"127.0.0.1:{port}").replace(
                "path: shop/", f"path: {examples / 'shop'}/")
            (folder / "knowledge.config.yaml").write_text(text, encoding="utf-8")
            config = load_config(folder / "knowledge.config.yaml")
            cache = folder / "cache"
            for i in range(runs + 1):  # the first pair fills the cache
                for detect in (False, True) if i % 2 else (True, False):
                    clear_memory()
                    with KnowledgeBase.open(folder / f"sync-{i}-{detect}.db", detect_conflicts=detect,
                                            embed_cache=cache) as kb:
                        DETECT_CPU[0] = 0.0
                        t0, c0 = time.perf_counter(), time.process_time()
                        report = sync(kb, config)
                        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                    assert all(not r.errors for r in report.sources)
                    if i:
                        times[detect].append((wall, cpu, DETECT_CPU[0]))
                        print(f"run {i} detection {'on' if detect else 'off'}: sync {wall:.2f} s "
                              f"(CPU {cpu:.3f} s, detection's own {DETECT_CPU[0]:.3f} s)")
    finally:
        httpd.shutdown()
    for name, stat in (("medians", statistics.median), ("minima", min)):
        off = stat(t[0] for t in times[False])
        on = stat(t[0] for t in times[True])
        own = stat(t[2] for t in times[True])
        print(f"sync ({name}): detection off {1000 * off:.0f} ms, on {1000 * on:.0f} ms (wall, "
              f"+{100 * (on - off) / off:.0f} %); detection's own CPU {1000 * own:.0f} ms, "
              f"{100 * own / off:.0f} % of the sync without it")


def check_set() -> tuple[list, list]:
    """Conflicts found in the check set: (true ones, others)."""
    docs = load_paths([SET], {"tenant": "northwind", "groups": ["staff"], "visibility": None,
                              "language": "en", "version": "1"}).documents
    with tempfile.TemporaryDirectory() as tmp, KnowledgeBase.open(Path(tmp) / "set.db") as kb:
        found = list(kb.ingest(docs, split="heading").conflicts)
    true = [c for c in found if {(c.a.document_id, c.a.value), (c.b.document_id, c.b.value)} in SET_TRUE]
    return true, [c for c in found if c not in true]


SCIFACT = Path("/work/shared/data/beir/scifact/corpus.jsonl")


#: Rules loose enough that most value-stating neighbours are compared to the end.
LOOSE = {"SUBJECT_MIN": 0.3, "MIN_SHARED": 2, "PASSAGE_MIN": 0.8, "PASSAGE_SHARED": 1,
         "PASSAGE_RATIO": 1000.0}


def dump(path: Path, cache: Path | None, postgres: str | None = None) -> None:
    """Every conflict found on the shop, the check set and a SciFact slice, as JSON; in
    SQLite files, or with ``postgres`` (a server's URL) in a new schema of it per case."""
    out: dict[str, list] = {}
    strict = {k: getattr(_conflicts, k) for k in LOOSE}
    batches = load()
    set_docs = load_paths([SET], {"tenant": "northwind", "groups": ["staff"], "visibility": None,
                                  "language": "en", "version": "1"}).documents
    with SCIFACT.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line, _ in zip(fh, range(1500), strict=False)]
    science = [Document(str(r["_id"]), "sci", frozenset({"g"}), "1", r["text"], title=r["title"])
               for r in rows]
    quarters = [science[i:i + 375] for i in range(0, 1500, 375)]
    cases = [("shop", None, batches), ("shop-keyword", "none", batches), ("set", None, [set_docs]),
             ("scifact", None, quarters), ("scifact-keyword", "none", quarters)]
    cases += [(f"{name}-loose", embedder, runs) for name, embedder, runs in cases]
    with tempfile.TemporaryDirectory() as tmp:
        for name, embedder, runs in cases:
            for k, v in (LOOSE if name.endswith("-loose") else strict).items():
                setattr(_conflicts, k, v)
            clear_memory()
            found = []
            schema = f"dump_{name.replace('-', '_')}_{os.getpid()}"
            where = (f"{postgres}{'&' if '?' in postgres else '?'}schema={schema}" if postgres
                     else Path(tmp) / f"{name}.db")
            with KnowledgeBase.open(where, embedder=embedder,
                                    embed_cache=cache or Path(tmp) / "cache") as kb:
                for docs in runs:
                    found += kb.ingest(docs, split="heading", batch_size=500).conflicts
            out[name] = [{k: v for k, v in dataclasses.asdict(c).items() if k not in ("id", "detected_at")}
                         for c in found]
            print(f"{name}: {len(found)} conflicts")
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False, sort_keys=True), encoding="utf-8")


def planted(c) -> bool:
    ids = {c.a.document_id, c.b.document_id}
    return any(ids & a and ids & b for a, b in PLANTED)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cold", action="store_true", help="an empty embedding cache for every run")
    ap.add_argument("--set", action="store_true", help="only the check set: what detection finds there")
    ap.add_argument("--dump", type=Path, help="write every conflict found on the test collections here")
    ap.add_argument("--cache", type=Path, help="the embedding cache of --dump (default: a new one)")
    ap.add_argument("--postgres", help="the --dump stores in this PostgreSQL server (a schema each)")
    ap.add_argument("--sync", action="store_true", help="make run's sync of the example configuration")
    args = ap.parse_args()
    if args.sync:
        sync_runs(args.runs)
        return
    if args.dump:
        dump(args.dump, args.cache, args.postgres)
        return
    if args.set:
        true, other = check_set()
        print(f"check set: {len(true)} of {len(SET_TRUE)} true conflicts found, {len(other)} others")
        for c in true + other:
            print(("  TRUE  " if c in true else "  other ") + c.summary())
        return
    # "on": values of passages kept in the cache file by earlier runs (a re-build from the same
    # texts, as the warm embedding cache); "on, new values": that part of the file emptied
    # first, so every passage is scanned. With --cold every run has a new file: "on" only.
    variants = ["off", "on"] if args.cold else ["off", "on", "on, new values"]
    times: dict[str, list[tuple[float, float, float, float, float]]] = {v: [] for v in variants}
    found: list = []
    print(f"load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        warm = folder / "cache"
        if not args.cold:
            ingest(folder, False, warm)  # fill the cache once
            ingest(folder, True, warm)
        for i in range(args.runs):
            for variant in variants[i % len(variants):] + variants[:i % len(variants)]:
                cache = folder / f"cache-{i}-{variant}" if args.cold else warm
                if variant == "on, new values":
                    forget_values(cache)
                first, again, cpu, own, reading, got = ingest(folder, variant != "off", cache)
                times[variant].append((first, again, cpu, own, reading))
                if variant != "off":
                    found = got
                print(f"run {i} detection {variant}: ingest {first:.2f} s (CPU: index step {cpu:.3f} s, "
                      f"detection's own {own:.3f} s, reading the files {reading:.3f} s), "
                      f"unchanged re-ingest {again:.2f} s")
    print(f"load average {os.getloadavg()[0]:.1f}")
    for variant in variants:
        firsts = [t[0] for t in times[variant]]
        agains = [t[1] for t in times[variant]]
        cpus = [t[2] for t in times[variant]]
        print(
            f"detection {variant}: ingest median {statistics.median(firsts):.2f} s "
            f"(range {min(firsts):.2f}-{max(firsts):.2f}), CPU median {statistics.median(cpus):.3f} s "
            f"(range {min(cpus):.3f}-{max(cpus):.3f}); re-ingest median {statistics.median(agains):.2f} s"
        )
    # Minima too: on a shared machine, other processes only ever add time.
    for variant in variants[1:]:
        for label, col in (("wall, from the files", 0), ("CPU, index step", 2)):
            for name, stat in (("medians", statistics.median), ("minima", min)):
                off, on = (stat(t[col] for t in times[v]) for v in ("off", variant))
                print(f"detection {variant} adds {1000 * (on - off):.0f} ms, {100 * (on - off) / off:.0f} % "
                      f"to the ingest ({label}, {name}: {1000 * off:.0f} -> {1000 * on:.0f} ms)")
        for name, stat in (("median", statistics.median), ("minimum", min)):
            own, off = stat(t[3] for t in times[variant]), stat(t[2] for t in times["off"])
            print(f"detection {variant}: its own CPU time {1000 * own:.0f} ms, {100 * own / off:.0f} % of "
                  f"the ingest without it ({name}s: {1000 * off:.0f} ms)")
            # The ingest as a user runs it: the files read too (``evidex ingest``).
            whole = stat(t[2] + t[4] for t in times["off"])
            print(f"detection {variant}: its own CPU time {1000 * own:.0f} ms, {100 * own / whole:.0f} % of "
                  f"the ingest from the files without it ({name}s: {1000 * whole:.0f} ms)")
    tp = [c for c in found if planted(c)]
    print(
        f"conflicts found: {len(found)}, planted pairs among them: {len(tp)}, others: {len(found) - len(tp)}"
    )
    for c in found:
        print(("  PLANTED " if planted(c) else "  other   ") + c.summary())


if __name__ == "__main__":
    main()
