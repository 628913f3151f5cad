"""A second language pair for cross-language retrieval (issue 28): French questions, English paragraphs.

    .venv/bin/python benchmarks/cross_french.py [--work DIR] [--analyzers exact,auto]

The questions are benchmarks/data/encyclopedia-fr (60 French questions written for paragraphs 3
and 5 of each English topic of the encyclopedia set, which have no translation; dev 30, test 30).
They are searched in the encyclopedia's English view (150 English paragraphs) and its mixed view
(the German paragraphs too), with the real search path of every fusion, like
``multilingual.py report`` (same stores: ``--work`` defaults to its folder). Also printed: the
language evidex identifies for each question (``query.identify`` with the store's languages as
candidates, as adaptive fusion asks), since French is not among a store's candidates unless a
French passage is.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
from pathlib import Path

import multilingual as ml
import qa_sets
from evidex.query import identify

FRENCH = Path(__file__).resolve().parent / "data" / "encyclopedia-fr"


def french_questions() -> tuple[qa_sets.QASet, dict[str, list[tuple[str, str, set[str]]]]]:
    """The encyclopedia with the French questions, and {split: [(id, text, relevant)]}."""
    enc = qa_sets.load(qa_sets.ENCYCLOPEDIA)
    groups: dict[str, list[tuple[str, str, set[str]]]] = {}
    relevant: dict[str, set[str]] = {}
    for split in ("dev", "test"):
        for line in (FRENCH / "qrels" / f"{split}.tsv").read_text("utf-8").splitlines()[1:]:
            qid, pid, _ = line.split("\t")
            if pid not in enc.passages:
                raise ValueError(f"{FRENCH}: {qid} names unknown paragraph {pid!r}")
            relevant.setdefault(qid, set()).add(pid)
    for line in (FRENCH / "queries.jsonl").read_text("utf-8").splitlines():
        q = json.loads(line)
        groups.setdefault(q["split"], []).append((q["_id"], q["text"], relevant[q["_id"]]))
    return enc, groups


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, default=Path("/tmp/evidex-multilingual"))
    ap.add_argument("--analyzers", default="exact,auto")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    enc, groups = french_questions()
    for analyzer in args.analyzers.split(","):
        for view in ("en", "mixed"):
            kb, _ = ml.encyclopedia_view(args.work, enc, view, analyzer)
            langs = ml.VIEWS[view]
            for split, queries in sorted(groups.items()):
                row: dict[str, object] = {"collection": f"encyclopedia[{view}]", "analyzer": kb.analyzer,
                                          "group": f"cross fr->en {split}", "n": len(queries)}
                for setting, kw in ml.SETTINGS.items():
                    row[setting] = round(statistics.fmean(
                        ml.ndcg10([h.document_id for h in kb.search(ml.ACTOR, text, limit=ml.DEPTH,
                                                                     max_per_document=1, **kw)], rel)
                        for _, text, rel in queries), 4)
                row["identified"] = dict(Counter(str(identify(t, langs)) for _, t, _ in queries))
                print(json.dumps(row), flush=True)
            kb.close()


if __name__ == "__main__":
    main()
