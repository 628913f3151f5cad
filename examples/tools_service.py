"""A tiny order and stock service for the Acme Outdoor example shop (examples/shop): the live
system that evidex's example tools `order-status` and `stock` call (examples/knowledge.config.yaml).

Standard library only. Everything is fictional: a few orders of the demo customer C-1001 (whose
claim the demo customer key carries) and one of another customer, and store stock for every
product of the shop's catalogue (examples/shop/site/catalogue/*.jsonl), deterministic per
product, store and size.

    python examples/tools_service.py [--port 8081]

When ACME_TOOLS_TOKEN is set, every request must carry `Authorization: Bearer <that token>`
(evidex sends it from the same variable, see the tools' `headers:`).

    GET /customers/{customer}/orders/{order}    an order of that customer (`latest`: the newest)
    GET /stock/{product}?store=...&size=...     a SKU (JK-1107) or a product name (alpspitz)
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import re
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, unquote, urlsplit

CATALOGUE = Path(__file__).resolve().parent / "shop" / "site" / "catalogue"
TOKEN_ENV = "ACME_TOOLS_TOKEN"

#: Orders by customer, newest last. Statuses are those of the help page "Tracking, changing or
#: cancelling an order" (shop/order-tracking).
ORDERS: dict[str, list[dict[str, Any]]] = {
    "C-1001": [
        {"order_id": "AO-2605520", "placed": "2026-11-18", "status": "delivered",
         "delivery": "delivered on 2026-11-24", "carrier": "DHL"},
        {"order_id": "AO-2604117", "placed": "2026-11-25", "status": "shipped",
         "delivery": "expected delivery 2026-12-02", "carrier": "DHL"},
        {"order_id": "12345", "placed": "2026-11-27", "status": "shipped",
         "delivery": "expected delivery 2026-12-03", "carrier": "DPD"},
        {"order_id": "AO-2611035", "placed": "2026-11-30", "status": "being packed",
         "delivery": "expected delivery 2026-12-05", "carrier": "DHL"},
    ],
    "C-1002": [
        {"order_id": "AO-2609001", "placed": "2026-11-29", "status": "received",
         "delivery": "expected delivery 2026-12-06", "carrier": "DHL"},
    ],
}

STORES = {"hamburg": "Hamburg store", "berlin": "Berlin store", "munich": "Munich store",
          "münchen": "Munich store", "cologne": "Cologne store", "köln": "Cologne store",
          "leipzig": "Leipzig store", "vienna": "Vienna store", "wien": "Vienna store",
          "online": "online shop"}
#: A few counts fixed by hand (the README's examples); every other count is derived.
FIXED_STOCK = {("JK-1107", "Hamburg store", "L"): 3, ("FT-7001", "Berlin store", "42"): 2,
               ("FT-7002", "Berlin store", "42"): 0}
_LETTERS = ["XS", "S", "M", "L", "XL", "XXL", "3XL"]


def _sizes(text: str) -> list[str]:
    """The sizes a catalogue text lists ("Sizes: S to XXL.", "Sizes: EU 40 to 47, including
    half sizes.", "Sizes: S, M, L."); one size when it lists none."""
    m = re.search(r"Sizes: ([^.]*(?:\.\d[^.]*)?)\.", text)
    if not m:
        return ["one size"]
    spec = m.group(1)
    eu = re.match(r"EU (\d+) to (\d+)", spec)
    if eu:
        lo, hi = int(eu.group(1)), int(eu.group(2))
        halves = "half sizes" in spec
        out = []
        for n in range(lo, hi + 1):
            out.append(str(n))
            if halves and n < hi:
                out.append(f"{n}.5")
        return out
    span = re.match(r"(\w+) to (\w+)", spec)
    if span and span.group(1) in _LETTERS and span.group(2) in _LETTERS:
        return _LETTERS[_LETTERS.index(span.group(1)):_LETTERS.index(span.group(2)) + 1]
    listed = [s.strip() for s in spec.split(",") if s.strip() in _LETTERS]
    return listed or ["one size"]


def load_products() -> dict[str, dict[str, Any]]:
    products = {}
    for path in sorted(CATALOGUE.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                sku = rec["id"].removeprefix("product/")
                name = re.sub(rf"\s*\({re.escape(sku)}\)$", "", rec["title"])
                products[sku] = {"sku": sku, "name": name, "sizes": _sizes(rec["text"])}
    return products


def _count(sku: str, store: str, size: str) -> int:
    fixed = FIXED_STOCK.get((sku, store, size))
    if fixed is not None:
        return fixed
    return hashlib.sha256(f"{sku}|{store}|{size}".encode()).digest()[0] % 6


def _in_stock(n: int) -> str:
    return f"{n} in stock" if n else "none in stock"


def stock(products: dict[str, dict[str, Any]], query: str, store_key: str,
          size: str) -> dict[str, Any] | None:
    """Availability of a SKU, or of every product whose name contains ``query``."""
    store = STORES.get(store_key.lower())
    if store is None:
        return None
    q = query.strip()
    found = ([products[q.upper()]] if q.upper() in products else
             [p for p in products.values() if q.lower() in p["name"].lower()])
    if not found or not q:
        return None
    size = size.replace(",", ".").upper() if size.lower() != "any" else "any"
    parts = []
    for p in found:
        label = p["name"].split(", ", 1)[1] if len(found) > 1 and ", " in p["name"] else None
        if size == "any" and p["sizes"] == ["one size"]:
            avail = _in_stock(_count(p["sku"], store, "one size"))
        elif size == "any":
            avail = ", ".join(f"{s}: {_count(p['sku'], store, s)}" for s in p["sizes"])
        elif size in p["sizes"]:
            avail = _in_stock(_count(p["sku"], store, size))
        else:
            avail = f"not made in size {size}"
        parts.append(f"{label} ({p['sku']}): {avail}" if label else avail)
    names = {p["name"].split(", ")[0] for p in found}
    name = found[0]["name"] + f" ({found[0]['sku']})" if len(found) == 1 else " / ".join(sorted(names))
    shown = f"size {size}" if size != "any" else (
        "one size" if all(p["sizes"] == ["one size"] for p in found) else "all sizes")
    return {"query": q, "name": name, "store": store, "size": shown,
            "availability": "; ".join(parts), "skus": [p["sku"] for p in found]}


def order(customer: str, order_id: str) -> dict[str, Any] | None:
    mine = ORDERS.get(customer, [])
    if order_id == "latest":
        return mine[-1] if mine else None
    return next((o for o in mine if o["order_id"] == order_id), None)


class Handler(BaseHTTPRequestHandler):
    server_version = "acme-tools/1"
    products: ClassVar[dict[str, dict[str, Any]]] = {}

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: `make run` shows evidex's output

    def _send(self, code: int, data: dict[str, Any]) -> None:
        body = json.dumps(data, ensure_ascii=False).encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        token = os.environ.get(TOKEN_ENV)
        sent = self.headers.get("Authorization", "")
        if token and not hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
            self._send(401, {"error": "missing or wrong token"})
            return
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.split("/") if p]
        if len(parts) == 4 and parts[0] == "customers" and parts[2] == "orders":
            found = order(parts[1], parts[3])
            self._send(200, found) if found else self._send(404, {"error": "no such order"})
            return
        if len(parts) == 2 and parts[0] == "stock":
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            found = stock(self.products, parts[1], query.get("store", "online"),
                          query.get("size", "any"))
            self._send(200, found) if found else self._send(404, {"error": "no such product or store"})
            return
        self._send(404, {"error": "not found"})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8081)
    args = ap.parse_args()
    Handler.products = load_products()
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"acme tools service (orders, stock) at http://{args.host}:{args.port}/", file=sys.stderr,
          flush=True)
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
