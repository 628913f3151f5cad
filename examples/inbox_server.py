"""The Acme Outdoor support inbox: where the example's handoffs and owner notices arrive.

A webhook receiver for `make run`: examples/knowledge.config.yaml sends `answer.handoff` (a
declined answer's "Ask a person" button, `POST /v1/handoff`) to /handoff and each source
owner's drift and conflict notices to /owners/<source>. Each POST must carry evidex's
signature (`X-Evidex-Signature: sha256=<HMAC-SHA256 of the raw body>`) under the secret in
ACME_INBOX_SECRET; an unsigned or wrongly signed one is refused (401). The signed body carries
its send time (`sent_at`) and a unique `delivery_id`: a body sent more than five minutes ago
(or dated in the future) is refused as stale (400), and one whose delivery id arrived before
as a replay (409), so a captured delivery cannot be sent again. Each accepted message is
printed as one line, as a person on the support team would see it arrive, and kept: `GET /`
shows the last 100 as a page (a table, newest first), `GET /messages.json` as JSON.

Standard library only.

    ACME_INBOX_SECRET=... python examples/inbox_server.py [--port 8082]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime
import hashlib
import hmac
import html
import json
import os
import re
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SECRET_ENV = "ACME_INBOX_SECRET"
MAX_BODY = 1024 * 1024
#: How old (or how far in the future, for clocks apart) a signed body may be.
MAX_AGE_S = 300.0


class Replays:
    """Delivery ids seen within ``MAX_AGE_S`` (an older body is refused as stale anyway, so
    its id need not be remembered longer)."""

    def __init__(self) -> None:
        self._seen: dict[str, float] = {}

    def fresh(self, message: dict[str, Any], now: float) -> int:
        """0 when ``message`` is new and recent (its id is remembered), else the HTTP status."""
        sent, delivery = message.get("sent_at"), message.get("delivery_id")
        if not isinstance(sent, str) or not isinstance(delivery, str) or not delivery:
            return 400
        try:
            at = datetime.datetime.fromisoformat(sent).timestamp()
        except ValueError:
            return 400
        if abs(now - at) > MAX_AGE_S:
            return 400
        self._seen = {k: t for k, t in self._seen.items() if now - t <= 2 * MAX_AGE_S}
        if delivery in self._seen:
            return 409
        self._seen[delivery] = now
        return 0


def summary(path: str, message: dict[str, Any]) -> str:
    """One line for a person reading the inbox (control characters of the sender's text shown
    as spaces: a question may span lines)."""
    kind = message.get("type")
    if kind == "evidex.handoff":
        text = f"handoff {message.get('reference')} from {message.get('caller')}: {message.get('question')}"
    elif kind == "evidex.owner_findings":
        drift = sum(len(s.get(k, [])) for s in message.get("drift", [])
                    for k in ("new", "changed", "removed"))
        text = (f"to {message.get('owner')}: {drift} drifted document(s), "
                f"{len(message.get('conflicts', []))} open conflict(s)")
    else:
        text = f"a message of type {kind!r}"
    return f"inbox {path}: " + "".join(c if c.isprintable() else " " for c in text)


def _cell(value: Any) -> str:
    return html.escape("".join(c if c.isprintable() else " " for c in str(value)))


def page(kept: list[dict[str, Any]]) -> str:
    """The inbox as a person reads it: one table row per message, newest first. Every value is
    escaped: a question is whatever a customer typed."""
    rows = []
    for item in reversed(kept):
        m = item["message"]
        if m.get("type") == "evidex.handoff":
            # The caller's log label ("key:demo-customer") names the key; the page shows the name.
            kind, who = "Ask a person", re.sub(r"^[a-z]+:", "", str(m.get("caller", "")))
            what = m.get("question", "")
            ref = m.get("reference", "")
        else:
            kind, who, ref = "Owner notice", m.get("owner", ""), ""
            what = summary(item["path"], m).split(": ", 2)[-1]
        rows.append(f"<tr><td>{_cell(kind)}</td><td>{_cell(ref)}</td><td>{_cell(who)}</td>"
                    f"<td>{_cell(what)}</td><td><code>{_cell(item['path'])}</code></td></tr>")
    body = "\n".join(rows) or '<tr><td colspan="5">Nothing has arrived yet.</td></tr>'
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Acme Outdoor support inbox</title>
<style>body{{font-family:system-ui,sans-serif;margin:1.5rem;color:#1d2330}}
table{{border-collapse:collapse;width:100%}}th,td{{border:1px solid #d9dde5;padding:.35rem .6rem;
text-align:left;vertical-align:top}}th{{background:#f6f7f9}}</style></head>
<body><h1>Acme Outdoor support inbox</h1>
<p>Questions sent with the page's <strong>Ask a person</strong> button and source owners' notices,
newest first (the last 100; as JSON: <a href="/messages.json">/messages.json</a>).</p>
<table><thead><tr><th>kind</th><th>reference</th><th>from / to</th><th>message</th><th>path</th></tr></thead>
<tbody>
{body}
</tbody></table></body></html>
"""


def server(port: int, secret: str, host: str = "127.0.0.1",
           out: Any = sys.stdout) -> tuple[ThreadingHTTPServer, collections.deque[dict[str, Any]]]:
    """The inbox on ``host:port``, not yet serving (call ``serve_forever``), and what it keeps."""
    kept: collections.deque[dict[str, Any]] = collections.deque(maxlen=100)
    lock = threading.Lock()
    replays = Replays()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_BODY:
                return self._reply(413 if length else 400)
            body = self.rfile.read(length)
            want = "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
            if not hmac.compare_digest(self.headers.get("X-Evidex-Signature", ""), want):
                return self._reply(401)
            try:
                message = json.loads(body)
            except ValueError:
                return self._reply(400)
            if not isinstance(message, dict):
                return self._reply(400)
            with lock:
                refused = replays.fresh(message, time.time())
                if refused:
                    return self._reply(refused)
                kept.append({"path": self.path, "message": message})
                print(summary(self.path, message), file=out, flush=True)
            return self._reply(204)

        def do_GET(self) -> None:
            if self.path not in ("/", "/messages.json"):
                return self._reply(404)
            with lock:
                listed = list(kept)
            if self.path == "/":
                body, kind = page(listed).encode("utf-8"), "text/html; charset=utf-8"
            else:
                body, kind = json.dumps(listed, ensure_ascii=False).encode("utf-8"), "application/json"
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return None

        def _reply(self, status: int) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    return ThreadingHTTPServer((host, port), Handler), kept


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8082)
    args = ap.parse_args()
    secret = os.environ.get(SECRET_ENV)
    if not secret:
        sys.exit(f"error: set {SECRET_ENV} (the key evidex signs what it sends with)")
    httpd, _ = server(args.port, secret)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"support inbox on http://127.0.0.1:{args.port}/ (handoffs and owner notices print here)",
          flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        httpd.serve_forever()


if __name__ == "__main__":
    main()
