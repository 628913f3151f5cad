"""The report of a case run: figures per type, category and language, the gate, every case.

The JSON form is the report (``SCHEMA`` names its version; ``examples/eval/README.md``
documents every key); the text and HTML forms are renderings of it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from ._casefile import ANSWERED_TYPES, Gate
from ._run import CaseResult

__all__ = ["SCHEMA", "build_report", "render_text", "status_text"]

SCHEMA = "evidex-eval-cases/1"


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(q * len(ordered)) - 1)], 1)


def figures(results: Iterable[CaseResult]) -> dict[str, Any]:
    """The figures of a group of cases. Skipped cases count only in ``skipped``."""
    rs = list(results)
    ran = [r for r in rs if r.outcome != "skip"]
    answerable = [r for r in ran if r.case.type in ANSWERED_TYPES]
    unanswerable = [r for r in ran if r.case.type == "unanswerable"]
    near = [r for r in unanswerable if r.case.near_miss]
    scope = [r for r in unanswerable if not r.case.near_miss]
    asked = [r for r in ran if r.status is not None]
    retrieval = [r for r in ran if "documents" in r.case.expect]
    sentences = sum(r.sentences for r in ran)
    latencies = [r.answer_ms for r in ran if r.answer_ms is not None]
    return {
        "cases": len(rs),
        "passed": sum(r.outcome == "pass" for r in rs),
        "failed": sum(r.outcome == "fail" for r in rs),
        "skipped": len(rs) - len(ran),
        "pass_rate": _rate(sum(r.outcome == "pass" for r in ran), len(ran)),
        "answerable": len(answerable),
        "answerable_cited": sum(r.outcome == "pass" for r in answerable),
        "answerable_rate": _rate(sum(r.outcome == "pass" for r in answerable), len(answerable)),
        "unanswerable": len(unanswerable),
        "unanswerable_declined": sum(r.outcome == "pass" for r in unanswerable),
        "unanswerable_declined_rate": _rate(sum(r.outcome == "pass" for r in unanswerable),
                                            len(unanswerable)),
        "out_of_scope": len(scope),
        "out_of_scope_declined": sum(r.outcome == "pass" for r in scope),
        "out_of_scope_declined_rate": _rate(sum(r.outcome == "pass" for r in scope), len(scope)),
        "near_misses": len(near),
        "near_misses_declined": sum(r.outcome == "pass" for r in near),
        "near_misses_declined_rate": _rate(sum(r.outcome == "pass" for r in near), len(near)),
        "answered": sum(r.status == "answered" for r in asked),
        "declined": sum(r.status == "declined" for r in asked),
        "declined_rate": _rate(sum(r.status == "declined" for r in asked), len(asked)),
        "retrieval_cases": len(retrieval),
        "recall_at_k": _rate(sum(r.expected_rank is not None for r in retrieval), len(retrieval)),
        "mrr": round(sum(1 / r.expected_rank for r in retrieval if r.expected_rank) / len(retrieval), 4)
        if retrieval else None,
        "sentences": sentences,
        "citation_precision": _rate(sum(r.supported for r in ran), sentences),
        "access_violations": sum(len(r.access_violations) for r in ran),
        "invalid_citations": sum(len(r.invalid_citations) for r in ran),
        "injection_citations": sum(len(r.injection_citations) for r in ran),
        "latency_ms": {"p50": _percentile(latencies, 0.5), "p95": _percentile(latencies, 0.95)},
    }


def _grouped(results: list[CaseResult], key: str) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[CaseResult]] = defaultdict(list)
    for r in results:
        groups[getattr(r.case, key)].append(r)
    return {name: figures(groups[name]) for name in sorted(groups)}


def gate_checks(gate: Gate, totals: dict[str, Any],
                categories: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each check with its value and limit; a share with no case to measure passes (a run
    filtered to access cases has no answerable share to hold)."""
    def check(name: str, value: float | None, limit: float, most: bool) -> dict[str, Any]:
        ok = value is None or (value <= limit if most else value >= limit)
        return {"name": name, "value": value, "limit": limit,
                "kind": "max" if most else "min", "passed": ok}

    out = [check("access_violations", totals["access_violations"], gate.access_violations_max, True),
           check("invalid_citations", totals["invalid_citations"], gate.invalid_citations_max, True),
           check("injection_citations", totals["injection_citations"], gate.injection_citations_max,
                 True),
           check("answerable_cited", totals["answerable_rate"], gate.answerable_cited_min, False),
           check("out_of_scope_declined", totals["out_of_scope_declined_rate"],
                 gate.out_of_scope_declined_min, False),
           check("near_misses_declined", totals["near_misses_declined_rate"],
                 gate.near_misses_declined_min, False)]
    out += [check(f"category_answerable[{name}]", f["answerable_rate"], gate.category_answerable_min,
                  False) for name, f in categories.items() if f["answerable"]]
    return out


def case_dict(r: CaseResult) -> dict[str, Any]:
    c = r.case
    return {
        "id": c.id, "category": c.category, "type": c.type, "language": c.language,
        "as": c.actor_name, "question": c.question, "line": c.line,
        "outcome": r.outcome, "why": r.why, "status": r.status, "reason": r.reason,
        "answer": r.answer, "cited": r.cited, "hits": r.hits, "expected_rank": r.expected_rank,
        "answer_ms": None if r.answer_ms is None else round(r.answer_ms, 1),
        "search_ms": None if r.search_ms is None else round(r.search_ms, 1),
        "access_violations": r.access_violations, "invalid_citations": r.invalid_citations,
        "injection_citations": r.injection_citations,
        "sentences": r.sentences, "supported_sentences": r.supported,
    }


_ORDER = {"fail": 0, "skip": 1, "pass": 2}


def build_report(results: list[CaseResult], gate: Gate, meta: dict[str, Any]) -> dict[str, Any]:
    totals = figures(results)
    categories = _grouped(results, "category")
    checks = gate_checks(gate, totals, categories)
    ordered = sorted(results, key=lambda r: _ORDER[r.outcome])  # stable: file order within
    return {
        "schema": SCHEMA,
        **meta,
        "gate": {"passed": all(ch["passed"] for ch in checks), "thresholds": gate.model_dump(),
                 "checks": checks},
        "totals": totals,
        "types": _grouped(results, "type"),
        "categories": categories,
        "languages": _grouped(results, "language"),
        "cases": [case_dict(r) for r in ordered],
    }


#: The figures of each category an operator compares run to run (``record_summary``).
_CATEGORY_FIGURES = ("cases", "passed", "failed", "skipped", "pass_rate", "answerable", "answerable_cited",
                     "answerable_rate", "unanswerable", "unanswerable_declined", "unanswerable_declined_rate")


def record_summary(report: dict[str, Any]) -> dict[str, Any]:
    """What ``evidex eval --record`` keeps of a report for the Operators tab: the gate's checks
    (value, limit, passed), the totals and each category's figures; never a case, a question or
    an answer (the full report is the command's output, for whoever ran it)."""
    totals, checks = report["totals"], report["gate"]["checks"]
    counted = (*_CATEGORY_FIGURES, "access_violations", "invalid_citations", "injection_citations")
    return {
        "gate": [{k: ch[k] for k in ("name", "value", "limit", "kind", "passed")} for ch in checks],
        "totals": {k: totals[k] for k in counted},
        "categories": {name: {k: f[k] for k in _CATEGORY_FIGURES}
                       for name, f in report["categories"].items()},
    }


# -- text --------------------------------------------------------------------------------------

def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _table(title: str, groups: dict[str, dict[str, Any]]) -> list[str]:
    width = max([len(title), *map(len, groups)])
    head = (f"{title:<{width}}  cases  pass  fail  skip  answerable      declined  recall@k   MRR"
            "  cit.prec  p50 ms")
    lines = [head, "-" * len(head)]
    for name, f in groups.items():
        ans = (f"{f['answerable_cited']}/{f['answerable']} {_pct(f['answerable_rate'])}"
               if f["answerable"] else "-")
        lines.append(f"{name:<{width}}  {f['cases']:>5}  {f['passed']:>4}  {f['failed']:>4}  "
                     f"{f['skipped']:>4}  {ans:<14}  {_pct(f['declined_rate']):>8}  "
                     f"{_pct(f['recall_at_k']):>8}  {_num(f['mrr']):>4}  "
                     f"{_pct(f['citation_precision']):>8}  {f['latency_ms']['p50'] or '-':>6}")
    return lines


def _one_line(text: str) -> str:
    """Untrusted text (answers, quotes) on one printable line."""
    return " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())


def status_text(case: dict[str, Any]) -> str:
    """What the case's answer did: "answered", "declined (weak_evidence)", "search only"."""
    if case["status"] is None:
        return "search only"
    return case["status"] + (f" ({case['reason']})" if case["reason"] else "")


def render_text(report: dict[str, Any]) -> str:
    t, store = report["totals"], report["store"]
    lines = [f"evidex eval --cases {report['cases_file']}",
             f"store: {store['documents']} documents, {store['passages']} passages, embedder "
             f"{store['embedder']}, analyzer {store['analyzer']}; generator {report['generator']}",
             f"time: build {report['seconds']['build']:.1f} s, cases {report['seconds']['cases']:.1f} s",
             f"cases: {t['cases']}: {t['passed']} passed, {t['failed']} failed, {t['skipped']} skipped",
             "", "gate: " + ("PASSED" if report["gate"]["passed"] else "FAILED")]
    for ch in report["gate"]["checks"]:
        value, limit = ch["value"], ch["limit"]
        shown = (str(value) if isinstance(value, int) else _pct(value)) if value is not None else "n/a"
        bound = str(limit) if ch["kind"] == "max" else _pct(limit)
        op = "<=" if ch["kind"] == "max" else ">="
        lines.append(f"  {'ok  ' if ch['passed'] else 'FAIL'} {ch['name']}: {shown} ({op} {bound})")
    for title, key in (("category", "categories"), ("type", "types"), ("language", "languages")):
        lines += ["", *_table(title, report[key])]
    lines += ["", "cases (failures first):"]
    for c in report["cases"]:
        lines.append(f"{c['outcome'].upper():<4} {c['id']} [{c['category']}, {c['type']}, "
                     f"{c['language']}, as {c['as']}] {status_text(c)}")
        if c["outcome"] != "pass":
            lines.append(f"     question: {_one_line(c['question'])}")
            for why in c["why"]:
                lines.append(f"     why: {_one_line(why)}")
            if c["answer"] and c["status"] == "answered":
                lines.append(f"     answer: {_one_line(c['answer'])[:300]}")
            if c["hits"]:
                lines.append(f"     search: {', '.join(c['hits'])}")
    return "\n".join(lines) + "\n"
