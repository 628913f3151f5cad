"""`make run` on any machine with Python 3.11+ (issue 39): it installs no browser (only `make test`
and `make browser` do), and it says in one line what it needs when Python is missing or too old,
before it creates anything."""

from __future__ import annotations

import subprocess
from pathlib import Path

from service_helpers import ROOT


def make(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_make_run_installs_no_browser_but_make_test_does(tmp_path: Path) -> None:
    venv = tmp_path / "venv"  # a checkout that has installed nothing yet
    run = make("-n", "run", f"VENV={venv}")
    assert run.returncode == 0, run.stderr
    assert "chromium" not in run.stdout and "apt-get update" not in run.stdout
    assert "EVIDEX_DEMO_KEY=evidex-demo-customer" in run.stdout  # the sign-in form's hint
    test = make("-n", "test", f"VENV={venv}")
    assert "chromium" in test.stdout


def test_make_run_says_which_python_it_needs(tmp_path: Path) -> None:
    old = tmp_path / "python3.9"
    old.write_text("#!/bin/sh\n"
                   'case "$*" in *platform*) echo 3.9.18;; *version_info*) exit 1;; *) exit 0;; esac\n',
                   encoding="utf-8")
    old.chmod(0o755)
    venv = tmp_path / "venv"
    for py, said in ((str(old), "evidex needs Python 3.11 or later; " + str(old) + " is 3.9.18"),
                     (str(tmp_path / "missing"), "evidex needs Python 3.11 or later, and '")):
        proc = make("run", f"VENV={venv}", f"PY={py}", f"DB={tmp_path / 'demo.db'}")
        assert proc.returncode != 0
        errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
        assert len(errors) == 1 and said in errors[0], proc.stderr
        assert "Traceback" not in proc.stderr
        assert not venv.exists() and not (tmp_path / "demo.db").exists()
