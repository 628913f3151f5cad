"""The page's configuration (server/_page.py): the demo key is suggested on the sign-in form only
when `make run` names it (EVIDEX_DEMO_KEY) and the configuration knows it (issue 39)."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

from evidex.config import ServerSettings
from evidex.server import render_page

DEMO_KEY_ENV = "EVIDEX_DEMO_KEY"  # the variable `make run` sets (server/_page.py reads it)

SETTINGS = ServerSettings(api_keys=[{"key_sha256": hashlib.sha256(b"evidex-demo-customer").hexdigest(),
                                     "name": "demo-customer", "tenant": "acme"}])


def config_of(page: bytes) -> dict:
    m = re.search(rb'<script id="evidex-config" type="application/json">(.*?)</script>', page)
    assert m
    return json.loads(m.group(1))


def test_the_demo_key_is_suggested_only_when_named_and_known(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DEMO_KEY_ENV, raising=False)
    assert config_of(render_page(SETTINGS))["demo"] is None  # a deployment suggests no key
    monkeypatch.setenv(DEMO_KEY_ENV, "evidex-demo-customer")
    assert config_of(render_page(SETTINGS))["demo"] == {"key": "evidex-demo-customer",
                                                         "name": "demo-customer", "tenant": "acme"}
    # A key the configuration does not know would be refused at sign-in: never suggested.
    assert config_of(render_page(SETTINGS, "evidex-demo-typo"))["demo"] is None
    assert config_of(render_page(SETTINGS, ""))["demo"] is None
