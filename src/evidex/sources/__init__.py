"""Configured sources kept in sync with the index, drift checks against them, and what is told
after a drift check (the drift webhook, each source owner's findings, registered hooks)."""

from ._after_drift import DRIFT_HOOKS, DriftHook, after_drift, drift_webhook, run_after_drift
from ._items import RACY_SECONDS, FetchError, SourceError, glob_match
from ._owners import (
    NotifyReport,
    OwnerFindings,
    findings_by_owner,
    notify_owners,
    notify_webhook,
    owners_hook,
)
from ._schedule import Job, Scheduler
from ._sync import BATCH_DOCUMENTS, LOADER_VERSION, Skipped, SourceReport, SyncReport, drift, sync

__all__ = [
    "BATCH_DOCUMENTS",
    "DRIFT_HOOKS",
    "LOADER_VERSION",
    "RACY_SECONDS",
    "DriftHook",
    "FetchError",
    "Job",
    "NotifyReport",
    "OwnerFindings",
    "Scheduler",
    "Skipped",
    "SourceError",
    "SourceReport",
    "SyncReport",
    "after_drift",
    "drift",
    "drift_webhook",
    "findings_by_owner",
    "glob_match",
    "notify_owners",
    "notify_webhook",
    "owners_hook",
    "run_after_drift",
    "sync",
]
