"""Configured sources kept in sync with the index, drift checks against them, and what is told
after a drift check (the drift webhook, each source owner's findings, registered hooks)."""

from ._after_drift import DRIFT_HOOKS, DriftHook, after_drift, run_after_drift
from ._items import RACY_SECONDS
from ._owners import notify_owners, notify_webhook, owners_hook
from ._schedule import Scheduler, run_records
from ._sync import SourceReport, SyncReport, drift, sync

__all__ = [
    "DRIFT_HOOKS",
    "RACY_SECONDS",
    "DriftHook",
    "Scheduler",
    "SourceReport",
    "SyncReport",
    "after_drift",
    "drift",
    "notify_owners",
    "notify_webhook",
    "owners_hook",
    "run_after_drift",
    "run_records",
    "sync",
]
