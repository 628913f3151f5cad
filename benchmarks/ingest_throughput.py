"""Ingest throughput per embedder, and the speed-up of re-ingesting a changed document.

    .venv/bin/python benchmarks/ingest_throughput.py [--passages 100]

Uses a fresh embedding cache in a temporary folder so nothing is pre-computed. Passages are
SciFact abstracts (~200 words). For each embedder:
* passages/second of `kb.ingest` for N one-paragraph documents (split, analysis, embedding, write);
* a 20-paragraph document ingested, then a new version with one paragraph changed: the time of
  each ingest and their ratio (only the changed paragraph is embedded again).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from evidex import Document, KnowledgeBase
from evidex.evaluation import corpus_documents, load_beir

HERE = Path(__file__).resolve().parent
_DATA = Path("shared") / "data" / "beir" / "scifact"
SCIFACT = next((up / _DATA for up in HERE.parents if (up / _DATA).is_dir()), HERE.parents[1] / _DATA)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passages", type=int, default=100)
    ap.add_argument("--embedders",
                    default="all-minilm-l6-v2,multilingual-e5-small,multilingual-e5-small-int8,none")
    args = ap.parse_args()
    texts = [d.text for d in corpus_documents(load_beir(SCIFACT))]
    report: dict[str, object] = {"machine": f"{platform.node()} {platform.machine()}",
                                 "date": time.strftime("%Y-%m-%d %H:%M"), "passages": args.passages}
    for emb in args.embedders.split(","):
        tmp = Path(tempfile.mkdtemp(prefix="evidex-ingest-"))
        os.environ["EVIDEX_CACHE_DIR"] = str(tmp / "cache")
        kb = KnowledgeBase.open(tmp / "kb.db", embedder=emb)
        docs = [Document(f"d{i}", "t", {"g"}, "1", t) for i, t in enumerate(texts[: args.passages])]
        kb.ingest(docs[:2])  # load the model outside the timing
        t = time.perf_counter()
        kb.ingest(docs[2:])
        dt = time.perf_counter() - t
        paras = texts[1000:1020]
        v1 = Document("long", "t", {"g"}, "1", "\n\n".join(paras))
        changed = [*paras[:10], paras[10] + " (revised)", *paras[11:]]
        v2 = Document("long", "t", {"g"}, "2", "\n\n".join(changed))
        t0 = time.perf_counter()
        kb.ingest([v1])
        t1 = time.perf_counter()
        kb.ingest([v2])
        t2 = time.perf_counter()
        report[emb] = {
            "passages_per_s": round((len(docs) - 2) / dt, 1),
            "ingest_20_paragraphs_s": round(t1 - t0, 3),
            "reingest_1_of_20_changed_s": round(t2 - t1, 3),
            "speedup": round((t1 - t0) / (t2 - t1), 1),
        }
        kb.close()
        print(json.dumps({emb: report[emb]}), flush=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
