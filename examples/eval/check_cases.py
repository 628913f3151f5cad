"""Lint a case file against the collection it names, without running the system under test.

    .venv/bin/python examples/eval/check_cases.py [CASES.yaml [--root DIR]]

The checks are the library's (``evidex.evaluation.lint_cases``: the ones ``evidex eval
--cases`` makes before it runs, here on a keyword-only store built in seconds). This script
adds the shipped set's own requirements from issue 23: at least 150 cases in 20 categories, at
least 15 % unanswerable and 15 % German questions, every type present. Exit 1 on any error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evidex import EvidexError
from evidex.evaluation import TYPES, lint_cases, summary

SHIPPED = Path(__file__).with_name("cases.yaml")
MIN_CASES, MIN_CATEGORIES, MIN_UNANSWERABLE, MIN_GERMAN = 150, 20, 0.15, 0.15


def shares(counts: dict[str, dict[str, int]], n: int) -> list[str]:
    types, langs = counts["types"], counts["languages"]
    problems = []
    if n < MIN_CASES:
        problems.append(f"only {n} cases (need {MIN_CASES})")
    if len(counts["categories"]) < MIN_CATEGORIES:
        problems.append(f"only {len(counts['categories'])} categories (need {MIN_CATEGORIES})")
    if types.get("unanswerable", 0) / n < MIN_UNANSWERABLE:
        problems.append("unanswerable share below 15 %")
    if langs.get("de", 0) / n < MIN_GERMAN:
        problems.append("German share below 15 %")
    problems += [f"no case of type {t}" for t in TYPES if t not in types]
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="?", default=str(SHIPPED))
    ap.add_argument("--root", help="folder the case file may read below (default: its own folder; "
                                   "examples/ for the shipped set, whose collection is examples/shop)")
    args = ap.parse_args()
    shipped = Path(args.cases).resolve() == SHIPPED.resolve()
    try:
        report = lint_cases(args.cases, root=args.root or (SHIPPED.parents[1] if shipped else None))
    except EvidexError as exc:
        print(f"error: {exc}")
        return 1
    cases = report.cases.cases
    counts = summary(cases)
    n = len(cases)
    print(f"collection: {report.documents} documents, {report.passages} passages")
    print(f"cases: {n}")
    for key, found in counts.items():
        print(f"{key} ({len(found)}): " + ", ".join(f"{k} {v}" for k, v in found.items()))
    print(f"unanswerable: {counts['types'].get('unanswerable', 0) / n:.1%}, "
          f"German: {counts['languages'].get('de', 0) / n:.1%}")
    for w in report.warnings:
        print(f"warning: {w}")
    errors = report.errors + shares(counts, n)
    for e in errors:
        print(f"error: {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
