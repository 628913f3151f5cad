"""Configured sources kept in sync with the index, and drift checks against them."""

from ._after_drift import DRIFT_HOOKS, DriftHook, after_drift, drift_webhook, run_after_drift
from ._items import RACY_SECONDS, FetchError, SourceError, glob_match
from ._notify import NotifyError, notify_webhook
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
    "NotifyError",
    "Scheduler",
    "Skipped",
    "SourceError",
    "SourceReport",
    "SyncReport",
    "after_drift",
    "drift",
    "drift_webhook",
    "glob_match",
    "notify_webhook",
    "run_after_drift",
    "sync",
]
