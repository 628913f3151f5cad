"""Moving a tenant to another server online, and verifying the copy before the switch.

1. **copy** the tenant (documents, passages, vectors, history, sync records; conflicts, runs,
   answer records, feedback and handoffs), then **catch up** what was written meanwhile, pass
   after pass, until a pass finds little left;
2. **freeze**: mark the tenant ``moving`` on the old server; its writes wait (they are refused
   there, and a ``PlacedKnowledge`` waits and retries), its reads are still served there;
3. the last **catch-up** (nothing can change any more), then **verify**: counts,
   fingerprints, passages, vectors, history, statistics and records compared, and a sample of
   citations resolved, and searches run, on both servers with identical results;
4. **switch**: mark the tenant ``moved`` to the new server: from then on every process, even one
   still configured with the old placement, reads and writes it there (it follows the mark);
   the configuration line to change is printed, or written (``config.write_placement``);
5. **remove** the tenant from the old server (unless ``keep_source``); the mark stays there.

Each step is idempotent and the marks record how far a move got, so a move interrupted at any
point finishes when run again; nothing written to the tenant is lost (a write either committed
before the freeze, and the last catch-up copied it, or was refused and retried on the new
server) and nothing is served from both servers at once (reads switch with the mark).
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..config import StoreConfig, StoreLocation, config_line
from ..kb import KnowledgeBase
from ..model import VISIBILITIES, Actor, Citation, EvidexError, StoreError
from ..store import (
    TenantCounts,
    clear_tenant,
    compare_tenant,
    copy_records,
    redacted,
    sync_tenant,
    without_password,
)
from ._value import Placement, location_key, open_location

#: Catch-up passes before the freeze stop once a pass copies at most this many documents.
QUIET_PASS = 50
MAX_PASSES = 8


@dataclass
class MoveReport:
    tenant: str
    source: str
    target: str
    state: str = "copying"  # copying, moving, moved, done
    passes: list[int] = field(default_factory=list)  # documents changed per catch-up pass
    counts: TenantCounts | None = None
    citations_checked: int = 0
    searches_checked: int = 0
    removed_from_source: int = 0
    kept_source: bool = False
    seconds: dict[str, float] = field(default_factory=dict)
    config_line: str = ""
    config_written: str | None = None

    def as_dict(self) -> dict[str, object]:
        c = self.counts
        return {"tenant": self.tenant, "from": self.source, "to": self.target, "state": self.state,
                "catch_up_passes": self.passes,
                "verified": None if c is None else {
                    "documents": c.documents, "passages": c.passages, "vectors": c.vectors,
                    "history_versions": c.history_versions, "signatures": c.signatures,
                    "sync_records": c.sync_records, "conflicts": c.conflicts, "runs": c.runs,
                    "operator_records": c.operator_records,
                    "citations": self.citations_checked, "searches": self.searches_checked,
                    "mismatches": c.mismatches[:20]},
                "removed_from_source": self.removed_from_source, "kept_source": self.kept_source,
                "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
                "config_line": self.config_line, "config_written": self.config_written}


def move_tenant(tenant: str, source: StoreLocation, target: StoreLocation, *, keep_source: bool = False,
                store: StoreConfig | None = None, samples: int = 50, seed: int = 0,
                progress: Callable[[str, int, int], None] | None = None,
                switched: Callable[[MoveReport], None] | None = None, **settings: Any) -> MoveReport:
    """Move ``tenant`` from ``source`` to ``target`` (module docstring). ``switched`` runs once
    the tenant is served from the target, before the source is cleared (the command line
    prints or writes the configuration there). Raises ``StoreError`` when verification finds
    a difference (the tenant then stays frozen on the source: run again to retry)."""
    if location_key(source) == location_key(target) or source.url == target.url:
        raise EvidexError(f"tenant {tenant!r} is already on {redacted(target.url)} (to finish a move whose "
                          "configuration was switched but whose old store is no longer configured, "
                          "give --from OLD-STORE)")
    report = MoveReport(tenant, redacted(source.url), redacted(target.url), kept_source=keep_source)
    report.config_line = config_line(tenant, target)
    stamp = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal stamp
        now = time.perf_counter()
        report.seconds[name] = report.seconds.get(name, 0.0) + now - stamp
        stamp = now

    src = open_location(source, store, **settings)
    try:
        if src.store.tenant_marks().get(tenant) is None and not _holds(src, tenant):
            # Before anything is created or marked: a mistyped name leaves no trace anywhere.
            raise EvidexError(f"tenant {tenant!r} has no documents on {redacted(source.url)}: nothing to "
                              "move (check the name; --from names the store it is on)")
        # The target may still mark the tenant as moved away (it left this store once): its
        # copy is read for verification all the same.
        dst = open_location(target, store, analyzer=src.store.analyzer, embedder=src.store.embedder,
                            serve_moved_tenants=True,
                            **{k: v for k, v in settings.items() if k not in ("analyzer", "embedder")})
    except BaseException:
        src.close()
        raise
    here = without_password(target.url)
    here_replicas = tuple(without_password(r) for r in target.replicas)
    try:
        _same_model(src, dst)
        mark = src.store.tenant_marks().get(tenant)
        if mark is not None and (mark.location, mark.replicas) != (here, here_replicas):
            raise EvidexError(f"tenant {tenant!r} is {mark.state} to {mark.location}, not {here}: finish "
                              f"that move (evidex move-tenant {tenant} --to {mark.location})")
        state = mark.state if mark is not None else "copying"
        if state == "copying":
            for _ in range(MAX_PASSES):
                step = sync_tenant(src.store, dst.store, tenant,
                                   progress=(lambda d, n: progress("copy", d, n)) if progress else None)
                report.passes.append(step.changed)
                if step.changed <= QUIET_PASS:
                    break
            copy_records(src.store, dst.store, tenant)
            lap("copy")
            src.store.mark_tenant(tenant, "moving", here, here_replicas)
            lap("freeze")
            state = "moving"
        if state == "moving":
            report.state = "moving"
            step = sync_tenant(src.store, dst.store, tenant)
            report.passes.append(step.changed)
            copy_records(src.store, dst.store, tenant)
            lap("last_catch_up")
            report.counts = compare_tenant(src.store, dst.store, tenant)
            if report.counts.mismatches:
                raise StoreError(f"the copy of {tenant!r} differs from the source ("
                                 + "; ".join(report.counts.mismatches[:3])
                                 + "); the tenant stays on the source, frozen: run the move again")
            report.citations_checked, report.searches_checked = _same_answers(src, dst, tenant, samples, seed)
            lap("verify")
            # The target serves the tenant once the source says so; a mark the target kept from
            # an earlier move away goes first.
            dst.store.mark_tenant(tenant, None)
            src.store.mark_tenant(tenant, "moved", here, here_replicas)
            lap("switch")
            state = "moved"
        report.state = "moved"
        if switched is not None:
            switched(report)
        if report.counts is None:  # a move finished earlier, run again: check it still holds
            report.counts = compare_tenant(src.store, dst.store, tenant) if keep_source else None
        if not keep_source:
            report.removed_from_source = clear_tenant(src.store, tenant)
            lap("remove")
        report.state = "done"
        return report
    finally:
        dst.close()
        src.close()


def _holds(kb: KnowledgeBase, tenant: str) -> bool:
    """Whether the store holds anything of ``tenant`` (a document, a record or a run)."""
    with kb.store.read(latest=True) as view:
        if view.tenant_documents(tenant):
            return True
    return bool(kb.runs(1, tenant=tenant)) or bool(kb.conflicts(tenant))


def unfinished_source(placement: Placement, tenant: str, target: StoreLocation,
                      **settings: Any) -> StoreLocation | None:
    """The configured location that marks ``tenant`` as moving or moved to ``target``: the
    source of a move whose configuration was already switched to ``target`` (the command was
    killed after writing it) and that still holds the tenant, which running the same command
    again finishes. None when no configured location does."""
    here = without_password(target.url)
    for loc in placement.locations():
        if location_key(loc) == location_key(target) or loc.url == target.url:
            continue
        kb = open_location(loc, placement.store, **settings)
        try:
            mark = kb.store.tenant_marks().get(tenant)
            # Moved and removed, the move is over: its mark stays for stale processes.
            unfinished = mark is not None and mark.location == here and (mark.state == "moving"
                                                                         or _holds(kb, tenant))
        finally:
            kb.close()
        if unfinished:
            return loc
    return None


def _same_model(src: KnowledgeBase, dst: KnowledgeBase) -> None:
    a, b = src.store, dst.store
    if (a.analyzer, a.embedder, a.dimension) != (b.analyzer, b.embedder, b.dimension):
        raise StoreError(f"the target store has analyzer {b.analyzer!r} and model {b.embedder!r}, the source "
                         f"{a.analyzer!r} and {a.embedder!r}: a tenant moves between stores that index alike")


def _same_answers(src: KnowledgeBase, dst: KnowledgeBase, tenant: str, samples: int,
                  seed: int) -> tuple[int, int]:
    """A sample of the tenant's passages cited and resolved on both servers, and searched for
    on both (keyword, and hybrid when the store has vectors) as an actor who may read the whole
    tenant: identical resolutions and identical hits with identical scores, or StoreError."""
    rnd = random.Random(seed)
    with src.store.read(latest=True) as view:
        docs = view.tenant_documents(tenant)
        chosen = rnd.sample(docs, min(samples, len(docs)))
        passages = view.passages_of([d.dkey for d in chosen])
    groups = frozenset(g for d in docs for g in d.groups)
    if not groups:
        return 0, 0
    actor = Actor(tenant, groups, visibilities=VISIBILITIES)
    citations = 0
    queries = []
    for d in chosen:
        for p in passages[d.dkey][:1]:
            cited = Citation(d.id, d.version, d.content_sha256, p.number, p.text, p.start, p.end,
                             tuple(p.heading_path), p.anchor).as_dict()
            a, b = src.resolve(actor, cited, at_least=None), dst.resolve(actor, cited)
            if a != b or not a.ok:
                raise StoreError(f"the citation of {tenant}/{d.id} passage {p.number} resolves "
                                 f"differently on the target ({b.reason}) than on the source ({a.reason})")
            citations += 1
            words = re.findall(r"\w{4,}", p.text)[:4]
            if words:
                queries.append(" ".join(words))
    modes = ["keyword"] + (["hybrid"] if src.store.embedder != "none" else [])
    searches = 0
    for q in queries[:20]:
        for mode in modes:
            a_hits, b_hits = ([(h.document_id, h.version, h.passage, h.score)
                               for h in kb.search(actor, q, 10, mode=mode)] for kb in (src, dst))
            if a_hits != b_hits:
                raise StoreError(f"a {mode} search for {q!r} in {tenant!r} ranks differently on the target")
            searches += 1
    return citations, searches
