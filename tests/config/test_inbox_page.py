"""The demo support inbox's page (examples/inbox_server.py, issue 39): `GET /` is a table a person
reads, newest first, every value escaped; the JSON stays at `/messages.json`. A real HTTP server,
messages delivered by evidex's own signed routes."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from demo_helpers import demo_config, example_module
from evidex.config import load_config
from evidex.notify import Message, deliver, send_handoff
from service_helpers import free_port

STATIC = Path(__file__).resolve().parents[2] / "src" / "evidex" / "server" / "static"


def test_the_inbox_lists_handoffs_and_notices_as_a_table(tmp_path: Path) -> None:
    inbox = example_module("inbox_server")
    port = free_port()
    httpd, _ = inbox.server(port, "demo-secret", out=open("/dev/null", "w"))  # noqa: SIM115
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{port}"
        empty = httpx.get(base + "/")
        assert empty.headers["content-type"].startswith("text/html")
        assert "Nothing has arrived yet." in empty.text
        cfg = load_config(demo_config(tmp_path, {8082: port}))
        env = {"ACME_INBOX_SECRET": "demo-secret"}
        sent = send_handoff(cfg.answer.handoff, None, tenant="acme", caller="key:demo-customer",
                            question="Can I return <b>worn</b> boots?", conversation=[], trace_ids=[],
                            env=env)
        owner = cfg.sources[0].owner
        notice = {"type": "evidex.owner_findings", "owner": owner.name, "drift": [{"new": ["a"]}],
                  "conflicts": []}
        assert deliver(owner.name, owner, Message("notice", "text", notice), smtp=None, env=env)[0].ok
        got = httpx.get(base + "/")
        assert got.status_code == 200 and got.headers["content-type"].startswith("text/html")
        assert "<b>worn</b>" not in got.text  # the customer's text is escaped, never markup
        tree = HTMLParser(got.text)
        head = [th.text() for th in tree.css("thead th")]
        rows = [[td.text() for td in tr.css("td")] for tr in tree.css("tbody tr")]
        assert head == ["kind", "reference", "from / to", "message", "path"]
        assert rows == [  # newest first
            ["Owner notice", "", "Help centre team", "1 drifted document(s), 0 open conflict(s)",
             "/owners/help-centre"],
            ["Ask a person", sent.reference, "demo-customer", "Can I return <b>worn</b> boots?", "/handoff"],
        ]
        listed = httpx.get(base + "/messages.json").json()
        assert [m["path"] for m in listed] == ["/handoff", "/owners/help-centre"]
        assert httpx.get(base + "/other").status_code == 404
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_the_page_and_the_inbox_name_the_handoff_alike() -> None:
    """The README called the button "Ask a person", the page said "Send my question to a person"."""
    js = (STATIC / "app.js").read_text(encoding="utf-8")
    assert '"Ask a person"' in js and "Send my question to a person" not in js
    inbox = Path(__file__).resolve().parents[2] / "examples" / "inbox_server.py"
    assert "Ask a person" in inbox.read_text(encoding="utf-8")
