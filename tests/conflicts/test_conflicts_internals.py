"""conflicts' internals (``conflicts._detect``): its claims cache and scanner kind, and its
thresholds set in a fresh process; detection itself is tested through public names in
test_conflicts.py.

Conflict detection reads a passage text's claims (its sentences stating values) once: kept in
this process and in the embedding cache file, so a new store built from known texts scans none
of them again, finding exactly the same conflicts; what the file keeps is numbers and offsets,
never text, under a kind that changes with the scanner's code."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from evidex import Document, KnowledgeBase
from evidex.conflicts import _detect as _conflicts
from evidex.embed import EmbeddingCache
from evidex.model import Conflict

STAFF = frozenset({"staff"})
CARE = Document("care", "acme", STAFF, "1",
                "# Re-proofing\n\nRe-proof your waterproof shell jacket every 12 months with the "
                "spray-on product.\n", title="Caring for shell jackets", language="en")
SHELL = Document("shell", "acme", STAFF, "1",
                 "# Care\n\nRe-proof your waterproof shell jacket every 6 months with the spray-on "
                 "product.\n\n# Price\n\nThe shell jacket costs 329.00 €.\n\n# Sizes\n\nS to XXL.\n",
                 title="Shell jacket", language="en")


def found(c: Conflict) -> tuple[object, ...]:
    """A conflict as found (its recorded id and time belong to the store)."""
    return (c.kind, c.subject, dataclasses.astuple(c.a), dataclasses.astuple(c.b))


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the value scanner reads, starting with nothing kept in this process."""
    seen: list[str] = []
    real = _conflicts._scan
    monkeypatch.setattr(_conflicts, "_scan", lambda text: seen.append(text) or real(text))
    _conflicts.clear_value_cache()
    yield seen
    _conflicts.clear_value_cache()


def ingest(path: Path, cache: Path) -> list[tuple[object, ...]]:
    with KnowledgeBase.open(path, embed_cache=cache) as kb:
        return [found(c) for c in kb.ingest([CARE, SHELL], split="heading").conflicts]


def test_a_new_store_from_known_texts_scans_nothing_and_finds_the_same(tmp_path: Path,
                                                                       scans: list[str]) -> None:
    cache = tmp_path / "cache.sqlite"
    first = ingest(tmp_path / "a.db", cache)
    assert len(first) == 1 and first[0][0] == "period"
    # Every passage was scanned once: the two documents' four passages.
    assert len(scans) == len(set(scans)) == 4
    _conflicts.clear_value_cache()  # as a new process
    assert ingest(tmp_path / "b.db", cache) == first
    assert len(scans) == 4
    # Another cache file knows nothing: scanned again, the same found.
    assert ingest(tmp_path / "c.db", tmp_path / "other.sqlite") == first
    assert len(scans) == 4  # this process still knows the texts
    _conflicts.clear_value_cache()
    assert ingest(tmp_path / "d.db", tmp_path / "third.sqlite") == first
    assert len(scans) == 8


def test_results_of_other_scanner_code_are_never_read(tmp_path: Path, scans: list[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache.sqlite"
    first = ingest(tmp_path / "a.db", cache)
    with sqlite3.connect(cache) as c:
        [(kind, n)] = c.execute("SELECT kind, count(*) FROM derived GROUP BY kind").fetchall()
        # Numbers and offsets only: no word of any passage is kept.
        for (data,) in c.execute("SELECT data FROM derived"):
            spans = json.loads(data)
            assert not any(w in data.lower() for w in ("proof", "jacket", "spray", "shell"))
            assert all(isinstance(a, int) and isinstance(b, int) for a, b, _ in spans)
    assert n == 4 and kind == _conflicts._scanner()
    _conflicts.clear_value_cache()
    # The scanner's code changed: its digest did, and every text is read afresh.
    monkeypatch.setattr(_conflicts, "_scanner", lambda: kind + "-changed")
    assert ingest(tmp_path / "b.db", cache) == first
    assert len(scans) == 8


def test_the_kept_spans_read_back_as_scanned() -> None:
    text = ("Open 10:00-20:00, Sundays 13:00 to 18:00 and from 9 uhr. It costs €6.95 or 1.000,50 EUR, "
            "10 % off.\nservice every 6 months, once a year or annually; returns within 30 days, "
            "zwei Wochen.\nSale on 15 January and March 3.")
    spans = _conflicts._scan(text)
    assert {v.kind for _, _, vs in spans for v in vs} >= {
        "time", "price:EUR", "percent", "period", "duration", "date"}
    assert _conflicts._decode(_conflicts._encode(spans)) == spans
    assert _conflicts._decode(_conflicts._encode([])) == []


def test_the_cache_keeps_derived_data_per_kind(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    try:
        keys = [f"{i:064x}" for i in range(700)]  # more than one query's worth
        cache.put_derived("one", {k: f"[{i}]" for i, k in enumerate(keys)})
        cache.put_derived("two", {keys[0]: "x"})
        assert cache.derived("one", keys) == {k: f"[{i}]" for i, k in enumerate(keys)}
        assert cache.derived("two", keys) == {keys[0]: "x"}
        cache.put_derived("two", {keys[0]: "y"})
        assert cache.derived("two", [keys[0], "f" * 64]) == {keys[0]: "y"}
        assert cache.derived("three", keys) == {}
    finally:
        cache.close()


def test_a_keyword_only_store_opens_no_cache_file_unless_given_one(
        tmp_path: Path, scans: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVIDEX_CACHE_DIR", str(tmp_path / "default"))
    with KnowledgeBase.open(tmp_path / "a.db", embedder="none") as kb:
        assert len(kb.ingest([CARE, SHELL], split="heading").conflicts) == 1
    assert not (tmp_path / "default").exists() and len(scans) == 4
    _conflicts.clear_value_cache()
    given = tmp_path / "given.sqlite"
    assert len(ingest_keyword_only(tmp_path / "b.db", given)) == 1
    _conflicts.clear_value_cache()
    assert len(ingest_keyword_only(tmp_path / "c.db", given)) == 1
    assert len(scans) == 8 and not (tmp_path / "default").exists()


def ingest_keyword_only(path: Path, cache: Path) -> list[Conflict]:
    with KnowledgeBase.open(path, embedder="none", embed_cache=cache) as kb:
        return list(kb.ingest([CARE, SHELL], split="heading").conflicts)


def test_the_cache_kind_covers_all_the_scanner_code() -> None:
    """The kind is a digest of the value scanner's and the sentence splitter's modules: that is
    all the code behind the kept spans only while neither imports other evidex code."""
    for f in (_conflicts.values, _conflicts.sentence_spans):
        tree = ast.parse(inspect.getsource(sys.modules[f.__module__]))
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [m for m in imported if m.startswith("evidex") or not m], (f.__module__, imported)
    assert _conflicts._scanner().startswith("conflict-values:")


#: Detection on the shop collection in a keyword-only store with loose rules (many candidate
#: documents chosen by their rarest words, many pairs compared), printing what it finds.
_KEYWORD_RUN = """
import dataclasses, json, sys, tempfile
from pathlib import Path
from evidex import KnowledgeBase
from evidex.ingest import load_paths
from evidex.conflicts import _detect as _conflicts
for k, v in {"SUBJECT_MIN": 0.3, "MIN_SHARED": 2, "PASSAGE_MIN": 0.8, "PASSAGE_SHARED": 1,
             "PASSAGE_RATIO": 1000.0}.items():
    setattr(_conflicts, k, v)
base = {"tenant": "acme", "groups": ["staff"], "visibility": None, "language": "en", "version": None}
with tempfile.TemporaryDirectory() as tmp, KnowledgeBase.open(Path(tmp) / "k.db", embedder="none") as kb:
    found = []
    for folder in ("site", "staff"):
        docs = load_paths([Path(sys.argv[1]) / folder], base).documents
        found += kb.ingest(docs, split="heading").conflicts
print(json.dumps([[c.kind, c.subject, dataclasses.astuple(c.a), dataclasses.astuple(c.b)] for c in found]))
"""


@pytest.mark.slow
def test_keyword_only_detection_is_the_same_in_every_process() -> None:
    """Candidate documents come from the rarest words; ties between equally rare words must not
    follow string hashing, which Python seeds anew in each process."""
    # Imported here: a module that imports them has every test marked slow (tests/conftest.py).
    import subprocess

    from service_helpers import BIN, EXAMPLES

    runs = []
    for seed in ("0", "1", "2"):
        out = subprocess.run([str(BIN / "python"), "-c", _KEYWORD_RUN, str(EXAMPLES / "shop")],
                             capture_output=True, text=True, check=True, timeout=300,
                             env={**os.environ, "PYTHONHASHSEED": seed})
        runs.append(json.loads(out.stdout))
    assert len(runs[0]) >= 10  # the loose rules compare many pairs
    assert runs[0] == runs[1] == runs[2]
