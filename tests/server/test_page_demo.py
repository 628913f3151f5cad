"""The web page of the `make run` demo in Debian's headless Chromium (issue 39's page defects).

The demo is built as the Makefile builds it (tests/support/demo_helpers.py: the example site, tools
service and inbox as processes, a sync of examples/knowledge.config.yaml with the default model,
`evidex serve` with EVIDEX_DEMO_KEY). Each defect has a test that fails without its fix:

* source Markdown shown raw ("## Worn items", "**boot comfort promise**") in passages and paths;
* sources numbered with gaps ([2] with no [1]) and the Sources list repeating number and title;
* a live lookup's source line showing its URL template with ``{customer_id}``;
* the "Sent" handoff button looking clickable;
* "Signed in" not saying as whom; no hint of the demo key on the demo's sign-in form.

Screenshots go to test-artifacts/ and are compared by layout (element boxes and their relations,
tests/data/page-layout/), not by pixels: fonts and anti-aliasing differ between machines.
A declined answer's ``related`` passages come from the real service in one test; another stubs
the answer response to pin the page's rules (at most 3, Markdown marks removed).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, Route

import page_helpers
from cli_runner import EVIDEX
from demo_helpers import DEMO_KEYS, Demo, running_demo
from page_helpers import ask, tab
from service_helpers import ROOT

pytestmark = pytest.mark.slow

ARTIFACTS = ROOT / "test-artifacts"
LAYOUTS = Path(__file__).resolve().parents[1] / "data" / "page-layout"
SCREENSHOT = ROOT / "docs" / "assets" / "page.png"
OPS_SCREENSHOT = ROOT / "docs" / "assets" / "operators.png"
RAW_MARKDOWN = re.compile(r"(^|\n)#{1,6} |\*\*|__")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    with running_demo(tmp_path_factory.mktemp("demo")) as d:
        yield d


@pytest.fixture
def page(browser: Any, demo: Demo) -> Iterator[Page]:
    with tab(browser, demo.url + "/", height=900) as pg:
        yield pg


def sign_in(page: Page, key: str = DEMO_KEYS["customer"]) -> None:
    page_helpers.sign_in(page, key)


def boxes(page: Page, selectors: dict[str, str]) -> dict[str, list[int]]:
    out = {}
    for name, sel in selectors.items():
        b = page.locator(sel).first.bounding_box()
        assert b is not None, f"{name} ({sel}) is not shown"
        out[name] = [round(b["x"]), round(b["y"]), round(b["width"]), round(b["height"])]
    return out


def same_layout(page: Page, name: str, selectors: dict[str, str], tolerance: int = 12) -> None:
    """The screenshot's layout against tests/data/page-layout/NAME.json: each element's box within
    ``tolerance`` px (EVIDEX_UPDATE_LAYOUT=1 rewrites the file after a deliberate change)."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    got = boxes(page, selectors)
    path = LAYOUTS / f"{name}.json"
    if os.environ.get("EVIDEX_UPDATE_LAYOUT") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, indent=1) + "\n", encoding="utf-8")
    want = json.loads(path.read_text(encoding="utf-8"))
    assert set(got) == set(want)
    off = {k: (got[k], want[k]) for k in want
           if any(abs(a - b) > tolerance for a, b in zip(got[k], want[k], strict=True))}
    assert not off, f"layout of {name} moved (got, want): {off}"


# -- sign-in ------------------------------------------------------------------------------------
def test_the_demo_sign_in_form_names_the_demo_key(page: Page) -> None:
    page.wait_for_selector("#demo-hint:not([hidden])")
    hint = page.inner_text("#demo-hint")
    assert "evidex-demo-customer" in hint and "demo-customer" in hint and "acme" in hint
    same_layout(page, "signin", {"header": "header.top", "card": "#signin", "key": "#api-key",
                                 "hint": "#demo-hint", "submit": "#signin-form button"})
    # The hint sits between the key field and the privacy note, inside the card.
    b = boxes(page, {"key": "#api-key", "hint": "#demo-hint", "note": "#signin-form .hint:not(#demo-hint)"})
    assert b["key"][1] < b["hint"][1] < b["note"][1]


def test_signed_in_says_as_whom(page: Page) -> None:
    sign_in(page)
    assert page.inner_text("#session-label") == "Signed in as demo-customer (acme)"
    page.reload()
    page.wait_for_selector("#app:not([hidden])")
    page.wait_for_function("document.getElementById('session-label').textContent.includes('as ')")
    assert page.inner_text("#session-label") == "Signed in as demo-customer (acme)"
    # On the header's row, at its right end.
    b = boxes(page, {"header": "header.top", "label": "#session-label", "out": "#sign-out"})
    assert b["label"][0] + b["label"][2] <= b["out"][0] and b["out"][0] + b["out"][2] > b["header"][2] - 40


# -- Markdown -------------------------------------------------------------------------------------
def test_passages_and_section_paths_show_markdown_formatted_never_raw(page: Page) -> None:
    sign_in(page)
    page.click("#view-search")
    page.fill("#query", "boot comfort promise worn hiking boots")
    page.keyboard.press("Enter")
    page.wait_for_selector("#hits .hit")
    hits = page.inner_text("#hits")
    assert "boot comfort promise" in hits and not RAW_MARKDOWN.search(hits), hits
    assert page.locator("#hits .quote strong", has_text="boot comfort promise").count() >= 1
    page.locator("#hits .hit button").first.click()
    page.wait_for_selector("#resolve-badge[data-state]")
    panel = page.inner_text("#passage")
    assert not RAW_MARKDOWN.search(panel), panel
    assert page.locator(".section-text mark").count() >= 1
    # Raw HTML in a source stays text: the page builds elements only for Markdown's own marks.
    assert page.locator(".section-text script, .section-text img, .section-text a").count() == 0


# -- answers: numbering, sources, live lookups -----------------------------------------------------
def _chips(page: Page) -> list[str]:
    return page.locator("#answer .answer-text .chip").all_inner_texts()


def test_real_answers_number_their_sources_from_one_without_gaps(page: Page) -> None:
    sign_in(page)
    for q in ("Can I return worn hiking boots?", "Do my points ever expire?", "How long does delivery take?"):
        ask(page, q)
        if page.locator("#answer .answer-text[data-status=answered]").count() == 0:
            continue
        shown = sorted({int(c.strip("[]")) for c in _chips(page)})
        assert shown == list(range(1, len(shown) + 1)), (q, shown)
        lines = page.locator("#answer .sources li").all_inner_texts()
        for line in lines:  # "[1] Title › Section": the number and the title once each
            assert re.match(r"^\[\d+\] ", line) and not re.match(r"^\d+\.", line), line
            title = line.split(" ", 1)[1].split(" › ")[0]
            assert line.count(title) == 1, line
            assert not RAW_MARKDOWN.search(line), line


def _stub_answer(page: Page, body: dict[str, Any]) -> None:
    def handle(route: Route) -> None:
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))
    page.route("**/v1/answer", handle)


CITATION = {"kind": "passage", "document_id": "help-centre/returns", "version": "1",
            "content_sha256": "ab" * 32, "passage": 3,
            "quote": "## Worn items\n\nWe cannot accept items that have been **worn outdoors**.",
            "start": 0, "end": 10, "heading_path": ["Returns policy", "## Worn items"],
            "anchor": "worn-items", "title": "Returns policy", "source_url": "http://127.0.0.1/help/returns"}


def test_a_left_out_source_leaves_no_gap_and_is_described_in_words(page: Page) -> None:
    """The service numbers sources before a flagged one is dropped, so an answer may cite [2]
    alone (stubbed response: which sources get dropped depends on the answer decision, which
    issue 36 is rebuilding)."""
    sign_in(page)
    _stub_answer(page, {"status": "answered", "text": "We cannot accept worn items. [2]",
                        "citations": [{**CITATION, "n": 2}], "reason": None, "handoff": None,
                        "trace": {"dropped": [{"document_id": "community/x", "why": "flagged_untrusted",
                                               "flags": ["override"]}]}})
    ask(page, "Can I return a worn jacket?")
    assert _chips(page) == ["[1]"]
    assert page.locator("#answer .sources li").all_inner_texts() == ["[1] Returns policy › Worn items"]
    notice = page.inner_text("#answer .notice")
    assert notice.startswith("One matching source was left out: it contains instruction-like text")


def test_a_live_lookup_shows_what_it_looked_up_never_its_url(page: Page, demo: Demo) -> None:
    sign_in(page)
    ask(page, "Where is my order 12345?")
    assert page.inner_text("#answer .answer-text").startswith("Order 12345:")
    line = page.inner_text("#answer .sources")
    assert "Current status and delivery date of one of your orders" in line
    page.locator("#answer .answer-text .chip").first.click()
    page.wait_for_selector("#resolve-badge[data-state]")
    panel = page.inner_text("#passage")
    assert "Lookup" in panel and "order_id = 12345" in panel and "customer_id" in panel
    for never in ("{customer_id}", "127.0.0.1", "http", "C-1001", "evidex-demo-tools-token", "Bearer"):
        assert never not in panel and never not in line, never
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "demo-live-lookup.png"), full_page=True)
    # The README's screenshot is this one (EVIDEX_UPDATE_DOCS=1 takes it again).
    if os.environ.get("EVIDEX_UPDATE_DOCS") == "1":
        shutil.copy(ARTIFACTS / "demo-live-lookup.png", SCREENSHOT)
    png = SCREENSHOT.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">I", png[16:20])[0] == 1100


# -- declined answers: the handoff button, related passages ---------------------------------------
def test_the_sent_handoff_button_looks_disabled_and_the_inbox_lists_it(page: Page, demo: Demo) -> None:
    sign_in(page)
    ask(page, "What is the capital of Mongolia?")
    assert page.locator("#answer .declined").count() == 1
    button = page.locator("#handoff-button")
    assert button.inner_text() == "Ask a person"
    style = "(b) => { const s = getComputedStyle(b); return [s.cursor, s.backgroundColor, s.color]; }"
    enabled = button.evaluate(style)
    button.click()
    page.wait_for_selector("#handoff-status[data-reference]")
    reference = page.get_attribute("#handoff-status", "data-reference")
    assert button.is_disabled() and button.inner_text() == "Sent"
    disabled = button.evaluate(style)
    assert disabled[0] == "not-allowed" and enabled[0] == "pointer"
    assert disabled[1] != enabled[1] and disabled[2] != enabled[2]
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "demo-handoff-sent.png"), full_page=True)
    inbox = httpx.get(demo.inbox_url + "/", timeout=10).text
    assert reference in inbox and "What is the capital of Mongolia?" in inbox and "Ask a person" in inbox


def test_the_service_sends_a_declined_answer_with_its_related_reading(page: Page) -> None:
    """A question on the shop's topics that its pages do not answer is declined by the real
    service with the offer of a person and the passages its search found, shown as "not an
    answer", each opening with its citation checked again."""
    sign_in(page)
    ask(page, "What is the phone number of the Repair Lab?")
    assert page.locator("#answer .declined").count() == 1
    assert page.locator("#handoff-button").inner_text() == "Ask a person"
    items = page.locator("#answer .related-item strong").all_inner_texts()
    assert 1 <= len(items) <= 3 and all("**" not in t and "##" not in t for t in items)
    assert page.locator("#answer .chip").count() == 0
    page.locator("#answer .related-item button").first.click()
    page.wait_for_selector("#resolve-badge[data-state]")
    assert page.get_attribute("#resolve-badge", "data-state") == "current"


def test_a_declined_answer_shows_related_passages_as_not_an_answer(page: Page) -> None:
    """Stubbed, to pin the page's rules on a list longer than the service sends."""
    sign_in(page)
    related = [{**CITATION, "passage": i, "title": f"Page {i}",
                "heading_path": [f"Page {i}", f"**Part {i}**"]} for i in range(1, 5)]
    _stub_answer(page, {"status": "declined", "text": "I don't have that in the sources available to you.",
                        "citations": [], "reason": "weak_evidence", "handoff": None, "related": related,
                        "trace": {"dropped": []}})
    ask(page, "Can I return a jacket I wore once?")
    section = page.locator("#answer .related")
    assert section.get_attribute("aria-label") == "Related passages (not an answer)"
    assert page.inner_text("#answer .related h3") == "Not an answer: passages that may be related"
    items = page.locator("#answer .related-item strong").all_inner_texts()
    assert items == ["Page 1 › Part 1", "Page 2 › Part 2", "Page 3 › Part 3"]  # at most 3, no raw marks
    assert page.locator("#answer .chip").count() == 0  # nothing in it is cited as an answer
    page.locator("#answer .related-item button").first.click()
    page.wait_for_selector("#resolve-badge[data-state]")
    assert page.inner_text("#passage-title") == "Page 1"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "demo-declined-related.png"), full_page=True)


def test_the_answered_page_keeps_its_layout(page: Page) -> None:
    sign_in(page)
    ask(page, "Where is my order 12345?")
    same_layout(page, "answer", {"header": "header.top", "tabs": "nav.views", "form": "#ask-form",
                                 "answer": "#answer .answer-text", "sources": "#answer .sources"},
                tolerance=16)
    # The chip sits inside the answer's line, not on a line of its own.
    b = boxes(page, {"text": "#answer .answer-text", "chip": "#answer .answer-text .chip"})
    assert b["chip"][1] >= b["text"][1] and b["chip"][3] <= b["text"][3]


# -- the Operators tab as `make run` starts it (issue 47) -------------------------------------------
def run_demo_activity(demo: Demo) -> subprocess.CompletedProcess[str]:
    """examples/demo_activity.py against this demo, as `make run` runs it once the service answers."""
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo_activity.py"), "--url", demo.url,
         "--key", DEMO_KEYS["customer"], "--site", f"http://127.0.0.1:{demo.ports[8765]}",
         "--evidex", str(EVIDEX), "--db", str(demo.db), "--config", str(demo.config)],
        env={**os.environ, **demo.env}, capture_output=True, text=True, timeout=1800, check=False)


def test_make_run_starts_with_content_in_every_operators_section(browser: Any, demo: Demo) -> None:
    """`make run`'s demo activity (a declined question handed to a person, an edit published on
    the help centre, a drift check that tells the owners, the shipped case set evaluated), each
    through its real path: every section of the admin's Operators tab has content, the handoff
    arrived at the inbox, and the customer key still sees no tab."""
    done = run_demo_activity(demo)
    assert done.returncode == 0, done.stderr
    assert "asked a person (HO-" in done.stdout and "a drift check found it (notify " in done.stdout
    with tab(browser, demo.url + "/", height=1400) as pg:
        sign_in(pg, DEMO_KEYS["admin"])
        pg.click("#view-ops")
        for part in ("sources", "conflicts", "handoffs", "citations", "feedback", "evaluation"):
            pg.wait_for_selector(f"#ops-{part} .ops-body[data-loaded]")
        for part in ("sources", "conflicts", "handoffs", "evaluation"):
            assert pg.locator(f"#ops-{part} [data-empty]").count() == 0, part
        # The stale source: the help centre changed since its sync, and its owner was told.
        help_row = pg.locator("#ops-sources tr", has=pg.locator("[data-source='help-centre']"))
        row = help_row.inner_text()
        assert "changed 1" in row and "Told Help centre team of 1 changed, 1 conflict(s)" in row
        assert help_row.locator("[data-delivered=yes]").count() == 1
        assert pg.locator("#ops-sources [data-stale]").count() == 1  # the help centre only
        assert "stale: 1 change(s) since the last sync" in row
        # The conflict's two quotes, side by side.
        quotes = pg.locator("#ops-conflicts .conflict").first.locator("blockquote").all_inner_texts()
        assert len(quotes) == 2 and all("Shopping Sundays" in q for q in quotes)
        # The handoff, delivered.
        handoffs = pg.inner_text("#ops-handoffs")
        assert "Do you sell kayaks?" in handoffs and "yes" in handoffs
        # The evaluation report: the shipped set's gate (not met: see benchmarks/RESULTS.md).
        evaluation = pg.inner_text("#ops-evaluation")
        assert "cases.yaml" in evaluation and "answerable_cited" in evaluation
        assert "Per category" in evaluation
        ARTIFACTS.mkdir(exist_ok=True)
        pg.screenshot(path=str(ARTIFACTS / "demo-operators-tab.png"), full_page=True)
    # docs/operating.md's screenshot is this one (EVIDEX_UPDATE_DOCS=1 takes it again).
    if os.environ.get("EVIDEX_UPDATE_DOCS") == "1":
        shutil.copy(ARTIFACTS / "demo-operators-tab.png", OPS_SCREENSHOT)
    assert OPS_SCREENSHOT.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    inbox = httpx.get(demo.inbox_url + "/", timeout=30).text
    assert "Do you sell kayaks?" in inbox
