"""What the service records about its answers for the people who run it (issue 47): one row per
answer by its trace id, the feedback given on it, and the handoffs sent to a person.

An answer record keeps what feedback and evaluation need and nothing more: the question (the
asker's own words), the status and decline reason, the cited passages by document id, version,
passage number and fingerprint (never their text), the documents a declined answer offered as
related reading (ids only), and the asker's tenant, groups and visibilities (so a case drafted
from it asks as the same kind of actor; claims are not kept). Tables ``answer_records``,
``feedback`` and ``handoff_records`` of the schema (``_schema``; the ``operator_records``
migration adds them to older stores); writing them never bumps the generation: search reads
none of it. ``Records`` runs the SQL below on either backend.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..model import EvidexError
from ._schema import columns

__all__ = [
    "OPERATOR_TABLES",
    "AnswerRecord",
    "FeedbackRecord",
    "HandoffRecord",
    "insert_answer",
    "insert_handoff",
    "operator_rows",
    "restore_operator_rows",
    "select_answers",
    "select_feedback",
    "select_handoffs",
    "since_stamp",
    "upsert_feedback",
]


@dataclass(frozen=True)
class AnswerRecord:
    """One answer given by the service. Times are ISO 8601 UTC."""

    tenant: str
    trace_id: str
    #: The key's label (``key:name``), never the credential.
    caller: str
    question: str
    status: str
    reason: str | None
    asked_at: str
    #: ``{"groups": [...], "visibilities": [...]}`` of the asker.
    actor: dict[str, list[str]] = field(default_factory=dict)
    #: ``{"document_id", "version", "passage", "content_sha256"}`` per cited passage.
    cited: tuple[dict[str, Any], ...] = ()
    #: Document ids a declined answer offered as related reading.
    related: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"trace_id": self.trace_id, "caller": self.caller, "question": self.question,
                "status": self.status, "reason": self.reason, "asked_at": self.asked_at,
                "cited": [dict(c) for c in self.cited], "related": list(self.related)}


@dataclass(frozen=True)
class FeedbackRecord:
    """A caller's rating of one of its answers: ``helpful`` or ``not_helpful``, with a note."""

    tenant: str
    trace_id: str
    caller: str
    rating: str
    note: str | None
    given_at: str

    def as_dict(self) -> dict[str, Any]:
        return {"trace_id": self.trace_id, "caller": self.caller, "rating": self.rating,
                "note": self.note, "given_at": self.given_at}


@dataclass(frozen=True)
class HandoffRecord:
    """A question sent to a person: its reference, whether a route took it, the trace ids it
    named (the declined answers it follows)."""

    tenant: str
    reference: str
    caller: str
    question: str
    delivered: bool
    sent_at: str
    trace_ids: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"reference": self.reference, "caller": self.caller, "question": self.question,
                "delivered": self.delivered, "sent_at": self.sent_at, "trace_ids": list(self.trace_ids)}


def since_stamp(value: str | None) -> str | None:
    """``value`` (an ISO 8601 date or time; UTC when it names no offset) as the stored times are
    written, so comparing the strings compares the instants; a one-line error otherwise."""
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        raise EvidexError(f"since must be an ISO 8601 date or time such as 2026-12-06 or "
                          f"2026-12-06T14:00:00Z, got {value[:40]!r}") from None
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    return when.isoformat(timespec="seconds")


def insert_answer(c: Any, r: AnswerRecord) -> None:
    """``ON CONFLICT``: a trace id is recorded once (ids are random; a repeat changes nothing)."""
    c.execute("INSERT INTO answer_records (tenant, trace_id, caller, actor, question, status, reason, "
              "cited, related, asked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
              "ON CONFLICT (tenant, trace_id) DO NOTHING",
              (r.tenant, r.trace_id, r.caller, json.dumps(r.actor, sort_keys=True), r.question, r.status,
               r.reason, json.dumps(list(r.cited), sort_keys=True), json.dumps(list(r.related)),
               r.asked_at))


def select_answers(c: Any, tenant: str, since: str | None, trace_id: str | None,
                   limit: int) -> list[AnswerRecord]:
    """``tenant``'s answers (asked at or after ``since``; the one of ``trace_id``), newest first."""
    q = ("SELECT tenant, trace_id, caller, actor, question, status, reason, cited, related, asked_at "
         "FROM answer_records WHERE tenant = ?")
    args: list[Any] = [tenant]
    if since is not None:
        q += " AND asked_at >= ?"
        args.append(since)
    if trace_id is not None:
        q += " AND trace_id = ?"
        args.append(trace_id)
    rows = c.execute(q + " ORDER BY asked_at DESC, id DESC LIMIT ?", (*args, limit)).fetchall()
    return [AnswerRecord(tenant=r[0], trace_id=r[1], caller=r[2], actor=json.loads(r[3]), question=r[4],
                         status=r[5], reason=r[6], cited=tuple(json.loads(r[7])),
                         related=tuple(json.loads(r[8])), asked_at=r[9]) for r in rows]


def upsert_feedback(c: Any, r: FeedbackRecord) -> None:
    """One rating per answer: rating it again replaces the rating, the note and the time."""
    c.execute("INSERT INTO feedback (tenant, trace_id, caller, rating, note, given_at) "
              "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, trace_id) DO UPDATE SET "
              "rating = excluded.rating, note = excluded.note, given_at = excluded.given_at",
              (r.tenant, r.trace_id, r.caller, r.rating, r.note, r.given_at))


def select_feedback(c: Any, tenant: str, since: str | None, limit: int) -> list[FeedbackRecord]:
    q = "SELECT tenant, trace_id, caller, rating, note, given_at FROM feedback WHERE tenant = ?"
    args: list[Any] = [tenant]
    if since is not None:
        q += " AND given_at >= ?"
        args.append(since)
    rows = c.execute(q + " ORDER BY given_at DESC, id DESC LIMIT ?", (*args, limit)).fetchall()
    return [FeedbackRecord(*r) for r in rows]


def insert_handoff(c: Any, r: HandoffRecord) -> None:
    c.execute("INSERT INTO handoff_records (tenant, reference, caller, question, trace_ids, delivered, "
              "sent_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
              (r.tenant, r.reference, r.caller, r.question, json.dumps(list(r.trace_ids)), r.delivered,
               r.sent_at))


def select_handoffs(c: Any, tenant: str, since: str | None, limit: int) -> list[HandoffRecord]:
    q = ("SELECT tenant, reference, caller, question, delivered, sent_at, trace_ids FROM handoff_records "
         "WHERE tenant = ?")
    args: list[Any] = [tenant]
    if since is not None:
        q += " AND sent_at >= ?"
        args.append(since)
    rows = c.execute(q + " ORDER BY sent_at DESC, id DESC LIMIT ?", (*args, limit)).fetchall()
    return [HandoffRecord(r[0], r[1], r[2], r[3], bool(r[4]), r[5], tuple(json.loads(r[6]))) for r in rows]


#: The operator records' tables: what ``evidex migrate`` and a tenant's move carry with the
#: documents (``_copy.copy_records``) and compare (``_copy.compare_tenant``).
#: Everything the operators' view records per tenant, which migrate and tenant moves carry
#: (``_copy.copy_records``) and compare; ``owner_notices`` and ``eval_reports`` are ``_reports``'.
OPERATOR_TABLES = ("answer_records", "feedback", "handoff_records", "owner_notices", "eval_reports")
#: The key a row is recorded once by (a handoff has none: it is compared whole).
_UNIQUE = {"answer_records": ("tenant", "trace_id"), "feedback": ("tenant", "trace_id")}


def operator_rows(c: Any, tenant: str | None) -> dict[str, list[tuple[Any, ...]]]:
    """Per table, the rows (of ``tenant``; every tenant's when None) as stored, without their
    ids (each store numbers its own), oldest first."""
    out = {}
    for table in OPERATOR_TABLES:
        q = f"SELECT {', '.join(columns(table)[1:])} FROM {table}"
        rows = (c.execute(q + " ORDER BY id") if tenant is None else
                c.execute(q + " WHERE tenant = ? ORDER BY id", (tenant,))).fetchall()
        out[table] = [tuple(r) for r in rows]
    return out


def restore_operator_rows(c: Any, rows: dict[str, list[tuple[Any, ...]]]) -> int:
    """Add the ``operator_rows`` of another store that this one lacks, oldest first; how many
    were added. Idempotent: a row with a unique key takes the other store's values (feedback
    given again replaces the rating), and a handoff already held as it is is not added twice."""
    added = 0
    for table, got in rows.items():
        cols = columns(table)[1:]
        insert = f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
        key = _UNIQUE.get(table)
        if key is not None:
            updates = ", ".join(f"{col} = excluded.{col}" for col in cols if col not in key)
            for r in got:
                added += c.execute(insert + f" ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}",
                                   r).rowcount
            continue
        have = Counter(r for tenant in sorted({r[0] for r in got})
                       for r in operator_rows(c, tenant)[table])
        for r in got:
            if have[r]:
                have[r] -= 1
                continue
            c.execute(insert, r)
            added += 1
    return added
