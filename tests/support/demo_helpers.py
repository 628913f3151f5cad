"""The `make run` demo, built as the Makefile builds it, on free ports: the example site, the order
and stock service and the support inbox as processes, `evidex sync` of
examples/knowledge.config.yaml into a new store with the default embedding model (vectors from the
user's persistent embedding cache, as `make run` has them), then `evidex serve` with the demo keys
and `EVIDEX_DEMO_KEY`. The page tests and the documentation's examples run against it, so what the
docs show is what `make run` shows.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli_runner import EVIDEX, run_cli
from evidex.embed import DEFAULT_EMBEDDER, default_cache_path
from service_helpers import ROOT, Server, free_port

#: Read at import, before the tests' autouse fixture points the cache at a temporary folder.
USER_CACHE_DIR = default_cache_path().parent
DEMO_KEYS = {"customer": "evidex-demo-customer", "staff": "evidex-demo-staff", "admin": "evidex-demo-admin"}
TOOLS_TOKEN = "evidex-demo-tools-token"
INBOX_SECRET = "evidex-demo-inbox-secret"


@dataclass
class Demo:
    url: str
    db: Path
    config: Path
    inbox_url: str
    inbox_log: Path
    env: dict[str, str]
    #: `make run`'s port -> this demo's (the example site, tools service and inbox).
    ports: dict[int, int]

    def as_make_run(self, text: str) -> str:
        """``text`` with this demo's ports as `make run`'s: document ids and links of the help
        centre name the site's port, and that is the only difference."""
        for theirs, ours in self.ports.items():
            text = text.replace(f"127.0.0.1:{ours}", f"127.0.0.1:{theirs}")
        return text

    def evidex(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """`evidex --db DB --config CONFIG ARGS` as `make run`'s user would type it."""
        return run_cli("--config", self.config, *args, db=self.db, env={**os.environ, **self.env},
                       check=check)


def demo_config(tmp: Path, ports: dict[int, int]) -> Path:
    """examples/knowledge.config.yaml with its helper services on ``ports`` and absolute paths."""
    text = (ROOT / "examples" / "knowledge.config.yaml").read_text(encoding="utf-8")
    for theirs, ours in ports.items():
        text = text.replace(f"127.0.0.1:{theirs}", f"127.0.0.1:{ours}")
    path = tmp / "knowledge.config.yaml"
    path.write_text(text.replace("path: shop/", f"path: {ROOT / 'examples' / 'shop'}/"), encoding="utf-8")
    return path


def example_module(name: str) -> Any:
    """One of examples/'s standalone scripts (a helper service of `make run`), imported."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextmanager
def running_demo(tmp: Path) -> Iterator[Demo]:
    ports = {8765: free_port(), 8081: free_port(), 8082: free_port()}
    # The default model, as `make run` (the tests' own fixture picks the hash-test embedder).
    env = {"EVIDEX_CACHE_DIR": str(USER_CACHE_DIR), "ACME_TOOLS_TOKEN": TOOLS_TOKEN,
           "ACME_INBOX_SECRET": INBOX_SECRET, "EVIDEX_DEMO_KEY": DEMO_KEYS["customer"],
           "EVIDEX_EMBEDDER": DEFAULT_EMBEDDER}
    full = {**os.environ, **env}
    inbox_log = tmp / "inbox.log"
    helpers = []
    server = None
    try:
        with open(inbox_log, "wb") as log:
            for script, port in (("site_server", 8765), ("tools_service", 8081), ("inbox_server", 8082)):
                helpers.append(subprocess.Popen(
                    [sys.executable, str(ROOT / "examples" / f"{script}.py"), "--port", str(ports[port])],
                    env=full, stdout=log if script == "inbox_server" else subprocess.DEVNULL,
                    stderr=subprocess.STDOUT))
        subprocess.run([sys.executable, str(ROOT / "examples" / "wait_for.py"),
                        f"http://127.0.0.1:{ports[8765]}/sitemap.xml", "300"], check=True)
        config = demo_config(tmp, ports)
        db = tmp / "evidex.db"
        run_cli("--config", config, "sync", "--record", db=db, env=full, check=True, timeout=900)
        server = Server([str(EVIDEX), "--db", str(db), "--config", str(config), "serve"],
                        env, tmp / "serve.log")
        yield Demo(server.url, db, config, f"http://127.0.0.1:{ports[8082]}", inbox_log, env, ports)
    finally:
        if server is not None:
            server.stop()
        for proc in helpers:
            proc.terminate()
            proc.wait(timeout=15)
