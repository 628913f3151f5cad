"""The `evidex` command as the tests run it: the installed console script in a real subprocess,
written once for every test file that runs it (`from cli_runner import run_cli`).

A plain function rather than a fixture: module- and session-scoped fixtures run the command
too (to build a store once, or to run many read-only invocations at once), and they cannot
take a function-scoped fixture.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

#: The console script `make install` put beside this interpreter (the `.venv/bin/evidex` a user runs).
EVIDEX = Path(sys.executable).parent / "evidex"

Run = subprocess.CompletedProcess[str]
Call = tuple[Sequence[Any], dict[str, Any]]


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without ``EVIDEX_DB`` (the store of the person running the
    tests must not become the test's), output as UTF-8, then ``extra``."""
    env = {k: v for k, v in os.environ.items() if k != "EVIDEX_DB"}
    env.update(PYTHONIOENCODING="utf-8", **extra)
    return env


def run_cli(*args: Any, db: Path | str | None = None, stdin: str = "", cwd: Path | None = None,
            env: dict[str, str] | None = None, timeout: float = 1200, check: bool = False,
            command: Sequence[str] = (str(EVIDEX),)) -> Run:
    """``evidex [--db DB] ARGS`` to completion, text captured. ``stdin`` is what the command reads
    (empty by default, never the terminal the tests were started from); ``env`` defaults to
    :func:`clean_env`. ``timeout`` guards against a hang (a busy machine takes minutes for what
    a quiet one does in seconds). ``check`` raises on a non-zero exit. A Python traceback in either stream
    fails the test whatever the exit status: evidex reports errors in one line."""
    cmd = [*command, *(["--db", str(db)] if db is not None else []), *map(str, args)]
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, encoding="utf-8", cwd=cwd,
                          env=clean_env() if env is None else env, timeout=timeout, check=check)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    return proc


def run_parallel(calls: Sequence[Call], run: Callable[..., Run] = run_cli) -> list[Run]:
    """Independent read-only invocations at once, each ``run(*args, **kwargs)`` of one
    ``(args, kwargs)`` call, results in call order (each is mostly interpreter start-up)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda call: run(*call[0], **call[1]), calls))
