"""``evidex check`` / ``KnowledgeBase.check``: a real store on each backend, corrupted behind the
library's back one way at a time (with the database's own SQL, as a bad migration, a manual
edit or a damaged disk would), must report that exact problem, with its ids; an untouched
store reports none."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from backends import execute, raw
from cli_runner import EVIDEX, run_cli
from evidex import KnowledgeBase
from evidex.ingest import load_paths
from evidex.store import is_postgres_url
from service_helpers import GLOBEX, Server, auth, write_config

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def build(location: str) -> None:
    kb = KnowledgeBase.open(location, embedder="hash-test")
    for folder in ("versions", "collection"):
        loaded = load_paths([EXAMPLES / folder], {"tenant": "acme"})
        assert not loaded.rejected, loaded.rejected
        kb.ingest(loaded.documents, split="heading")
    kb.close()


def check(location: str) -> list[str]:
    with KnowledgeBase.open(location) as kb:
        report = kb.check()
    assert report.problem_count == len(report.problems)
    return [str(p) for p in report.problems]


def one_dkey(location: str, doc_id: str) -> int:
    return int(raw(location, "SELECT dkey FROM documents WHERE doc_id = ?", (doc_id,))[0][0])


def first_pid(location: str, doc_id: str) -> int:
    dkey = one_dkey(location, doc_id)
    return int(raw(location, "SELECT min(pid) FROM passages WHERE dkey = ?", (dkey,))[0][0])


# Each corruption: (what it does to the store, what the report must say). ``loc`` is the store.
def text_changed(loc: str) -> str:
    dkey = one_dkey(loc, "returns-faq")
    execute(loc, f"UPDATE document_texts SET text = text || ' (edited)' WHERE dkey = {dkey}")
    return "fingerprint: acme/returns-faq: the stored text of version"


def passage_changed(loc: str) -> str:
    pid = first_pid(loc, "returns-faq")
    execute(loc, f"UPDATE passages SET text = 'Nothing can be returned, ever.' WHERE pid = {pid}")
    return f"fingerprint: acme/returns-faq passage 1 (id {pid}): the passage text is not the document text"


def passage_row_deleted(loc: str) -> str:
    pid = first_pid(loc, "returns-faq")
    execute(loc, f"DELETE FROM passages WHERE pid = {pid}")
    return f"index: passage {pid}: live in the index but no passage row holds it"


def posting_lost(loc: str) -> str:
    # Rename one term of the largest segment's packed postings to a name that sorts in the same
    # place (the term plus U+0001): the term's postings are gone, the segment stays readable.
    sid, terms = raw(loc, "SELECT id, terms FROM segments ORDER BY n DESC LIMIT 1")[0]
    names = terms.split("\n")
    term = "refund" if "refund" in names else names[len(names) // 2]
    renamed = "\n".join(t + "\x01" if t == term else t for t in names)
    if is_postgres_url(loc):
        execute(loc, f"UPDATE segments SET terms = {_pg_literal(renamed)} "
                     f"WHERE id = {sid}")
    else:
        with sqlite3.connect(loc) as c:
            c.execute("UPDATE segments SET terms = ? WHERE id = ?", (renamed, sid))
    return f"postings: term {term!r}: no posting for passage"


def _pg_literal(text: str) -> str:
    return "E'" + text.replace("\\", "\\\\").replace("'", "''").replace("\x01", "\\001") + "'"


def signature_count(loc: str) -> str:
    execute(loc, "UPDATE signatures SET passages = passages + 1 WHERE passages > 0")
    return "index: signature "


def vectors_lost(loc: str) -> str:
    if is_postgres_url(loc):
        pid = first_pid(loc, "returns-faq")
        execute(loc, f"DELETE FROM vectors WHERE pid = {pid}")
        return f"vectors: passage {pid}: no vector of model 'hash-test'"
    # SQLite keeps a segment's vectors in blobs: relabel one segment's as another model's.
    # The index then refuses to load, as a search would: one problem with the store's error.
    execute(loc, "UPDATE segment_vectors SET model = 'other-model' WHERE segment = (SELECT min(segment) "
                 "FROM segment_vectors)")
    return "read: store: the store cannot be read: segment 1 has no vectors for 'hash-test'"


def history_changed(loc: str) -> str:
    execute(loc, "UPDATE history SET text = text || ' (edited)'")
    return "history: acme/reisekosten-richtlinie: superseded version"


def sync_record_orphaned(loc: str) -> str:
    execute(loc, "INSERT INTO source_documents (tenant, doc_id, source, item, stamp, content_sha256) "
                 "VALUES ('acme', 'gone', 'help', 'gone.md', '', '')")
    return "history: acme/gone: the sync record of source 'help' names a document the store does not hold"


def engine_damaged(loc: str) -> str:
    if is_postgres_url(loc):
        execute(loc, "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'history_doc'::regclass")
        return "engine: store: index history_doc is not valid"
    # Zero the root page of an index that reads do not use: SQLite's own check must notice.
    (root,) = raw(loc, "SELECT rootpage FROM sqlite_master WHERE name = 'source_documents_source'")[0]
    (size,) = raw(loc, "PRAGMA page_size")[0]
    raw(loc, "PRAGMA wal_checkpoint(TRUNCATE)")
    with open(loc, "r+b") as f:
        f.seek((root - 1) * size)
        f.write(b"\0" * size)
    return "engine: store: "


CORRUPTIONS: dict[str, Callable[[str], str]] = {
    f.__name__: f for f in (text_changed, passage_changed, passage_row_deleted, posting_lost,
                            signature_count, vectors_lost, history_changed, sync_record_orphaned,
                            engine_damaged)
}


def test_an_untouched_store_has_no_problems(locate: Callable[[str], str]) -> None:
    loc = locate("kb")
    build(loc)
    with KnowledgeBase.open(loc) as kb:
        report = kb.check()
    assert report.ok, report.problems
    assert report.documents > 5 and report.passages > report.documents
    assert report.vectors == report.passages and report.history_versions >= 1 and report.terms > 100


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_each_corruption_is_found(locate: Callable[[str], str], corruption: str) -> None:
    loc = locate("kb")
    build(loc)
    expected = CORRUPTIONS[corruption](loc)
    problems = check(loc)
    assert any(p.startswith(expected) or expected in p for p in problems), problems


def test_cli_exits_1_and_names_the_problem(locate: Callable[[str], str]) -> None:
    loc = locate("kb")
    build(loc)
    env = {**os.environ, "EVIDEX_EMBEDDER": "hash-test"}
    ok = run_cli("check", db=loc, env=env)
    assert ok.returncode == 0, ok.stderr
    assert "no problems" in ok.stdout
    expected = text_changed(loc)
    bad = run_cli("check", db=loc, env=env)
    assert bad.returncode == 1
    assert bad.stdout.splitlines()[0].startswith(expected)
    assert "1 problem" in bad.stderr


def test_service_check_is_admin_only_and_shows_only_the_admins_tenant(tmp_path: Path) -> None:
    db = str(tmp_path / "kb.db")
    build(db)
    with KnowledgeBase.open(db, embedder="hash-test") as kb:
        kb.ingest(GLOBEX, split="paragraph")
    config = write_config(tmp_path / "server.yaml")
    server = Server([str(EVIDEX), "--db", db, "serve", "--config", str(config)],
                    {"EVIDEX_EMBEDDER": "hash-test"}, tmp_path / "server.log")
    try:
        clean = httpx.get(f"{server.url}/v1/check", headers=auth("acme-admin-key"), timeout=120)
        assert clean.status_code == 200, clean.text
        assert clean.json()["ok"] is True and clean.json()["problems"] == []
        assert httpx.get(f"{server.url}/v1/check", headers=auth("acme-staff-key"),
                         timeout=60).status_code == 403
        text_changed(db)
        dkey = one_dkey(db, "globex-secret")
        execute(db, f"UPDATE document_texts SET text = text || ' (edited)' WHERE dkey = {dkey}")
        mine = httpx.get(f"{server.url}/v1/check", headers=auth("acme-admin-key"), timeout=120).json()
        assert mine["ok"] is False and mine["problem_count"] == 2 and mine["withheld"] == 1
        assert [(p["kind"], p["where"]) for p in mine["problems"]] == [("fingerprint", "acme/returns-faq")]
        theirs = httpx.get(f"{server.url}/v1/check", headers=auth("globex-admin-key"), timeout=120).json()
        assert [p["where"] for p in theirs["problems"]] == ["globex/globex-secret"]
        assert "returns-faq" not in str(theirs)
    finally:
        server.stop()
