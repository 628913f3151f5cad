"""Sync of a folder of small Markdown documents: first sync, unchanged re-sync, x % changed.

    .venv/bin/python benchmarks/sync_resync.py [--docs 10000] [--changed 1,5] [--embedder none]

The documents are generated in a temporary folder (not in the repository): a title, two
paragraphs and a heading section, ~450 bytes each; with ``--one-passage`` a single paragraph
(for runs with an embedding model, where the first sync is bounded by embedding speed). After
generating, the script waits until the files are older than the racy-stamp window, as files of
a real collection are. Measured, each with a fresh process state but the same store:

* first sync (every file read, split, indexed; embedded unless ``--embedder none``);
* re-sync with nothing changed (target <= 10 s for 10,000 documents): every file is stat'ed,
  none is parsed;
* for each percentage: that share of files edited, then a re-sync, whose time should grow
  with the number of changed files, not with the collection.

Prints one JSON object; the figures go to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import tempfile
import time
from pathlib import Path

from evidex import KnowledgeBase
from evidex.config import load_config
from evidex.sources import RACY_SECONDS, sync


def text(i: int, rev: int, one_passage: bool) -> str:
    if one_passage:
        return f"Document {i} revision {rev}: item{i} is returned within {i % 90} days, code C{i}.\n"
    return (f"# Document {i}\n\nItem{i} can be returned within {i % 90} days of delivery "
            f"(revision {rev}).\n\nKeep the receipt; code C{i} identifies the order.\n\n"
            f"## Exceptions\n\nWorn items of batch {i % 37} are not accepted unless damaged.\n")


def timed_sync(kb: KnowledgeBase, cfg) -> tuple[float, dict]:
    t0 = time.perf_counter()
    rep = sync(kb, cfg)
    return time.perf_counter() - t0, {**rep.totals(), "items_read": rep.sources[0].read}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--changed", default="1,5", help="comma-separated percentages")
    ap.add_argument("--embedder", default="none")
    ap.add_argument("--one-passage", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="evidex-sync-"))
    os.environ["EVIDEX_CACHE_DIR"] = str(tmp / "cache")  # nothing embedded before
    folder = tmp / "docs"
    for i in range(args.docs):
        sub = folder / f"part{i % 20:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"doc{i:05d}.md").write_text(text(i, 0, args.one_passage), encoding="utf-8")
    cfg_path = tmp / "knowledge.config.yaml"
    cfg_path.write_text("sources:\n  - {id: bench, type: files, path: docs, tenant: t, groups: [g]}\n",
                        encoding="utf-8")
    cfg = load_config(cfg_path)
    time.sleep(RACY_SECONDS + 0.5)
    kb = KnowledgeBase.open(tmp / "kb.db", embedder=args.embedder)
    out: dict[str, object] = {
        "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores",
        "date": subprocess.run(["date"], capture_output=True, text=True).stdout.strip(),
        "docs": args.docs, "embedder": args.embedder, "one_passage": args.one_passage,
    }
    secs, rep = timed_sync(kb, cfg)
    out["first_sync"] = {"seconds": round(secs, 2), **rep, "passages": kb.stats()["passages"]}
    secs, rep = timed_sync(kb, cfg)
    out["resync_unchanged"] = {"seconds": round(secs, 2), **rep}
    rng = random.Random(7)
    for rev, pct in enumerate([float(p) for p in args.changed.split(",") if p], start=1):
        n = round(args.docs * pct / 100)
        for i in rng.sample(range(args.docs), n):
            path = folder / f"part{i % 20:02d}" / f"doc{i:05d}.md"
            path.write_text(text(i, rev, args.one_passage), encoding="utf-8")
        secs, rep = timed_sync(kb, cfg)
        out[f"resync_{pct:g}pct_changed"] = {"seconds": round(secs, 2), "changed_files": n, **rep}
        # Files just edited are inside the racy window; let them age before the next round so
        # each round measures only its own changes.
        time.sleep(RACY_SECONDS + 0.5)
        secs, rep = timed_sync(kb, cfg)
        out[f"resync_after_{pct:g}pct"] = {"seconds": round(secs, 2), **rep}
    kb.close()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
