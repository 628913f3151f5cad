"""Where does the soak's remaining memory growth live? The soak's cycle in one process, under
``tracemalloc``: rewrite three pages of a copy of the shop site, sync them through a store
handle of its own (as each ``POST /v1/sync`` does), then four searches, four answers and the
resolves of their citations on a long-lived handle. Prints the Python heap's growth over
``--cycles`` cycles after ``--warmup`` cycles, and the allocation sites that grew most.

    nice -n 5 .venv/bin/python benchmarks/soak_heap.py [--embedder none] [--cycles 30]
"""

from __future__ import annotations

import argparse
import gc
import shutil
import tempfile
import tracemalloc
from pathlib import Path

import yaml

from evidex import Actor, KnowledgeBase
from evidex.config import load_config
from evidex.sources import sync

SITE = Path(__file__).resolve().parents[1] / "examples" / "shop" / "site"
QUERIES = ["return worn boots", "refund how long", "shipping to Austria cost", "warranty on zippers"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedder", default=None, help="store embedder (default: evidex's default)")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--cycles", type=int, default=30)
    ap.add_argument("--top", type=int, default=6)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    site = tmp / "site"
    shutil.copytree(SITE, site)
    cfg_path = tmp / "knowledge.config.yaml"
    cfg_path.write_text(yaml.safe_dump({"sources": [{
        "id": "site", "type": "files", "path": str(site), "include": ["**/*.md", "**/*.html"],
        "split": "heading", "tenant": "acme", "groups": ["customers", "staff"],
        "visibility": "public", "language": "en"}]}), encoding="utf-8")
    cfg = load_config(cfg_path)
    db = tmp / "kb.db"
    with KnowledgeBase.open(db, embedder=args.embedder) as kb:
        sync(kb, cfg)
    churn = sorted(site.rglob("*.md"))[:3]
    originals = {p: p.read_text(encoding="utf-8") for p in churn}
    actor = Actor("acme", frozenset({"customers"}), visibilities=frozenset({"public"}))
    mode = "keyword" if args.embedder == "none" else "hybrid"
    reader = KnowledgeBase.open(db)

    def cycle(i: int) -> None:
        for p in churn:
            p.write_text(originals[p] + f"\n\nrevision {i}\n", encoding="utf-8")
        with KnowledgeBase.open(db) as writer:
            sync(writer, cfg)
        for q in QUERIES:
            reader.search(actor, q, mode=mode)
            ans = reader.answer(actor, "How long does a refund take?")
            for c in ans.citations[:2]:
                reader.resolve(actor, c)

    for i in range(args.warmup):
        cycle(i)
    gc.collect()
    tracemalloc.start(25)
    before = tracemalloc.take_snapshot()
    for i in range(args.warmup, args.warmup + args.cycles):
        cycle(i)
    gc.collect()
    after = tracemalloc.take_snapshot()
    reader.close()
    total = sum(d.size_diff for d in after.compare_to(before, "filename"))
    print(f"Python heap growth over {args.cycles} cycles: {total / 1024:.1f} KB")
    for stat in after.compare_to(before, "traceback")[: args.top]:
        print(f"{stat.size_diff / 1024:.1f} KB in {stat.count_diff:+d} blocks")
        for line in stat.traceback.format()[-8:]:
            print("   ", line)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
