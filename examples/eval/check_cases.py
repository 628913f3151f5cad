"""Lint an evaluation case file against the collection it names (no answers are produced).

    .venv/bin/python examples/eval/check_cases.py [examples/eval/cases.yaml]

Builds a keyword-only store in a temporary folder exactly as the file's `collection.ingest`
says, then checks what a case can get wrong without running the system under test: unique ids,
known types and keys, existing actors, that every expected, forbidden and hostile document
exists, that expected documents are readable by the case's actor and forbidden ones are not,
that anchors exist, that each `must_include` occurs in an expected document (so the fact is
really there), that `keyword_exact` codes occur in their documents, that `language` cases
expect passages of the stated language, that changed-source steps and old citations match the
documents, and the set's shares (types, categories, unanswerable, German). Exit 1 on errors.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from evidex import Actor, KnowledgeBase
from evidex.ingest import load_paths
from evidex.model import can_access

TYPES = {"answerable", "unanswerable", "access", "changed_source", "injection", "live",
         "keyword_exact", "language"}
CASE_KEYS = {"id", "category", "type", "question", "language", "as", "expect", "note", "steps",
             "old_citation", "expect_matched_version"}
EXPECT_KEYS = {
    "answerable": {"documents", "anchors", "must_include"},
    "language": {"documents", "anchors", "must_include", "passage_language"},
    "unanswerable": {"reason_any"},
    "access": {"forbidden", "decline"},
    "changed_source": {"documents", "version", "must_include"},
    "injection": {"hostile", "forbidden_phrases"},
    "live": {"tool", "must_include"},
    "keyword_exact": {"documents", "top_k"},
}
REQUIRED = {"answerable": {"documents"}, "language": {"documents", "passage_language"},
            "access": {"forbidden"}, "changed_source": {"documents", "version"},
            "injection": {"hostile"}, "live": {"tool"}, "keyword_exact": {"documents"}}
TOOLS = {"order-status", "stock"}
MIN_CASES, MIN_CATEGORIES, MIN_UNANSWERABLE, MIN_GERMAN = 150, 20, 0.15, 0.15


class Collection:
    """Documents of the built store: metadata, passages (anchor, text) and full text."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.docs = {(d.tenant, d.id): d for d in kb.documents()}
        self.passages: dict[tuple[str, str], list[tuple[str | None, str]]] = {}
        with kb.store.read() as view:
            for key, d in self.docs.items():
                out, n = [], 1
                while (p := view.passage(d.dkey, n)) is not None:
                    out.append((p.anchor, p.text))
                    n += 1
                self.passages[key] = out

    def text(self, key: tuple[str, str]) -> str:
        return "\n\n".join(t for _, t in self.passages[key])

    def anchors(self, key: tuple[str, str]) -> set[str]:
        return {a for a, _ in self.passages[key] if a}


def build(spec: dict[str, Any], base: Path, db: Path) -> KnowledgeBase:
    kb = KnowledgeBase.open(db, embedder="none")
    for entry in spec["collection"]["ingest"]:
        defaults = {"tenant": entry["tenant"], "groups": entry.get("groups"),
                    "visibility": entry.get("visibility"), "language": entry.get("language"),
                    "version": None}
        loaded = load_paths([base / entry["path"]], defaults)
        if loaded.rejected:
            raise SystemExit(f"{entry['path']}: rejected {loaded.rejected[0]}")
        kb.ingest(loaded.documents, split="heading")
    return kb


def check(spec: dict[str, Any], base: Path, col: Collection) -> tuple[list[str], list[str]]:
    errors: list[str] = []
    warnings: list[str] = []
    actors = {name: Actor(a["tenant"], frozenset(a["groups"]),
                          visibilities=frozenset(a.get("visibilities", ["public"])))
              for name, a in spec["actors"].items()}
    defaults = spec.get("defaults", {})
    seen: set[str] = set()

    def visible(actor: Actor, doc_id: str) -> bool:
        d = col.docs.get((actor.tenant, doc_id))
        return d is not None and can_access(actor, d.tenant, d.groups, d.visibility)

    def exists_anywhere(doc_id: str) -> bool:
        return any(i == doc_id for _, i in col.docs)

    for case in spec["cases"]:
        cid = case.get("id", "?")
        err = lambda msg, cid=cid: errors.append(f"{cid}: {msg}")  # noqa: E731
        if cid in seen:
            err("duplicate id")
        seen.add(cid)
        unknown = set(case) - CASE_KEYS
        if unknown:
            err(f"unknown keys {sorted(unknown)}")
        ctype = case.get("type")
        if ctype not in TYPES:
            err(f"unknown type {ctype!r}")
            continue
        for key in ("category", "question"):
            if not isinstance(case.get(key), str) or not case[key].strip():
                err(f"missing {key}")
        if case.get("language", defaults.get("language")) not in ("en", "de"):
            err(f"language must be en or de, got {case.get('language')!r}")
        as_name = case.get("as", defaults.get("as"))
        if as_name not in actors:
            err(f"unknown actor {as_name!r}")
            continue
        actor = actors[as_name]
        expect = case.get("expect") or {}
        bad = set(expect) - EXPECT_KEYS[ctype]
        if bad:
            err(f"expect keys {sorted(bad)} are not valid for {ctype}")
        missing = REQUIRED.get(ctype, set()) - set(expect)
        if missing:
            err(f"expect needs {sorted(missing)}")
        docs = expect.get("documents", [])
        for doc_id in docs:
            if not visible(actor, doc_id):
                err(f"expected document {doc_id!r} does not exist for or is not readable by "
                    f"actor {as_name!r}")
        keys = [(actor.tenant, d) for d in docs if visible(actor, d)]
        if ctype in ("answerable", "language"):
            if expect.get("anchors"):
                have = set().union(*(col.anchors(k) for k in keys)) if keys else set()
                for a in expect["anchors"]:
                    if a not in have:
                        err(f"anchor {a!r} is in none of the expected documents")
            for phrase in expect.get("must_include", []):
                if not any(phrase.lower() in col.text(k).lower() for k in keys):
                    err(f"must_include {phrase!r} occurs in none of the expected documents")
        if ctype == "language":
            want = expect.get("passage_language")
            for k in keys:
                if col.docs[k].language != want:
                    err(f"{k[1]!r} is in {col.docs[k].language!r}, not {want!r}")
            if want == case.get("language"):
                warnings.append(f"{cid}: question and passage language are the same")
        if ctype == "keyword_exact":
            code = case["question"].lower()
            for k in keys:
                if code not in col.text(k).lower():
                    err(f"{case['question']!r} does not occur in {k[1]!r}")
            others = sorted(i for (t, i) in col.docs if t == actor.tenant and i not in docs
                            and visible(actor, i) and code in col.text((t, i)).lower())
            if others:
                warnings.append(f"{cid}: also found in {others}")
        if ctype == "access":
            for doc_id in expect.get("forbidden", []):
                if not exists_anywhere(doc_id):
                    err(f"forbidden document {doc_id!r} does not exist")
                elif visible(actor, doc_id):
                    err(f"forbidden document {doc_id!r} is readable by {as_name!r}: the case "
                        "cannot fail")
        if ctype == "injection":
            for doc_id in expect.get("hostile", []):
                if not visible(actor, doc_id):
                    err(f"hostile document {doc_id!r} is not in the actor's collection")
        if ctype == "live" and expect.get("tool") not in TOOLS:
            err(f"unknown tool {expect.get('tool')!r}")
        if ctype == "changed_source":
            _check_changed(case, expect, actor, base, col, err)
    return errors, warnings


def _check_changed(case: dict[str, Any], expect: dict[str, Any], actor: Actor, base: Path,
                   col: Collection, err: Any) -> None:
    steps = case.get("steps") or []
    if not steps:
        err("changed_source needs steps")
    new_texts = []
    for step in steps:
        path = base / step.get("ingest", "")
        if not path.is_file():
            err(f"step file {path} does not exist")
            continue
        loaded = load_paths([path], {"tenant": step.get("tenant"), "version": None})
        for d in loaded.documents:
            if d.id in expect.get("documents", []):
                if d.version != expect.get("version"):
                    err(f"{path.name} has version {d.version!r}, expected {expect.get('version')!r}")
                new_texts.append(d.text)
    if not new_texts:
        err("no step ingests an expected document")
    for phrase in expect.get("must_include", []):
        if not any(phrase.lower() in t.lower() for t in new_texts):
            err(f"must_include {phrase!r} is not in the new version")
    old = case.get("old_citation") or {}
    key = (actor.tenant, old.get("document_id"))
    if key not in col.docs:
        err("old_citation.document_id does not exist")
        return
    if old.get("version") != col.docs[key].version:
        err(f"old_citation.version {old.get('version')!r} is not the ingested version "
            f"{col.docs[key].version!r}")
    if not old.get("quote") or old["quote"] not in col.text(key):
        err("old_citation.quote is not in the ingested version")
    if "anchor" in old and old["anchor"] not in col.anchors(key):
        err(f"old_citation.anchor {old['anchor']!r} does not exist")
    if case.get("expect_matched_version") != old.get("version"):
        err("expect_matched_version should be the old citation's version")


def summary(cases: list[dict[str, Any]], defaults: dict[str, Any]) -> tuple[str, list[str]]:
    n = len(cases)
    types = collections.Counter(c["type"] for c in cases)
    cats = collections.Counter(c["category"] for c in cases)
    langs = collections.Counter(c.get("language", defaults.get("language")) for c in cases)
    actors = collections.Counter(c.get("as", defaults.get("as")) for c in cases)
    lines = [f"cases: {n}",
             "types: " + ", ".join(f"{k} {v}" for k, v in sorted(types.items())),
             f"categories ({len(cats)}): " + ", ".join(f"{k} {v}" for k, v in sorted(cats.items())),
             "languages: " + ", ".join(f"{k} {v} ({v / n:.0%})" for k, v in sorted(langs.items())),
             "actors: " + ", ".join(f"{k} {v}" for k, v in sorted(actors.items())),
             f"unanswerable: {types['unanswerable']} ({types['unanswerable'] / n:.1%})"]
    problems = []
    if n < MIN_CASES:
        problems.append(f"only {n} cases (need {MIN_CASES})")
    if len(cats) < MIN_CATEGORIES:
        problems.append(f"only {len(cats)} categories (need {MIN_CATEGORIES})")
    if types["unanswerable"] / n < MIN_UNANSWERABLE:
        problems.append("unanswerable share below 15 %")
    if langs["de"] / n < MIN_GERMAN:
        problems.append("German share below 15 %")
    for t in sorted(TYPES - set(types)):
        problems.append(f"no case of type {t}")
    return "\n".join(lines), problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="?", default=str(Path(__file__).with_name("cases.yaml")))
    args = ap.parse_args()
    path = Path(args.cases)
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        kb = build(spec, path.parent, Path(tmp) / "cases.db")
        try:
            col = Collection(kb)
            errors, warnings = check(spec, path.parent, col)
        finally:
            kb.close()
    text, problems = summary(spec["cases"], spec.get("defaults", {}))
    print(f"collection: {len(col.docs)} documents, "
          f"{sum(len(p) for p in col.passages.values())} passages")
    print(text)
    for w in warnings:
        print(f"warning: {w}")
    for e in errors + problems:
        print(f"error: {e}")
    return 1 if errors or problems else 0


if __name__ == "__main__":
    sys.exit(main())
