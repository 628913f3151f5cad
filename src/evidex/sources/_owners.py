"""What is sent after a drift check: the report to the drift webhook (``freshness.notify``),
and the drift and conflict findings grouped per source owner, to each owner's routes.

Each configured source may name an ``owner`` (see ``notify.Owner``). A drift report's sources and
the open conflicts (each goes to the owners of both documents) are grouped by owner; every
owner with findings gets one message on each of their routes. A route that fails is retried and
reported (``NotifyReport``), and never keeps the other owners from being told.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..config import Config
from ..knowledge import Knowledge
from ..model import Conflict, NotifyError
from ..notify import Delivery, Message, Owner, deliver, owner_route, send_webhook
from ..store import NoticeRecord
from ._items import effective
from ._sync import SourceReport, SyncReport

__all__ = ["NotifyReport", "OwnerFindings", "findings_by_owner", "notify_owners", "notify_webhook",
           "owners_hook"]


@dataclass
class OwnerFindings:
    owner: Owner
    sources: list[SourceReport] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)

    def message(self) -> Message:
        drift = [s.as_dict("drift") for s in self.sources]
        conflicts = [_conflict(c) for c in self.conflicts]
        lines = [f"Hello {self.owner.name},", ""]
        for s in self.sources:
            lines.append(f"Source {s.source}: {len(s.new)} new, {len(s.changed)} changed, "
                         f"{len(s.removed)} removed since the last sync.")
            lines += [f"  {what}: {d}" for what, ids in (("new", s.new), ("changed", s.changed),
                                                          ("removed", s.removed)) for d in sorted(ids)]
        for c in self.conflicts:
            lines.append(f"Conflict {c.id} ({c.kind}): {c.a.document_id} passage {c.a.passage} says "
                         f"{c.a.value!r}, {c.b.document_id} passage {c.b.passage} says {c.b.value!r}.")
        lines += ["", "Resolve a conflict by correcting either passage, or have an admin dismiss it "
                      "(evidex conflicts --dismiss ID)."]
        subject = (f"evidex: {sum(s.drifted for s in self.sources)} drifted source(s), "
                   f"{len(self.conflicts)} open conflict(s)")
        payload = {"type": "evidex.owner_findings", "owner": self.owner.name,
                   "drift": drift, "conflicts": conflicts}
        return Message(subject, "\n".join(lines) + "\n", payload)


def _conflict(c: Conflict) -> dict[str, Any]:
    """A conflict for an owner: citations and the two values, not the sentences (an owner of
    one document is not necessarily allowed to read the other)."""
    return {"id": c.id, "kind": c.kind, "detected_at": c.detected_at,
            "sides": [{**s.citation(), "value": s.value} for s in (c.a, c.b)]}


@dataclass
class NotifyReport:
    deliveries: list[Delivery] = field(default_factory=list)
    #: Owners (or sources without an owner) that had findings but no route to send them on.
    unrouted: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(d.ok for d in self.deliveries)

    def lines(self, failures_only: bool = False) -> list[str]:
        """One line per delivery (failed ones only, when asked) and per unrouted finding."""
        out = [f"notify {d.to} by {d.route}: " + ("sent" if d.ok else
               f"FAILED after {d.attempts} attempts: {d.error}")
               for d in self.deliveries if not (d.ok and failures_only)]
        return out + [f"notify: {what} has findings but no owner route" for what in self.unrouted]

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "deliveries": [d.as_dict() for d in self.deliveries],
                "unrouted": self.unrouted}


def findings_by_owner(config: Config, drift: SyncReport | None, conflicts: Sequence[Conflict],
                      source_of: Mapping[tuple[str, str], str]) -> tuple[list[OwnerFindings], list[str]]:
    """(findings per owner, what has findings but no owner). ``source_of`` maps (tenant,
    document id) to the configured source that wrote the document."""
    owners: dict[Owner, OwnerFindings] = {}
    orphans: list[str] = []
    by_id = {s.id: s for s in config.sources}

    def owner_of(source_id: str | None) -> Owner | None:
        src = by_id.get(source_id) if source_id else None
        return owner_route(src.owner or config.defaults.owner) if src else None

    for rep in drift.sources if drift else ():
        if rep.drifted:
            o = owner_of(rep.source)
            if o is None:
                orphans.append(f"source {rep.source}")
            else:
                owners.setdefault(o, OwnerFindings(o)).sources.append(rep)
    for c in conflicts:
        sides = {owner_of(source_of.get((c.tenant, s.document_id))) for s in (c.a, c.b)}
        for o in sides:
            if o is not None:
                owners.setdefault(o, OwnerFindings(o)).conflicts.append(c)
        if None in sides:
            orphans.append(f"conflict {c.id}")
    return list(owners.values()), orphans


def notify_owners(kb: Knowledge, config: Config, drift: SyncReport | None = None, *,
                  conflicts: Sequence[Conflict] | None = None, env: Mapping[str, str] | None = None,
                  attempts: int = 3, pause: float = 0.5) -> NotifyReport:
    """Tell each owner about their drifted sources and open conflicts (all open conflicts of the
    store when ``conflicts`` is None): one message per owner on each of their routes."""
    found = kb.conflicts(status="open") if conflicts is None else list(conflicts)
    source_of = {(e.tenant, e.doc_id): e.source for e in kb.source_entries()}
    groups, orphans = findings_by_owner(config, drift, found, source_of)
    report = NotifyReport(unrouted=orphans)
    smtp = config.server.smtp if config.server else None
    for g in groups:
        if not g.owner.reachable:
            report.unrouted.append(f"owner {g.owner.name}")
            continue
        sent = deliver(g.owner.name, g.owner, g.message(), smtp=smtp, env=env, attempts=attempts, pause=pause)
        report.deliveries += sent
        _record_notices(kb, config, g, sent, source_of)
    return report


def _record_notices(kb: Knowledge, config: Config, g: OwnerFindings, sent: Sequence[Delivery],
                    source_of: Mapping[tuple[str, str], str]) -> None:
    """Record, per source the message was about and per route, that its owner was told (or
    that telling failed), in the tenant's store: the Operators tab shows who knew, and when.
    The route's kind is kept, never its address."""
    about: dict[str, dict[str, int]] = {}
    for rep in g.sources:
        about[rep.source] = {"new": len(rep.new), "changed": len(rep.changed), "removed": len(rep.removed)}
    for c in g.conflicts:  # a conflict between two documents of one source counts once
        for source in sorted({source_of.get((c.tenant, side.document_id)) for side in (c.a, c.b)} - {None}):
            if _owner_of(config, source) == g.owner:
                found = about.setdefault(source, {})
                found["conflicts"] = found.get("conflicts", 0) + 1
    if not about:
        return
    at = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    by_tenant: dict[str, list[NoticeRecord]] = {}
    for source, findings in sorted(about.items()):
        tenant = effective(config.source(source), config.defaults).tenant or ""
        for d in sent:
            error = None if d.ok else (d.error or "not delivered").splitlines()[0][:300]
            by_tenant.setdefault(tenant, []).append(NoticeRecord(
                tenant, source, g.owner.name, d.route, at, d.ok, error, findings))
    for tenant, records in by_tenant.items():
        kb.for_tenant(tenant).store.record_notices(records)


def _owner_of(config: Config, source_id: str) -> Owner | None:
    src = next((s for s in config.sources if s.id == source_id), None)
    return owner_route(src.owner or config.defaults.owner) if src else None


def owners_hook(open_kb: Callable[[], Knowledge]) -> Callable[[SyncReport, Config], None]:
    """A scheduler's drift hook (``sources.Scheduler(after_drift=[...])``): owners are told after
    each scheduled drift check; a route that failed is raised, so the run records the problem."""
    def hook(report: SyncReport, config: Config) -> None:
        with open_kb() as kb:
            sent = notify_owners(kb, config, report)
        if not sent.ok:
            raise NotifyError("; ".join(sent.lines(failures_only=True)))

    hook.__name__ = "notify_owners"
    return hook


def notify_webhook(url: str, report: SyncReport, *, timeout: float = 10.0, attempts: int = 3,
                   pause: float = 0.5, sleep: Callable[[float], None] = time.sleep) -> int:
    """POST the report to the drift webhook (``freshness.notify.webhook``); returns the HTTP
    status. A last failure raises rather than being logged and forgotten: a drift nobody hears
    about is the failure the check exists for."""
    made, error, status = send_webhook(url, report.as_dict(), timeout=timeout, attempts=attempts,
                                       pause=pause, sleep=sleep)
    if error is not None:
        tries = f" ({made} attempts)" if made > 1 else ""
        said = f"answered {error}" if error.startswith("HTTP ") else f"failed: {error}"
        raise NotifyError(f"the drift webhook {url} {said}{tries}")
    return status
