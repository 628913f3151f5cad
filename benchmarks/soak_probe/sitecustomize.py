"""Memory probe for the soak's server: where does its resident size go?

Put this folder first on ``PYTHONPATH`` and set ``SOAK_DIAG`` to a file; every ``evidex serve``
started with that environment then appends one JSON line every 10 s: RSS (VmRSS, RssAnon),
glibc's ``mallinfo2`` (heap bytes ``m_arena``, mmapped ``m_hblkhd``, in use ``m_used``, free
``m_free``), Python's allocated blocks, the sizes of the process-wide memos, and every minute
the weights caches' bytes and the open handles and SQLite connections (a walk over all
objects). ``SOAK_TRIM=1`` also calls ``malloc_trim(0)`` after each sample (``rss_after_trim``).

    SOAK_DIAG=/tmp/diag.jsonl PYTHONPATH=benchmarks/soak_probe \\
        .venv/bin/python benchmarks/soak.py --minutes 10 --warmup-minutes 2

Experiments only: nothing in evidex imports it.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import sqlite3
import sys
import threading
import time
from typing import Any

_OUT = os.environ.get("SOAK_DIAG")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                               "usmblks", "fsmblks", "uordblks", "fordblks",
                                               "keepcost")]


def _status() -> dict[str, int]:
    with open("/proc/self/status") as f:
        return {k: int(v.split()[0]) for k, _, v in (ln.partition(":") for ln in f)
                if k in ("VmRSS", "RssAnon", "RssFile", "Threads")}


def _memos() -> dict[str, int]:
    out: dict[str, int] = {}
    support = sys.modules.get("evidex.decide._support")
    if support is not None:
        out["stem"] = support.stem.cache_info().currsize
        out["analysed"] = support._analysed.cache_info().currsize
    queries = sys.modules.get("evidex.embed._queries")
    if queries is not None:
        out["qvec"] = len(queries.query_vectors)
    return out


def _objects() -> dict[str, int]:
    cache_mod = sys.modules.get("evidex.retrieve._cache")
    kb_mod = sys.modules.get("evidex.kb")
    out = {"weights_caches": 0, "weights_bytes": 0, "kbs": 0, "sqlite_conns": 0}
    for o in gc.get_objects():
        t = type(o)
        if cache_mod is not None and t is cache_mod.WeightsCache:
            out["weights_caches"] += 1
            out["weights_bytes"] += o.nbytes
        elif kb_mod is not None and t is kb_mod.KnowledgeBase:
            out["kbs"] += 1
        elif t is sqlite3.Connection:
            out["sqlite_conns"] += 1
    return out


def _loop(path: str) -> None:
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    trim = os.environ.get("SOAK_TRIM") == "1"
    t0, n = time.time(), 0
    with open(path, "a") as f:
        while True:
            time.sleep(10)
            n += 1
            mi = libc.mallinfo2()
            rec: dict[str, Any] = {"t": round(time.time() - t0), **_status(), "m_arena": mi.arena,
                                   "m_hblkhd": mi.hblkhd, "m_used": mi.uordblks,
                                   "m_free": mi.fordblks, "py_blocks": sys.getallocatedblocks(),
                                   **_memos()}
            if n % 6 == 0:
                rec.update(_objects())
            if trim:
                libc.malloc_trim(0)
                rec["rss_after_trim"] = _status()["VmRSS"]
            f.write(json.dumps(rec) + "\n")
            f.flush()


if _OUT and "serve" in sys.argv:
    threading.Thread(target=_loop, args=(_OUT,), daemon=True, name="soak-probe").start()
