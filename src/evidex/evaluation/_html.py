"""The report as one static HTML file a content owner can open: no script, no external resource,
every text escaped (questions, answers and quotes are untrusted: a hostile document's text must
stay text). A Content-Security-Policy forbids scripts even if markup slipped through."""

from __future__ import annotations

from html import escape
from typing import Any

from ._report import status_text

__all__ = ["render_html"]

_CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:70em;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.25em;margin-top:2em}h3{font-size:1.1em;margin-top:1.5em}
table{border-collapse:collapse;width:100%;margin:.5em 0}
th,td{border-bottom:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.n{text-align:right;white-space:nowrap}
.pass{color:#1a7f37}.fail{color:#c62828;font-weight:bold}.skip{color:#777}
.badge{display:inline-block;padding:.1em .6em;border-radius:.3em;color:#fff}
.badge.pass{background:#1a7f37}.badge.fail{background:#c62828}
.bar{background:#eee;width:14em;height:1em;display:inline-block;vertical-align:middle;position:relative}
.bar span{display:block;height:100%;background:#1a7f37}.bar span.low{background:#c62828}
.bar i{position:absolute;top:-.15em;bottom:-.15em;border-left:2px solid #333}
blockquote{margin:.2em 0 .2em 1em;padding-left:.5em;border-left:3px solid #ccc;color:#444;
  white-space:pre-line}
.q{font-weight:600}small{color:#666}td.b{white-space:nowrap}
"""


def _e(value: object) -> str:
    return escape("" if value is None else str(value), quote=True)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.0f}%"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _bar(value: float | None, limit: float | None) -> str:
    if value is None:
        return "<small>no answerable case</small>"
    low = limit is not None and value < limit
    mark = f'<i style="left:{limit * 100:.0f}%"></i>' if limit is not None else ""
    return (f'<span class="bar"><span class="{"low" if low else ""}" '
            f'style="width:{value * 100:.0f}%"></span>{mark}</span> {_pct(value)}')


def _figures_table(title: str, groups: dict[str, dict[str, Any]], limit: float | None) -> str:
    rows = []
    for name, f in groups.items():
        ans = f"{f['answerable_cited']}/{f['answerable']}" if f["answerable"] else "–"
        rows.append(
            f"<tr><td>{_e(name)}</td><td class=n>{f['cases']}</td><td class=n>{f['passed']}</td>"
            f"<td class=n>{f['failed']}</td><td class=n>{f['skipped']}</td><td class=n>{ans}</td>"
            f"<td class=b>{_bar(f['answerable_rate'], limit)}</td><td class=n>{_pct(f['declined_rate'])}</td>"
            f"<td class=n>{_pct(f['recall_at_k'])}</td>"
            f"<td class=n>{_num(f['mrr'])}</td>"
            f"<td class=n>{_pct(f['citation_precision'])}</td>"
            f"<td class=n>{_e(f['latency_ms']['p50'] or '–')}</td></tr>")
    return (f"<table><tr><th>{_e(title)}</th><th>cases</th><th>pass</th><th>fail</th><th>skip</th>"
            "<th>answerable cited</th><th>answerable rate</th><th>declined</th><th>recall@k</th>"
            "<th>MRR</th><th>citation precision</th><th>p50 ms</th></tr>" + "".join(rows) + "</table>")


def _case_row(c: dict[str, Any]) -> str:
    status = status_text(c)
    why = "".join(f"<div>{_e(w)}</div>" for w in c["why"])
    answer = f"<blockquote>{_e(c['answer'])}</blockquote>" if c["status"] == "answered" else ""
    cited = "".join(
        f"<div><small>[{_e(x['n'])}] {_e(x['document_id'])} v{_e(x['version'])} #{_e(x['passage'])}"
        f"{' ' + _e(x['anchor']) if x['anchor'] else ''}</small>"
        f"<blockquote>{_e(_clip(x['quote']))}</blockquote></div>" for x in c["cited"])
    hits = f"<div><small>search: {_e(', '.join(c['hits']))}</small></div>" if c["hits"] else ""
    return (f"<tr><td><span class={_e(c['outcome'])}>{_e(c['outcome'])}</span></td>"
            f"<td>{_e(c['id'])}<br><small>{_e(c['type'])}, {_e(c['language'])}, as {_e(c['as'])}</small></td>"
            f"<td><div class=q>{_e(c['question'])}</div>{why}<div><small>{_e(status)}</small></div>"
            f"{answer}{cited}{hits}</td></tr>")


def _clip(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def render_html(report: dict[str, Any]) -> str:
    gate, t = report["gate"], report["totals"]
    limit = gate["thresholds"]["category_answerable_min"]
    checks = "".join(
        f"<tr><td>{_e(ch['name'])}</td><td class=n>{_e(_shown(ch['value']))}</td>"
        f"<td class=n>{'≤' if ch['kind'] == 'max' else '≥'} {_e(_shown(ch['limit'], ch['kind']))}</td>"
        f"<td class={'pass' if ch['passed'] else 'fail'}>{'ok' if ch['passed'] else 'FAIL'}</td></tr>"
        for ch in gate["checks"])
    sections = []
    for name in report["categories"]:
        rows = "".join(_case_row(c) for c in report["cases"] if c["category"] == name)
        f = report["categories"][name]
        sections.append(f"<h3>{_e(name)} <small>{f['passed']} of {f['cases']} passed</small></h3>"
                        f"<table><tr><th>outcome</th><th>case</th><th>what happened</th></tr>{rows}</table>")
    store = report["store"]
    badge = "pass" if gate["passed"] else "fail"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>evidex evaluation: {_e(report['cases_file'])}</title><style>{_CSS}</style></head><body>
<h1>evidex evaluation <span class="badge {badge}">gate {'passed' if gate['passed'] else 'failed'}</span></h1>
<p>{_e(report['cases_file'])}: {t['cases']} cases, {t['passed']} passed, {t['failed']} failed,
{t['skipped']} skipped. Store: {store['documents']} documents, {store['passages']} passages,
embedder {_e(store['embedder'])}; generator {_e(report['generator'])};
evidex {_e(report['evidex_version'])}.</p>
<h2>Gate</h2><table><tr><th>check</th><th>value</th><th>limit</th><th></th></tr>{checks}</table>
<h2>Categories</h2>{_figures_table('category', report['categories'], limit)}
<h2>Types</h2>{_figures_table('type', report['types'], None)}
<h2>Languages</h2>{_figures_table('language', report['languages'], None)}
<h2>Cases by category</h2><p><small>Failing cases first; answers and quotes are shown as text.</small></p>
{''.join(sections)}
</body></html>
"""


def _shown(value: float | int | None, kind: str = "max") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, int) and kind == "max":
        return str(value)
    return _pct(float(value))
