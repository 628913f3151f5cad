"""Question sets in a BEIR-like layout: passages, questions by kind/language/split, qrels, answers.

    .venv/bin/python benchmarks/qa_sets.py [FOLDER ...]   # counts per kind, language and split

A folder holds ``corpus.jsonl`` ({"_id", "title", "text", "language"?, "translation_of"?}),
``queries.jsonl`` ({"_id", "text", "language"?, "kind"?, "split"?, "answer"?, "answers"?}) and
``qrels/<split>.tsv`` (query-id, corpus-id, score). The optional fields are what the encyclopedia
set (benchmarks/data/encyclopedia) and the development sets under /work/shared/data add to
plain BEIR; a plain BEIR folder (SciFact) loads too, with kind "unknown" and the split taken from
the qrels file a query appears in.

Kinds: ``wh`` and ``keyword`` (question in its passage's language), ``cross_de_en`` (German
question, English passage), ``cross_en_de`` (the reverse) and ``ooc`` (no passage answers it: the
system should decline). A question about a passage that has a translation in the collection has
both in its qrels; ``only_languages`` keeps one language's passages, which turns, say, German
questions about translated English passages into German-to-English questions. Calibrate on the
``dev`` split, report on ``test``.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

ENCYCLOPEDIA = Path(__file__).resolve().parent / "data" / "encyclopedia"
SHARED = Path("/work/shared/data")
OOC = "ooc"


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    text: str
    language: str | None = None
    translation_of: str | None = None


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    kind: str
    split: str | None
    language: str | None = None
    answers: dict[str, str] = field(default_factory=dict)  # passage id -> verbatim answer span

    @property
    def answerable(self) -> bool:
        return self.kind != OOC


@dataclass(frozen=True)
class QASet:
    name: str
    passages: dict[str, Passage]
    queries: dict[str, Query]
    qrels: dict[str, dict[str, int]]  # query id -> passage id -> grade (answerable questions only)

    def select(self, *, kinds: Iterable[str] | None = None, splits: Iterable[str] | None = None,
               languages: Iterable[str] | None = None) -> list[Query]:
        """Questions of the given kinds, splits and question languages (None: all), in file order."""
        k, s, lang = (set(x) if x is not None else None for x in (kinds, splits, languages))
        return [q for q in self.queries.values()
                if (k is None or q.kind in k) and (s is None or q.split in s)
                and (lang is None or q.language in lang)]

    def relevant(self, query_id: str) -> dict[str, int]:
        return self.qrels.get(query_id, {})

    def is_cross_language(self, query_id: str) -> bool:
        """True when no relevant passage is in the question's language."""
        q = self.queries[query_id]
        langs = {self.passages[p].language for p in self.relevant(query_id)}
        return bool(langs) and q.language not in langs

    def only_languages(self, languages: Iterable[str]) -> QASet:
        """The collection restricted to passages in ``languages``; answerable questions that lose
        every relevant passage are dropped, out-of-collection questions are kept."""
        keep = set(languages)
        passages = {i: p for i, p in self.passages.items() if p.language in keep}
        qrels = {q: {p: g for p, g in rel.items() if p in passages} for q, rel in self.qrels.items()}
        qrels = {q: rel for q, rel in qrels.items() if rel}
        queries = {i: replace(q, answers={p: a for p, a in q.answers.items() if p in passages})
                   for i, q in self.queries.items() if not q.answerable or i in qrels}
        return QASet(f"{self.name}[{','.join(sorted(keep))}]", passages, queries, qrels)

    def beir(self, queries: Iterable[Query]) -> tuple[list[tuple[str, str, str]], dict[str, str],
                                                       dict[str, dict[str, int]]]:
        """(corpus, queries, qrels) as evidex.evaluation.BeirSet takes them, for answerable questions."""
        chosen = {q.id: q.text for q in queries if q.answerable}
        corpus = [(p.id, p.title, p.text) for p in self.passages.values()]
        return corpus, chosen, {q: self.qrels[q] for q in chosen}

    def write_qa(self, queries: Iterable[Query], path: str | Path) -> int:
        """Write the JSONL that ``evidex eval --qa`` reads: expected passages, or unanswerable."""
        n = 0
        with Path(path).open("w", encoding="utf-8") as fh:
            for q in queries:
                if q.answerable:
                    rec = {"question": q.text,
                           "expected": [{"document_id": p} for p in sorted(self.relevant(q.id))]}
                else:
                    rec = {"question": q.text, "unanswerable": True}
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
                n += 1
        return n


def _jsonl(path: Path) -> Iterable[dict]:
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{n}: invalid JSON: {exc}") from None


def load(folder: str | Path) -> QASet:
    """Load every split of a BEIR-like folder; raises ValueError on missing files or dangling ids."""
    root = Path(folder)
    for name in ("corpus.jsonl", "queries.jsonl"):
        if not (root / name).is_file():
            raise ValueError(f"{root} is not a BEIR folder: {name} is missing")
    passages = {str(r["_id"]): Passage(str(r["_id"]), r.get("title") or "", r.get("text") or "",
                                       r.get("language"), r.get("translation_of"))
                for r in _jsonl(root / "corpus.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    split_of: dict[str, str] = {}
    for path in sorted((root / "qrels").glob("*.tsv")):
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, start=1):
                parts = line.rstrip("\n").split("\t")
                if n == 1 and parts[0] == "query-id":
                    continue
                if len(parts) != 3 or not parts[2].lstrip("-").isdigit():
                    raise ValueError(f"{path}:{n}: expected query-id, corpus-id and an integer score")
                if parts[1] not in passages:
                    raise ValueError(f"{path}:{n}: unknown corpus id {parts[1]!r}")
                qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
                split_of[parts[0]] = path.stem
    queries = {}
    for r in _jsonl(root / "queries.jsonl"):
        qid = str(r["_id"])
        kind = r.get("kind") or "unknown"
        split = r.get("split") or split_of.get(qid)
        if kind != OOC and qid not in qrels:
            continue  # a plain BEIR queries file lists questions of splits without qrels here
        answers = r.get("answers") or {}
        queries[qid] = Query(qid, r["text"], kind, split, r.get("language"), dict(answers))
    missing = set(qrels) - set(queries)
    if missing:
        raise ValueError(f"{root}: qrels name {len(missing)} unknown queries, e.g. {sorted(missing)[0]!r}")
    return QASet(root.name, passages, queries, qrels)


def summary(qs: QASet) -> str:
    langs = Counter(("translation" if p.translation_of else p.language or "?") for p in qs.passages.values())
    rows = Counter((q.kind, q.language or "?", q.split or "?") for q in qs.queries.values())
    per_lang = ", ".join(f"{k} {v}" for k, v in sorted(langs.items()))
    lines = [f"{qs.name}: {len(qs.passages)} passages ({per_lang}), {len(qs.queries)} questions"]
    for kind, lang in sorted({(k, lg) for k, lg, _ in rows}):
        per = ", ".join(f"{s} {rows[(kind, lang, s)]}" for s in sorted({s for k, lg, s in rows
                                                                      if (k, lg) == (kind, lang)}))
        lines.append(f"  {kind:12s} {lang:3s} {per}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    folders = argv or [str(ENCYCLOPEDIA)]
    for folder in folders:
        print(summary(load(folder)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
