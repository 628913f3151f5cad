"""Feasibility of a cross-encoder for the answer decision (issue 21), step 2: out-of-fold
decisions from (question, sentence) scores, next to today's rule, on the same questions.

    .venv/bin/python benchmarks/xenc_pairs.py                  # pairs + joint encodings
    .venv/bin/python benchmarks/xenc_eval.py folds             # per-pair folds for xenc_train.py
    /tmp/xenc-venv/bin/python benchmarks/xenc_train.py ...     # optional: fine-tuned scores
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/xenc_eval.py report \
        [--scores NAME=benchmarks/.work/xenc/F.npz ...] [--l2 100] [--out final.json]
    .venv/bin/python benchmarks/xenc_eval.py cost [--pairs 300]   # run-time cost per pair

(``OMP_NUM_THREADS=1``: the fits' BLAS threads otherwise fight for the shared cores, 4 min
instead of 40 s.) Questions are the ones ``xenc_pairs.py`` kept (every encyclopedia dev and
shop-dev question, every SciFact off-topic calibration question, a seeded sample of SciFact
train claims), split
into the 5 topic-grouped folds of ``answers_learn.py`` (``Data.fold``), so a topic's answerable
and near-miss questions are never on both sides. A passage's score is the best score of its
sentences; the decision is ``answers_learn.Data.right`` (the first typed passage of the
``DECIDE_DEPTH`` best that passes answers; another language's passage only above every
own-language one). Reported per variant, as (mean answered over the answerable (set, kind)
groups, mean declined over the sets' out-of-collection groups):

* ``oof``: per decline floor, the threshold (and for the rule its coverage weight and
  cross-language offset, exactly ``answers_learn.rule``) chosen on the other four folds decides
  each fold; ``None`` is the fit's objective (answered + 2 x declined);
* ``sweep``: one threshold swept over the pooled out-of-fold scores, the best answered mean at
  each decline floor (as ``answers_learn.logistic`` reports; slightly optimistic);
* ``train``: the same sweep over in-sample scores (a model fitted on every fold), for the gap;
* ``groups@0.9``: the rates per (set, kind) of the ``oof`` decision at the 0.9 floor;
* ``rule+term``: today's rule plus the variant's passage score as one more term
  (``rule_plus_rights``), weight and rule values chosen on the other folds, as ``oof``.

Variants: ``rule`` (today's score: sentence cosine + coverage weight x sentence coverage);
``probe`` (an L2 logistic regression over the joint e5 vector of ``"query: q passage: s"``,
sentence labels of ``xenc_pairs.py``, each question weighing as in ``answers_learn.logistic``
spread over its pairs, positives and negatives balanced); ``probe+rule`` (the same plus the
sentence's cosine and coverage and the cross-language flag); ``rule-logistic`` (those three
alone, through the same sentence labels and fit: the control that shows what the pipeline
itself costs against the rule); and any ``--scores`` (per-pair out-of-fold scores, e.g. of
``xenc_train.py``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import time

import numpy as np

import answers_learn as al
from xenc_pairs import OUT, load_rows


class Pairs:
    def __init__(self) -> None:
        z = np.load(OUT / "pairs.npz")
        self.z = z
        rows = load_rows([str(s) for s in z["sets"]])
        self.rows = [rows[i] for i in z["keep"]]
        self.d = al.Data(self.rows)
        self.row, self.rank, self.label = z["row"], z["rank"], z["label"].astype(float)
        self.fold = self.d.fold[self.row]
        d = self.d
        qweight = np.where(d.is_ooc, 2.0, 1.0)[d.g] / np.bincount(d.g)[d.g] * len(self.rows)
        per_q = np.bincount(self.row, minlength=len(self.rows))
        w = qweight[self.row] / per_q[self.row]
        pos = self.label == 1
        w[pos] *= w[~pos].sum() / w[pos].sum()
        self.weight = w * len(w) / w.sum()
        cos, cov, cross = [], [], []
        for r, k, s in zip(self.row, self.rank, z["start"], strict=True):
            p = self.rows[r]["hits"][k][1]
            cos.append(dict(p.meaning).get(int(s), p.similarity))
            cov.append(next(m.coverage for m in p.sentences if m.start == s))
            cross.append(float(p.cross_language))
        self.rule_x = np.array([cos, cov, cross]).T

    def passage_scores(self, scores: np.ndarray) -> np.ndarray:
        out = np.full((len(self.rows), al.K), -np.inf)
        np.maximum.at(out, (self.row, self.rank), scores)
        return out


def evaluate(d: al.Data, right: np.ndarray, sweep_right: np.ndarray | None = None,
             train_right: np.ndarray | None = None) -> dict:
    out: dict = {"oof": al.out_of_fold(d, right)}
    if sweep_right is not None:
        out["sweep"] = al.sweep(d, sweep_right)
    if train_right is not None:
        out["train"] = al.sweep(d, train_right)
    rates = d.group_rates(al.choose(d, right, 0.9))
    out["groups@0.9"] = {f"{s}/{k}": round(float(v), 3) for (s, k), v in zip(d.names, rates, strict=True)}
    return out


def score_rights(d: al.Data, S: np.ndarray) -> np.ndarray:
    """Candidates: thresholds at 300 quantiles of the passage scores x cross-language offsets of
    0, 1/4, 1/2 and 1 standard deviation of the scores (the rule's offset, in the score's units)."""
    finite = S[np.isfinite(S)]
    ths = np.unique(np.quantile(finite, np.linspace(0.2, 0.9995, 300)))
    return np.array([d.right(S, t, off * finite.std()) for off in (0.0, 0.25, 0.5, 1.0) for t in ths])


def rule_rights(d: al.Data) -> np.ndarray:
    right = []
    for cw, off in itertools.product(al.COVERAGE_WEIGHTS, al.OFFSETS):
        score = d.col("ssim") + cw * d.col("scov")
        right += [d.right(score, t, off) for t in al.THRESHOLDS]
    return np.array(right)


EXTRA_WEIGHTS = (0.0, 0.005, 0.01, 0.02, 0.04)


def rule_plus_rights(d: al.Data, X: np.ndarray) -> np.ndarray:
    """Today's rule plus ``w`` x a passage term ``X`` (z-scored), ``w`` in ``EXTRA_WEIGHTS``
    chosen with the rule's own values on the other folds (``w = 0`` is the rule)."""
    finite = np.isfinite(X)
    z = np.where(finite, (X - X[finite].mean()) / X[finite].std(), 0.0)
    right = []
    for w, cw, off in itertools.product(EXTRA_WEIGHTS, al.COVERAGE_WEIGHTS, al.OFFSETS):
        score = d.col("ssim") + cw * d.col("scov") + w * z
        right += [d.right(score, t, off) for t in al.THRESHOLDS]
    return np.array(right)


def probe(P: Pairs, X: np.ndarray, l2: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Out-of-fold and in-sample sentence scores of an L2 logistic regression; seconds per fit."""
    oof = np.zeros(len(X))
    t0 = time.perf_counter()
    for k in range(al.FOLDS):
        tr = P.fold != k
        mu, sd = X[tr].mean(0), X[tr].std(0) + 1e-9
        beta = al._fit((X[tr] - mu) / sd, P.label[tr], P.weight[tr], l2)
        oof[~tr] = ((X[~tr] - mu) / sd) @ beta[:-1] + beta[-1]
    seconds = (time.perf_counter() - t0) / al.FOLDS
    mu, sd = X.mean(0), X.std(0) + 1e-9
    beta = al._fit((X - mu) / sd, P.label, P.weight, l2)
    return oof, ((X - mu) / sd) @ beta[:-1] + beta[-1], seconds


def auc(s: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """Weighted probability that a positive pair outscores a negative one (pair level)."""
    order = np.argsort(s, kind="stable")
    s, y, w = s[order], y[order], w[order]
    neg = np.where(y == 0, w, 0.0)
    return round(float((w * (y == 1) * (np.cumsum(neg) - neg)).sum() / (w[y == 1].sum() * neg.sum())), 4)


def report(args: argparse.Namespace) -> None:
    P = Pairs()
    d = P.d
    out: dict = {"questions": len(P.rows), "pairs": len(P.row), "positives": int(P.label.sum()),
                 "groups": {f"{s}/{k}": int((d.g == i).sum()) for i, (s, k) in enumerate(d.names)}}
    out["rule"] = evaluate(d, rule_rights(d))
    pooled = P.z["pooled"]
    variants = {"probe": lambda: pooled, "probe+rule": lambda: np.hstack([pooled, P.rule_x]),
                "rule-logistic": lambda: P.rule_x}
    for l2 in args.l2:
        for name in filter(None, args.variants.split(",")):
            X = variants[name]()
            oof, train, seconds = probe(P, X, l2)
            res = evaluate(d, score_rights(d, P.passage_scores(oof)),
                           score_rights(d, P.passage_scores(oof)), score_rights(d, P.passage_scores(train)))
            res["fit_seconds"] = round(seconds, 1)
            res["auc"] = {"oof": auc(oof, P.label, P.weight), "train": auc(train, P.label, P.weight)}
            res["rule+term"] = evaluate(d, rule_plus_rights(d, P.passage_scores(oof)))["oof"]
            out[f"{name} l2={l2}"] = res
    for spec in args.scores:
        name, path = spec.split("=", 1)
        z = np.load(path, allow_pickle=False)
        oof = z["oof"] if hasattr(z, "files") else z
        train = z["train"] if hasattr(z, "files") and "train" in z.files else None
        rights = score_rights(d, P.passage_scores(oof))
        full = train is not None and bool(np.isfinite(train).all())
        out[name] = evaluate(d, rights, rights, score_rights(d, P.passage_scores(train)) if full else None)
        out[name]["auc"] = {"oof": auc(oof, P.label, P.weight)}
        out[name]["rule+term"] = evaluate(d, rule_plus_rights(d, P.passage_scores(oof)))
        if train is not None:
            seen = np.isfinite(train)
            out[name]["auc"]["train"] = auc(train[seen], P.label[seen], P.weight[seen])
    text = json.dumps(out, indent=1)
    print(text)
    if args.out:
        (OUT / args.out).write_text(text)


def cost(n: int) -> None:
    """Run-time cost of reading (question, sentence) pairs together: the plain int8 graph on the
    embedder's own query session (one thread), one pair per call, as ``ask`` would run it, on a
    seeded sample of the pairs, alternating with the question alone (the query embedding ``ask``
    already pays, as the peer); and the number of candidate sentences an answer would read (the
    quotable sentences of its ``DECIDE_DEPTH`` best passages) per set."""
    from evidex.embed._e5_int8 import E5Int8Embedder, _run
    from xenc_pairs import encode, load_rows, pairs

    z = np.load(OUT / "pairs.npz")
    rows = load_rows([str(s) for s in z["sets"]])
    rows = [rows[i] for i in z["keep"]]
    rt = E5Int8Embedder()._load()
    items = pairs(rows)
    sample = np.random.default_rng(1).permutation(len(items))[:n]
    ids = encode(rt.tokenizer, [items[i] for i in sample])
    questions = rt.tokenizer.encode([items[i]["text"][0] for i in sample])
    for x in ids[:20]:  # warm-up
        _run(rt, rt.queries, x[1:-1])
    times, peer = [], []
    for x, q in zip(ids, questions, strict=True):  # alternating: the pair, the question alone
        t0 = time.perf_counter()
        _run(rt, rt.queries, x[1:-1])
        t1 = time.perf_counter()
        _run(rt, rt.queries, q)
        peer.append(time.perf_counter() - t1)
        times.append(t1 - t0)
    ms = np.array(times) * 1000
    per_q = np.bincount(z["row"], minlength=len(rows))
    sets = np.array([r["set"] for r in rows])
    print(json.dumps({"pairs_timed": n, "ms_per_pair_p50": round(float(np.median(ms)), 2),
                      "ms_per_pair_p90": round(float(np.quantile(ms, 0.9)), 2),
                      "mean_tokens": round(float(np.mean([len(x) for x in ids])), 1),
                      "ms_question_alone_p50": round(float(np.median(peer)) * 1000, 2),
                      "sentences_per_question": {s: round(float(per_q[sets == s].mean()), 1)
                                                 for s in sorted(set(sets))},
                      "note": "one thread; machine shared with other jobs"}, indent=1))


def folds() -> None:
    P = Pairs()
    np.savez(OUT / "folds.npz", fold=P.fold, weight=P.weight, label=P.label)
    print(f"{len(P.fold)} pairs, folds {np.bincount(P.fold).tolist()} -> {OUT / 'folds.npz'}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("folds", "report", "cost"))
    ap.add_argument("--pairs", type=int, default=300, help="cost: pairs timed")
    ap.add_argument("--l2", type=float, nargs="+", default=[10.0, 100.0, 1000.0])
    ap.add_argument("--variants", default="rule-logistic,probe,probe+rule")
    ap.add_argument("--scores", action="append", default=[],
                    help="NAME=path of a .npz with per-pair 'oof' (and 'train') scores")
    ap.add_argument("--out", default="", help="also write the report to benchmarks/.work/xenc/<out>")
    args = ap.parse_args()
    if args.what == "folds":
        folds()
    elif args.what == "cost":
        cost(args.pairs)
    else:
        report(args)


if __name__ == "__main__":
    main()
