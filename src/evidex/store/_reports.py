"""What the Operators tab shows beside runs, answers and handoffs (issue 47): who was told
about a source's findings, and each evaluation run's summary.

* ``NoticeRecord``: one delivery of an owner's findings (a drift check's drifted sources, the
  open conflicts in their documents) on one route, per source the message was about: the owner's
  name, the route kind (webhook, email), when, whether it was delivered and, if not, the first
  line of why. Without it the page could say a source drifted but not whether anyone knew.
* ``EvalRecord``: one ``evidex eval --cases --record`` run: when, the case set, whether its gate
  passed, and the report's summary (the gate's checks and the figures per category), never a
  question's or an answer's text: the summary is what an operator compares run to run.

Tables ``owner_notices`` and ``eval_reports`` of the schema (``_schema``; the
``operator_reports`` migration adds them to older stores); tenant-scoped like every operator
record, and writing them never bumps the generation: search reads none of it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EvalRecord", "NoticeRecord", "insert_eval", "insert_notices", "select_evals", "select_notices"]


@dataclass(frozen=True)
class NoticeRecord:
    """One delivery of an owner's findings about ``source`` (times ISO 8601 UTC)."""

    tenant: str
    source: str
    owner: str
    #: ``webhook`` or ``email``: the kind of route, never its address.
    route: str
    sent_at: str
    delivered: bool
    #: The first line of why it was not delivered (None when it was).
    error: str | None = None
    #: What the message said about this source: ``new``, ``changed``, ``removed``, ``conflicts``.
    findings: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "owner": self.owner, "route": self.route, "sent_at": self.sent_at,
                "delivered": self.delivered, "error": self.error, "findings": dict(self.findings)}


@dataclass(frozen=True)
class EvalRecord:
    """One recorded evaluation run of a case set, for one tenant."""

    tenant: str
    #: The case set's name (its file name), for telling runs of different sets apart.
    name: str
    started_at: str
    ended_at: str
    passed: bool
    #: ``{"gate": [checks], "totals": {...}, "categories": {name: {...}}}``: figures only.
    summary: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "started_at": self.started_at, "ended_at": self.ended_at,
                "passed": self.passed, **self.summary}


def insert_notices(c: Any, records: list[NoticeRecord]) -> None:
    for r in records:
        c.execute("INSERT INTO owner_notices (tenant, source, owner, route, sent_at, delivered, error, "
                  "findings) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                  (r.tenant, r.source, r.owner, r.route, r.sent_at, r.delivered, r.error,
                   json.dumps(r.findings, sort_keys=True)))


def select_notices(c: Any, tenant: str, limit: int) -> list[NoticeRecord]:
    rows = c.execute("SELECT tenant, source, owner, route, sent_at, delivered, error, findings "
                     "FROM owner_notices WHERE tenant = ? ORDER BY sent_at DESC, id DESC LIMIT ?",
                     (tenant, limit)).fetchall()
    return [NoticeRecord(r[0], r[1], r[2], r[3], r[4], bool(r[5]), r[6], json.loads(r[7])) for r in rows]


def insert_eval(c: Any, r: EvalRecord) -> None:
    c.execute("INSERT INTO eval_reports (tenant, name, started_at, ended_at, passed, summary) "
              "VALUES (?, ?, ?, ?, ?, ?)",
              (r.tenant, r.name, r.started_at, r.ended_at, r.passed, json.dumps(r.summary, sort_keys=True)))


def select_evals(c: Any, tenant: str, limit: int) -> list[EvalRecord]:
    rows = c.execute("SELECT tenant, name, started_at, ended_at, passed, summary FROM eval_reports "
                     "WHERE tenant = ? ORDER BY ended_at DESC, id DESC LIMIT ?", (tenant, limit)).fetchall()
    return [EvalRecord(r[0], r[1], r[2], r[3], bool(r[4]), json.loads(r[5])) for r in rows]
