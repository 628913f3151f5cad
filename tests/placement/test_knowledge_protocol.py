"""Both knowledge bases implement the whole ``Knowledge`` protocol: proven by the type checker.

``placement._router`` returns a ``PlacedKnowledge`` and a ``KnowledgeBase`` where a
``Knowledge`` is expected (under ``TYPE_CHECKING``); mypy rejects either when a member is
missing or its signature differs. This replaces a reflection test that listed the router's
methods: it also checks signatures and return types, and needs no list of exceptions.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TYPED = ["src/evidex/knowledge.py", "src/evidex/placement", "src/evidex/config"]
ARGS = ["--follow-imports=silent", "--ignore-missing-imports"]


def test_both_implement_the_protocol_and_a_router_lacking_a_method_does_not(tmp_path: Path) -> None:
    """The tree checks clean; a copy of the router without ``optimize``, checked in the same
    run, is rejected: the check has teeth."""
    pytest.importorskip("mypy")
    source = (ROOT / "src/evidex/placement/_router.py").read_text(encoding="utf-8")
    assert "    def optimize(self) -> None:" in source
    broken = tmp_path / "broken_router.py"
    broken.write_text(source.replace("    def optimize(self) -> None:", "    def optimise(self) -> None:")
                      .replace("from ..", "from evidex.")
                      .replace("from .", "from evidex.placement."),
                      encoding="utf-8")
    # A cache of this run's own: a shared one replays an earlier run's findings for a file of
    # the same content under that run's path (and two workers would write it at once).
    cache = ["--cache-dir", str(tmp_path / "mypy-cache")]
    proc = subprocess.run([sys.executable, "-m", "mypy", *ARGS, *cache, *TYPED, str(broken)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert [e.split(":")[0] for e in errors] == [str(broken)], proc.stdout + proc.stderr
    assert 'Incompatible return value type (got "PlacedKnowledge", expected "Knowledge")' in errors[0]
