"""The question sets answers are calibrated and measured on: a collection plus questions, each
answerable (with the passages that answer it) or out of collection.

    from answers_sets import SETS, build

Sets (``--set``; development data only, never SQuAD dev, XQuAD or MLQA test):

* ``encyclopedia``: benchmarks/data/encyclopedia, all 280 en/de paragraphs; kinds wh, keyword,
  cross_de_en, cross_en_de and ooc (near misses); splits dev/test as in the set.
* ``encyclopedia-en``: the same with only the English paragraphs (``only_languages``), so German
  questions about translated paragraphs become German-to-English questions.
* ``squad2``: benchmarks/data/squad2-train-head (the first ten articles of SQuAD 2.0 *train*,
  see its README); its unanswerable questions are kind ``ooc`` (near misses written against
  their own paragraph). Splits by article, half each.
* ``covidqa``: benchmarks/data/covidqa (COVID-QA, April 2020 release: questions over CORD-19
  papers cut into paragraphs; no unanswerable questions). Splits by paper, half each.
* ``mlqa``: benchmarks/data/mlqa-de (MLQA's German development questions over German Wikipedia
  paragraphs, see its README; answerable only). Splits by paragraph, half each.
* ``scifact``: BEIR SciFact, claims of ``train`` (split dev) or ``test`` (split test) against all
  abstracts (english analyzer, one passage per abstract), plus the calibration half (dev) or the
  held-out half (test) of benchmarks/data/off-topic-questions.txt as ``ooc``.
* ``shop``: help-centre questions of examples/eval/shop-dev (dev only; see its README) over the
  example shop collection, built as ``evidex eval --cases examples/eval/cases.yaml`` builds it
  (that file's ``collection:``, ``--split heading``, languages identified) and asked as that
  file's ``customer`` actor, so internal pages and the other tenant are never seen. Kinds wh,
  keyword, cross_de_en, cross_en_de and ooc; ``expected`` are document ids (a page has several
  passages: a hit counts when its document is expected). The case file's own questions are the
  held-out set and are never asked here.

Stores live in benchmarks/.work/answers/ (or ``$EVIDEX_ANSWERS_WORK``), one per set and
embedder (``shop``: a new store per run, removed at exit, so it is always what the eval
builds); passage vectors come from the persistent embedding cache and question vectors from
the same cache under ``<model>#query``, so a repeated run embeds nothing.
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import qa_sets
from evidex import Actor, Document, KnowledgeBase
from evidex.evaluation import corpus_documents, load_beir
from evidex.evaluation._collection import SPLIT as CASE_SPLIT

HERE = Path(__file__).resolve().parent
# The shop set's questions, actor and store are examples/eval/check_shop_dev.py's (the tests
# read the set there too).
sys.path.insert(0, str(HERE.parent / "examples" / "eval"))
import check_shop_dev  # noqa: E402
from check_shop_dev import SHOP_ACTOR, SHOP_CASES, SHOP_DEV, SHOP_ROOT, case_store  # noqa: E402, F401

#: Stores and outputs (``EVIDEX_ANSWERS_WORK`` overrides it, e.g. for another checkout's stores).
WORK = Path(os.environ.get("EVIDEX_ANSWERS_WORK") or HERE / ".work" / "answers")
SHARED = Path("/work/shared/data")
SCIFACT = SHARED / "beir" / "scifact"
OFF_TOPIC = HERE / "data" / "off-topic-questions.txt"
ACTOR = Actor("eval", frozenset({"eval"}), visibilities=frozenset({"public", "internal"}))
SQUAD2 = HERE / "data" / "squad2-train-head"
COVIDQA = HERE / "data" / "covidqa"
MLQA = HERE / "data" / "mlqa-de"
SETS = ("encyclopedia", "encyclopedia-en", "squad2", "covidqa", "scifact", "shop", "mlqa")


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    kind: str  # wh, keyword, cross_de_en, cross_en_de, claim, ooc, ooc_adversarial
    split: str
    expected: frozenset[str] = frozenset()  # document ids that answer it
    answers: dict[str, str] = field(default_factory=dict)  # document id -> verbatim answer span
    language: str | None = None  # of the question, where the set records it

    @property
    def answerable(self) -> bool:
        return not self.kind.startswith("ooc")


@dataclass(frozen=True)
class QuestionSet:
    name: str
    analyzer: str | None  # None: the store's default (``auto``)
    split_mode: str
    documents: list[Document]
    questions: list[Question]
    #: Who asks: every search, answer and resolve of the set runs as this actor.
    actor: Actor = ACTOR
    #: A case file whose ``collection:`` the store is built from, as ``evidex eval --cases``
    #: builds it (``documents`` is then empty: the case file's loaders read the files).
    cases: Path | None = None


def _doc(pid: str, title: str, text: str, language: str | None) -> Document:
    return Document(pid, "eval", ("eval",), "1", text, title=title or None, language=language)


def _from_qa(qs: qa_sets.QASet, name: str, drop: Callable[[str], bool] | None = None,
             ooc_kind: Callable[[qa_sets.Query], str] | None = None) -> QuestionSet:
    docs = [_doc(p.id, p.title, p.text, p.language) for p in qs.passages.values()
            if drop is None or not drop(p.id)]
    kept = {d.id for d in docs}
    out = []
    for q in qs.queries.values():
        rel = frozenset(p for p in qs.relevant(q.id) if p in kept)
        if not q.answerable:
            kind = ooc_kind(q) if ooc_kind else "ooc"
            out.append(Question(q.id, q.text, kind, q.split or "test"))
        elif not rel:
            out.append(Question(q.id, q.text, "ooc", q.split or "test"))
        else:
            out.append(Question(q.id, q.text, q.kind, q.split or "test", rel,
                                {p: a for p, a in q.answers.items() if p in rel}))
    return QuestionSet(name, "exact", "paragraph", docs, out)


def load(name: str, split: str) -> QuestionSet:
    if name in ("encyclopedia", "encyclopedia-en"):
        qs = qa_sets.load(qa_sets.ENCYCLOPEDIA)
        if name == "encyclopedia-en":
            qs = qs.only_languages({"en"})
        return _from_qa(qs, name)
    if name in ("squad2", "covidqa", "mlqa"):
        folder = {"squad2": SQUAD2, "covidqa": COVIDQA, "mlqa": MLQA}[name]
        return dataclasses.replace(_from_qa(qa_sets.load(folder), name), analyzer=None)
    if name == "scifact":
        beir = load_beir(SCIFACT, "train" if split == "dev" else "test")
        off = [ln.strip() for ln in OFF_TOPIC.read_text().splitlines()
               if ln.strip() and not ln.startswith("#")]
        questions = [Question(q, t, "claim", split, frozenset(d for d, r in beir.qrels[q].items() if r > 0))
                     for q, t in beir.queries.items()]
        questions += [Question(f"off-{i}", t, "ooc", split)
                      for i, t in enumerate(off[:60] if split == "dev" else off[60:])]
        return QuestionSet(name, "english", "document", list(corpus_documents(beir)), questions)
    if name == "shop":
        return _shop(split)
    raise SystemExit(f"unknown set {name!r}; known: {', '.join(SETS)}")


def _shop(split: str) -> QuestionSet:
    questions = []
    for r in check_shop_dev.rows(split):
        questions.append(Question(r["_id"], r["text"], r["kind"], r["split"],
                                  frozenset(r["expected"]), dict(r.get("answers") or {}),
                                  r["language"]))
    return QuestionSet("shop", None, CASE_SPLIT, [], questions, actor=check_shop_dev.actor(),
                       cases=SHOP_CASES)


class _PersistentQueries:
    """Question vectors through the persistent embedding cache (key ``<model>#query``)."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb

    def get(self, model: str, text: str, embed: Callable[[Sequence[str]], np.ndarray]) -> np.ndarray:
        e = self.kb._embedder()
        return self.kb._embed_cache().embed(f"{model}#query", e.dimension, [text], embed)[0]

    def clear(self) -> None:
        pass


def build(qset: QuestionSet, embedder: str) -> KnowledgeBase:
    """The set's store (created or brought up to date; unchanged documents are skipped)."""
    WORK.mkdir(parents=True, exist_ok=True)
    if qset.cases is not None:
        # A new store each run (vectors come from the embedding cache), so it never lags
        # behind the collection or the loaders.
        folder = tempfile.mkdtemp(prefix=f"{qset.name}-{embedder}-", dir=WORK)
        atexit.register(shutil.rmtree, folder, True)
        kb = case_store(qset.cases, Path(folder) / "store.db", embedder)
    else:
        kb = KnowledgeBase.open(WORK / f"{qset.name}-{embedder}.db", analyzer=qset.analyzer,
                                embedder=embedder, max_limit=100)
        for i in range(0, len(qset.documents), 1000):
            kb.ingest(qset.documents[i:i + 1000], split=qset.split_mode)
    kb._query_vectors = _PersistentQueries(kb)  # type: ignore[assignment]
    return kb


def dump(rows: list[dict], path: Path) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
