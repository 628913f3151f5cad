"""The ASGI middleware in front of every route: body limit, credentials, rate limits, headers.

Order of checks for every request, before any routing or body parsing: body size (413),
credentials (401, for ``/v1/*``), rate limit (429). Only then does FastAPI parse and validate
the body (422). Identity is therefore settled before a single byte of the body is interpreted,
and nothing in a body can change it. The principal is handed to the routes in the ASGI scope
(``scope["state"]["principal"]``), read by ``_deps.caller``.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

from ._identity import Authenticator, Principal, RateLimiter
from ._logging import log_event, log_failure

__all__ = ["Guard"]


_SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy",
     b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
     b"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
]
_NO_STORE = (b"cache-control", b"no-store")


def _route(path: str) -> str:
    """The route template for logs: document ids are data and stay out of them."""
    if path.startswith("/v1/documents/"):
        return "/v1/documents/{document_id}"
    if path.startswith("/static/"):
        return "/static/*"
    if path in ("/", "/healthz", "/openapi.json") or path.startswith("/v1/"):
        return path if len(path) <= 64 else path[:64] + "..."
    return "other"


class Guard:
    """Body limit, authentication, rate limit, security headers, request log, last-resort 500."""

    def __init__(self, app: Any, auth: Authenticator, limiter: RateLimiter, max_body: int,
                 failures: RateLimiter) -> None:
        self.app, self.auth, self.limiter, self.max_body = app, auth, limiter, max_body
        self.failures = failures

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        state = {"status": 0, "started": False, "closed": False}
        path = scope.get("path", "")
        api = path.startswith("/v1/") or path == "/metrics"  # /metrics: admin keys only
        who: Principal | None = None

        async def send_wrapped(message: dict[str, Any]) -> None:
            if state["closed"]:
                return  # the guard already answered (413 mid-stream); the app's reply is dropped
            if message["type"] == "http.response.start":
                state["status"], state["started"] = message["status"], True
                headers = list(message.get("headers", []))
                headers.extend(_SECURITY_HEADERS)
                if api:
                    headers.append(_NO_STORE)
                message = {**message, "headers": headers}
            await send(message)

        async def reply(status: int, detail: str, extra: tuple[tuple[bytes, bytes], ...] = ()) -> None:
            body = json.dumps({"detail": detail}).encode()
            await send_wrapped({"type": "http.response.start", "status": status, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                *extra]})
            await send_wrapped({"type": "http.response.body", "body": body})

        try:
            length, authorization = None, None
            for name, value in scope.get("headers", ()):
                if name == b"content-length":
                    length = value
                elif name == b"authorization":
                    authorization = value.decode("latin-1")
            if length is not None:
                try:
                    n = int(length)
                except ValueError:
                    await reply(400, "invalid Content-Length")
                    return
                if n > self.max_body:
                    await reply(413, f"the request body is larger than {self.max_body} bytes")
                    return
            if api:
                # An address that failed too often is refused before its credentials are looked
                # at: answering a guess (200 or 401) would let guessing go on at full speed.
                client = scope.get("client")
                address = str(client[0]) if client else "unknown"
                wait = self.failures.waiting(address)
                if wait > 0:
                    await reply(429, "too many failed credential checks from this address",
                                ((b"retry-after", str(max(1, math.ceil(wait))).encode()),))
                    return
                who = self.auth.from_header(authorization)
                if who is None:
                    self.failures.take(address)
                    await reply(401, "missing or invalid credentials",
                                ((b"www-authenticate", b'Bearer realm="evidex"'),))
                    return
                wait = self.limiter.take(who.label)
                if wait > 0:
                    await reply(429, "rate limit exceeded for this key",
                                ((b"retry-after", str(max(1, math.ceil(wait))).encode()),))
                    return
                scope.setdefault("state", {})["principal"] = who
            seen = 0

            async def receive_limited() -> dict[str, Any]:
                # A body without Content-Length is counted as it arrives; past the limit the
                # guard answers 413 itself and tells the app the client went away, so the app
                # stops reading without parsing a truncated body.
                nonlocal seen
                if state["closed"]:
                    return {"type": "http.disconnect"}
                message = await receive()
                if message["type"] == "http.request":
                    seen += len(message.get("body", b""))
                    if seen > self.max_body:
                        if not state["started"]:
                            await reply(413, f"the request body is larger than {self.max_body} bytes")
                        state["closed"] = True
                        return {"type": "http.disconnect"}
                return message

            await self.app(scope, receive_limited, send_wrapped)
        except Exception as exc:
            log_failure("unhandled_error", exc, route=_route(path))
            if not state["started"]:
                await reply(500, "internal error")
        finally:
            fields: dict[str, Any] = {
                "method": scope.get("method"), "route": _route(path), "status": state["status"],
                "ms": round((time.perf_counter() - t0) * 1000, 2)}
            if who is not None:
                fields.update(key=who.label, tenant=who.actor.tenant)
            log_event("request", **fields)
