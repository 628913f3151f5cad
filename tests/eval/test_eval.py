"""`evidex eval --beir DIR --json`: metrics on tiny hand-computed BEIR sets, one-line errors on
malformed folders, and the SciFact target when the shared data set is present."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cli_runner import run_cli

ROOT = Path(__file__).resolve().parents[2]
SCIFACT = ROOT.parent / "shared" / "data" / "beir" / "scifact"
KEYS = {"ndcg@10", "recall@100", "mrr@10", "queries", "queries_per_second"}


def evidex(*args: Any) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout=600)


def run_eval(folder: Path, *extra: str) -> dict[str, Any]:
    proc = evidex("eval", "--beir", folder, "--json", *extra)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert set(result) >= KEYS, result
    assert isinstance(result["queries_per_second"], int | float) and result["queries_per_second"] > 0
    return result


def write_beir(folder: Path, corpus: dict[str, str | tuple[str, str]], queries: dict[str, str],
               qrels: list[tuple[str, str, int]] | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for doc_id, body in corpus.items():
            title, text = body if isinstance(body, tuple) else ("", body)
            fh.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for qid, text in queries.items():
            fh.write(json.dumps({"_id": qid, "text": text}) + "\n")
    if qrels is not None:
        (folder / "qrels").mkdir(exist_ok=True)
        rows = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{r}" for q, d, r in qrels]
        (folder / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


def approx(value: float) -> Any:
    return pytest.approx(value, abs=1e-4)  # the CLI rounds to 4 decimals


def test_a_perfect_ranking_scores_one(tmp_path: Path) -> None:
    folder = write_beir(
        tmp_path / "perfect",
        {"d1": "apple orchard", "d2": "banana plantation", "d3": ("Cherry", "cherry blossom")},
        {"q1": "apple", "q2": "banana", "q3": "cherry"},
        [("q1", "d1", 1), ("q2", "d2", 1), ("q3", "d3", 1)],
    )
    result = run_eval(folder)
    assert result["queries"] == 3
    assert result["ndcg@10"] == approx(1.0)
    assert result["recall@100"] == approx(1.0)
    assert result["mrr@10"] == approx(1.0)


def test_hand_computed_metrics(tmp_path: Path) -> None:
    """Four judged queries (one unjudged query is ignored):

    q1 "apple":  only d1 matches and is relevant              -> nDCG 1,  recall 1,   RR 1
    q2 "cherry": d2 (relevant) is found, d3 (relevant) is not -> nDCG 1/(1 + 1/log2 3), recall 1/2, RR 1
    q3 "grape":  d4 (short, not relevant) outranks d5 (long, relevant)
                                                              -> nDCG 1/log2 3, recall 1, RR 1/2
    q4 "zucchini": nothing matches                            -> 0, 0, 0 (still counted)
    """
    folder = write_beir(
        tmp_path / "mixed",
        {
            "d1": "apple banana",
            "d2": "cherry durian",
            "d3": "elderberry fig",
            "d4": "grape honeydew",
            "d5": "grape lemon lime melon nectarine",
        },
        {"q1": "apple", "q2": "cherry", "q3": "grape", "q4": "zucchini", "q5": "lemon"},
        [("q1", "d1", 1), ("q2", "d2", 1), ("q2", "d3", 1), ("q3", "d5", 1), ("q4", "d1", 1)],
    )
    result = run_eval(folder)
    ndcg = [1.0, 1 / (1 + 1 / math.log2(3)), 1 / math.log2(3), 0.0]
    assert result["queries"] == 4
    assert result["ndcg@10"] == approx(sum(ndcg) / 4)          # 0.5610
    assert result["recall@100"] == approx((1 + 0.5 + 1 + 0) / 4)  # 0.625
    assert result["mrr@10"] == approx((1 + 1 + 0.5 + 0) / 4)      # 0.625
    assert result["documents"] == 5


def test_cutoffs_at_10_and_100(tmp_path: Path) -> None:
    """q1 matches all 12 documents and its one relevant document is the longest, so it ranks 12th:
    it counts for Recall@100 but not for nDCG@10 or MRR@10 (a plain MRR would give 1/12)."""
    corpus = {f"c{k:02d}": "common " + " ".join(f"w{k}x{j}" for j in range(k)) for k in range(1, 13)}
    corpus["c01"] += " special"
    folder = write_beir(tmp_path / "cutoff", corpus, {"q1": "common", "q2": "special"},
                        [("q1", "c12", 1), ("q2", "c01", 1)])
    result = run_eval(folder, "--analyzer", "exact")
    assert result["queries"] == 2
    assert result["ndcg@10"] == approx(0.5)
    assert result["mrr@10"] == approx(0.5)
    assert result["recall@100"] == approx(1.0)
    assert result["analyzer"] == "exact"


def test_human_output_lists_the_metrics(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "h", {"d1": "apple"}, {"q1": "apple"}, [("q1", "d1", 1)])
    proc = evidex("eval", "--beir", folder)
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(": ", 1) for line in proc.stdout.splitlines())
    assert set(lines) >= KEYS
    assert float(lines["ndcg@10"]) == approx(1.0) and lines["queries"] == "1"
    # Building the index can take minutes (embedding a corpus): it says how far it got.
    assert "indexed 1/1 documents" in proc.stderr.splitlines()


def one_error_line(proc: subprocess.CompletedProcess[str], needle: str) -> None:
    assert proc.returncode != 0
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
    assert needle in lines[0], lines[0]


def test_a_folder_without_qrels_is_a_one_line_error(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "noqrels", {"d1": "apple"}, {"q1": "apple"}, None)
    one_error_line(evidex("eval", "--beir", folder, "--json"), "qrels")


@pytest.mark.parametrize(
    ("case", "needle"),
    [("qrels-two-columns", "test.tsv"), ("qrels-score-not-int", "test.tsv"),
     ("corpus-without-id", "corpus"), ("corpus-not-json", "JSON")],
)
def test_malformed_beir_files_are_one_line_errors(tmp_path: Path, case: str, needle: str) -> None:
    folder = write_beir(tmp_path / case, {"d1": "apple"}, {"q1": "apple"}, [("q1", "d1", 1)])
    if case == "qrels-two-columns":
        (folder / "qrels" / "test.tsv").write_text("q1\td1\n", encoding="utf-8")
    elif case == "qrels-score-not-int":
        (folder / "qrels" / "test.tsv").write_text("q1\td1\thigh\n", encoding="utf-8")
    elif case == "corpus-without-id":
        (folder / "corpus.jsonl").write_text('{"title": "", "text": "apple"}\n', encoding="utf-8")
    else:
        (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": \n', encoding="utf-8")
    one_error_line(evidex("eval", "--beir", folder, "--json"), needle)


@pytest.mark.slow
@pytest.mark.skipif(not (SCIFACT / "corpus.jsonl").is_file(),
                    reason=f"BEIR SciFact is not available at {SCIFACT}")
def test_scifact_english_ndcg_at_10_meets_the_target() -> None:
    result = run_eval(SCIFACT, "--analyzer", "english")
    assert result["queries"] == 300
    assert result["ndcg@10"] >= 0.68, result
    assert result["recall@100"] > result["ndcg@10"]  # sanity: a different measure, not a copy
