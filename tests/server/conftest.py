"""Fixtures of the page tests in this folder: one Chromium per module (``browser``) and a fresh
tab on the module's own ``site`` fixture (``page``; a module with another start page defines its
own ``page``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page

from page_helpers import chromium, tab


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser: Any, site: dict[str, Any]) -> Iterator[Page]:
    with tab(browser, site["url"] + "/") as pg:
        yield pg
