"""Check the shop development questions (examples/eval/shop-dev/queries.jsonl) against the
collection they are asked of, without running the system under test.

    .venv/bin/python examples/eval/check_shop_dev.py            # exit 1 on any problem
    .venv/bin/python examples/eval/check_shop_dev.py --fill     # (re)write each row's ``answers``

The one reader of the set: the benchmarks (``benchmarks/answers_sets.py``, set ``shop``), the
reader's training (through them) and ``tests/eval/test_shop_dev.py`` load its questions and
actor here. The collection is built as ``evidex eval --cases examples/eval/cases.yaml`` builds
it (``case_store``; keyword-only here, so it takes seconds) and read with the library's own view
of it (``evidex.evaluation._collection.Collection``). Checks:

* ids unique, split ``dev``, kind and language known;
* answerable rows: every expected document exists and the set's actor (the case file's
  ``customer``) may read it (not the staff handbook, not another tenant; superseded versions
  are not current documents, so a quote only they hold fails the next check); the ``answer``
  span occurs verbatim in at least one expected document, and ``answers`` maps exactly those
  documents to it;
* languages: ``wh`` questions ask documents of their own language, ``cross_de_en`` German
  questions English documents, ``cross_en_de`` English questions German ones (``keyword``
  queries, codes and names, may expect a page in either language);
* ``ooc`` rows name no document and no answer (that no page answers them was checked by hand:
  see the set's README);
* no question is close to a case of the shipped case file (the held-out set): word-set
  Jaccard similarity (lower-cased, punctuation folded) below ``NEAR`` against every case
  question. The questions were written without reading the case file's questions; this check
  (which prints only this set's ids) caught 10 identical and 12 close ones, which were replaced
  by questions on other facts.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from evidex import Actor, KnowledgeBase
from evidex.evaluation import load_cases
from evidex.evaluation._collection import Collection, build_store

HERE = Path(__file__).resolve().parent
#: The shipped case file: only its ``collection:`` and ``actors:`` are used (its cases are the
#: held-out gate set), so the shop store is the one ``evidex eval --cases`` builds.
SHOP_CASES = HERE / "cases.yaml"
#: The folder the shop's case file may read below (its collection is examples/shop).
SHOP_ROOT = HERE.parent
SHOP_DEV = HERE / "shop-dev" / "queries.jsonl"
#: The case file's actor the questions are asked as.
SHOP_ACTOR = "customer"

KINDS = {"wh", "keyword", "cross_de_en", "cross_en_de", "ooc"}
LANGUAGES = {"en", "de"}
#: Word-set Jaccard similarity at which a question counts as a copy of a held-out case.
NEAR = 0.5


def _words(text: str) -> frozenset[str]:
    return frozenset(re.sub(r"[^\w]+", " ", text.lower()).split())


def _similarity(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def rows(split: str = "dev") -> list[dict]:
    """The set's questions, one dict per line of queries.jsonl. There is only a dev split."""
    if split != "dev":
        raise SystemExit("set 'shop' has only a dev split (examples/eval/shop-dev); the shop's "
                         "held-out questions are examples/eval/cases.yaml, run by `evidex eval --cases`")
    return [json.loads(line) for line in SHOP_DEV.read_text(encoding="utf-8").splitlines()]


def actor() -> Actor:
    """Who asks the questions: the case file's customer (public pages of tenant acme)."""
    return load_cases(SHOP_CASES, root=SHOP_ROOT).actors[SHOP_ACTOR]


def case_store(cases: Path, location: str | Path, embedder: str) -> KnowledgeBase:
    """A new store at ``location`` holding the collection of the case file ``cases``, built by
    the library's own ``evidex eval --cases`` path (same loaders, defaults, order, splitting,
    language identification)."""
    return build_store(load_cases(cases, root=SHOP_ROOT), location, embedder=embedder)


def collection() -> Collection:
    with tempfile.TemporaryDirectory(prefix="shop-dev-check-") as tmp:
        kb = case_store(SHOP_CASES, Path(tmp) / "check.db", "none")
        try:
            return Collection.of(kb)
        finally:
            kb.close()


def problems(rows: list[dict], col: Collection, fill: bool = False) -> list[str]:
    """Every problem of ``rows`` against ``col`` (empty: the set is right about the documents).
    ``fill``: set each answerable row's ``answers`` from the documents first."""
    cf = load_cases(SHOP_CASES, root=SHOP_ROOT)
    reader = cf.actors[SHOP_ACTOR]
    held_out = [_words(c.question) for c in cf.cases]
    out: list[str] = []
    seen: set[str] = set()
    for r in rows:
        rid = r.get("_id", "?")

        def bad(what: str, rid: str = rid) -> None:
            out.append(f"{rid}: {what}")

        if rid in seen:
            bad("duplicate id")
        seen.add(rid)
        kind, lang = r.get("kind"), r.get("language")
        if kind not in KINDS:
            bad(f"unknown kind {kind!r}")
        if lang not in LANGUAGES:
            bad(f"unknown language {lang!r}")
        if r.get("split") != "dev":
            bad("split must be dev (development data only)")
        if not str(r.get("text", "")).strip():
            bad("no question text")
        words = _words(str(r.get("text", "")))
        if any(_similarity(words, h) >= NEAR for h in held_out):
            bad("the question is (nearly) a case of the shipped case file (held-out set)")
        expected, answer = r.get("expected") or [], r.get("answer")
        if kind == "ooc":
            if expected or answer or r.get("answers"):
                bad("an ooc question names no document and no answer")
            continue
        if not expected or not answer:
            bad("an answerable question needs expected documents and an answer span")
            continue
        docs = {}
        for d in expected:
            doc = col.readable(reader, d)
            if doc is None:
                bad(f"{d} does not exist or the {SHOP_ACTOR} actor may not read it"
                    if not col.exists(d) else f"{d} is not readable by the {SHOP_ACTOR} actor")
                continue
            docs[d] = doc
            if kind == "keyword":
                continue  # a code or a name has no language: a page in either may answer it
            want = {"wh": lang, "cross_de_en": "en", "cross_en_de": "de"}[kind]
            if kind.startswith("cross") and lang != kind[6:8]:
                bad(f"a {kind} question is asked in {kind[6:8]}, not {lang}")
            if doc.language != want:
                bad(f"{d} is in {doc.language}, a {kind} question in {lang} asks a {want} page")
        holding = sorted(d for d, doc in docs.items() if answer in doc.text)
        if not holding:
            bad(f"answer {answer!r} occurs in none of {sorted(docs)}")
        if fill:
            r["answers"] = {d: answer for d in holding}
        answers = r.get("answers") or {}
        if sorted(answers) != holding or any(v != answer for v in answers.values()):
            bad(f"answers must map exactly the expected documents holding the span ({holding})")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fill", action="store_true", help="write each row's answers map first")
    args = ap.parse_args()
    questions = rows()
    found = problems(questions, collection(), fill=args.fill)
    if args.fill:
        SHOP_DEV.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in questions),
                            encoding="utf-8")
    kinds: dict[str, int] = {}
    for r in questions:
        key = f"{r['kind']}/{r['language']}"
        kinds[key] = kinds.get(key, 0) + 1
    print(f"{len(questions)} questions: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    for p in found:
        print(f"error: {p}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
