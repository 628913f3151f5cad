"""Retrieval evaluation on BEIR-format sets with trec_eval's measures (pytrec-eval-terrier).

The corpus is loaded into a temporary store through the public API, exactly as a user would, and
every query goes through ``KnowledgeBase.search``: the figures measure the product, not a
side-path. BEIR queries are whole sentences, so the interactive query limits are lifted here
(and only here).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytrec_eval

from ..embed import DEFAULT_EMBEDDER
from ..kb import KnowledgeBase
from ..knowledge import Knowledge
from ..model import Actor, Document, EvidexError
from ..query import QueryLimits

__all__ = [
    "EVAL_LIMITS",
    "BeirSet",
    "corpus_documents",
    "evaluate_beir",
    "evaluate_qa",
    "load_beir",
    "load_qa",
    "metrics",
    "released_problems",
    "run_queries",
]

EVAL_LIMITS = QueryLimits(max_chars=100_000, max_words=10_000, max_word_chars=10_000)
_TENANT = "eval"
_GROUP = "eval"


@dataclass
class BeirSet:
    corpus: list[tuple[str, str, str]]  # (id, title, text)
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_beir(directory: str | Path, split: str = "test") -> BeirSet:
    root = Path(directory)
    paths = {
        "corpus": root / "corpus.jsonl",
        "queries": root / "queries.jsonl",
        "qrels": root / "qrels" / f"{split}.tsv",
    }
    for name, p in paths.items():
        if not p.is_file():
            raise EvidexError(f"{root} is not a BEIR folder: {name} file {p} is missing")
    qrels: dict[str, dict[str, int]] = {}
    with paths["qrels"].open(encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            parts = line.rstrip("\n").split("\t")
            if i == 0 and parts[0] == "query-id":
                continue
            if len(parts) != 3 or not parts[2].lstrip("-").isdigit():
                raise EvidexError(
                    f"{paths['qrels']}:{i + 1}: expected query-id, corpus-id and an integer score"
                )
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    queries = {}
    for rec in _jsonl(paths["queries"]):
        if str(rec["_id"]) in qrels:
            if not isinstance(rec.get("text"), str):
                raise EvidexError(f"{paths['queries']}: query {rec['_id']!r} has no text")
            queries[str(rec["_id"])] = rec["text"]
    corpus = [(str(r["_id"]), r.get("title") or "", r.get("text") or "") for r in _jsonl(paths["corpus"])]
    return BeirSet(corpus, queries, qrels)


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise EvidexError(f"{path}:{n}: invalid JSON: {exc}") from None
            if not isinstance(rec, dict) or "_id" not in rec:
                raise EvidexError(f"{path}:{n}: a BEIR record must be an object with an _id")
            yield rec


def corpus_documents(beir: BeirSet) -> Iterator[Document]:
    for doc_id, title, text in beir.corpus:
        full = f"{title}\n\n{text}" if title else text
        if full.strip():
            yield Document(doc_id, _TENANT, {_GROUP}, "1", full, title=title or None)


def run_queries(
    kb: Knowledge, beir: BeirSet, *, mode: str = "keyword", depth: int = 100,
    **search: Any,
) -> tuple[dict[str, dict[str, float]], float]:
    """TREC run (query -> doc -> score; ranks turned into descending scores so trec_eval's own
    tie-breaking cannot reorder evidex's deterministic order) and the wall time of the searches."""
    actor = Actor(_TENANT, {_GROUP}, visibilities=frozenset({"public", "internal"}))
    run: dict[str, dict[str, float]] = {}
    t0 = time.perf_counter()
    for qid, text in beir.queries.items():
        hits = kb.search(actor, text, limit=depth, mode=mode, max_per_document=1, **search)
        run[qid] = {h.document_id: float(depth - i) for i, h in enumerate(hits)}
    return run, time.perf_counter() - t0


def metrics(beir: BeirSet, run: dict[str, dict[str, float]]) -> dict[str, float]:
    ev = pytrec_eval.RelevanceEvaluator(beir.qrels, {"ndcg_cut.10", "recall.100"})
    ev_rr = pytrec_eval.RelevanceEvaluator(beir.qrels, {"recip_rank"})
    top10 = {q: dict(sorted(d.items(), key=lambda kv: -kv[1])[:10]) for q, d in run.items()}
    per = ev.evaluate(run)
    per_rr = ev_rr.evaluate(top10)
    n = len(beir.queries)

    def mean(table: dict[str, dict[str, float]], key: str) -> float:
        return sum(table.get(q, {}).get(key, 0.0) for q in beir.queries) / n

    return {
        "ndcg@10": round(mean(per, "ndcg_cut_10"), 4),
        "recall@100": round(mean(per, "recall_100"), 4),
        "mrr@10": round(mean(per_rr, "recip_rank"), 4),
    }


def evaluate_beir(
    directory: str | Path,
    *,
    mode: str = "keyword",
    analyzer: str = "english",
    embedder: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    **search: Any,
) -> dict[str, Any]:
    """Quality and speed of ``mode`` on a BEIR set. Keyword mode builds a keyword-only store;
    other modes embed the corpus with ``embedder`` (default: the default model) through the
    persistent embedding cache, so a second run re-embeds nothing."""
    beir = load_beir(directory)
    model = "none" if mode == "keyword" else embedder or DEFAULT_EMBEDDER
    with tempfile.TemporaryDirectory(prefix="evidex-eval-") as tmp:
        kb = KnowledgeBase.open(Path(tmp) / "eval.db", analyzer=analyzer, embedder=model,
                                max_limit=100, query_limits=EVAL_LIMITS)
        try:
            docs = list(corpus_documents(beir))
            # Embedding batches are smaller so that ``progress`` reports every minute or so.
            step = 2000 if model == "none" else 500
            for i in range(0, len(docs), step):
                kb.ingest(docs[i : i + step], split="document")
                if progress:
                    progress(min(i + step, len(docs)), len(docs))
            kb.optimize()
            run, seconds = run_queries(kb, beir, mode=mode, **search)
        finally:
            kb.close()
    out: dict[str, Any] = metrics(beir, run)
    out.update(
        queries=len(beir.queries),
        queries_per_second=round(len(beir.queries) / seconds, 1) if seconds else None,
        mode=mode,
        analyzer=analyzer,
        embedder=model,
        **{k: v for k, v in search.items() if k in ("fusion", "alpha", "rrf_k", "window")},
        documents=len(beir.corpus),
    )
    return out


def load_qa(path: str | Path) -> list[dict[str, Any]]:
    """A question set: one JSON object per line, {"question": ..., "expected": [{"document_id":
    ..., "passage": N?}, ...]} for answerable questions or {"question": ..., "unanswerable": true}."""
    items = []
    for n, rec in enumerate(_jsonl_plain(Path(path)), start=1):
        q = rec.get("question")
        if not isinstance(q, str) or not q.strip():
            raise EvidexError(f"{path}:{n}: a question set line needs a non-empty 'question'")
        unanswerable = rec.get("unanswerable") is True
        expected = rec.get("expected") or []
        if unanswerable == bool(expected):
            raise EvidexError(f"{path}:{n}: give either 'expected' passages or 'unanswerable': true")
        if not all(isinstance(e, dict) and isinstance(e.get("document_id"), str) for e in expected):
            raise EvidexError(f"{path}:{n}: each expected item needs a document_id")
        items.append({"question": q, "expected": expected, "unanswerable": unanswerable})
    return items


def _jsonl_plain(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if line.strip():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise EvidexError(f"{path}:{n}: invalid JSON: {exc}") from None
                if not isinstance(rec, dict):
                    raise EvidexError(f"{path}:{n}: expected a JSON object")
                yield rec


def released_problems(kb: Knowledge, actor: Actor, ans: Any) -> list[str]:
    """Independent re-check of a released answer: contract, and every citation resolves now."""
    from ..answer import check_output

    problems = check_output({"answer": ans.text, "citations": [c["n"] for c in ans.citations]},
                            [c["n"] for c in ans.citations], kb.answer_settings.link_allowlist)
    for c in ans.citations:
        res = kb.resolve(actor, {k: v for k, v in c.items() if k != "n"})
        if not res.ok:
            problems.append(f"citation [{c['n']}] does not resolve: {res.reason}")
    return problems


def evaluate_qa(kb: Knowledge, path: str | Path, actor: Actor, *,
                generator: str = "extractive") -> dict[str, Any]:
    items = load_qa(path)
    answerable = [i for i in items if not i["unanswerable"]]
    unanswerable = [i for i in items if i["unanswerable"]]
    hit = declined_ok = invalid = answered = 0
    times: list[float] = []
    failures: list[dict[str, Any]] = []
    for item in items:
        t = time.perf_counter()
        ans = kb.answer(actor, item["question"], generator=generator)
        times.append((time.perf_counter() - t) * 1000)
        if ans.status == "answered":
            answered += 1
            if released_problems(kb, actor, ans):
                invalid += 1
        if item["unanswerable"]:
            if ans.status == "declined":
                declined_ok += 1
            else:
                failures.append({"question": item["question"], "got": "answered"})
            continue
        cited = {(c["document_id"], c["passage"]) for c in ans.citations}
        ok = ans.status == "answered" and any(
            (e["document_id"], e["passage"]) in cited if "passage" in e
            else e["document_id"] in {d for d, _ in cited}
            for e in item["expected"]
        )
        hit += ok
        if not ok:
            failures.append({"question": item["question"], "got": ans.status, "reason": ans.reason})
    times.sort()
    return {
        "questions": len(items),
        "answerable": len(answerable),
        "answered_with_expected_citation": hit,
        "answered_with_expected_rate": round(hit / len(answerable), 4) if answerable else None,
        "unanswerable": len(unanswerable),
        "declined_unanswerable": declined_ok,
        "declined_unanswerable_rate": round(declined_ok / len(unanswerable), 4) if unanswerable else None,
        "answers_released": answered,
        "released_with_invalid_citation": invalid,
        "p50_ms": round(times[len(times) // 2], 2) if times else None,
        "failures": failures[:50],
    }
