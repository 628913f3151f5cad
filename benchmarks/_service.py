"""What the benchmarks that start `evidex serve` share: a free port, and waiting until it is up."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(proc: subprocess.Popen[bytes], url: str, log: Path | None = None,
                 seconds: float = 60.0) -> None:
    """Return once ``url``/healthz answers 200; else stop ``proc`` and raise with the tail of
    its ``log``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.terminate()
    tail = log.read_text(errors="replace")[-2000:] if log is not None else ""
    raise RuntimeError(f"the service did not start within {seconds:g} s {tail}".rstrip())
