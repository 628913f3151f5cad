"""Shared fixtures: real SQLite files in pytest's temporary folders, the example collection."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evidex import Actor, KnowledgeBase
from evidex.ingest import load_paths

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SCIFACT = ROOT.parent / "shared" / "data" / "beir" / "scifact"


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    base = KnowledgeBase.open(tmp_path / "kb.db")
    yield base
    base.close()


@pytest.fixture
def example_kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    """The bundled collection, old policy version first and then superseded, as `make run`."""
    base = KnowledgeBase.open(tmp_path / "examples.db")
    for folder in ("versions", "collection"):
        loaded = load_paths([EXAMPLES / folder], {"tenant": "acme"})
        assert not loaded.rejected, loaded.rejected
        base.ingest(loaded.documents, split="heading")
    yield base
    base.close()


@pytest.fixture
def staff() -> Actor:
    return Actor("acme", frozenset({"staff"}))


@pytest.fixture
def customer() -> Actor:
    return Actor("acme", frozenset({"customers"}), visibilities=frozenset({"public"}))


@pytest.fixture
def hr() -> Actor:
    return Actor("acme", frozenset({"hr"}), visibilities=frozenset({"public", "internal", "confidential"}))


# Unit tests run on the tiny deterministic embedder unless a test asks for a real model, and
# keep their embedding cache out of the user's home.
@pytest.fixture(autouse=True)
def _test_embedder(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    monkeypatch.setenv("EVIDEX_EMBEDDER", "hash-test")
    monkeypatch.setenv("EVIDEX_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "embed-cache"))
