"""Fit the answer decisions of one embedding model on development data; report the trade-off.

    .venv/bin/python benchmarks/answers_fit.py collect [--sets shop,encyclopedia,...] [--embedder ID]
    .venv/bin/python benchmarks/answers_fit.py fit [--embedder ID]

``collect`` asks, per development set (benchmarks/answers_sets.py: the help-centre questions of
shop-dev, encyclopedia dev, SQuAD 2.0 train's dev articles, COVID-QA's dev papers, SciFact
*train* claims; never a test split, XQuAD or the SQuAD 2.0 development set):

* its answerable development questions, and its own near misses (``ooc``) where it has them;
* deletion near misses: the same answerable questions asked of a copy of the collection
  without the sentences that hold their answers (four copies, each missing a quarter of the
  answers: matched pairs, the same question with and without its answer);
* off-topic questions: 80 answerable development questions of each set of another domain (a
  question written for another collection of the same domain, such as a COVID-QA question
  asked of SciFact's biomedical abstracts, may well be answered there: it is no off-topic
  question).

For each it runs the answer's search (``kb.search`` with the ranker, ``top_k`` hits, the
decision computed) and keeps the on-topic decision's score and every candidate span with its
features (``decide.candidates``: the code answers run), labelled by whether it holds the
question's verbatim answer span. Pickled under benchmarks/.work/answers/.

``fit`` then fits, one rule for every kind of question:

1. the scorer: a logistic regression (Newton's method on standardised features, L2 = 1) of
   "holds the answer" over ``decide.FEATURES``, on the candidates of answerable questions whose
   answer is among them, each set weighing the same;
2. ``on_topic``: the highest value that keeps 98 % of answerable questions whose expected
   passage was found on topic, in every set (so a language model sees them);
3. ``answer_bearing``: the lowest value at which 97 % of the off-topic questions are declined
   by both decisions together in each of the help-centre, encyclopedic and SciFact sets (the
   kinds the issue's targets name): the most answerable questions answered under that
   constraint.

It prints the fitted values (to paste into ``decide._calibration``), the rates per set and kind
at them, and the curve over ``answer_bearing``: answerable answered citing an expected passage
against near misses and off-topic questions declined.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import pickle
import random
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from answers_sets import WORK, Question, QuestionSet, build, load
from evidex import Document, KnowledgeBase, decide
from evidex.decide._bearing import FEATURES, Candidate, candidates
from evidex.evaluation import load_cases
from evidex.evaluation._casefile import Problems
from evidex.evaluation._collection import SPLIT as CASE_SPLIT
from evidex.evaluation._collection import load_entry
from evidex.ingest import sentence_spans
from evidex.kb import QUESTION_LIMITS

SETS = ("shop", "encyclopedia", "squad2", "covidqa", "scifact", "mlqa")
#: Off-topic questions of these sets' collections bind ``answer_bearing``.
CONSTRAINED = ("shop", "encyclopedia", "scifact")
#: At most this many answerable (and half as many near-miss) questions per set.
CAP = {"squad2": 2400, "covidqa": 800, "scifact": 400}
OFF_TOPIC = 80
#: What each set's collection is about: off-topic questions come from other domains.
DOMAIN = {"shop": "retail", "encyclopedia": "general", "squad2": "general", "covidqa": "biomedical",
          "scifact": "biomedical", "mlqa": "general"}
DELETIONS = 4
TOP_K = 6
KEEP_ON_TOPIC = 0.98
DECLINE_OFF_TOPIC = 0.97


def _path(embedder: str, name: str, split: str = "dev") -> Path:
    return WORK / (f"fit-{name}-{embedder}.pkl" if split == "dev" else f"fit-{name}-{split}-{embedder}.pkl")


def _questions(name: str, qs: QuestionSet, split: str = "dev") -> list[Question]:
    qq = [q for q in qs.questions if q.split == split]
    random.Random(11).shuffle(qq)
    cap = CAP.get(name)
    if cap is None:
        return qq
    return ([q for q in qq if q.answerable][:cap] + [q for q in qq if not q.answerable][:cap // 2])


def _off_topic(target: str, split: str = "dev") -> list[Question]:
    rng, out = random.Random(7), []
    for name in SETS:
        if DOMAIN[name] == DOMAIN[target] or (split != "dev" and name == "shop"):
            continue
        qq = [q for q in load(name, split).questions if q.split == split and q.answerable]
        rng.shuffle(qq)
        out += [Question(f"off-{name}-{q.id}", q.text, "offtopic", split, language=q.language)
                for q in qq[:OFF_TOPIC]]
    return out


def _documents(qs: QuestionSet) -> list[tuple[list[Document], str]]:
    """The set's documents as ingested (the shop: through its case file's loaders)."""
    if qs.cases is None:
        return [(qs.documents, qs.split_mode)]
    cf = load_cases(qs.cases, root=qs.cases.parent.parent)
    p = Problems(cf.path)
    return [(load_entry(cf, e, p), CASE_SPLIT) for e in cf.collection]


def _without(doc: Document, answers: list[str]) -> Document:
    """``doc`` without the sentences holding ``answers`` (sections moved with the text)."""
    text, sections = doc.text, list(doc.sections)
    for a in answers:
        at = text.find(a)
        cut = [(s, e) for s, e in sentence_spans(text) if at >= 0 and s < at + len(a) and e > at]
        if not cut:
            continue
        s, e = cut[0][0], cut[-1][1]
        text = text[:s] + text[e:]

        def moved(x: int, s: int = s, e: int = e) -> int:
            return x if x <= s else (s if x < e else x - (e - s))
        sections = [dataclasses.replace(c, start=moved(c.start), end=moved(c.end)) for c in sections]
        sections = [c for c in sections if c.end > c.start]
    return dataclasses.replace(doc, text=text, sections=tuple(sections)) if text != doc.text else doc


def _deleted_store(qs: QuestionSet, group: list[Question], folder: Path, embedder: str) -> KnowledgeBase:
    spans: dict[str, list[str]] = defaultdict(list)
    for q in group:
        for d, a in q.answers.items():
            spans[d].append(a)
    kb = KnowledgeBase.open(folder / "store.db", analyzer=qs.analyzer, embedder=embedder, max_limit=100)
    for docs, split in _documents(qs):
        kb.ingest([_without(d, spans[d.id]) if d.id in spans else d for d in docs], split=split,
                  identify_languages=qs.cases is not None)
    return kb


def _labelled(q: Question, c: Candidate, doc: str, text: str) -> bool | None:
    """The candidate holds the question's answer span (None: the answer is unknown)."""
    if doc not in q.expected:
        return False
    a = q.answers.get(doc)
    if not a:
        return None
    at = text.find(a)
    return at >= 0 and c.span.start < at + len(a) and c.span.end > at


def _record(kb: KnowledgeBase, qs: QuestionSet, q: Question, kind: str) -> dict:
    text = " ".join(q.text.split())
    res = kb.search(qs.actor, text, limit=TOP_K, limits=QUESTION_LIMITS, rerank=True)
    hits = [h for h in res if not h.flags]
    support = [p for h, p in zip(res, res.support, strict=False) if not h.flags]
    cands = []
    if hits and res.question is not None:
        vectors = qvec = probes = None
        if res.fallback is None:
            vectors, qvec, probes = kb.embed_passages, kb._query_vector(text), kb._probes()
        found = candidates([h.quote for h in hits], [(h.title or "", *h.heading_path) for h in hits],
                                  support, res.question, vectors, qvec, probes,
                                  [res.shift.of(h.language) for h in hits])
        for c in found:
            h = hits[c.source]
            cands.append({"source": c.source, "doc": h.document_id, "features": c.features,
                          "similarity": c.similarity, "hubness": c.hubness, "coverage": c.coverage,
                          "typed": c.typed, "identifier": c.identifier,
                          "label": _labelled(q, c, h.document_id, h.quote),
                          # What the reader reads (benchmarks/reader/): the span and its context.
                          "span": h.quote[c.span.start:c.span.end],
                          "focus": h.quote[c.span.focus[0]:c.span.focus[1]],
                          "context": [h.title or "", *h.heading_path]})
    return {"id": q.id, "text": text, "kind": kind, "expected": sorted(q.expected),
            "top": [h.document_id for h in res],
            "asked": res.question.asked.kind if res.question else "other",
            "strict": bool(res.question and res.question.asked.strict),
            "topic": None if res.topic is None else res.topic.score, "cands": cands}


def collect(embedder: str, sets: tuple[str, ...], split: str = "dev") -> None:
    for name in sets:
        t0 = time.time()
        qs = load(name, split)
        kb = build(qs, embedder)
        qq = _questions(name, qs, split)
        rows = [_record(kb, qs, q, q.kind if q.answerable else "ooc") for q in qq]
        rows += [_record(kb, qs, q, "offtopic") for q in _off_topic(name, split)]
        answerable = [q for q in qq if q.answerable and q.answers]
        for g in range(DELETIONS if answerable else 0):
            group = answerable[g::DELETIONS]
            with tempfile.TemporaryDirectory(dir=WORK) as folder:
                dkb = _deleted_store(qs, group, Path(folder), embedder)
                dkb._query_vectors = kb._query_vectors
                rows += [{**_record(dkb, qs, q, "deleted"), "id": f"del-{q.id}"} for q in group]
                dkb.close()
        _path(embedder, name, split).write_bytes(pickle.dumps(rows))
        print(f"{name}: {len(rows)} questions in {time.time() - t0:.0f} s", flush=True)


# -- fitting -----------------------------------------------------------------------------------
def _irls(X: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float = 1.0) -> np.ndarray:
    """Weighted logistic regression by Newton's method on standardised features; weights on the
    raw scale, bias last."""
    mu, sd = X.mean(0), X.std(0) + 1e-9
    Z = np.hstack([(X - mu) / sd, np.ones((len(X), 1))])
    beta = np.zeros(Z.shape[1])
    reg = np.eye(Z.shape[1]) * l2
    reg[-1, -1] = 0.0
    for _ in range(100):
        p = 1 / (1 + np.exp(-Z @ beta))
        grad = Z.T @ (w * (p - y)) + reg @ beta
        hess = (Z * (w * p * (1 - p))[:, None]).T @ Z + reg
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.abs(step).max() < 1e-9:
            break
    raw = beta[:-1] / sd
    return np.concatenate([raw, [beta[-1] - raw @ mu]])


def fit_scorer(data: dict[str, list[dict]]) -> np.ndarray:
    Xs, ys, ws = [], [], []
    for rows in data.values():
        use = [r for r in rows if r["kind"] not in ("ooc", "offtopic", "deleted") and r["cands"]
               and any(c["label"] for c in r["cands"]) and all(c["label"] is not None for c in r["cands"])]
        n = sum(len(r["cands"]) for r in use)
        for r in use:
            for c in r["cands"]:
                Xs.append(c["features"])
                ys.append(float(c["label"]))
                ws.append(1.0 / n)
    return _irls(np.array(Xs, dtype=float), np.array(ys), np.array(ws) * len(ws) / len(data))


def _choose(r: dict, scorer: np.ndarray) -> dict | None:
    """The candidate the answer-bearing decision would quote (gates as ``decide._bearing``)."""
    cands = [c for c in r["cands"] if not c["identifier"] or r["asked"] == "code"]
    if r["strict"]:
        cands = [c for c in cands if c["typed"]]
    if not cands:
        return None
    return max(cands, key=lambda c: (float(np.dot(c["features"], scorer[:-1]) + scorer[-1]),
                                     -c["source"]))


def _bearing(c: dict, cal: decide.Calibration) -> float:
    return c["similarity"] - cal.hub_weight * (c["hubness"] or 0.0) + cal.coverage_weight * c["coverage"]


def _kind(r: dict) -> str:
    return r["kind"] if r["kind"] in ("ooc", "offtopic", "deleted") else "answerable"


def rates(data: dict[str, list[dict]], scorer: np.ndarray, on_topic: float, bearing: float,
          cal: decide.Calibration) -> dict[str, dict[str, float]]:
    out = {}
    for name, rows in data.items():
        hit: dict[str, list[bool]] = defaultdict(list)
        for r in rows:
            best = _choose(r, scorer) if r["topic"] is not None and r["topic"] >= on_topic else None
            answered = best is not None and best["similarity"] is not None and _bearing(best, cal) >= bearing
            kind = _kind(r)
            ok = answered and best["doc"] in r["expected"] if kind == "answerable" else not answered
            hit[kind].append(ok)
            if kind != "answerable":
                hit[f"{kind} (on topic)"].append(r["topic"] is None or r["topic"] < on_topic)
        out[name] = {k: sum(v) / len(v) for k, v in hit.items()}
    return out


def fit(embedder: str, sets: tuple[str, ...]) -> None:
    data = {n: pickle.loads(_path(embedder, n).read_bytes()) for n in sets if _path(embedder, n).exists()}
    cal = decide.calibration(embedder)
    scorer = fit_scorer(data)
    # on topic: 98 % of answerable questions whose expected passage was found, in every set
    on_topic = min(float(np.quantile([r["topic"] for r in rows if _kind(r) == "answerable"
                                      and r["topic"] is not None and set(r["top"]) & set(r["expected"])],
                                     1 - KEEP_ON_TOPIC)) for rows in data.values())
    # answer-bearing: the lowest value declining 97 % of the constrained sets' off-topic questions
    grid = np.round(np.arange(0.15, 0.35, 0.0025), 4)
    curve = []
    chosen = None
    for t in grid:
        r = rates(data, scorer, on_topic, float(t), cal)
        share = min(r[n]["offtopic"] for n in CONSTRAINED if n in r)
        curve.append((float(t), share, r))
        if chosen is None and share >= DECLINE_OFF_TOPIC:
            chosen = (float(t), share, r)
    print(json.dumps({"embedder": embedder, "sets": list(data),
                      "scorer": [round(float(x), 4) for x in scorer],
                      "on_topic": round(on_topic, 4),
                      "answer_bearing": chosen[0] if chosen else None,
                      "off_topic_declined_least": round(chosen[1], 4) if chosen else None},
                     indent=1))
    for n, v in zip((*FEATURES, "bias"), scorer, strict=True):
        print(f"  {n:16s} {v:+.4f}")
    print("\nrates at the fitted values:")
    for name, r in (chosen[2] if chosen else {}).items():
        print(f"  {name:13s} " + "  ".join(f"{k} {v:.3f}" for k, v in sorted(r.items())))
    print("\ncurve (answer_bearing: least off-topic declined | per set answerable / deleted / ooc declined):")
    for t, share, r in curve[::4]:
        print(f"  {t:.4f}: {share:.3f} | " + " | ".join(
            f"{n[:5]} {v.get('answerable', math.nan):.2f}/{v.get('deleted', math.nan):.2f}"
            f"/{v.get('ooc', math.nan):.2f}"
            for n, v in r.items()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("step", choices=("collect", "fit"))
    ap.add_argument("--embedder", default="multilingual-e5-small-int8")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--split", default="dev", choices=("dev", "test"),
                    help="test: the sets' test splits, for reporting only (never fitted on)")
    args = ap.parse_args()
    sets = tuple(s for s in args.sets.split(",") if s)
    if args.step == "collect":
        collect(args.embedder, sets, args.split)
    else:
        fit(args.embedder, sets)


if __name__ == "__main__":
    main()
