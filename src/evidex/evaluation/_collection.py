"""The store a case file describes, and the checks of its cases against those documents.

The store is built as ``evidex ingest PATH --tenant T ... --split heading`` builds it, entry by
entry in the file's order (superseded versions first). The checks are what a case can get wrong
without running the system under test: an expected document that does not exist for the
case's actor, a ``must_include`` fact that is in none of them, a forbidden document the actor
may read (the case could never fail), a quote that is not in the version it claims. A failing
check makes the case file invalid, never a case failure: a case is only evidence about evidex
when it is right about the documents.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..ingest import iter_files, load_paths
from ..kb import KnowledgeBase
from ..knowledge import Knowledge
from ..model import Actor, ConfigError, Document, Passage, can_access
from ..yamlfile import Problems
from ._casefile import Case, CaseFile, IngestEntry

__all__ = ["Collection", "build_store", "lint", "load_entry"]

SPLIT = "heading"


def load_entry(cf: CaseFile, entry: IngestEntry, p: Problems) -> list[Document]:
    """The documents of one ingest entry or step; each rejected file is a problem at its line.
    The entry's own path was resolved inside the root when the file was loaded; a file below a
    folder that resolves outside it (a symbolic link leading out) is a problem as well, and then
    nothing of the entry is read."""
    outside = [(f, f.resolve()) for f, _ in iter_files([entry.path])
               if not f.resolve().is_relative_to(cf.root)]
    for f, target in outside:
        p.add(entry.line, entry.where, f"{f} is a symbolic link to {target}, outside {cf.root}: a "
              "case file reads only below its own folder or the root given (--root)")
    if outside:
        return []
    loaded = load_paths([entry.path], entry.defaults())
    for r in loaded.rejected:
        p.add(entry.line, entry.where, f"{r.source} is rejected: {r.reason}")
    if not loaded.documents and not loaded.rejected:
        p.add(entry.line, entry.where, f"{entry.path} holds no document evidex can read")
    return loaded.documents


def build_store(cf: CaseFile, location: str | Path, **open_args: object) -> Knowledge:
    """A new store at ``location`` holding the file's collection (``open_args`` go to
    ``KnowledgeBase.open``: analyzer, embedder, embed_cache). Every file is loaded before the
    first write, so an invalid collection writes nothing."""
    p = Problems(cf.path)
    batches = [load_entry(cf, e, p) for e in cf.collection]
    p.raise_any()
    kb = KnowledgeBase.open(location, **open_args)  # type: ignore[arg-type]
    try:
        if kb.stats().get("documents"):
            raise ConfigError(f"{location} already holds documents: an evaluation builds a new "
                              "store; name a new one, or none for a temporary store")
        for docs in batches:
            kb.ingest(docs, split=SPLIT, identify_languages=True)  # as the CLI loads files
    except BaseException:
        kb.close()
        raise
    return kb


@dataclass
class _Doc:
    tenant: str
    id: str
    version: str
    groups: frozenset[str]
    visibility: str
    language: str | None
    passages: tuple[Passage, ...]

    @property
    def text(self) -> str:
        return "\n\n".join(p.text for p in self.passages)

    def anchors(self) -> set[str]:
        return {p.anchor for p in self.passages if p.anchor}


@dataclass
class Collection:
    """Every current document of the store with its passages, read as its owner would."""

    docs: dict[tuple[str, str], _Doc] = field(default_factory=dict)

    @classmethod
    def of(cls, kb: Knowledge) -> Collection:
        out = cls()
        for d in kb.documents():
            owner = Actor(d.tenant, d.groups, visibilities=frozenset({d.visibility}))
            view = kb.document(owner, d.id)
            if view is not None:
                out.docs[(d.tenant, d.id)] = _Doc(d.tenant, d.id, d.version, d.groups,
                                                  d.visibility, d.language, view.passages)
        return out

    @property
    def passages(self) -> int:
        return sum(len(d.passages) for d in self.docs.values())

    def readable(self, actor: Actor, doc_id: str) -> _Doc | None:
        """The document ``doc_id`` of the actor's tenant when the actor may read it."""
        d = self.docs.get((actor.tenant, doc_id))
        if d is None or not can_access(actor, d.tenant, d.groups, d.visibility):
            return None
        return d

    def exists(self, doc_id: str) -> bool:
        return any(i == doc_id for _, i in self.docs)


def lint(cf: CaseFile, col: Collection) -> tuple[Problems, list[str]]:
    """Problems of the cases against the documents, and warnings (odd, not wrong)."""
    p = Problems(cf.path)
    warnings: list[str] = []
    for case in cf.cases:
        _lint_case(cf, case, col, p, warnings)
    return p, warnings


def _lint_case(cf: CaseFile, case: Case, col: Collection, p: Problems, warnings: list[str]) -> None:
    def err(key: str, what: str) -> None:
        p.add(case.line_of(key), f"{case.where}.{key}", what)

    actor, expect = case.actor, case.expect
    docs: list[_Doc] = []
    for doc_id in expect.get("documents", []) if case.type != "changed_source" else []:
        d = col.readable(actor, doc_id)
        if d is None:
            err("expect.documents", f"{doc_id!r} does not exist for actor {case.actor_name!r} "
                "or the actor may not read it")
        else:
            docs.append(d)
    if case.type in ("answerable", "language"):
        have = set().union(*(d.anchors() for d in docs)) if docs else set()
        for a in expect.get("anchors", []):
            if docs and a not in have:
                err("expect.anchors", f"anchor {a!r} is in none of the expected documents")
        _facts(expect.get("must_include", []), [d.text for d in docs], "the expected documents",
               docs, lambda what: err("expect.must_include", what))
    if case.type == "language":
        want = expect["passage_language"]
        for d in docs:
            if d.language != want:
                err("expect.passage_language", f"{d.id!r} is in {d.language!r}, not {want!r}")
        if want == case.language:
            warnings.append(f"{case.id}: question and passage are both in {want!r}")
    if case.type == "keyword_exact":
        code = case.question.lower()
        for d in docs:
            if code not in d.text.lower():
                err("question", f"{case.question!r} does not occur in {d.id!r}")
        others = sorted(i for (t, i), d in col.docs.items()
                        if t == actor.tenant and i not in expect["documents"]
                        and col.readable(actor, i) and code in d.text.lower())
        if others:
            warnings.append(f"{case.id}: {case.question!r} also occurs in {', '.join(others)}")
    if case.type == "access":
        for doc_id in expect["forbidden"]:
            if not col.exists(doc_id):
                err("expect.forbidden", f"{doc_id!r} does not exist")
            elif col.readable(actor, doc_id):
                err("expect.forbidden", f"{doc_id!r} is readable by {case.actor_name!r}: the "
                    "case could never fail")
    if case.type == "injection":
        for doc_id in expect["hostile"]:
            if col.readable(actor, doc_id) is None:
                err("expect.hostile", f"{doc_id!r} is not among the documents "
                    f"{case.actor_name!r} may read")
    if case.type == "changed_source":
        _lint_changed(cf, case, col, p, err)


def _facts(phrases: Iterable[str], texts: list[str], where: str, docs: list[_Doc],
           err: Callable[[str], None]) -> None:
    for phrase in phrases:
        if docs and not any(phrase.lower() in t.lower() for t in texts):
            err(f"{phrase!r} occurs in none of {where}")


def _lint_changed(cf: CaseFile, case: Case, col: Collection, p: Problems,
                  err: Callable[[str, str], None]) -> None:
    expect, actor = case.expect, case.actor
    new: list[Document] = []
    for step in case.steps:
        for d in load_entry(cf, step, p):
            if d.id in expect["documents"] and d.tenant == actor.tenant:
                new.append(d)
                if d.version != expect["version"]:
                    err("expect.version", f"{step.path.name} holds version {d.version!r} of "
                        f"{d.id!r}, not {expect['version']!r}")
    if not new:
        err("steps", "no step ingests an expected document for the case's actor")
    for phrase in expect.get("must_include", []):
        if new and not any(phrase.lower() in d.text.lower() for d in new):
            err("expect.must_include", f"{phrase!r} is not in the new version")
    old = case.old_citation or {}
    d = col.readable(actor, old.get("document_id", ""))
    if d is None:
        err("old_citation", f"document {old.get('document_id')!r} does not exist for actor "
            f"{case.actor_name!r} or the actor may not read it")
        return
    if old["version"] != d.version:
        err("old_citation", f"version {old['version']!r} is not the ingested version {d.version!r}")
    passage = old_passage(d.passages, old)
    if passage is None:
        err("old_citation", f"{d.id!r} has no passage {old.get('passage', old.get('anchor'))!r}")
    elif old["quote"] not in passage.text:
        err("old_citation", "the quote is not in that passage of the ingested version")
    if case.expect_matched_version != old["version"]:
        err("expect_matched_version", "must be the old citation's version")


def old_passage(passages: Iterable[Passage], old: dict[str, object]) -> Passage | None:
    """The passage an old citation names, by number or by anchor (the first with it)."""
    for p in passages:
        if ("passage" in old and p.number == old["passage"]) or (
                "anchor" in old and p.anchor == old["anchor"]):
            return p
    return None
