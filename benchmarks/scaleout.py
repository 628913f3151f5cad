"""Beyond one server, measured on real PostgreSQL servers: a primary with streaming replicas
(``pg_basebackup``), and independent servers for tenant moves (tests/pgcluster.py starts them
from the dev extra's PostgreSQL; each run starts and deletes its own).

    .venv/bin/python benchmarks/scaleout.py equal      # replica vs primary reads, SciFact 300 queries
    .venv/bin/python benchmarks/scaleout.py ryw        # read-your-writes through `evidex serve`
    .venv/bin/python benchmarks/scaleout.py lag        # lag after 1,000-passage supersedes; torn reads
    .venv/bin/python benchmarks/scaleout.py move       # a tenant moved with writes and reads going on
    .venv/bin/python benchmarks/scaleout.py failover   # a replica killed mid-load; the primary stopped
    .venv/bin/python benchmarks/scaleout.py speed      # one server: this checkout vs main, same run

Each prints one JSON object (``--out FILE`` also writes it). What each counts:

* ``equal``: SciFact (english analyzer, the default embedding model) on the primary; the same
  300 test queries in keyword and hybrid mode from a plain primary handle and from a handle
  whose reads a replica serves, at the same generation: hits, versions, passages, float scores
  and the resolution of every hit's citation compared; any difference counts.
* ``ryw``: ``evidex serve`` over a primary and two replicas; each round an admin key changes a
  file, syncs it and reads the document and searches for it, with each replica's replay paused
  or resumed at random before the round; a read that shows an older version is stale.
* ``lag``: a quiet replica: the time from a 1,000-passage supersede (one ingest of 250 documents
  of 4 passages) returning on the primary until the replica's snapshot holds its generation,
  p50/max. Then searches on the replica on reader threads while supersedes go on: a hit whose
  passage names another version than the hit, or one search mixing versions of one supersede
  (one transaction), is torn.
* ``move``: a tenant of ``--passages`` passages (4 per document, keyword-only store) moved
  between two servers while a writer adds, supersedes and removes its documents and a reader
  searches it through a handle on the old placement; afterwards every acknowledged write must
  be on the target exactly once and nothing of the tenant left on the source.
* ``failover``: readers on four threads through a replicated handle; one replica SIGKILLed:
  reads that failed (after the handle's one retry on another server), the time until the
  restarted replica serves again; then the primary stopped: how long each write takes to fail,
  the error, and reads served meanwhile.
* ``speed``: SciFact keyword and hybrid search on one server (SQLite file and PostgreSQL), this
  checkout against ``--main`` (its own .venv), each in its own process, alternating, after a
  warm-up pass (query vectors cached): median per-query latency and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))  # pgcluster: the tests' real servers

_DATA = Path("shared") / "data" / "beir" / "scifact"
SCIFACT = next((up / _DATA for up in HERE.parents if (up / _DATA).is_dir()), HERE.parents[1] / _DATA)


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def _ms(x: float) -> float:
    return round(x * 1000, 2)


@contextmanager
def _cluster() -> Iterator[Any]:
    from pgcluster import cluster

    with cluster() as c:
        yield c


# -- equal -----------------------------------------------------------------------------------------
def _build_scifact(location: str, embedder: str | None) -> float:
    from evidex import KnowledgeBase
    from evidex.evaluation import EVAL_LIMITS, corpus_documents, load_beir

    beir = load_beir(SCIFACT)
    t = time.perf_counter()
    with KnowledgeBase.open(location, analyzer="english", embedder=embedder, query_limits=EVAL_LIMITS,
                            max_limit=100) as kb:
        docs = list(corpus_documents(beir))
        for i in range(0, len(docs), 1000):
            kb.ingest(docs[i:i + 1000], split="document")
        kb.optimize()
    return time.perf_counter() - t


def equal(args: argparse.Namespace) -> dict[str, Any]:
    from evidex import Actor, KnowledgeBase
    from evidex.embed import DEFAULT_EMBEDDER
    from evidex.evaluation import EVAL_LIMITS, load_beir
    from evidex.store import ReplicaSettings
    from pgcluster import wait_replayed

    beir = load_beir(SCIFACT)
    queries = list(beir.queries.values())[:args.queries]
    actor = Actor("eval", frozenset({"eval"}), visibilities=frozenset({"public", "internal"}))
    out: dict[str, Any] = {"queries": len(queries), "embedder": args.embedder or DEFAULT_EMBEDDER}
    with _cluster() as c:
        p = c.primary("p")
        r = c.replica(p, "r")
        url = p.url("scifact")
        out["build_s"] = round(_build_scifact(url, args.embedder), 1)
        wait_replayed(p, r, timeout=600)
        common = {"query_limits": EVAL_LIMITS, "max_limit": 100, "vector_timeout_ms": None}
        quick = ReplicaSettings(max_lag_s=3600, wait_s=0.0)
        with KnowledgeBase.open(url, **common) as primary, \
                KnowledgeBase.open(url, replicas=[r.url("scifact")], replica_settings=quick, **common) as rep:
            for mode in ("keyword", "hybrid"):
                diffs, resolved_diffs, served, gens, hits_n = 0, 0, Counter(), set(), 0
                fallbacks = 0  # hybrid searches that fell back to keywords (none expected)
                examples = []
                for q in queries:
                    a = primary.search(actor, q, limit=10, mode=mode)
                    with rep.session() as s:
                        b = rep.search(actor, q, limit=10, mode=mode)
                        rb = [rep.resolve(actor, h.citation()).as_dict() for h in b]
                    ra = [primary.resolve(actor, h.citation()).as_dict() for h in a]
                    served.update(x.server.split()[0] for x in s.served)
                    gens.update(x.generation for x in s.served)
                    ka = [(h.document_id, h.version, h.passage, h.score, h.content_sha256) for h in a]
                    kb_ = [(h.document_id, h.version, h.passage, h.score, h.content_sha256) for h in b]
                    hits_n += len(ka)
                    fallbacks += a.fallback is not None
                    if ka != kb_ or a.fallback != b.fallback:
                        diffs += 1
                        if len(examples) < 3:
                            examples.append({"query": q, "primary": ka[:3], "replica": kb_[:3]})
                    if ra != rb:
                        resolved_diffs += 1
                out[mode] = {"differences": diffs, "citation_differences": resolved_diffs, "hits": hits_n,
                             "fallbacks": fallbacks,
                             "served_by": dict(served), "replica_generations": sorted(gens),
                             "primary_generation": p.generation("scifact"), "examples": examples}
    return out


# -- read your writes ----------------------------------------------------------------------------
def ryw(args: argparse.Namespace) -> dict[str, Any]:
    import hashlib

    import httpx
    import yaml

    from evidex import KnowledgeBase
    from pgcluster import wait_replayed
    from service_helpers import BIN, Server

    rnd = random.Random(args.seed)
    with _cluster() as c, tempfile.TemporaryDirectory(prefix="evx-ryw-") as tmp_:
        tmp = Path(tmp_)
        p = c.primary("p")
        r1, r2 = c.replica(p, "r1"), c.replica(p, "r2")
        schema = "ryw"
        KnowledgeBase.open(p.url(schema), embedder="none").close()
        wait_replayed(p, r1), wait_replayed(p, r2)
        docs = tmp / "docs"
        docs.mkdir()
        policy = docs / "policy.md"
        key = "admin-key"
        config = tmp / "config.yaml"
        config.write_text(yaml.safe_dump({
            "sources": [{"id": "docs", "type": "files", "path": str(docs), "tenant": "acme",
                         "groups": ["staff"], "visibility": "internal"}],
            "store": {"default": {"url": p.url(schema), "replicas": [r1.url(schema), r2.url(schema)]},
                      "replica_wait_ms": args.wait_ms},
            "retrieval": {"embedder": "none", "mode": "keyword"},
            # Three requests a round, faster than a person: the per-key limit out of the way.
            "server": {"rate_limit_per_minute": 100_000,
                       "api_keys": [{"key_sha256": hashlib.sha256(key.encode()).hexdigest(), "name": key,
                                                 "tenant": "acme", "groups": ["staff"],
                                                 "visibilities": ["public", "internal"], "admin": True}]},
        }), encoding="utf-8")

        def write(i: int) -> None:
            policy.write_text(f"---\nid: policy\nversion: '{i}'\n---\n# Policy\n\nReturns within "
                              f"day{i} marker{i}.\n")

        write(0)
        server = Server([str(BIN / "evidex"), "--config", str(config), "serve", "--no-schedule"],
                        {"EVIDEX_CACHE_DIR": str(tmp / "cache")}, tmp / "server.log")
        stale: list[dict[str, object]] = []
        roles: Counter[str] = Counter()
        paused_rounds = 0
        round_s: list[float] = []
        headers = {"authorization": f"Bearer {key}"}
        try:
            with httpx.Client(base_url=server.url, timeout=60) as h:
                assert h.post("/v1/sync", json={}, headers=headers).status_code == 200
                paused = {r1.name: False, r2.name: False}
                for i in range(1, args.rounds + 1):
                    for r in (r1, r2):  # each replica's replay flipped at random
                        if rnd.random() < 0.3:
                            (r.resume_replay if paused[r.name] else r.pause_replay)()
                            paused[r.name] = not paused[r.name]
                    paused_rounds += any(paused.values())
                    t = time.perf_counter()
                    write(i)
                    synced = h.post("/v1/sync", json={}, headers=headers)
                    if synced.status_code != 200:
                        raise RuntimeError(f"round {i}: sync failed: {synced.text[:300]}")
                    doc = h.get("/v1/documents/policy", headers=headers)
                    found = h.post("/v1/search", json={"query": f"marker{i}", "mode": "keyword"},
                                   headers=headers)
                    round_s.append(time.perf_counter() - t)
                    roles[doc.headers.get("x-evidex-server", "?").split()[0]] += 1
                    hits = found.json().get("hits", []) if found.status_code == 200 else []
                    if (doc.status_code != 200 or doc.json().get("version") != str(i)
                            or not hits or hits[0].get("version") != str(i)):
                        stale.append({"round": i,
                                      "document": doc.status_code == 200 and doc.json().get("version"),
                                      "search": [x.get("version") for x in hits][:3], "paused": dict(paused)})
                for r in (r1, r2):
                    if paused[r.name]:
                        r.resume_replay()
        finally:
            server.stop()
    return {"rounds": args.rounds, "stale_reads": len(stale), "stale_examples": stale[:5],
            "rounds_with_replay_paused": paused_rounds, "document_reads_served_by": dict(roles),
            "replica_wait_ms": args.wait_ms, "round_ms_p50": _ms(_pct(round_s, 0.5)),
            "round_ms_max": _ms(max(round_s))}


# -- lag and torn reads ----------------------------------------------------------------------------
def _marker_doc(i: int, v: int) -> Any:
    from evidex import Document

    return Document(f"d{i}", "t", frozenset({"g"}), str(v), "\n\n".join(
        f"marker version{v} part {k} of d{i} " + " ".join(f"w{(i * 7 + k * 3 + j) % 97}" for j in range(12))
        for k in range(4)))


def lag(args: argparse.Namespace) -> dict[str, Any]:
    import psycopg

    from evidex import Actor, KnowledgeBase
    from evidex.store import ReplicaSettings
    from pgcluster import wait_replayed

    actor = Actor("t", frozenset({"g"}), visibilities=frozenset({"public", "internal"}))
    docs = args.passages // 4
    out: dict[str, Any] = {"passages_per_supersede": docs * 4}
    with _cluster() as c:
        p = c.primary("p")
        r = c.replica(p, "r")
        schema = "lag"
        with KnowledgeBase.open(p.url(schema), embedder="none") as writer:
            writer.ingest([_marker_doc(i, 0) for i in range(docs)])
            wait_replayed(p, r)

            # One connection polls the replica's generation (a new one per poll would add its
            # own setup time to every figure).
            poll = psycopg.connect(r.conninfo, autocommit=True)
            query = f"SELECT value FROM {schema}.meta WHERE key = 'generation'"

            def replica_at(gen: int) -> None:
                while int(poll.execute(query).fetchone()[0]) < gen:  # type: ignore[index]
                    time.sleep(0.0005)

            version = 0

            def supersede() -> tuple[int, float]:
                nonlocal version
                version += 1
                batch = [_marker_doc(i, version) for i in range(docs)]
                t0 = time.perf_counter()
                report = writer.ingest(batch)
                t1 = time.perf_counter()
                assert report.generation is not None and report.superseded == docs
                return report.generation, t1 - t0

            quiet, write_s = [], []
            for _ in range(args.supersedes):
                gen, took = supersede()
                returned = time.perf_counter()
                replica_at(gen)
                quiet.append(time.perf_counter() - returned)
                write_s.append(took)
            out["quiet"] = {"supersedes": len(quiet), "lag_ms_p50": _ms(_pct(quiet, 0.5)),
                            "lag_ms_max": _ms(max(quiet)), "supersede_write_ms_p50": _ms(_pct(write_s, 0.5))}
            # Searches on the replica on reader threads while supersedes go on.
            with KnowledgeBase.open(p.url(schema), replicas=[r.url(schema)],
                                    replica_settings=ReplicaSettings(max_lag_s=3600, wait_s=0.0)) as kb:
                done = [0]
                torn: list[str] = []
                served: Counter[str] = Counter()
                lock = threading.Lock()
                stop = threading.Event()

                def reader(seed: int) -> None:
                    h = KnowledgeBase(kb.store)
                    rnd = random.Random(seed)
                    while not stop.is_set():
                        with h.session() as s:
                            hits = h.search(actor, f"marker part w{rnd.randrange(97)}", limit=20,
                                            mode="keyword", max_per_document=None)
                        bad = [f"{x.document_id} v{x.version}: {x.quote[:40]}" for x in hits
                               if f"version{x.version} " not in x.quote]
                        if len({x.version for x in hits}) > 1:
                            bad.append(f"one search saw versions {sorted({x.version for x in hits})}")
                        with lock:
                            torn.extend(bad)
                            served.update(x.server.split()[0] for x in s.served)
                            done[0] += 1
                            if done[0] >= args.searches:
                                stop.set()

                threads = [threading.Thread(target=reader, args=(k,)) for k in range(args.readers)]
                t = time.perf_counter()
                for th in threads:
                    th.start()
                loaded: list[float] = []
                while not stop.is_set():
                    gen, _ = supersede()
                    returned = time.perf_counter()
                    replica_at(gen)
                    loaded.append(time.perf_counter() - returned)
                for th in threads:
                    th.join()
                out["under_load"] = {"searches": done[0], "readers": args.readers, "torn_reads": len(torn),
                                     "torn_examples": torn[:5], "served_by": dict(served),
                                     "supersedes_meanwhile": len(loaded),
                                     "lag_ms_p50": _ms(_pct(loaded, 0.5)), "lag_ms_max": _ms(max(loaded)),
                                     "seconds": round(time.perf_counter() - t, 1)}
            poll.close()
    return out


# -- moving a tenant -------------------------------------------------------------------------------
def _tenant_doc(tenant: str, i: int, version: str = "1", text: str = "") -> Any:
    from evidex import Document

    return Document(f"d{i}", tenant, frozenset({"g"}), version, text or "\n\n".join(
        f"alpha {tenant} document {i} part {k} "
        + " ".join(f"t{(i * 13 + k * 5 + j) % 997}" for j in range(20))
        for k in range(4)))


def move(args: argparse.Namespace) -> dict[str, Any]:
    from evidex import Actor, Document, KnowledgeBase
    from evidex.config import StoreConfig, StoreLocation
    from evidex.placement import Placement, move_tenant, open_knowledge

    actor = Actor("acme", frozenset({"g"}), visibilities=frozenset({"public", "internal"}))
    if args.corpus == "scifact":  # real text with passage vectors (the default model, cached)
        from evidex.evaluation import load_beir

        corpus = [Document(f"d{i}", "acme", frozenset({"g"}), "1", f"{title}\n\n{text}" if title else text,
                           title=title or None)
                  for i, (_, title, text) in enumerate(load_beir(SCIFACT).corpus)]
        embedder, others = None, 20
    else:
        corpus = [_tenant_doc("acme", j) for j in range(args.passages // 4)]
        embedder, others = "none", 200
    docs = len(corpus)
    out: dict[str, Any] = {"corpus": args.corpus, "documents": docs}
    with _cluster() as c:
        a, b = c.server("a"), c.server("b")
        src, dst = a.url("move"), b.url("move")
        old = Placement.of(StoreConfig.model_validate({"default": src}), None)
        t = time.perf_counter()
        with KnowledgeBase.open(src, embedder=embedder) as kb:
            for i in range(0, docs, 500):
                # SciFact as one passage per abstract, the way every SciFact figure splits it
                # (and the embedding cache holds it); the synthetic corpus in 4 passages each.
                kb.ingest(corpus[i:i + 500], split="document" if args.corpus == "scifact" else "paragraph")
            kb.ingest([_tenant_doc("globex", j) for j in range(others)])
        out["ingest_s"] = round(time.perf_counter() - t, 1)
        expected = {f"d{i}": "1" for i in range(docs)}
        errors: list[str] = []
        counts = Counter()
        stop = threading.Event()
        load = open_knowledge(old)
        rnd = random.Random(args.seed)
        read_s: list[float] = []

        def writer() -> None:
            n = docs
            while not stop.is_set():
                try:
                    op = rnd.random()
                    if op < 0.6:
                        load.ingest(_tenant_doc("acme", n, "1"))
                        expected[f"d{n}"] = "1"
                        n += 1
                    elif op < 0.85:
                        victim = f"d{rnd.randrange(n)}"
                        v = str(int(expected.get(victim, "0")) + 1)
                        load.ingest(Document(victim, "acme", frozenset({"g"}), v, f"superseded {v} alpha"))
                        expected[victim] = v
                    else:
                        victim = rnd.choice(list(expected))
                        if load.remove("acme", victim):
                            del expected[victim]
                    counts["writes"] += 1
                    time.sleep(0.01)  # a steady trickle, not a flood
                except Exception as exc:
                    errors.append(f"write: {type(exc).__name__}: {exc}")
                    return

        def reader() -> None:
            while not stop.is_set():
                try:
                    t0 = time.perf_counter()
                    load.search(actor, f"alpha t{rnd.randrange(997)}", mode="keyword")
                    load.document(actor, "d0")
                    read_s.append(time.perf_counter() - t0)
                    counts["reads"] += 1
                except Exception as exc:
                    errors.append(f"read: {type(exc).__name__}: {exc}")
                    return

        threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
        for th in threads:
            th.start()
        try:
            time.sleep(0.5)
            t = time.perf_counter()
            report = move_tenant("acme", old.location("acme"), StoreLocation(url=dst))
            out["move_s"] = round(time.perf_counter() - t, 1)
            time.sleep(1.0)  # writes and reads after the switch go on, through the mark
        finally:
            stop.set()
            for th in threads:
                th.join()
            load.close()
        from backends import raw

        got = dict(raw(dst, "SELECT doc_id, version FROM documents WHERE tenant = 'acme'"))
        rows = raw(dst, "SELECT count(*), count(DISTINCT doc_id) FROM documents WHERE tenant = 'acme'")[0]
        lost = sorted(set(expected) - set(got))
        wrong = sorted(k for k in set(expected) & set(got) if expected[k] != got[k])
        out.update({
            "report": report.as_dict(), "writes_during_move": counts["writes"],
            "reads_during_move": counts["reads"], "read_ms_p50": _ms(_pct(read_s, 0.5)),
            "read_ms_max": _ms(max(read_s)) if read_s else None, "errors": len(errors),
            "error_examples": errors[:3], "lost": len(lost), "wrong_version": len(wrong),
            "extra_on_target": len(set(got) - set(expected)), "duplicated": rows[0] - rows[1],
            "left_on_source": raw(src, "SELECT count(*) FROM documents WHERE tenant = 'acme'")[0][0],
            "other_tenant_untouched": raw(src, "SELECT count(*) FROM documents "
                                          "WHERE tenant = 'globex'")[0][0] == others,
        })
        with KnowledgeBase.open(dst) as kb:
            out["target_check_ok"] = kb.check().ok
    return out


# -- failover --------------------------------------------------------------------------------------
def failover(args: argparse.Namespace) -> dict[str, Any]:
    from evidex import Actor, KnowledgeBase, ServerUnavailable
    from evidex.store import ReplicaSettings
    from pgcluster import wait_replayed

    actor = Actor("acme", frozenset({"g"}), visibilities=frozenset({"public", "internal"}))
    out: dict[str, Any] = {}
    with _cluster() as c:
        p = c.primary("p")
        r1, r2 = c.replica(p, "r1"), c.replica(p, "r2")
        schema = "fo"
        KnowledgeBase.open(p.url(schema), embedder="none").close()
        wait_replayed(p, r1), wait_replayed(p, r2)
        settings = ReplicaSettings(max_lag_s=10, wait_s=0.5, probe_s=1.0, timeout_s=4.0)
        with KnowledgeBase.open(p.url(schema), replicas=[r1.url(schema), r2.url(schema)],
                                replica_settings=settings) as kb:
            kb.ingest([_tenant_doc("acme", i) for i in range(500)])
            stop = threading.Event()
            failed: list[str] = []
            reads = Counter()

            def reader(seed: int) -> None:
                h = KnowledgeBase(kb.store)
                rnd = random.Random(seed)
                while not stop.is_set():
                    try:
                        with h.session() as s:
                            h.search(actor, f"alpha t{rnd.randrange(997)}", mode="keyword")
                        reads[s.served[0].server.split()[0] if s.served else "?"] += 1
                    except Exception as exc:
                        failed.append(f"{type(exc).__name__}: {exc}")

            def phase(seconds: float, action: Callable[[], None] | None = None) -> None:
                threads = [threading.Thread(target=reader, args=(k,)) for k in range(4)]
                for th in threads:
                    th.start()
                time.sleep(seconds / 2)
                if action is not None:
                    action()
                time.sleep(seconds / 2)
                stop.set()
                for th in threads:
                    th.join()
                stop.clear()

            killed_at = [0.0]

            def kill() -> None:
                killed_at[0] = time.monotonic()
                r1.kill()

            phase(args.seconds, kill)
            out["replica_killed"] = {"reads": sum(reads.values()), "served_by": dict(reads),
                                     "failed_reads": len(failed), "failed_examples": failed[:3]}
            r1.start()
            t = time.monotonic()
            while not any(s["state"] == "ok" and str(s["server"]).endswith(f":{r1.port}/postgres")
                          for s in kb.servers()):
                if time.monotonic() - t > 60:
                    break
                time.sleep(0.05)
            out["replica_killed"]["rejoined_after_restart_s"] = round(time.monotonic() - t, 2)
            # The primary stopped: writes fail with one error, reads go on on the replicas.
            failed.clear()
            reads.clear()
            write_errors: list[tuple[float, str]] = []

            def stop_primary() -> None:
                p.stop()
                for i in range(args.write_attempts):
                    t0 = time.monotonic()
                    try:
                        kb.ingest(_tenant_doc("acme", 10_000 + i))
                        write_errors.append((time.monotonic() - t0, "succeeded"))
                    except ServerUnavailable as exc:
                        write_errors.append((time.monotonic() - t0, str(exc)))

            phase(args.seconds, stop_primary)
            p.start()
            t = time.monotonic()
            while True:
                try:
                    kb.ingest(_tenant_doc("acme", 20_000))
                    break
                except ServerUnavailable:
                    if time.monotonic() - t > 60:
                        raise
                    time.sleep(0.1)
            out["primary_stopped"] = {
                "write_attempts": len(write_errors),
                "write_fail_s_max": round(max(x for x, _ in write_errors), 3),
                "write_fail_s_p50": round(_pct([x for x, _ in write_errors], 0.5), 3),
                "writes_succeeded": sum(m == "succeeded" for _, m in write_errors),
                "distinct_errors": sorted({m for _, m in write_errors}),
                "reads": sum(reads.values()), "served_by": dict(reads), "failed_reads": len(failed),
                "failed_examples": failed[:3], "writes_again_after_restart_s": round(time.monotonic() - t, 2)}
            wait_replayed(p, r1, timeout=60), wait_replayed(p, r2, timeout=60)  # the last write everywhere
            out["primary_frozen"] = _frozen_primary(kb, p, actor, args.seconds)
    return out


def _frozen_primary(kb: Any, p: Any, actor: Any, seconds: float) -> dict[str, Any]:
    """The primary's processes stopped with SIGSTOP (a hung server: connections open, nothing
    answers). A write started at that moment waits on its connection (nothing bounds a
    statement the server never answers); the probe marks the primary down within
    ``timeout_s``; writes started after that fail at once. Reads go on meanwhile."""
    import psutil

    from evidex import ServerUnavailable

    root = psutil.Process(p.pid())
    procs = [root, *root.children(recursive=True)]
    reads, failed = [0], []
    stop = threading.Event()
    first: dict[str, Any] = {}

    def write(n: int) -> tuple[float, str]:
        t0 = time.monotonic()
        try:
            kb.ingest(_tenant_doc("acme", 30_000 + n))
            return time.monotonic() - t0, "succeeded"
        except ServerUnavailable as exc:
            return time.monotonic() - t0, str(exc)

    def in_flight() -> None:
        first["seconds"], first["outcome"] = write(0)

    def reader() -> None:
        while not stop.is_set():
            try:
                kb.search(actor, "alpha t1", mode="keyword")
                reads[0] += 1
            except Exception as exc:
                failed.append(f"{type(exc).__name__}: {exc}")

    for proc in procs:
        proc.suspend()
    frozen = time.monotonic()
    threads = [threading.Thread(target=in_flight, daemon=True), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    later: list[tuple[float, str]] = []
    try:
        while next(s for s in kb.servers() if s["role"] == "primary")["state"] != "down":
            if time.monotonic() - frozen > 60:
                break
            time.sleep(0.01)
        down_after = time.monotonic() - frozen
        later = [write(n) for n in range(1, 4)]
        time.sleep(seconds / 2)
    finally:
        stop.set()
        for proc in procs:
            proc.resume()
        resumed = time.monotonic()
        threads[1].join()
    threads[0].join(60)
    return {"down_after_s": round(down_after, 2),
            "write_in_flight_at_freeze": {"waited_s": round(first.get("seconds", float("nan")), 2),
                                          "outcome": first.get("outcome", "still waiting"),
                                          "resumed_after_s": round(resumed - frozen, 2)},
            "writes_after_down": len(later), "write_fail_s": [round(x, 3) for x, _ in later],
            "errors": sorted({m for _, m in later}), "reads": reads[0], "failed_reads": len(failed),
            "failed_examples": failed[:3]}


# -- single-server speed against main --------------------------------------------------------------
def speed_worker(args: argparse.Namespace) -> dict[str, Any]:
    """Run under either checkout's Python (only what both have): build the SciFact store, or
    time the 300 queries in each mode after one warm-up pass."""
    from evidex import Actor, KnowledgeBase
    from evidex.evaluation import EVAL_LIMITS, load_beir

    if args.build:
        return {"build_s": round(_build_scifact(args.db, args.embedder), 1)}
    actor = Actor("eval", frozenset({"eval"}), visibilities=frozenset({"public", "internal"}))
    queries = list(load_beir(SCIFACT).queries.values())
    out: dict[str, Any] = {}
    with KnowledgeBase.open(args.db, query_limits=EVAL_LIMITS, max_limit=100, vector_timeout_ms=None) as kb:
        for mode in ("keyword", "hybrid"):
            for q in queries:  # warm: pages, segments, query vectors
                kb.search(actor, q, limit=10, mode=mode)
            times = []
            for q in queries:
                t = time.perf_counter()
                kb.search(actor, q, limit=10, mode=mode)
                times.append(time.perf_counter() - t)
            out[mode] = {"median_ms": round(statistics.median(times) * 1000, 3),
                         "mean_ms": round(statistics.fmean(times) * 1000, 3)}
    return out


def speed(args: argparse.Namespace) -> dict[str, Any]:
    sides = {"this": (sys.executable, ROOT), "main": (str(Path(args.main) / ".venv" / "bin" / "python"),
                                                       Path(args.main))}
    here = Path(__file__).resolve()

    def run(side: str, *extra: str) -> dict[str, Any]:
        python, _ = sides[side]
        env = {**os.environ, "PYTHONPATH": ""}
        proc = subprocess.run([python, str(here), "speed-worker", *extra], capture_output=True, text=True,
                              env=env, timeout=3600)
        if proc.returncode:
            raise RuntimeError(f"{side}: {proc.stderr[-2000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])

    commit = subprocess.run(["git", "-C", args.main, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    out: dict[str, Any] = {"main_commit": commit, "rounds": args.rounds}
    with _cluster() as c, tempfile.TemporaryDirectory(prefix="evx-speed-") as tmp:
        server = c.server("s") if "postgres" in args.backends else None
        for backend in args.backends.split(","):
            dbs = {side: str(Path(tmp) / f"{side}.db") if backend == "sqlite" else server.url(f"speed_{side}")
                   for side in sides}
            built = {side: run(side, "--db", dbs[side], "--build") for side in sides}
            samples: dict[str, dict[str, list[float]]] = {s: {"keyword": [], "hybrid": []} for s in sides}
            for k in range(args.rounds):
                order = list(sides) if k % 2 == 0 else list(sides)[::-1]
                for side in order:
                    got = run(side, "--db", dbs[side])
                    for mode in ("keyword", "hybrid"):
                        samples[side][mode].append(got[mode]["median_ms"])
            res: dict[str, Any] = {"build_s": {s: built[s]["build_s"] for s in sides}}
            for mode in ("keyword", "hybrid"):
                med = {s: statistics.median(samples[s][mode]) for s in sides}
                res[mode] = {"this_median_ms": med["this"], "main_median_ms": med["main"],
                             "ratio_this_over_main": round(med["this"] / med["main"], 3),
                             "per_round_ms": samples}
                res[mode]["per_round_ms"] = {s: samples[s][mode] for s in sides}
            out[backend] = res
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    e = sub.add_parser("equal")
    e.add_argument("--queries", type=int, default=300)
    e.add_argument("--embedder", default=None)
    r = sub.add_parser("ryw")
    r.add_argument("--rounds", type=int, default=1000)
    r.add_argument("--wait-ms", type=int, default=200)
    r.add_argument("--seed", type=int, default=1)
    lg = sub.add_parser("lag")
    lg.add_argument("--passages", type=int, default=1000)
    lg.add_argument("--supersedes", type=int, default=20)
    lg.add_argument("--searches", type=int, default=10_000)
    lg.add_argument("--readers", type=int, default=3)
    m = sub.add_parser("move")
    m.add_argument("--passages", type=int, default=100_000, help="synthetic corpus: 4 per document")
    m.add_argument("--corpus", choices=("synthetic", "scifact"), default="synthetic")
    m.add_argument("--seed", type=int, default=1)
    f = sub.add_parser("failover")
    f.add_argument("--seconds", type=float, default=6.0)
    f.add_argument("--write-attempts", type=int, default=5)
    s = sub.add_parser("speed")
    s.add_argument("--main", default="/work/main")
    s.add_argument("--rounds", type=int, default=3)
    s.add_argument("--backends", default="sqlite,postgres")
    w = sub.add_parser("speed-worker")
    w.add_argument("--db", required=True)
    w.add_argument("--build", action="store_true")
    w.add_argument("--embedder", default=None)
    for p in (e, r, lg, m, f, s):
        p.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    fn = {"equal": equal, "ryw": ryw, "lag": lag, "move": move, "failover": failover, "speed": speed,
          "speed-worker": speed_worker}[args.command]
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = os.getloadavg()
    result = fn(args)
    if args.command != "speed-worker":
        result = {"command": " ".join(sys.argv[1:]), "date": started, "machine": f"{platform.node()} "
                  f"{platform.machine()}, {os.cpu_count()} cores", "load_before": [round(x, 2) for x in load],
                  "load_after": [round(x, 2) for x in os.getloadavg()], **result}
    text = json.dumps(result, default=str)
    print(text)
    if getattr(args, "out", None):
        args.out.write_text(json.dumps(result, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
