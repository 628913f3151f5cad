"""Convert fetched extractive-QA data into the evidex qa_sets layout (corpus/queries/qrels).

Split rule (all sets): articles/documents are sorted by sha256(title) (within a stratum where
stated) and alternately assigned to "dev" and "test", so each split gets half the articles. Every
answer span is checked to occur verbatim in its paragraph; questions whose span cannot be placed
are dropped and counted.
"""
from __future__ import annotations

import collections
import csv
import hashlib
import json
import re
import sys
from pathlib import Path

SRC = Path("/tmp/qa/src")
OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/data")
csv.field_size_limit(10**9)


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def h(s: str) -> int:
    return int.from_bytes(hashlib.sha256(s.encode("utf-8")).digest()[:8], "big")


def assign_splits(titles, stratum=lambda t: "") -> dict[str, str]:
    """Half the articles of each stratum to dev, half to test: sort by sha256(title), alternate."""
    out = {}
    groups = collections.defaultdict(list)
    for t in set(titles):
        groups[stratum(t)].append(t)
    for g in groups.values():
        for i, t in enumerate(sorted(g, key=lambda t: hashlib.sha256(t.encode("utf-8")).hexdigest())):
            out[t] = "dev" if i % 2 == 0 else "test"
    return out


class Writer:
    def __init__(self, name: str):
        self.name = name
        self.corpus: dict[str, dict] = {}
        self.queries: list[dict] = []
        self.dropped = collections.Counter()

    def passage(self, pid: str, title: str, text: str, lang: str) -> None:
        if pid in self.corpus:
            assert self.corpus[pid]["text"] == text, pid
            return
        self.corpus[pid] = {"_id": pid, "title": title, "text": text, "language": lang}

    def question(self, qid: str, text: str, lang: str, split: str, pid: str | None,
                 answer: str | None) -> None:
        text = text.strip()
        if not text:
            self.dropped["empty question"] += 1
            return
        if pid is None:
            self.queries.append({"_id": qid, "text": text, "language": lang, "kind": "ooc",
                                 "split": split, "answer": None, "answers": {}})
            return
        assert answer and answer in self.corpus[pid]["text"], (qid, answer)
        self.queries.append({"_id": qid, "text": text, "language": lang, "kind": "wh",
                             "split": split, "answer": answer, "answers": {pid: answer}})

    def write(self) -> dict:
        d = OUT / self.name
        (d / "qrels").mkdir(parents=True, exist_ok=True)
        ids = [q["_id"] for q in self.queries]
        assert len(ids) == len(set(ids)), "duplicate query ids"
        with open(d / "corpus.jsonl", "w", encoding="utf-8") as f:
            for p in self.corpus.values():
                f.write(json.dumps(p, ensure_ascii=False) + "\n")
        with open(d / "queries.jsonl", "w", encoding="utf-8") as f:
            for q in self.queries:
                f.write(json.dumps(q, ensure_ascii=False) + "\n")
        for split in ("dev", "test"):
            with open(d / "qrels" / f"{split}.tsv", "w", encoding="utf-8") as f:
                f.write("query-id\tcorpus-id\tscore\n")
                for q in self.queries:
                    if q["split"] == split and q["kind"] != "ooc":
                        for pid in q["answers"]:
                            f.write(f"{q['_id']}\t{pid}\t1\n")
        return self.stats()

    def stats(self) -> dict:
        c = collections.Counter((q["kind"], q["split"], q["language"]) for q in self.queries)
        qsplit_pid = {}
        for q in self.queries:
            for pid in q["answers"]:
                qsplit_pid[pid] = q["split"]
        return {"passages": len(self.corpus),
                "passages_by_language": dict(
                    collections.Counter(p["language"] for p in self.corpus.values())),
                "questions": len(self.queries),
                "by_kind_split_language": {"/".join(k): v for k, v in sorted(c.items())},
                "dropped": dict(self.dropped)}


def verify(name: str) -> dict:
    """Independent re-read of the written folder: every span verbatim, qrels consistent."""
    d = OUT / name
    corpus = {row["_id"]: row for row in _jsonl(d / "corpus.jsonl")}
    queries = _jsonl(d / "queries.jsonl")
    qrels = set()
    for split in ("dev", "test"):
        text = (d / "qrels" / f"{split}.tsv").read_text(encoding="utf-8")
        rows = list(csv.reader(text.splitlines(), delimiter="\t"))
        assert rows[0] == ["query-id", "corpus-id", "score"]
        qrels |= {(split, r[0], r[1]) for r in rows[1:]}
    ok = bad = 0
    expect = set()
    for q in queries:
        if q["kind"] == "ooc":
            assert q["answer"] is None and q["answers"] == {}
            continue
        assert q["answer"] in q["answers"].values()
        for pid, span in q["answers"].items():
            expect.add((q["split"], q["_id"], pid))
            if span and span in corpus[pid]["text"]:
                ok += 1
            else:
                bad += 1
    assert expect == qrels, "qrels differ from queries"
    # articles never straddle splits
    title_split = collections.defaultdict(set)
    for q in queries:
        for pid in q["answers"]:
            title_split[corpus[pid]["title"]].add(q["split"])
    straddle = sum(len(s) > 1 for s in title_split.values())
    return {"spans_verbatim": ok, "spans_not_found": bad, "qrels_lines": len(qrels),
            "articles_in_both_splits": straddle}


# ---------------------------------------------------------------- SQuAD 2.0 train (head)
def squad2_train_head(q_keep_percent: int = 61) -> Writer:
    w = Writer("squad2_train_head")
    data = _json(SRC / "phong_train.json")["data"]
    has_ooc = {a["title"].replace("_", " "):
               any(q.get("is_impossible") for p in a["paragraphs"] for q in p["qas"])
               for a in data}
    splits = assign_splits(has_ooc, stratum=lambda t: has_ooc[t])
    for ai, art in enumerate(data):
        title = art["title"].replace("_", " ")
        split = splits[title]
        for pi, par in enumerate(art["paragraphs"]):
            pid = f"sq2tr-{ai:02d}-{pi:03d}"
            ctx = par["context"]
            w.passage(pid, title, ctx, "en")
            for qa in par["qas"]:
                if qa.get("is_impossible"):
                    w.question(qa["id"], qa["question"], "en", split, None, None)
                    continue
                # dev articles keep every answerable question (training data for the reader,
                # issue 44); test articles keep the sample they were first reported on
                if split == "test" and h(qa["id"]) % 100 >= q_keep_percent:
                    w.dropped["answerable not sampled"] += 1
                    continue
                a = qa["answers"][0]
                span = a["text"]
                if ctx[a["answer_start"]:a["answer_start"] + len(span)] != span:
                    w.dropped["answer_start mismatch (span still searched)"] += 1
                span = span.strip()
                if not span or span not in ctx:
                    w.dropped["span not in paragraph"] += 1
                    continue
                w.question(qa["id"], qa["question"], "en", split, pid, span)
    return w


# ---------------------------------------------------------------- GermanQuAD test (full)
def germanquad_test() -> Writer:
    w = Writer("germanquad_test")
    seen = set()
    parts = [_json(SRC / "jk" / f"{f}.json")["data"]
             for f in ("base_NOT", "base_DIS", "base_ONE")]
    splits = assign_splits(p["context"].split("\n", 1)[0].strip()
                           for data in parts for a in data for p in a["paragraphs"])
    for data in parts:
        for art in data:
            for par in art["paragraphs"]:
                ctx = par["context"]
                title = ctx.split("\n", 1)[0].strip()
                split = splits[title]
                pid = f"gq-{par['document_id']}"
                w.passage(pid, title, ctx, "de")
                for qa in par["qas"]:
                    qid = f"gq-q{qa['id']}"
                    assert qid not in seen
                    seen.add(qid)
                    spans = []
                    for a in qa["answers"]:
                        if ctx[a["answer_start"]:a["answer_start"] + len(a["text"])] != a["text"]:
                            w.dropped["an annotator answer_start mismatch"] += 1
                        s = a["text"].strip()
                        if s and s in ctx:
                            spans.append(s)
                    if not spans:
                        w.dropped["no verbatim span"] += 1
                        continue
                    # the span most annotators chose; ties go to the first annotator's
                    cnt = collections.Counter(spans)
                    best = max(spans, key=lambda s: (cnt[s], -spans.index(s)))
                    w.question(qid, qa["question"], "de", split, pid, best)
    # hand-written unanswerable questions on GermanQuAD test paragraphs (NOT.json)
    ctx2pid = {p["text"]: pid for pid, p in w.corpus.items()}
    for i, art in enumerate(_json(SRC / "jk" / "NOT.json")["data"]):
        for par in art["paragraphs"]:
            pid = ctx2pid[par["context"]]
            split = splits[w.corpus[pid]["title"]]
            for j, qa in enumerate(par["qas"]):
                assert not qa["answers"]
                w.question(f"gq-not-{i:02d}-{j}", qa["question"], "de", split, None, None)
    return w


# ---------------------------------------------------------------- COVID-QA (2020-04-23 file)
def covidqa(min_chunk: int = 300, max_passages: int = 3000) -> Writer:
    w = Writer("covidqa")
    data = _json(SRC / "covid_200423.json")["data"]
    arts = []
    for art in data:
        par = art["paragraphs"][0]
        assert len(art["paragraphs"]) == 1
        ctx = par["context"]
        title = ctx.split("\n", 1)[0].strip()
        # chunks: runs of whole lines, each at least min_chunk characters (last one may be shorter)
        bounds, start, pos = [], 0, 0
        for line in ctx.split("\n"):
            end = pos + len(line)
            if ctx[start:end].strip() and len(ctx[start:end].strip()) >= min_chunk:
                bounds.append((start, end))
                start = end + 1
            pos = end + 1
        if start < len(ctx) and ctx[start:].strip():
            if bounds:
                bounds[-1] = (bounds[-1][0], len(ctx))
            else:
                bounds.append((start, len(ctx)))
        arts.append((title, ctx, bounds, par["qas"]))
    # sample whole papers in hash order until the passage cap
    total = 0
    chosen = []
    for a in sorted(arts, key=lambda a: h(a[0])):
        if total + len(a[2]) > max_passages:
            w.dropped["papers not sampled"] += 1
            continue
        total += len(a[2])
        chosen.append(a)
    splits = assign_splits(a[0] for a in chosen)
    for title, ctx, bounds, qas in sorted(chosen, key=lambda a: a[0]):
        split = splits[title]
        pids = []
        for ci, (s, e) in enumerate(bounds):
            lead = len(ctx[s:e]) - len(ctx[s:e].lstrip())
            text = ctx[s:e].strip()
            pid = f"covid-{h(title) % 10**8:08d}-{ci:03d}"
            w.passage(pid, title, text, "en")
            pids.append((s + lead, s + lead + len(text), pid))
        for qa in qas:
            a = qa["answers"][0]
            st = a["answer_start"]
            raw = a["text"]
            if ctx[st:st + len(raw)] != raw:
                # offsets in this file are sometimes shifted: take the occurrence nearest to them
                occ = [m.start() for m in re.finditer(re.escape(raw), ctx)]
                if not occ:
                    w.dropped["span not in paper"] += 1
                    continue
                near = min(occ, key=lambda o: abs(o - st))
                if abs(near - st) > 5:
                    w.dropped["span only far from its answer_start"] += 1
                    continue
                w.dropped["answer_start off by <=5 chars (relocated)"] += 1
                st = near
            span = raw.strip()
            st += len(raw) - len(raw.lstrip())
            hit = [pid for (s, e, pid) in pids if s <= st and st + len(span) <= e]
            if not hit or not span:
                w.dropped["answer crosses chunk boundary"] += 1
                continue
            w.question(f"covid-q{qa['id']}", qa["question"], "en", split, hit[0], span)
    return w


# ---------------------------------------------------------------- MLQA German (de.de) dev
def mlqa_de() -> Writer:
    """MLQA's 512 German development questions (CC BY-SA 3.0), German questions over German
    Wikipedia paragraphs. The copy read is XGLUE's (LSX-UniWue/SuperGLEBer,
    data/XGlue/MLQA/validation), converted from Arrow to JSON once (mlqa_de_validation.json).
    MLQA has no article titles; a paragraph is its own unit for the dev/test split."""
    w = Writer("mlqa_de")
    rows = _json(SRC / "mlqa_de_validation.json")
    pid_of = {ctx: f"mlqa-de-{h(ctx) % 10**10:010d}" for ctx in {r["context"] for r in rows}}
    splits = assign_splits(pid_of.values())
    for r in sorted(rows, key=lambda r: r["id"]):
        ctx = r["context"]
        pid = pid_of[ctx]
        w.passage(pid, "", ctx, "de")
        a = r["answers"]
        st, raw = a["answer_start"][0], a["text"][0]
        if ctx[st:st + len(raw)] != raw:
            w.dropped["answer_start mismatch (span still searched)"] += 1
        span = raw.strip()
        if not span or span not in ctx:
            w.dropped["span not in paragraph"] += 1
            continue
        w.question(f"mlqa-de-{r['id']}", r["question"], "de", splits[pid], pid, span)
    return w


if __name__ == "__main__":
    which = sys.argv[2:] or ["squad2_train_head", "germanquad_test", "covidqa", "mlqa_de"]
    for name in which:
        w = globals()[name]()
        st = w.write()
        st["verify"] = verify(name)
        print(name, json.dumps(st, ensure_ascii=False, indent=1))
