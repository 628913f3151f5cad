"""Build the encyclopedia set (corpus.jsonl, queries.jsonl, qrels/) from the hand-written sources in src/.

    python benchmarks/data/encyclopedia/build.py          # rebuild and check; exits non-zero on any error
    python benchmarks/data/encyclopedia/build.py --check  # check only, write nothing

Source format (one topic per file, UTF-8; lines starting with "#" are comments):

    [en-lisbon-1] Lisbon                      a paragraph: id (language prefix en-/de-) and title
    [de-lisbon-1] Lissabon < en-lisbon-1      ... a faithful translation of another paragraph
    Paragraph text, on one or more lines.
    ? wh: When did the earthquake strike? => 1 November 1755
    ? keyword: lisbon earthquake date => 1 November 1755
    ? cross_de_en: Wann bebte die Erde? => 1 November 1755
    ! ooc: How many people live in Lisbon?    out-of-collection (no paragraph answers it)
    ! ooc/de: Wie viele Menschen leben in Lissabon?

A "?" line asks a question answered by the paragraph above it; the text after "=>" is the answer, copied
verbatim from that paragraph. When the paragraph has a translation in the collection, the translation
answers the question too (it is added to the qrels); if the span differs there, give it after "||":
"=> the Tagus || den Tejo". The language of a query is the paragraph's for wh and keyword, German for
cross_de_en and English for cross_en_de; "/de" or "/en" after the kind overrides it.

Every check (verbatim answers, unique ids, kinds, cross-language targets without a translation, ...) is
a hard error: the committed files are only written from a clean source.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
KINDS = {"wh", "keyword", "cross_de_en", "cross_en_de", "ooc"}
DEFAULT_LANG = {"cross_de_en": "de", "cross_en_de": "en"}
HEADER = re.compile(
    r"^\[(?P<id>(?P<lang>en|de)-[a-z0-9-]+)\]\s+(?P<title>[^<]+?)(?:\s+<\s+(?P<of>[a-z0-9-]+))?\s*$"
)
QUERY = re.compile(r"^(?P<mark>[?!])\s*(?P<kind>[a-z_]+)(?:/(?P<lang>en|de))?:\s*(?P<rest>.+)$")


class SourceError(Exception):
    pass


def parse(path: Path) -> tuple[list[dict], list[dict]]:
    topic = path.stem
    paragraphs: list[dict] = []
    queries: list[dict] = []
    current: dict | None = None
    ooc_n = 0
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        where = f"{path.name}:{n}"
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            m = HEADER.match(line)
            if not m:
                raise SourceError(f"{where}: bad paragraph header {line!r}")
            current = {"_id": m["id"], "title": m["title"].strip(), "text": "", "language": m["lang"],
                       "topic": topic, "_queries": 0}
            if m["of"]:
                current["translation_of"] = m["of"]
            paragraphs.append(current)
            continue
        qm = QUERY.match(line)
        if qm:
            kind = qm["kind"]
            if kind not in KINDS:
                raise SourceError(f"{where}: unknown kind {kind!r}")
            if qm["mark"] == "!":
                if kind != "ooc" or "=>" in qm["rest"]:
                    raise SourceError(f"{where}: '!' lines are ooc questions without an answer")
                ooc_n += 1
                queries.append({"_id": f"ooc-{topic}-{ooc_n}", "text": qm["rest"].strip(),
                                "language": qm["lang"] or "en", "kind": "ooc", "topic": topic,
                                "_where": where})
                continue
            if kind == "ooc" or current is None:
                raise SourceError(f"{where}: '?' lines need a paragraph above and a kind other than ooc")
            if "=>" not in qm["rest"]:
                raise SourceError(f"{where}: answerable question without '=> answer'")
            text, answer = (s.strip() for s in qm["rest"].split("=>", 1))
            answer, _, other = (s.strip() for s in answer.partition("||"))
            current["_queries"] += 1
            lang = qm["lang"] or DEFAULT_LANG.get(kind, current["language"])
            queries.append({"_id": f"q-{current['_id']}-{current['_queries']}", "text": text,
                            "language": lang, "kind": kind, "topic": topic, "target": current["_id"],
                            "answer": answer, "_other": other, "_where": where})
            continue
        if current is None:
            raise SourceError(f"{where}: text before any paragraph header")
        current["text"] = (current["text"] + " " + line).strip()
    return paragraphs, queries


def build(src: Path) -> tuple[list[dict], list[dict], list[str]]:
    paragraphs: list[dict] = []
    queries: list[dict] = []
    for path in sorted(src.glob("*.txt")):
        p, q = parse(path)
        paragraphs += p
        queries += q
    errors: list[str] = []
    warnings: list[str] = []
    by_id = {}
    for p in paragraphs:
        if p["_id"] in by_id:
            errors.append(f"duplicate paragraph id {p['_id']}")
        by_id[p["_id"]] = p
    translated = {}
    for p in paragraphs:
        of = p.get("translation_of")
        if of:
            if of not in by_id or by_id[of]["language"] == p["language"]:
                errors.append(f"{p['_id']}: translation_of {of!r} is not a paragraph in the other language")
            elif of in translated:
                errors.append(f"{of} has two translations")
            else:
                translated[of] = p["_id"]
        words = len(p["text"].split())
        if not 80 <= words <= 200:
            warnings.append(f"{p['_id']}: {words} words (expected 80-200)")
    seen_q: dict[str, str] = {}
    for q in queries:
        where = q.pop("_where")
        if q["_id"] in seen_q:
            errors.append(f"{where}: duplicate query id {q['_id']}")
        key = q["text"].casefold()
        if key in seen_q:
            errors.append(f"{where}: question text repeated: {q['text']!r}")
        seen_q[q["_id"]] = where
        seen_q[key] = where
        if q["kind"] == "ooc":
            continue
        target = by_id[q["target"]]
        other_id = translated.get(target["_id"]) or target.get("translation_of")
        other_span = q.pop("_other")
        if q["answer"] not in target["text"]:
            errors.append(f"{where}: answer {q['answer']!r} is not verbatim in {target['_id']}")
        q["answers"] = {target["_id"]: q["answer"]}
        if other_id:
            span = other_span or q["answer"]
            if span not in by_id[other_id]["text"]:
                errors.append(f"{where}: answer {span!r} is not verbatim in the translation {other_id}"
                              " (give '|| span')")
            q["answers"][other_id] = span
        elif other_span:
            errors.append(f"{where}: '|| span' given but {target['_id']} has no translation")
        q["relevant"] = sorted(q["answers"])
        if q["kind"] == "cross_de_en" and (target["language"] != "en" or other_id):
            errors.append(f"{where}: cross_de_en must target an English paragraph without a translation")
        if q["kind"] == "cross_en_de" and (target["language"] != "de" or other_id):
            errors.append(f"{where}: cross_en_de must target a German paragraph without a translation")
        if q["kind"] in {"wh", "keyword"} and q["language"] != target["language"]:
            errors.append(f"{where}: a {q['kind']} question is in its paragraph's language")
    for p in paragraphs:
        p.pop("_queries")
    assign_splits(queries)
    return paragraphs, queries, errors + [f"warning: {w}" for w in warnings]


def assign_splits(queries: list[dict]) -> None:
    """Half of each (kind, language) group to dev, half to test: order by SHA-1 of the id, alternate."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for q in queries:
        groups.setdefault((q["kind"], q["language"]), []).append(q)
    for items in groups.values():
        items.sort(key=lambda q: hashlib.sha1(q["_id"].encode()).hexdigest())
        for n, q in enumerate(items):
            q["split"] = "dev" if n % 2 == 0 else "test"


def write(out: Path, paragraphs: list[dict], queries: list[dict]) -> None:
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for p in paragraphs:
            fh.write(json.dumps(p, ensure_ascii=False) + "\n")
    keys = ["_id", "text", "language", "kind", "split", "topic", "target", "answer", "answers"]
    with (out / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for q in queries:
            fh.write(json.dumps({k: q[k] for k in keys if k in q}, ensure_ascii=False) + "\n")
    (out / "qrels").mkdir(exist_ok=True)
    for split in ("dev", "test"):
        with (out / "qrels" / f"{split}.tsv").open("w", encoding="utf-8") as fh:
            fh.write("query-id\tcorpus-id\tscore\n")
            for q in queries:
                if q["split"] == split and q["kind"] != "ooc":
                    for pid in q["relevant"]:
                        fh.write(f"{q['_id']}\t{pid}\t1\n")


def summary(paragraphs: list[dict], queries: list[dict]) -> str:
    pc = Counter(("translation" if p.get("translation_of") else p["language"]) for p in paragraphs)
    qc = Counter((q["kind"], q["language"], q["split"]) for q in queries)
    lines = [f"paragraphs: {len(paragraphs)} " + ", ".join(f"{k} {v}" for k, v in sorted(pc.items()))]
    lines.append(f"queries: {len(queries)}")
    for kind in sorted(KINDS):
        for lang in ("en", "de"):
            dev, test = qc[(kind, lang, "dev")], qc[(kind, lang, "test")]
            if dev or test:
                lines.append(f"  {kind:12s} {lang}: dev {dev:4d}  test {test:4d}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="check the sources, write nothing")
    args = ap.parse_args()
    try:
        paragraphs, queries, problems = build(HERE / "src")
    except SourceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for p in problems:
        print(p if p.startswith("warning") else f"error: {p}", file=sys.stderr)
    if any(not p.startswith("warning") for p in problems):
        return 1
    if not args.check:
        write(HERE, paragraphs, queries)
    print(summary(paragraphs, queries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
