"""`evidex serve` caps glibc's malloc arenas (benchmarks/RESULTS.md, Hardening: the soak's
resident size crept up with one arena per request thread), unless the operator chose a value."""

from __future__ import annotations

import os

import pytest

from evidex.server._run import MALLOC_ARENAS, limit_malloc_arenas


def test_serve_sets_the_arena_cap_for_itself_and_its_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    limit_malloc_arenas()
    assert os.environ["MALLOC_ARENA_MAX"] == str(MALLOC_ARENAS)


def test_an_operators_arena_setting_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    limit_malloc_arenas()
    assert os.environ["MALLOC_ARENA_MAX"] == "4"
