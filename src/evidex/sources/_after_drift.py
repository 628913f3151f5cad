"""What runs after a drift check, written once for every caller: ``evidex drift``, ``evidex
schedule`` and the service's scheduler (``evidex serve``).

In order: the configured drift webhook (``freshness.notify: {webhook: ...}``, when something
drifted), the source owners' notices, then every hook registered in ``DRIFT_HOOKS``. The owners'
step (``owners_hook``) needs a way to open the store and callers tell people differently (the
command line prints every delivery), so each caller hands it in; the order and the rest of the
list live here only.

A step's failure is reported and never keeps the next step from running: a drift nobody hears
about is the failure the check exists for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..config import Config, Notify
from ._owners import notify_webhook
from ._sync import SyncReport

__all__ = ["DRIFT_HOOKS", "DriftHook", "after_drift", "drift_webhook", "run_after_drift"]

#: Called after each drift check with its report (every source) and the configuration.
DriftHook = Callable[[SyncReport, Config], None]
#: Hooks an extension registers: called after the webhook and the owners, by every caller.
DRIFT_HOOKS: list[DriftHook] = []


def drift_webhook(report: SyncReport, config: Config) -> None:
    """``freshness.notify: {webhook: ...}``: the drift report goes to that webhook when any
    source drifted."""
    n = config.freshness.notify  # "content_owner" (a name) has no webhook of its own
    if isinstance(n, Notify) and n.webhook and report.drifted:
        notify_webhook(n.webhook, report, timeout=n.timeout_seconds)


def after_drift(owners: DriftHook | None = None) -> list[DriftHook]:
    """The steps after a drift check, in order; ``owners`` tells the source owners (``notify``'s
    step, or a caller's wrapper of it). The registered hooks are those of this moment."""
    return [drift_webhook, *([owners] if owners is not None else []), *DRIFT_HOOKS]


def run_after_drift(steps: Sequence[DriftHook], report: SyncReport, config: Config) -> list[str]:
    """Run every step; returns one line per step that failed (all of them run)."""
    problems = []
    for step in steps:
        try:
            step(report, config)
        except Exception as exc:
            name = getattr(step, "__name__", type(step).__name__)
            problems.append(f"drift hook {name} failed: {type(exc).__name__}: {exc}")
    return problems
