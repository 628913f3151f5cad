"""No credential or server detail reaches a caller (issue 45, findings 1 and 6).

A password given as a ``?password=`` URL parameter (the other libpq form) was printed by the
``serve`` banner, ``stats`` and connection errors, stored in plain text in ``tenant_moves``,
and returned by ``GET /v1/health`` to every tenant's admin, with other tenants' servers; a
non-admin caller of an unreachable tenant's store got ``422`` with the URL. Here: one
redaction for every credential form; a store outage is ``503`` with ``Retry-After`` and a
generic detail (logged, redacted, on the server); ``/v1/health`` lists the caller's tenant's
store only. On two real PostgreSQL servers and a real ``evidex serve``."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import httpx
import pytest
import yaml

from backends import raw
from evidex.store import redacted, scrubbed, without_password
from pgcluster import PgServer
from service_helpers import BIN, Server, auth, sha

P1, P2, P3 = "Pw1-secret-acme", "Pw2-secret-globex", "Pw3-secret-target"


@pytest.mark.parametrize(("url", "shown", "stored"), [
    ("postgresql://u:S3cret@db:5432/x?schema=s", "postgresql://u:***@db:5432/x?schema=s",
     "postgresql://u@db:5432/x?schema=s"),
    ("postgresql://u@/x?password=S3cret&host=/run/pg", "postgresql://u@/x?password=***&host=/run/pg",
     "postgresql://u@/x?host=/run/pg"),
    ("postgresql:///x?user=u&sslpassword=S3cret&passfile=/home/u/.pgpass&service=prod&host=h",
     "postgresql:///x?user=u&sslpassword=***&passfile=***&service=***&host=h", "postgresql:///x?user=u&host=h"),
    ("postgres://u@h/x?PASSWORD=S3%26cret&servicefile=/etc/pg&sslkey=/k", "postgres://u@h/x?PASSWORD=***&"
     "servicefile=***&sslkey=***", "postgres://u@h/x"),
    ("postgresql://u:p%40ss@h1:5432,h2:5433/x", "postgresql://u:***@h1:5432,h2:5433/x", "postgresql://u@h1:5432,h2:5433/x"),
    ("/var/lib/evidex/kb.db", "/var/lib/evidex/kb.db", "/var/lib/evidex/kb.db"),
])
def test_one_redaction_for_every_credential_form(url: str, shown: str, stored: str) -> None:
    assert redacted(url) == shown
    assert without_password(url) == stored
    assert "S3" not in redacted(url) and "p%40ss" not in redacted(url)


def test_error_text_quoting_a_connection_string_is_scrubbed() -> None:
    url = "postgresql://u@/x?password=S3cret-pw&host=h"
    message = f'connection to "{url}" failed: password S3cret-pw rejected; host=h password=other-pw'
    clean = scrubbed(message, url)
    assert "S3cret" not in clean and "other-pw" not in clean
    assert scrubbed("host=h password='a b c' dbname=d") == "host=h password=*** dbname=d"
    assert scrubbed("no connection to postgresql://u:hunter2@db/x: refused") == \
        "no connection to postgresql://u:***@db/x: refused"


def _with_password(url: str, password: str) -> str:
    return url + f"&password={password}"


KEYS = {"acme-admin-key": {"tenant": "acme", "admin": True}, "acme-reader-key": {"tenant": "acme"},
        "globex-reader-key": {"tenant": "globex"}}


def test_no_caller_sees_a_password_server_address_or_database_error(two: tuple[PgServer, PgServer],
                                                                     pg_url: str, tmp_path: Path) -> None:
    a, b = two
    schema = f"s_{uuid.uuid4().hex[:10]}"
    default, globex = _with_password(a.url(schema), P1), _with_password(b.url(schema), P2)
    config = tmp_path / "knowledge.config.yaml"
    config.write_text(yaml.safe_dump({
        "store": {"default": default, "tenants": {"globex": globex}},
        "server": {"api_keys": [{"key_sha256": sha(k), "name": k, "groups": ["staff"],
                                 "visibilities": ["public", "internal"], **v} for k, v in KEYS.items()]},
    }), encoding="utf-8")
    env = {"EVIDEX_CACHE_DIR": str(tmp_path / "cache"), "EVIDEX_EMBEDDER": "hash-test"}

    def evidex(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(BIN / "evidex"), "--config", str(config), *args], capture_output=True,
                              text=True, timeout=300, env={**__import__("os").environ, **env})

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "returns.md").write_text("# Returns\n\nReturns are accepted within 30 days.\n")
    for tenant in ("acme", "globex"):
        done = evidex("ingest", str(docs), "--tenant", tenant, "--groups", "staff")
        assert done.returncode == 0, done.stderr
    stats = evidex("stats")
    assert stats.returncode == 0, stats.stderr
    for secret in (P1, P2):
        assert secret not in stats.stdout + stats.stderr
    server = Server([str(BIN / "evidex"), "--config", str(config), "serve", "--no-schedule"], env,
                    tmp_path / "server.log")
    try:
        with httpx.Client(base_url=server.url, timeout=60) as c:
            health = c.get("/v1/health", headers=auth("acme-admin-key"))
            assert health.status_code == 200, health.text
            body = health.text
            assert len(health.json()["servers"]) == 1  # acme's store only, not globex's
            for leak in (P1, P2, "postgresql", str(a.port), str(b.port), "globex", "location", "placed"):
                assert leak not in body, leak
            found = c.post("/v1/search", json={"query": "returns days"}, headers=auth("globex-reader-key"))
            assert found.status_code == 200 and found.json()["hits"], found.text
            b.stop()
            try:
                for path, payload in (("/v1/search", {"query": "returns days"}),
                                      ("/v1/answer", {"question": "how long can I return items?"})):
                    for _ in range(2):  # the first failure and the next alike
                        failed = c.post(path, json=payload, headers=auth("globex-reader-key"))
                        assert failed.status_code == 503, (path, failed.status_code, failed.text)
                        assert failed.headers["retry-after"] == "5"
                        assert failed.json() == {"detail": "the store is unavailable; try again shortly"}
                acme = c.post("/v1/search", json={"query": "returns days"}, headers=auth("acme-reader-key"))
                assert acme.status_code == 200, acme.text  # the other tenant's store serves on
            finally:
                b.start()
        logs = server.logs()
        assert "store_unavailable" in logs
        assert P1 not in logs and P2 not in logs
    finally:
        server.stop()
    # A move stores no credential: the marks on both servers name the target without it.
    target = _with_password(b.url(schema + "m"), P3)
    moved = evidex("move-tenant", "acme", "--to", target, "--json")
    assert moved.returncode == 0, moved.stderr
    # The config line names the target as given (the operator's own file); nothing else does.
    said = {k: v for k, v in json.loads(moved.stdout).items() if k != "config_line"}
    assert P3 not in json.dumps(said) + moved.stderr
    rows = raw(a.url(schema), "SELECT location, replicas FROM tenant_moves")
    assert rows and all(P3 not in str(r) and "password" not in str(r) for r in rows)


def test_every_libpq_url_form_is_accepted_or_refused_in_one_line(two: tuple[PgServer, PgServer],
                                                                 pg_url: str) -> None:
    """Finding 11: ``postgresql:///db?user=u&host=...`` (empty authority) ended in a psycopg
    traceback; a PostgreSQL command printed "couldn't stop thread" on stderr. Every valid form
    works with nothing on stderr; an invalid one is one line, without the password."""
    a = two[0]
    url = a.url("forms")
    socket = url.split("host=")[1].split("&")[0]
    port = str(a.port)
    good = [url, f"postgresql:///postgres?user=postgres&host={socket}&port={port}&schema=forms",
            f"postgres://postgres@{socket.replace('/', '%2F')}:{port}/postgres?schema=forms",
            f"postgresql://postgres:{P1}@/postgres?host={socket}&port={port}&schema=forms&connect_timeout=5",
            f"postgresql://postgres@/postgres?host={socket}&port={port}&schema=forms&password={P1}"]
    bad = [f"postgresql://postgres:{P1}@[::1:5432/postgres", f"{url}&bogus_option=1&password={P1}",
           f"postgresql://postgres@/postgres?host={socket}&port=notaport&password={P1}",
           f"postgresql://postgres@/postgres?host={socket}&port=1&schema=forms&password={P1}"]
    env = {**__import__("os").environ, "EVIDEX_EMBEDDER": "hash-test"}
    for form in good + bad:
        done = subprocess.run([str(BIN / "evidex"), "--db", form, "stats"], capture_output=True, text=True,
                              timeout=120, env=env)
        if form in good:
            assert done.returncode == 0 and done.stderr == "", (form, done.stderr)
            assert P1 not in done.stdout
        else:
            assert done.returncode == 1, (form, done.stdout)
            assert len(done.stderr.strip().splitlines()) == 1, (form, done.stderr)
            assert done.stderr.startswith("error: ") and P1 not in done.stderr, done.stderr
