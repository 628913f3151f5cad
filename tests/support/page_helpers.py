"""The web page in Debian's headless Chromium, as the page tests drive it (Playwright, no browser
downloaded): the browser, a fresh tab that fails the test on any script error, sign-in and asking."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@contextmanager
def chromium() -> Iterator[Any]:
    assert Path(CHROMIUM).exists(), "Debian's chromium is missing: run `make browser`"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


@contextmanager
def tab(browser: Any, url: str, width: int = 1100, height: int = 1000) -> Iterator[Page]:
    """A new tab on ``url``; a script error on the page fails the test when the tab closes."""
    ctx = browser.new_context(viewport={"width": width, "height": height})
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(url)
    yield pg
    ctx.close()
    assert errors == []


def sign_in(page: Page, key: str) -> None:
    page.fill("#api-key", key)
    page.keyboard.press("Enter")
    page.wait_for_selector("#app:not([hidden])")


def ask(page: Page, question: str) -> None:
    page.fill("#question", question)
    page.keyboard.press("Enter")
    page.wait_for_selector("#answer [data-status]")
