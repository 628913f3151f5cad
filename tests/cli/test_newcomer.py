"""What a newcomer meets on a clean clone (issue 39): the command line's text output as the
getting-started page shows it, the demo configuration ``make run`` serves, and a source's
Markdown table on the page (Chromium).

The CLI and the service run as real subprocesses on a temporary SQLite store (the tiny
deterministic embedder: these check what is shown, not ranking)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from cli_runner import EVIDEX, run_cli
from evidex import Document, KnowledgeBase
from evidex.config import load_config
from page_helpers import chromium, sign_in, tab
from service_helpers import Server, write_config

ROOT = Path(__file__).resolve().parents[2]
DEMO_CONFIG = ROOT / "examples" / "knowledge.config.yaml"
RETURNS = """---
id: returns
version: "2026-01"
groups: [customers]
visibility: public
title: Returns policy
---
# Returns policy

## Worn items

There is one exception, the **boot comfort promise**: hiking boots of our own brand may be
returned within the 30 days even if you have worn them outdoors.

| Item | Days |
|---|---|
| Boots | 30 |
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items()
           if not k.startswith(("EVIDEX_", "ACME_")) and k != "OPENAI_API_KEY"}
    out.update(PYTHONIOENCODING="utf-8", EVIDEX_EMBEDDER="hash-test",
               EVIDEX_CACHE_DIR=str(tmp_path_factory.mktemp("newcomer-cache")))
    return out


@pytest.fixture(scope="module")
def db(env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("newcomer-docs")
    (folder / "returns.md").write_text(RETURNS, encoding="utf-8")
    path = folder.parent / "newcomer.db"
    proc = run(env, "--db", path, "ingest", folder, "--tenant", "acme", "--split", "heading")
    assert proc.returncode == 0, proc.stderr
    return path


def run(env: dict[str, str], *args: object) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env=env)


def test_search_text_shows_a_sources_markdown_as_text(env: dict[str, str], db: Path) -> None:
    """`evidex search` printed "## Worn items ... the **boot comfort promise**" and table pipes."""
    proc = run(env, "--db", db, "search", "worn boots comfort promise", "--tenant", "acme",
               "--groups", "customers", "--mode", "keyword")
    assert proc.returncode == 0, proc.stderr
    quote = proc.stdout.splitlines()[2]
    assert "the boot comfort promise: hiking boots" in quote, proc.stdout
    for mark in ("## ", "**", "|"):
        assert mark not in quote, (mark, proc.stdout)


def test_a_failed_lookup_says_what_failed_in_text_as_in_json(env: dict[str, str], db: Path) -> None:
    """The getting-started CLI line for an order, without the tools token `make run` gives the
    service: the text output said only "reason: tool_unavailable"; --json named the variable."""
    proc = run(env, "--db", db, "--config", DEMO_CONFIG, "ask", "--as", "demo-customer",
               "Where is my order 12345?")
    assert proc.returncode == 0, proc.stderr
    reason = next(line for line in proc.stdout.splitlines() if line.strip().startswith("reason:"))
    assert reason.strip().startswith("reason: tool_unavailable (order-status: ")
    assert "ACME_TOOLS_TOKEN" in reason and "not set" in reason, reason


def test_a_decision_decline_keeps_its_one_word_reason(env: dict[str, str], db: Path) -> None:
    proc = run(env, "--db", db, "ask", "Who won the football world cup?", "--tenant", "acme",
               "--groups", "customers")
    assert proc.returncode == 0, proc.stderr
    assert any(line.strip() in ("reason: weak_evidence", "reason: no_evidence")
               for line in proc.stdout.splitlines()), proc.stdout


def test_the_demo_links_the_help_centre_it_serves() -> None:
    """The demo's help-centre passages showed "http://127.0.0.1:8765/help/... (not linked: host
    not on the allowlist)" although `make run` serves that page; only the collection's fictional
    host was a link."""
    config = load_config(DEMO_CONFIG)
    assert config.server is not None
    served = {urlsplit(str(s.sitemap)).netloc for s in config.sources if s.type == "web"}
    assert served and served <= set(config.server.allowed_link_hosts), served


# -- a source's Markdown table on the page ----------------------------------------------------------
PRICES = Document("repairs", "acme", frozenset({"customers"}), "2026-01",
                  "## Prices\n\n| Repair | Price |\n|---|---|\n| Zip slider replacement | 15 € |\n"
                  "| Patch on **shell** fabric | 19 € |\n\nRepairs covered by the warranty are free.",
                  title="Repair service", visibility="public", language="en")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("newcomer-page")
    kb = KnowledgeBase.open(tmp / "kb.db", embedder="hash-test",
                            embed_cache=tmp / "cache" / "embeddings.sqlite")
    kb.ingest([PRICES], split="heading")
    kb.close()
    server = Server([str(EVIDEX), "--db", str(tmp / "kb.db"), "serve", "--config",
                     str(write_config(tmp / "config.yaml"))],
                    {"EVIDEX_CACHE_DIR": str(tmp / "cache")}, tmp / "serve.log")
    try:
        yield server.url
    finally:
        server.stop()


def test_a_sources_table_is_shown_row_by_row_without_pipes(site: str) -> None:
    """The demo's search for "worn hiking boots" listed the repair prices as "| Repair | Price |
    |---|---| | Zip slider replacement | 15 € |"."""
    with chromium() as browser, tab(browser, site + "/") as page:
        sign_in(page, "acme-customer-key")
        page.click("#view-search")
        page.fill("#query", "zip slider replacement price")
        page.keyboard.press("Enter")
        page.wait_for_selector("#hits .hit")
        shown = page.inner_text("#hits .hit .quote")
        assert shown.splitlines() == ["Prices", "", "Repair · Price", "Zip slider replacement · 15 €",
                                      "Patch on shell fabric · 19 €", "", "Repairs covered by the "
                                      "warranty are free."], shown
        assert page.locator("#hits .hit .quote strong").all_inner_texts() == ["Prices", "shell"]
