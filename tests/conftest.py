"""Shared fixtures: the test actors and the ``slow`` marking. The store fixtures (``kb``,
``any_kb``, ``example_kb``, the backends) and the tests' environment (the tiny deterministic
embedder, the embedding cache in a temporary folder) are tests/support/stores.py's."""

from __future__ import annotations

import inspect
import socket
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from actors import PUBLIC_INTERNAL
from evidex import Actor

pytest_plugins = ["stores"]


@pytest.fixture
def staff() -> Actor:
    return Actor("acme", frozenset({"staff"}), visibilities=PUBLIC_INTERNAL)


@pytest.fixture
def customer() -> Actor:
    return Actor("acme", frozenset({"customers"}), visibilities=frozenset({"public"}))


@pytest.fixture
def hr() -> Actor:
    return Actor("acme", frozenset({"hr"}), visibilities=frozenset({"public", "internal", "confidential"}))


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
