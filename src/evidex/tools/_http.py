"""One read-only HTTP GET under one wall-clock deadline: connect, TLS, sending, headers, body
and retries all end by it; a size cap while reading and while inflating; JSON content types
only; no redirects; no proxies.

The deadline is enforced where bytes move, not around the call: the connection pool's network
backend (``_Backend``) gives every connect, handshake, write and read at most the time left to
the attempt, so a server that drips its headers at a byte a second is cut off at the deadline
(a per-read timeout alone restarts with every byte) and no connection outlives its lookup.
The body is read raw and inflated here (gzip, deflate) in pieces no larger than what is still
allowed, so a small compressed body never becomes a large one in memory.

Header values may hold ``${VAR}``, filled from the environment at call time. Those values are
secrets: nothing here puts them into a failure's text, and the caller uses ``secrets`` to check
that nothing it shows contains them.
"""

from __future__ import annotations

import os
import re
import time
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..model import EvidexError

if TYPE_CHECKING:  # httpcore loads on first use (its import takes longer than evidex's own)
    import httpcore

__all__ = ["Fetched", "fetch", "fill_headers", "new_client"]

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_JSON_TYPE = re.compile(r"^application/(?:[\w.+-]+\+)?json$")
_HEADERS = {"Accept": "application/json", "Accept-Encoding": "gzip, deflate", "User-Agent": "evidex-tools"}
@dataclass(frozen=True, slots=True)
class Fetched:
    """A response body (``ok``), or why there is none in words safe to show anyone."""

    ok: bool
    body: bytes = b""
    detail: str = ""
    attempts: int = 0


def fill_headers(headers: Mapping[str, str],
                 environ: Mapping[str, str] | None = None) -> tuple[dict[str, str], tuple[str, ...]]:
    """(headers with every ``${VAR}`` replaced from the environment, the values filled in).
    A variable that is not set is an ``EvidexError`` naming the variable (never a value)."""
    env = os.environ if environ is None else environ
    secrets: list[str] = []

    def one(m: re.Match[str]) -> str:
        value = env.get(m.group(1))
        if not value:
            raise EvidexError(f"the environment variable {m.group(1)} that a header of this tool "
                              "needs is not set")
        secrets.append(value)
        return value

    return {k: _ENV.sub(one, v) for k, v in headers.items()}, tuple(secrets)


def new_client(max_connections: int = 64) -> httpcore.ConnectionPool:
    """The connection pool lookups share: keep-alive connections to the allowlisted hosts,
    every operation bounded by its lookup's deadline. httpcore reads no proxy settings from the
    environment, so no proxy configured for other traffic ever sees a tool's credentials."""
    from ._wire import new_pool

    return new_pool(max_connections)


class _TooLarge(Exception):
    pass


def _inflater(encoding: str) -> Any:
    """A decompressor for the response's ``Content-Encoding`` (None: the body as it is)."""
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompressobj()
    raise EvidexError(f"the response's content encoding {encoding[:40]!r} is not supported "
                      "(gzip and deflate are)")


def _body(chunks: Iterator[bytes], encoding: str, max_bytes: int) -> bytes:
    """The body, inflated; ``_TooLarge`` as soon as either the bytes read or the bytes they
    inflate to pass ``max_bytes`` (nothing larger is ever held)."""
    inflate = _inflater(encoding)
    raw = 0
    out = bytearray()
    for chunk in chunks:
        raw += len(chunk)
        if raw > max_bytes:
            raise _TooLarge
        if inflate is None:
            out += chunk
        else:
            out += inflate.decompress(chunk, max_bytes + 1 - len(out))
            if inflate.unconsumed_tail:
                raise _TooLarge
        if len(out) > max_bytes:
            raise _TooLarge
    if inflate is not None:
        out += inflate.flush()
        if len(out) > max_bytes:
            raise _TooLarge
    return bytes(out)


def fetch(client: httpcore.ConnectionPool, url: str, headers: Mapping[str, str], *, timeout_s: float,
          retries: int, max_bytes: int, deadline: float) -> Fetched:
    """GET ``url``; 429, 5xx, timeouts and transport errors are retried while ``deadline``
    (``time.monotonic()``) allows, every other status is final. Each attempt ends by
    ``timeout_s`` after it started and by ``deadline``, whatever the server does."""
    import httpcore

    from ._wire import END, FAILURES

    last = "no attempt was made before the deadline"
    attempts = 0
    waited = f"the service did not answer within {round(timeout_s * 1000)} ms"
    sent = [*_HEADERS.items(), *headers.items()]
    for _ in range(retries + 1):
        now = time.monotonic()
        if deadline - now <= 0.001:
            break
        attempts += 1
        end = min(now + timeout_s, deadline)
        token = END.set(end)
        try:
            budget = end - now
            with client.stream("GET", url, headers=sent, extensions={"timeout": {
                    "connect": budget, "read": budget, "write": budget, "pool": budget}}) as resp:
                code = resp.status
                if code == 429 or code >= 500:
                    last = f"the service answered HTTP {code}"
                    continue
                if not 200 <= code < 300:
                    return Fetched(False, detail=f"the service answered HTTP {code}", attempts=attempts)
                got = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in resp.headers}
                ctype = got.get("content-type", "").split(";")[0].strip().lower()
                if not _JSON_TYPE.match(ctype):
                    return Fetched(False, detail=f"the response is not JSON (content type "
                                                 f"{ctype[:60] or 'missing'})", attempts=attempts)
                declared = got.get("content-length", "")
                if declared.isdigit() and int(declared) > max_bytes:
                    return Fetched(False, detail=f"the response is larger than {max_bytes} bytes",
                                   attempts=attempts)
                try:
                    body = _body(resp.iter_stream(), got.get("content-encoding", "").strip().lower(),
                                 max_bytes)
                except _TooLarge:
                    return Fetched(False, detail=f"the response is larger than {max_bytes} bytes",
                                   attempts=attempts)
                except zlib.error:
                    return Fetched(False, detail="the response's compressed body is damaged",
                                   attempts=attempts)
                except EvidexError as exc:
                    return Fetched(False, detail=str(exc), attempts=attempts)
                return Fetched(True, body, attempts=attempts)
        except httpcore.TimeoutException:
            last = waited
        except FAILURES as exc:
            last = f"the service could not be reached ({type(exc).__name__})"
        finally:
            END.reset(token)
    tries = f" ({attempts} attempt{'s' if attempts != 1 else ''})" if attempts else ""
    return Fetched(False, detail=last + tries, attempts=attempts)
