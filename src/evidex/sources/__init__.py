"""Configured sources kept in sync with the index, and drift checks against them."""

from ._items import RACY_SECONDS, FetchError, SourceError, glob_match
from ._owners import (
    NotifyReport,
    OwnerFindings,
    findings_by_owner,
    notify_owners,
    notify_webhook,
    owners_hook,
)
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
    "NotifyReport",
    "OwnerFindings",
    "Scheduler",
    "Skipped",
    "SourceError",
    "SourceReport",
    "SyncReport",
    "drift",
    "findings_by_owner",
    "glob_match",
    "notify_owners",
    "notify_webhook",
    "owners_hook",
    "sync",
]
