"""Shared set-up of the service tests: a two-tenant store, keys, and a real uvicorn process.

The store holds the example collection for tenant ``acme`` and a small collection for tenant
``globex`` that reuses one of acme's document ids, so a tenant mix-up would show as a wrong hit
rather than as nothing.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from evidex import Document, KnowledgeBase
from evidex.ingest import load_paths

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BIN = Path(sys.executable).parent

KEYS: dict[str, dict[str, Any]] = {
    "acme-customer-key": {"tenant": "acme", "groups": ["customers"], "visibilities": ["public"]},
    "acme-staff-key": {"tenant": "acme", "groups": ["staff"], "visibilities": ["public", "internal"]},
    "acme-admin-key": {"tenant": "acme", "groups": ["staff"], "visibilities": ["public", "internal"],
                       "admin": True},
    "globex-user-key": {"tenant": "globex", "groups": ["staff"],
                        "visibilities": ["public", "internal", "confidential", "restricted"]},
    "globex-admin-key": {"tenant": "globex", "groups": ["staff"], "visibilities": ["public"],
                         "admin": True},
}
#: How long a test waits for a server it started to answer /healthz (a hang guard).
START_S = 600
JWT_SECRET = "test-secret-of-at-least-32-bytes-length!"
JWT_ISSUER = "https://issuer.test"

GLOBEX = [
    Document("returns-faq", "globex", frozenset({"staff"}), "g1",
             "Globex returns: zebra widgets may be returned within 90 days.", title="Globex returns",
             visibility="public", language="en"),
    Document("globex-secret", "globex", frozenset({"staff"}), "g1",
             "The quarterly zebra budget is 4 million.", title="Budget", visibility="internal",
             language="en"),
]


def sha(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def build_store(path: Path, cache: Path) -> None:
    """The example store at ``path``; ``cache`` is the embedding cache folder the servers of
    these tests get as ``EVIDEX_CACHE_DIR`` (searches read sentence vectors from it)."""
    kb = KnowledgeBase.open(path, embedder="hash-test", embed_cache=cache / "embeddings.sqlite")
    for folder in ("versions", "collection"):
        loaded = load_paths([EXAMPLES / folder], {"tenant": "acme"})
        assert not loaded.rejected, loaded.rejected
        kb.ingest(loaded.documents, split="heading")
    kb.ingest(GLOBEX, split="paragraph")
    kb.close()


def write_config(path: Path, **server: Any) -> Path:
    keys = [{"key_sha256": sha(k), "name": k.removesuffix("-key"), **v} for k, v in KEYS.items()]
    section = {"api_keys": keys, "jwt": {"issuer": JWT_ISSUER, "algorithms": ["HS256"], "secret": JWT_SECRET,
                                         "visibilities": ["public"]},
               "allowed_link_hosts": ["help.example.com"], **server}
    path.write_text(yaml.safe_dump({"server": section}), encoding="utf-8")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A server process on 127.0.0.1 with its stderr in a file (the structured logs)."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self._log = open(log, "wb")  # noqa: SIM115 - closed in stop()
        full_env = {**os.environ, **env}
        self.proc = subprocess.Popen([*args, "--port", str(self.port)], env=full_env,
                                     stdout=self._log, stderr=subprocess.STDOUT)
        # A guard against a server that never comes up, not a claim about start-up speed: on a
        # machine whose cores are busy with other work, importing and opening take minutes.
        deadline = time.monotonic() + START_S
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {log.read_text(errors='replace')[-2000:]}")
            try:
                if httpx.get(self.url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"server did not come up within {START_S} s")
            time.sleep(0.2)

    def logs(self) -> str:
        self._log.flush()
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


LAUNCHER = '''
"""Starts the app with recording sync/drift callables (what the lead will wire to sources)."""
import json, sys
import uvicorn
from evidex.server import create_app
from evidex.config import load_config

db, config, calls, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[5])

def record(op, **kw):
    with open(calls, "a") as f:
        f.write(json.dumps({"op": op, **kw}) + "\\n")

def sync(*, tenant, source, session=None):
    if source == "boom":
        raise RuntimeError("confidential failure text")
    record("sync", tenant=tenant, source=source)
    return {"tenant": tenant, "added": 0}

def drift(*, tenant):
    record("drift", tenant=tenant)
    return {"tenant": tenant, "changed": []}

app = create_app(db, load_config(config).server, sync=sync, drift=drift)
uvicorn.run(app, host="127.0.0.1", port=port, access_log=False, log_level="warning")
'''


def start_launcher(tmp: Path, db: Path, config: Path) -> tuple[Server, Path]:
    script = tmp / "launch_service.py"
    script.write_text(LAUNCHER, encoding="utf-8")
    calls = tmp / "admin-calls.jsonl"
    server = Server([sys.executable, str(script), str(db), str(config), str(calls)],
                    {"EVIDEX_CACHE_DIR": str(tmp / "cache")}, tmp / "server.log")
    return server, calls
