"""The seams the source tests use inside ``evidex.sources``, the one place in this folder that
reaches into its modules: the racy-file rule's window and the file parser of ``_items`` (a sync
reads a file again when its stamp is too recent to trust, ``sources.RACY_SECONDS``), and the
sync the scheduler calls (``_schedule``). The tests themselves use the package's names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import evidex.sources._items as items_module
import evidex.sources._schedule as schedule_module


@pytest.fixture
def racy_seconds(monkeypatch: pytest.MonkeyPatch) -> Callable[[float], None]:
    """``racy_seconds(s)``: for this test, a file whose stamp is under ``s`` seconds old is read
    again by every sync (the rule's window, 2 s otherwise)."""

    def set_window(seconds: float) -> None:
        monkeypatch.setattr(items_module, "RACY_SECONDS", seconds)

    return set_window


@pytest.fixture
def trusted_stamps(racy_seconds: Callable[[float], None]) -> None:
    """Files written by a test are seconds old; the racy-file rule would re-read them all. Tests
    of the stamp skip switch that rule off (its own test keeps it on)."""
    racy_seconds(0.0)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Document ids parsed by file sources, in order."""
    seen: list[str] = []
    real = items_module.load_document

    def counting(*args, **kwargs):
        seen.append(kwargs["doc_id"])
        return real(*args, **kwargs)

    monkeypatch.setattr(items_module, "load_document", counting)
    return seen


@pytest.fixture
def scheduled_sync(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``scheduled_sync(fn)``: for this test the scheduler runs ``fn`` where it runs
    ``sources.sync``; returns the real one, for ``fn`` to call."""

    def install(fn: Callable[..., Any]) -> Callable[..., Any]:
        real = schedule_module.sync
        monkeypatch.setattr(schedule_module, "sync", fn)
        return real

    return install
