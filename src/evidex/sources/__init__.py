"""Configured sources kept in sync with the index, and drift checks against them."""

from ._items import RACY_SECONDS, FetchError, SourceError, glob_match
from ._notify import NotifyError, notify_webhook
from ._schedule import DRIFT_HOOKS, DriftHook, Job, Scheduler
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
    "drift",
    "glob_match",
    "notify_webhook",
    "sync",
]
