"""The Acme Outdoor help centre as a web site: the example shop's pages (examples/shop/site)
under /help/, and /sitemap.xml listing every one of them. The `help-centre` web source of
examples/knowledge.config.yaml syncs from it (`make run` starts it on port 8765).

Standard library only; static files. One thing changes: ``POST /publish`` stands for the help
centre team publishing the edits in examples/shop/site-edits/ (same paths as the site), which are
served from then on. The demo's users do that after `make run` has synced (examples/
demo_activity.py), so a drift check then finds the help centre changed since its last sync: a
stale source, as the Operators tab shows it.

    python examples/site_server.py [--port 8765]
"""

from __future__ import annotations

import argparse
import contextlib
import email.utils
import functools
import signal
import sys
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from xml.sax.saxutils import escape

SITE = Path(__file__).resolve().parent / "shop" / "site"
EDITS = Path(__file__).resolve().parent / "shop" / "site-edits"
PAGES = (".md", ".html", ".pdf", ".docx")


class _Handler(SimpleHTTPRequestHandler):
    extensions_map: ClassVar[dict[str, str]] = {**SimpleHTTPRequestHandler.extensions_map,
                                                ".md": "text/markdown"}

    #: Set by ``POST /publish``: the edits are served from then on (one demo, one process).
    published: ClassVar[bool] = False
    #: When the edits were published; an edited page was last modified then, not at its file's
    #: time (a fresh checkout gives the page and its edit the same second, and a conditional
    #: re-fetch would then be told "304 Not Modified" for a page whose text changed).
    published_at: ClassVar[float] = 0.0

    def translate_path(self, path: str) -> str:
        # Only /help/... maps onto the site folder; anything else is not found.
        path = path.split("?", 1)[0].split("#", 1)[0]
        if not path.startswith("/help/"):
            return str(SITE / "\x00missing")
        found = super().translate_path("/" + path[len("/help/"):])
        if _Handler.published:
            edited = EDITS / Path(found).relative_to(SITE) if Path(found).is_relative_to(SITE) else None
            if edited is not None and edited.is_file():
                return str(edited)
        return found

    def do_POST(self) -> None:
        if self.path != "/publish":
            self.send_error(404)
            return
        _Handler.published = True
        _Handler.published_at = time.time()
        body = b"published\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def send_head(self):  # type: ignore[no-untyped-def]  # typeshed: io.BytesIO | BinaryIO | None
        # An edited page answers conditional requests by its publishing time (see published_at).
        if _Handler.published and self.translate_path(self.path).startswith(str(EDITS)):
            since = self.headers.get("If-Modified-Since")
            if since is not None:
                with contextlib.suppress(TypeError, ValueError, IndexError, OverflowError):
                    if email.utils.parsedate_to_datetime(since).timestamp() < _Handler.published_at:
                        del self.headers["If-Modified-Since"]
        return super().send_head()

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] != "/sitemap.xml":
            return super().do_GET()
        host = f"http://{self.headers.get('host') or '127.0.0.1'}"
        urls = "".join(f"<url><loc>{escape(host)}/help/{escape(p.relative_to(SITE).as_posix())}</loc></url>"
                       for p in sorted(SITE.rglob("*")) if p.suffix in PAGES)
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/'
                f'schemas/sitemap/0.9">{urls}</urlset>\n').encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return None

    def log_message(self, format: str, *args: object) -> None:
        pass


def server(port: int, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """The site on ``host:port``, not yet serving (call ``serve_forever``)."""
    return ThreadingHTTPServer((host, port), functools.partial(_Handler, directory=str(SITE)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8765)
    args = ap.parse_args()
    httpd = server(args.port)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"help centre on http://127.0.0.1:{args.port}/help/ (sitemap /sitemap.xml)", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        httpd.serve_forever()


if __name__ == "__main__":
    main()
