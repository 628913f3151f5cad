"""What bounds the default embedder's speed on this CPU (issue 25), three measurements:

    EVIDEX_EMBED_THREADS=1 .venv/bin/python benchmarks/embedder_limits.py gemm
    EVIDEX_EMBED_THREADS=1 .venv/bin/python benchmarks/embedder_limits.py query
    EVIDEX_EMBED_THREADS=1 .venv/bin/python benchmarks/embedder_limits.py search [--db PATH]

* ``gemm``: one-thread G multiply-adds/s of the product kernels the graph can use (int8
  ``DynamicQuantizeMatMul``, 8-bit ``MatMulNBits`` in blocks of 128, fp32 ``MatMul``), each a
  one-node graph, on the encoder's two FFN shapes at a query's and a passage's row count; min CPU
  time over alternating rounds.
* ``query``: CPU per 13-20-token SciFact query split into tokenizing, word rows and
  ``session.run``, and onnxruntime's per-operator profile of the same runs (its kernel times are
  wall clock: on a busy machine the shares are noisy, use many queries).
* ``search``: CPU per never-seen question (cut to the API contract) in process on the service's
  SciFact store (``service_search.py`` builds it): hybrid search, keyword search and the query
  embedding alone, alternating.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
_DATA = Path("shared") / "data" / "beir" / "scifact"
SCIFACT = next((up / _DATA for up in HERE.parents if (up / _DATA).is_dir()), HERE.parents[1] / _DATA)
STORE = HERE / ".work" / "scifact-service-multilingual-e5-small-int8.db"
MODEL = "multilingual-e5-small-int8"


def _product(kind: str, k: int, n: int) -> Any:
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(0).standard_normal((k, n)).astype(np.float32)
    inits = []
    if kind == "fp32":
        inits.append(numpy_helper.from_array(w, "W"))
        node = helper.make_node("MatMul", ["X", "W"], ["Y"])
    elif kind == "int8":
        scale = (np.abs(w).max(axis=0) / 127).astype(np.float32)
        inits += [numpy_helper.from_array(np.round(w / scale).astype(np.int8), "W"),
                  numpy_helper.from_array(scale, "S"), numpy_helper.from_array(np.zeros(n, np.int8), "Z")]
        node = helper.make_node("DynamicQuantizeMatMul", ["X", "W", "S", "Z"], ["Y"], domain="com.microsoft")
    else:
        block = 128
        wt = w.T.reshape(n, k // block, block)
        scale = (np.abs(wt).max(axis=2) / 127).astype(np.float32)
        inits += [numpy_helper.from_array((np.round(wt / scale[..., None]) + 128).astype(np.uint8), "W"),
                  numpy_helper.from_array(scale.reshape(-1), "S")]
        node = helper.make_node("MatMulNBits", ["X", "W", "S"], ["Y"], domain="com.microsoft",
                                K=k, N=n, bits=8, block_size=block, accuracy_level=4)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["M", k])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["M", n])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def gemm(rounds: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, n in ((384, 1536), (1536, 384)):
        sessions = {kind: _product(kind, k, n) for kind in ("int8", "nbits8", "fp32")}
        for m in (19, 300):
            x = np.random.default_rng(1).standard_normal((m, k)).astype(np.float32)
            reps = 200 if m < 100 else 20
            best = dict.fromkeys(sessions, float("inf"))
            for _ in range(rounds):
                for kind, session in sessions.items():
                    c = time.process_time()
                    for _ in range(reps):
                        session.run(None, {"X": x})
                    best[kind] = min(best[kind], (time.process_time() - c) / reps)
            out[f"K{k} x N{n}, M {m}"] = {kind: round(m * k * n / s / 1e9, 1) for kind, s in best.items()}
    return out


def _queries(count: int) -> tuple[Any, list[list[int]], list[str]]:
    from evidex.embed import get_embedder
    from evidex.evaluation import load_beir

    texts = list(load_beir(SCIFACT).queries.values())
    model = get_embedder(MODEL)
    model.embed_queries(["warm up"])
    rt = model._load()  # type: ignore[attr-defined]
    ids = rt.tokenizer.encode(["query: " + q for q in texts])
    chosen = [(q, i) for q, i in zip(texts, ids, strict=True) if 13 <= len(i) + 2 <= 20][:count]
    return model, [i for _, i in chosen], [q for q, _ in chosen]


def query(count: int, rounds: int) -> dict[str, Any]:
    import onnxruntime as ort

    model, ids, texts = _queries(count)
    rt = model._load()

    def inputs(content: list[int]) -> dict[str, Any]:
        row = np.array([rt.tokenizer.bos, *content, rt.tokenizer.eos], dtype=np.int64)
        embeddings = rt.word.dequantize(row) + rt.position[: len(row)]
        return {"embeddings": embeddings[None], "mask": np.ones((1, len(row)), dtype=np.int32)}

    parts: dict[str, list[float]] = {"embed_queries": [], "tokenize": [], "word_rows": [], "session_run": []}
    for _ in range(rounds):
        for text, content in zip(texts, ids, strict=True):
            c = time.process_time()
            model.embed_queries([text])
            parts["embed_queries"].append(time.process_time() - c)
            c = time.process_time()
            rt.tokenizer.encode(["query: " + text])
            parts["tokenize"].append(time.process_time() - c)
            c = time.process_time()
            inputs(content)
            parts["word_rows"].append(time.process_time() - c)
            feed = inputs(content)
            c = time.process_time()
            rt.queries.run(["pooled"], feed)
            parts["session_run"].append(time.process_time() - c)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.enable_profiling = True
    options.profile_file_prefix = str(HERE / ".work" / "embedder-limits-profile")
    (HERE / ".work").mkdir(exist_ok=True)
    profiled = ort.InferenceSession(rt.queries._model_path, options, providers=["CPUExecutionProvider"])
    for _ in range(rounds):
        for content in ids:
            profiled.run(["pooled"], inputs(content))
    by_op: dict[str, float] = {}
    for event in json.loads(Path(profiled.end_profiling()).read_text()):
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            op = event["args"]["op_name"]
            by_op[op] = by_op.get(op, 0.0) + event["dur"]
    total = sum(by_op.values())
    return {"queries": len(ids), "rounds": rounds,
            "cpu_ms_p50": {k: round(statistics.median(v) * 1000, 3) for k, v in parts.items()},
            "kernel_share_percent": {k: round(v / total * 100, 1)
                                     for k, v in sorted(by_op.items(), key=lambda kv: -kv[1])}}


def search(db: Path, count: int, rounds: int) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    from evidex import Actor, KnowledgeBase
    from evidex.embed import get_embedder
    from evidex.evaluation import load_beir
    from service_search import api_query

    texts = list(load_beir(SCIFACT).queries.values())
    kb = KnowledgeBase.open(db)
    actor = Actor("eval", frozenset({"eval"}))
    model = get_embedder(MODEL)
    for q in texts[:20]:  # loads the model, BM25 weights and vectors
        for mode in ("hybrid", "keyword"):
            kb.search(actor, api_query("w " + q), limit=6, mode=mode)
    cpu: dict[str, list[float]] = {"hybrid": [], "keyword": [], "embed": []}
    fallbacks = 0
    for r in range(rounds):
        for i, q in enumerate(texts[20 : 20 + count]):
            order = ("hybrid", "keyword", "embed") if i % 2 else ("embed", "keyword", "hybrid")
            for mode in order:
                text = api_query(f"x{r}{mode[0]}{i} {q}")
                c = time.process_time()
                if mode == "embed":
                    model.embed_queries([text])
                else:
                    fallbacks += bool(kb.search(actor, text, limit=6, mode=mode).fallback)
                cpu[mode].append((time.process_time() - c) * 1000)
    kb.close()
    return {k: {"p50_ms": round(statistics.median(v), 2), "n": len(v)} for k, v in cpu.items()} | {
        "fallbacks": fallbacks}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("gemm", "query", "search"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--count", type=int, default=40, help="queries (query) or questions (search)")
    ap.add_argument("--db", type=Path, default=STORE)
    args = ap.parse_args()
    t = time.strftime("%Y-%m-%d %H:%M %Z")
    if args.what == "gemm":
        result = gemm(max(args.rounds, 1))
    elif args.what == "query":
        result = query(args.count, args.rounds)
    else:
        result = search(args.db, args.count, args.rounds)
    print(json.dumps({"date": t, "what": args.what, "result": result}, indent=1))


if __name__ == "__main__":
    main()
