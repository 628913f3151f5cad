"""Running evaluation cases through the public API, one case at a time, as a user would.

Each case is a ``kb.search`` (what the actor's question retrieves: the retrieval figures and
the access check) and, except for ``keyword_exact``, a ``kb.answer``, whose every released
citation is re-resolved with ``kb.resolve`` right away. Checks that hold for every case, whatever
its type, are made on every case: no hit and no citation of a document the actor may not read,
no released citation that does not resolve.
"""

from __future__ import annotations

import dataclasses
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..answer import AnswerSettings, markers, sentences
from ..kb import QUESTION_LIMITS, KnowledgeBase, migrate_store
from ..knowledge import Knowledge
from ..model import Citation, SearchResults, StoreError
from ..query import content_terms, get_analyzer
from ..yamlfile import Problems
from ._casefile import Case, CaseFile
from ._collection import SPLIT, Collection, load_entry, old_passage

__all__ = ["CaseResult", "Runner", "live_tools"]

#: Share of a released sentence's content words the passages it cites must contain (and every
#: number in it) for the sentence to count as supported in ``citation_precision``.
SUPPORT_SHARE = 0.8
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_MARKER = re.compile(r"\[\d{1,3}\]")


@dataclass
class CaseResult:
    case: Case
    outcome: str = "pass"  # pass | fail | skip
    why: list[str] = field(default_factory=list)
    status: str | None = None  # answered | declined; None when no answer was asked for
    reason: str | None = None
    answer: str | None = None
    cited: list[dict[str, Any]] = field(default_factory=list)
    hits: list[str] = field(default_factory=list)
    #: Rank (1-based) of the first hit of an expected document, for recall and MRR.
    expected_rank: int | None = None
    answer_ms: float | None = None
    search_ms: float | None = None
    access_violations: list[str] = field(default_factory=list)
    invalid_citations: list[str] = field(default_factory=list)
    injection_citations: list[str] = field(default_factory=list)
    sentences: int = 0
    supported: int = 0

    def fail(self, why: str) -> None:
        self.outcome = "fail"
        self.why.append(why)


def live_tools(kb: Knowledge) -> set[str] | None:
    """Ids of the live tools this build of evidex offers, or None when it has no live tools
    at all (no ``KnowledgeBase.tools``)."""
    tools = getattr(kb, "tools", None)
    if not callable(tools):
        return None
    return {str(getattr(t, "id", t)) for t in tools()}


class Runner:
    """Runs the cases of ``cf`` against ``kb`` (built from the file's collection at
    ``location``); ``collection`` is that store's documents as their owners read them."""

    def __init__(self, kb: Knowledge, location: str, cf: CaseFile, collection: Collection,
                 *, generator: str = "extractive", settings: AnswerSettings | None = None,
                 open_args: dict[str, Any] | None = None) -> None:
        self.kb, self.location, self.cf, self.col = kb, location, cf, collection
        self.generator = generator
        self.settings = settings or kb.answer_settings
        self.open_args = open_args or {}
        self.analyzer = get_analyzer(kb.analyzer)
        self.tools = live_tools(kb)

    def run(self, progress: Callable[[int, int], None] | None = None) -> list[CaseResult]:
        out = []
        for i, case in enumerate(self.cf.cases, start=1):
            out.append(self.run_case(case))
            if progress is not None:
                progress(i, len(self.cf.cases))
        return out

    def run_case(self, case: Case) -> CaseResult:
        r = CaseResult(case)
        if case.type == "live":
            why = self._live_skip(case)
            if why:
                r.outcome, r.why = "skip", [why]
                return r
        if case.type == "changed_source":
            with self._copy() as kb:
                self._changed(kb, case, r)
            return r
        self._ask(self.kb, self.col, case, r, answer=case.type != "keyword_exact")
        check = getattr(self, f"_check_{case.type}")
        check(case, r)
        return r

    # -- asking ------------------------------------------------------------------------------
    def _ask(self, kb: Knowledge, col: Collection, case: Case, r: CaseResult, *,
             answer: bool = True) -> None:
        actor, settings = case.actor, dataclasses.replace(self.settings, top_k=case.top_k)
        t0 = time.perf_counter()
        hits = kb.search(actor, case.question, limit=case.top_k, mode=self._mode(kb),
                         fusion=settings.fusion, limits=QUESTION_LIMITS)
        r.search_ms = (time.perf_counter() - t0) * 1000
        r.hits = [h.document_id for h in hits]
        r.expected_rank = self._expected_rank(case, hits)
        for h in hits:
            if col.readable(actor, h.document_id) is None:
                r.access_violations.append(f"search hit {h.document_id}")
        if not answer:
            return
        t0 = time.perf_counter()
        ans = kb.answer(actor, case.question, generator=self.generator, settings=settings)
        r.answer_ms = (time.perf_counter() - t0) * 1000
        r.status, r.reason, r.answer = ans.status, ans.reason, ans.text
        for c in ans.citations:
            live = c.get("kind") == "live"  # a lookup: no document, resolved by looking up again
            doc = None if live else col.readable(actor, c["document_id"])
            r.cited.append({"n": c["n"], "document_id": c.get("document_id"),
                            "version": c.get("version"), "passage": c.get("passage"),
                            "anchor": c.get("anchor"), "language": doc.language if doc else None,
                            "quote": c["quote"], "kind": c.get("kind", "passage"),
                            "tool": c.get("tool")})
            if doc is None and not live:
                r.access_violations.append(f"citation of {c['document_id']}")
            res = kb.resolve(actor, {k: v for k, v in c.items() if k != "n"})
            if not res.ok:
                name = c["tool"] if live else c["document_id"]
                r.invalid_citations.append(f"[{c['n']}] {name}: {res.reason}")
        if r.access_violations:
            r.fail("the actor received documents it may not read: " + ", ".join(r.access_violations))
        if r.invalid_citations:
            r.fail("released citations that do not resolve: " + ", ".join(r.invalid_citations))
        if ans.status == "answered":
            r.sentences, r.supported = self._support(ans.text, ans.citations)

    def _mode(self, kb: Knowledge) -> str:
        return self.settings.mode if kb.store.embedder != "none" else "keyword"

    @staticmethod
    def _wanted(case: Case, document_id: str, anchor: str | None) -> bool:
        anchors = case.expect.get("anchors")
        return document_id in case.expect.get("documents", ()) and (not anchors or anchor in anchors)

    def _expected_rank(self, case: Case, hits: SearchResults) -> int | None:
        if "documents" not in case.expect:
            return None
        return next((i for i, h in enumerate(hits, start=1)
                     if self._wanted(case, h.document_id, h.anchor)), None)

    def _support(self, text: str, citations: list[dict[str, Any]]) -> tuple[int, int]:
        """(sentences that state something, those supported by the passages they cite)."""
        quotes = {c["n"]: c["quote"] for c in citations}
        total = ok = 0
        for s in sentences(text):
            plain = _MARKER.sub(" ", s)
            if len(re.findall(r"[^\W_]+", plain)) < 3:
                continue
            total += 1
            cited = " ".join(quotes.get(n, "") for n in markers(s))
            words = set(content_terms(self.analyzer.terms(plain)))
            have = set(self.analyzer.terms(cited))
            numbers_ok = all(n in cited for n in _NUMBER.findall(plain))
            ok += bool(cited) and numbers_ok and len(words & have) >= SUPPORT_SHARE * len(words)
        return total, ok

    # -- per type ----------------------------------------------------------------------------
    def _check_answered(self, case: Case, r: CaseResult, *, version: str | None = None) -> None:
        if r.status != "answered":
            r.fail(f"declined ({r.reason}) where an answer was expected")
            return
        good = [c for c in r.cited if self._wanted(case, c["document_id"], c["anchor"])
                and (version is None or c["version"] == version)]
        if not good:
            want = ", ".join(case.expect["documents"])
            extra = f" at anchor {', '.join(case.expect['anchors'])}" if case.expect.get("anchors") else ""
            extra += f" version {version}" if version else ""
            r.fail(f"cites {_docs(r.cited) or 'nothing'}, not {want}{extra}")
        lang = case.expect.get("passage_language")
        if lang and good and not any(c["language"] == lang for c in good):
            r.fail(f"the expected passage is cited, but not in {lang}")
        _must_include(case, r)

    _check_answerable = _check_answered
    _check_language = _check_answered

    def _check_unanswerable(self, case: Case, r: CaseResult) -> None:
        if r.status != "declined":
            r.fail(f"answered, citing {_docs(r.cited)}, where a decline was expected")
        elif case.expect.get("reason_any") and r.reason not in case.expect["reason_any"]:
            r.fail(f"declined with reason {r.reason}, not one of {', '.join(case.expect['reason_any'])}")

    def _check_access(self, case: Case, r: CaseResult) -> None:
        forbidden = set(case.expect["forbidden"])
        seen = sorted(forbidden & (set(r.hits) | {c["document_id"] for c in r.cited}))
        if seen:
            r.fail("forbidden documents reached the actor: " + ", ".join(seen))
        if case.expect.get("decline") and r.status != "declined":
            r.fail(f"answered, citing {_docs(r.cited)}, where a decline was expected")

    def _check_injection(self, case: Case, r: CaseResult) -> None:
        hostile = sorted(set(case.expect["hostile"]) & {c["document_id"] for c in r.cited})
        phrases = [p for p in case.expect.get("forbidden_phrases", [])
                   if p.lower() in (r.answer or "").lower()]
        r.injection_citations = hostile + [f"phrase {p!r}" for p in phrases]
        if hostile:
            r.fail("cites hostile documents: " + ", ".join(hostile))
        if phrases:
            r.fail("the answer contains " + ", ".join(repr(p) for p in phrases))

    def _check_keyword_exact(self, case: Case, r: CaseResult) -> None:
        if r.expected_rank is None:
            r.fail(f"no expected document in the top {case.top_k}: got {', '.join(r.hits) or 'nothing'}")

    def _live_skip(self, case: Case) -> str | None:
        if self.tools is None:
            return "this build of evidex has no live tools (KnowledgeBase.tools is absent)"
        if case.expect["tool"] not in self.tools:
            return f"no live tool {case.expect['tool']!r} is configured"
        return None

    def _check_live(self, case: Case, r: CaseResult) -> None:
        if not any(c["kind"] == "live" and c["tool"] == case.expect["tool"] for c in r.cited):
            r.fail(f"no live citation from {case.expect['tool']}")
        _must_include(case, r)

    # -- changed sources: on a copy of the store ----------------------------------------------
    @contextmanager
    def _copy(self) -> Iterator[Knowledge]:
        with tempfile.TemporaryDirectory(prefix="evidex-case-") as tmp:
            target = str(Path(tmp) / "copy.db")
            report = migrate_store(self.location, target)
            if report.mismatches:
                raise StoreError(f"the store copy differs: {report.mismatches[0]}")
            kb = KnowledgeBase.open(target, **self.open_args)
            try:
                yield kb
            finally:
                kb.close()

    def _changed(self, kb: Knowledge, case: Case, r: CaseResult) -> None:
        old = dict(case.old_citation or {})
        doc = kb.document(case.actor, old["document_id"])
        passage = old_passage(doc.passages, old) if doc else None
        if doc is None or passage is None:  # the linter makes this unreachable for a valid file
            r.fail("the old citation names nothing in the store")
            return
        citation = Citation(doc.document_id, old["version"], doc.content_sha256, passage.number,
                            old["quote"]).as_dict()
        p = Problems(self.cf.path)
        for step in case.steps:
            kb.ingest(load_entry(self.cf, step, p), split=SPLIT, identify_languages=True)
        p.raise_any()
        self._ask(kb, Collection.of(kb), case, r)
        self._check_answered(case, r, version=case.expect["version"])
        res = kb.resolve(case.actor, citation)
        if res.reason != "source_changed" or res.matched_version != case.expect_matched_version:
            r.fail(f"the old citation resolves {res.reason or 'ok'} (matched version "
                   f"{res.matched_version}), not source_changed matching {case.expect_matched_version}")


def _must_include(case: Case, r: CaseResult) -> None:
    text = (r.answer or "").lower()
    missing = [m for m in case.expect.get("must_include", []) if m.lower() not in text]
    if missing:
        r.fail("the answer lacks " + ", ".join(repr(m) for m in missing))


def _docs(cited: list[dict[str, Any]]) -> str:
    """The cited sources by name: documents by id, live lookups as "live:TOOL"."""
    return ", ".join(dict.fromkeys(c["document_id"] or f"live:{c['tool']}" for c in cited))
