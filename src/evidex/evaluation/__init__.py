"""Evaluation through the public API: BEIR retrieval sets, question sets, and case files that
test answers as well as retrieval (``evaluate_cases``; the format is documented in
``examples/eval/README.md``).

``load_qa`` reads a question set (JSON Lines; what ``evaluate_qa`` runs), raising
``EvidexError`` with file:line for a malformed line, so a set can be checked before a run.
"""

from __future__ import annotations

import collections
import importlib.metadata
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..answer import AnswerSettings
from ._beir import (
    EVAL_LIMITS,
    corpus_documents,
    evaluate_beir,
    evaluate_qa,
    load_beir,
    load_qa,
    metrics,
    run_queries,
)
from ._casefile import TYPES, Case, CaseFile, load_cases
from ._collection import Collection, build_store, lint
from ._feedback import FeedbackDraft, feedback_cases
from ._html import render_html
from ._report import build_report, record_summary, render_text
from ._run import Runner

__all__ = [
    "EVAL_LIMITS",
    "TYPES",
    "FeedbackDraft",
    "corpus_documents",
    "evaluate_beir",
    "evaluate_cases",
    "evaluate_qa",
    "feedback_cases",
    "lint_cases",
    "load_beir",
    "load_cases",
    "load_qa",
    "metrics",
    "record_summary",
    "render_html",
    "render_text",
    "run_queries",
    "summary",
]


def _version() -> str | None:
    try:
        return importlib.metadata.version("evidex")
    except importlib.metadata.PackageNotFoundError:
        return None


def _open_args(embedder: str | None, analyzer: str | None,
               embed_cache: str | Path | None) -> dict[str, Any]:
    args: dict[str, Any] = {"embedder": embedder, "analyzer": analyzer}
    if embed_cache is not None:
        args["embed_cache"] = embed_cache
    return args


def evaluate_cases(
    path: str | Path,
    *,
    db: str | Path | None = None,
    embedder: str | None = None,
    analyzer: str | None = None,
    embed_cache: str | Path | None = None,
    categories: tuple[str, ...] = (),
    types: tuple[str, ...] = (),
    ids: tuple[str, ...] = (),
    generator: str = "extractive",
    settings: AnswerSettings | None = None,
    progress: Callable[[int, int], None] | None = None,
    tools: Sequence[Any] = (),
    root: str | Path | None = None,
) -> dict[str, Any]:
    """Build a new store from the case file's collection (at ``db``, else in a temporary folder;
    ``embedder`` and ``analyzer`` as for ``KnowledgeBase.open``, so the default model unless
    named; vectors come from the embedding cache when they were computed before), check the
    cases against its documents, run the selected cases, and return the report (see
    ``SCHEMA``). Raises ``ConfigError`` (file:line) when the case file or the collection is
    invalid; a failing gate is ``report["gate"]["passed"] is False``, not an error. ``tools``:
    the live tools (``ToolConfig``) the store's handles may call, so ``live`` cases run;
    without them those cases are skipped with the tool they lack. ``root``: the folder every
    file the case file names must be inside (default: the case file's own folder)."""
    cf = load_cases(path, root=root).select(categories=categories, types=types, ids=ids)
    open_args = _open_args(embedder, analyzer, embed_cache)
    if tools:
        open_args["tools"] = tuple(tools)
    with tempfile.TemporaryDirectory(prefix="evidex-cases-") as tmp:
        location = str(db) if db is not None else str(Path(tmp) / "cases.db")
        t0 = time.perf_counter()
        kb = build_store(cf, location, **open_args)
        try:
            built = time.perf_counter() - t0
            col = Collection.of(kb)
            problems, _ = lint(cf, col)
            problems.raise_any()
            stats = kb.stats()
            open_args.update(embedder=None, analyzer=None)  # copies take the store's own
            runner = Runner(kb, location, cf, col, generator=generator, settings=settings,
                            open_args=open_args)
            t1 = time.perf_counter()
            results = runner.run(progress)
            ran = time.perf_counter() - t1
        finally:
            kb.close()
    meta = {
        "evidex_version": _version(),
        "cases_file": str(path),
        "filters": {"categories": list(categories), "types": list(types), "ids": list(ids)},
        "store": {"embedder": stats["embedder"], "analyzer": stats["analyzer"],
                  "documents": stats["documents"], "passages": stats["passages"],
                  "history_versions": stats["history_versions"]},
        "generator": generator,
        "live_tools": sorted(runner.tools) if runner.tools is not None else None,
        "seconds": {"build": round(built, 2), "cases": round(ran, 2)},
    }
    return build_report(results, cf.gate, meta)


@dataclass
class LintReport:
    errors: list[str]
    warnings: list[str]
    documents: int
    passages: int
    cases: CaseFile


def lint_cases(path: str | Path, *, embedder: str = "none", root: str | Path | None = None) -> LintReport:
    """Check a case file and its cases against its collection without running anything: the
    checks ``evaluate_cases`` makes before it runs (a keyword-only store by default, built in
    seconds). File errors are raised (``ConfigError``); document errors are returned. ``root``
    as for ``evaluate_cases``."""
    cf = load_cases(path, root=root)
    with tempfile.TemporaryDirectory(prefix="evidex-lint-") as tmp:
        kb = build_store(cf, Path(tmp) / "lint.db", embedder=embedder)
        try:
            col = Collection.of(kb)
        finally:
            kb.close()
    problems, warnings = lint(cf, col)
    errors = problems.lines()
    return LintReport(errors, warnings, len(col.docs), col.passages, cf)


def summary(cases: tuple[Case, ...] | list[Case]) -> dict[str, dict[str, int]]:
    """How many cases of each type, category, question language and actor."""
    return {key: dict(sorted(collections.Counter(getattr(c, attr) for c in cases).items()))
            for key, attr in (("types", "type"), ("categories", "category"),
                              ("languages", "language"), ("actors", "actor_name"))}
