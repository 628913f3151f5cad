"""``open_configured``: the one opener of a configured store, for the command line, the service,
MCP and the scheduler alike: the configuration's settings reach every handle (MCP's once
lacked the vector leg's deadline), and a missing store is refused unless the caller creates."""

from __future__ import annotations

from pathlib import Path

import pytest

from evidex import Document, EvidexError, KnowledgeBase
from evidex.config import Config, StoreLocation
from evidex.placement import Placement, open_configured
from evidex.store import store_exists


def _config() -> Config:
    return Config.model_validate({"retrieval": {"analyzer": "english", "embedder": "none",
                                                "vector": {"timeout_ms": 1234}}})


def _placement(db: Path) -> Placement:
    return Placement(StoreLocation.model_construct(url=str(db), replicas=()))


def test_every_way_of_opening_gets_the_configured_vector_deadline(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    with KnowledgeBase.open(db, analyzer="english", embedder="none") as kb:
        kb.ingest(Document("d", "acme", frozenset({"g"}), "1", "Alpha beta.", visibility="public"))
    for options in ({}, {"as_is": True}, {"create": True}):  # CLI, service and MCP, scheduler
        with open_configured(_config(), _placement(db), **options) as knowledge:  # type: ignore[arg-type]
            assert knowledge.for_tenant("acme").vector_timeout_ms == 1234, options


def test_a_missing_store_is_refused_unless_the_caller_creates_it(tmp_path: Path) -> None:
    db = tmp_path / "missing.db"
    with pytest.raises(EvidexError, match="no store at"):
        open_configured(_config(), _placement(db))
    assert not store_exists(str(db))  # refusing created nothing
    with open_configured(_config(), _placement(db), create=True) as knowledge:
        assert knowledge.analyzer == "english" and knowledge.store.embedder == "none"  # the configured ones
    assert store_exists(str(db))
