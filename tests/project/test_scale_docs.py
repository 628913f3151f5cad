"""docs/scale-out.md ("Growing beyond one server") is run as written, on real servers.

Its shell blocks and its configuration block are read from the page itself, in order, and run
against servers this test starts (tests/pgcluster.py): ``db1`` (a primary holding tenant acme),
``db2`` (an independent server holding globex), and the replica the page's own
``pg_basebackup`` / ``pg_ctl`` commands make of ``db1``. The only changes to the text are the
example hosts and folders mapped to these servers (a table below), and, because the replica
runs on this host beside its primary rather than on its own, its port. PostgreSQL's commands
run as the servers' user, as the page says.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from backends import raw
from evidex import Document, KnowledgeBase
from evidex.store import redacted
from pgcluster import Cluster, _bin, _user, wait_replayed
from service_helpers import BIN, ROOT

pytestmark = pytest.mark.usefixtures("pg_url")  # skips with the other PostgreSQL tests

PAGE = ROOT / "docs" / "scale-out.md"
BLOCK = re.compile(r"^```(?P<lang>\w+)\n(?P<body>.*?)^```$", re.M | re.S)
SCHEMA = "knowledge"


def _blocks() -> list[tuple[str, str]]:
    return [(m["lang"], m["body"]) for m in BLOCK.finditer(PAGE.read_text(encoding="utf-8"))]


def _shims(folder: Path, cwd: Path) -> Path:
    """``pg_basebackup`` and ``pg_ctl`` on PATH: the dev extra's, run as the servers' user."""
    folder.mkdir()
    for name in ("pg_basebackup", "pg_ctl"):
        shim = folder / name
        shim.write_text(f"#!{sys.executable}\nimport subprocess, sys\n"
                        f"sys.exit(subprocess.run([{str(_bin() / name)!r}, *sys.argv[1:]], user={_user()!r}, "
                        f"cwd={str(cwd)!r}).returncode)\n")
        shim.chmod(0o755)
    return folder


def test_the_documented_commands_run_as_written(tmp_path: Path) -> None:
    blocks = _blocks()
    assert [lang for lang, _ in blocks] == ["sh", "yaml", "sh", "sh"], "the page's blocks changed"
    c = Cluster()
    try:
        db1, db2 = c.primary("db1"), c.server("db2")
        with KnowledgeBase.open(db1.url(SCHEMA), embedder="none") as kb:
            kb.ingest([Document(f"p{i}", "acme", frozenset({"staff"}), "1", f"Returns within {i + 10} days.")
                       for i in range(6)])
        with KnowledgeBase.open(db2.url(SCHEMA), embedder="none") as kb:
            kb.ingest([Document("g1", "globex", frozenset({"staff"}), "1", "Globex ships on Mondays.")])
        replica = c._next("db1-replica")  # its folder and port in the cluster: stopped with it
        hosts = {
            "postgresql://evidex:secret@db1-replica.internal/knowledge": replica.url(SCHEMA),
            "postgresql://evidex:secret@db1.internal/knowledge": db1.url(SCHEMA),
            "postgresql://evidex:secret@db2.internal/knowledge": db2.url(SCHEMA),
            "host=db1.internal user=replicator": db1.conninfo,
            "/var/lib/postgresql/18/replica": str(replica.data),
            " -w start": f" -o '-p {replica.port}' -w start",  # beside its primary: its own port
        }

        def mapped(text: str) -> str:
            for example, here in hosts.items():
                text = text.replace(example, here)
            return text

        env = {**os.environ, "PATH": f"{_shims(tmp_path / 'bin', c.root)}{os.pathsep}{BIN}{os.pathsep}"
                                     f"{os.environ.get('PATH', '')}",
               "EVIDEX_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"}
        out: dict[str, subprocess.CompletedProcess[str]] = {}
        for lang, body in blocks:
            if lang == "yaml":
                (tmp_path / "knowledge.config.yaml").write_text(mapped(body), encoding="utf-8")
                continue
            for line in body.strip().splitlines():
                done = subprocess.run(["bash", "-c", mapped(line)], cwd=tmp_path, env=env,
                                      capture_output=True, text=True, timeout=300)
                assert done.returncode == 0, (line, done.stdout, done.stderr)
                out[line] = done
        # The replica the page made is a streaming standby of db1 that evidex reads from.
        assert replica.sql("SELECT pg_is_in_recovery()") == [(True,)]
        servers = out["evidex --config knowledge.config.yaml servers"].stdout
        assert re.search(rf"replica \S+:{replica.port}/postgres \[\(default\)\]: ok", servers), servers
        stats = out["evidex --config knowledge.config.yaml stats"].stdout
        assert "documents: 7" in stats, stats
        # The move: acme on db2 only, the configuration rewritten, the replica following db1.
        config = yaml.safe_load((tmp_path / "knowledge.config.yaml").read_text())
        assert config["store"]["tenants"] == {"globex": db2.url(SCHEMA), "acme": db2.url(SCHEMA)}
        assert "# skip a replica further behind" in (tmp_path / "knowledge.config.yaml").read_text()
        assert raw(db2.url(SCHEMA), "SELECT tenant, count(*) FROM documents GROUP BY tenant ORDER BY 1") == [
            ("acme", 6), ("globex", 1)]
        assert raw(db1.url(SCHEMA), "SELECT count(*) FROM documents") == [(0,)]
        wait_replayed(db1, replica)
        assert raw(replica.url(SCHEMA), "SELECT count(*) FROM documents") == [(0,)]
        after = [v for k, v in out.items() if k.endswith("stats --tenant acme")]
        assert len(after) == 1 and "documents: 7" in after[0].stdout  # db2's store: acme and globex
        assert f"server: {redacted(db2.url(SCHEMA))}" in after[0].stderr
    finally:
        c.close()
