"""A sync killed with SIGKILL at random moments, then run again, leaves no mix and no duplicate.

``evidex sync`` runs in a subprocess over 1,500 Markdown files; the test waits until the sync
has committed at least one write (the store's generation moved), sleeps a random extra moment
and kills it. Between kills the folder changes (edits, deletions, additions, renames) so that
supersedes and removals are interrupted too. After every kill the store must be internally
consistent; after the final complete sync it must hold exactly the folder.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from actors import PUBLIC_INTERNAL
from cli_runner import EVIDEX, run_cli
from evidex import Actor, KnowledgeBase
from evidex.ingest import split_text
from evidex.model import sha256_text

STAFF = Actor("acme", frozenset({"staff"}), visibilities=PUBLIC_INTERNAL)
N = 1500


def generation(db: Path) -> int:
    if not db.exists():
        return -1
    try:
        with sqlite3.connect(db, timeout=30) as c:
            row = c.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    except sqlite3.OperationalError:  # the schema is being created right now
        return -1
    return int(row[0]) if row else -1


def doc_text(i: int, rev: int) -> str:
    return f"# Doc {i}\n\nunique{i} alpha beta revision r{rev}.\n\nSecond paragraph w{i}.\n"


def check_consistent(db: Path) -> dict[str, str]:
    """Every document is one version: its text has its fingerprint, its passages are exactly the
    split of that text, the keyword index finds it once by its unique word, the per-signature
    counts match the passages, and each source entry describes a stored document as stored.
    Returns doc id -> stored text."""
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT d.dkey, d.doc_id, d.content_sha256, d.split, t.text FROM documents d "
                         "JOIN document_texts t USING (dkey)").fetchall()
        assert len(rows) == len({r[1] for r in rows}), "a document is stored twice"
        texts = {}
        for dkey, doc_id, sha, split, text in rows:
            assert sha256_text(text) == sha, doc_id
            assert split == "heading:2000"
            want = [(p.number, p.start, p.end, p.text) for p in split_text(text, "heading")]
            got = c.execute("SELECT number, start_off, end_off, text FROM passages WHERE dkey = ? "
                            "ORDER BY number", (dkey,)).fetchall()
            assert got == want, f"passages of {doc_id} are not those of its stored text"
            texts[doc_id] = text
        live = c.execute("SELECT count(*) FROM passages").fetchone()[0]
        assert c.execute("SELECT coalesce(sum(passages), 0) FROM signatures").fetchone()[0] == live
        stored = {r[1]: r[2] for r in rows}
        for doc_id, sha in c.execute("SELECT doc_id, content_sha256 FROM source_documents"):
            assert stored.get(doc_id) == sha, f"source entry of {doc_id} describes another text"
    kb = KnowledgeBase.open(db)
    try:
        for doc_id, text in texts.items():
            token = text.split("\n\n")[1].split()[0]  # unique{i}
            hits = kb.search(STAFF, token, mode="keyword", limit=10)
            assert [h.document_id for h in hits] == [doc_id] * len(hits) and hits, doc_id
            assert all(h.quote in text for h in hits)
    finally:
        kb.close()
    return texts


@pytest.mark.slow
def test_sync_killed_at_random_moments_then_rerun_holds_each_document_once(tmp_path: Path) -> None:
    rng = random.Random(20260205)
    docs = tmp_path / "docs"
    docs.mkdir()
    revs = {i: 0 for i in range(N)}
    names = {i: f"d{i:05d}.md" for i in range(N)}
    for i in range(N):
        (docs / names[i]).write_text(doc_text(i, 0), encoding="utf-8")
    cfg = tmp_path / "k.yaml"
    cfg.write_text("sources:\n  - {id: s, type: files, path: docs, tenant: acme, groups: [staff]}\n",
                   encoding="utf-8")
    db = tmp_path / "kb.db"
    env = {**os.environ, "EVIDEX_EMBEDDER": "hash-test"}
    cmd = [str(EVIDEX), "--db", str(db), "--config", str(cfg), "sync", "--json"]
    kills = 0
    next_id = N
    for round_ in range(6):
        before = generation(db)
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while generation(db) <= before and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.3))  # rounds after the first change ~100 files: short syncs
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait(timeout=60)
        check_consistent(db)
        # Change the folder for the next round: edits, deletions, additions, renames.
        live = sorted(revs)
        for i in rng.sample(live, 60):
            revs[i] += 1
            (docs / names[i]).write_text(doc_text(i, revs[i]), encoding="utf-8")
        for i in rng.sample(sorted(set(live) - {i for i in live if revs[i] > 0}), 15):
            (docs / names.pop(i)).unlink()
            del revs[i]
        for _ in range(15):
            revs[next_id], names[next_id] = 0, f"d{next_id:05d}.md"
            (docs / names[next_id]).write_text(doc_text(next_id, 0), encoding="utf-8")
            next_id += 1
        for i in rng.sample(sorted(revs), 10):
            new = f"renamed-{round_}-{i}.md"
            (docs / names[i]).rename(docs / new)
            names[i] = new
    assert kills >= 4, f"only {kills} of 6 syncs were still running when killed"
    final = run_cli(*cmd[1:], env=env, timeout=600)
    assert final.returncode == 0, final.stderr
    texts = check_consistent(db)
    assert texts == {f"s/{names[i]}": doc_text(i, revs[i]) for i in revs}
