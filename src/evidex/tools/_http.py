"""One read-only HTTP GET: timeout per attempt, retries inside one overall deadline, a size
cap while reading, JSON content types only, no redirects, no proxies from the environment.

Header values may hold ``${VAR}``, filled from the environment at call time. Those values are
secrets: nothing here puts them into a failure's text, and the caller uses ``secrets`` to check
that nothing it shows contains them.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..model import EvidexError

if TYPE_CHECKING:  # httpx loads on first use: its import pulls in click and rich
    import httpx

__all__ = ["Fetched", "fetch", "fill_headers", "new_client"]

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_JSON_TYPE = re.compile(r"^application/(?:[\w.+-]+\+)?json$")


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


def new_client() -> httpx.Client:
    import httpx

    # trust_env=False: the allowlisted hosts are reached directly, so no proxy configured for
    # other traffic ever sees a tool's credentials.
    return httpx.Client(follow_redirects=False, trust_env=False,
                        headers={"Accept": "application/json", "User-Agent": "evidex-tools"},
                        limits=httpx.Limits(max_connections=64, max_keepalive_connections=16))


def fetch(client: httpx.Client, url: str, headers: Mapping[str, str], *, timeout_s: float,
          retries: int, max_bytes: int, deadline: float) -> Fetched:
    """GET ``url``; 429, 5xx, timeouts and transport errors are retried while ``deadline``
    (``time.monotonic()``) allows, every other status is final."""
    import httpx

    last = "no attempt was made before the deadline"
    attempts = 0
    for _ in range(retries + 1):
        remaining = deadline - time.monotonic()
        if remaining <= 0.001:
            break
        attempts += 1
        budget = min(timeout_s, remaining)
        attempt_end = time.monotonic() + budget
        try:
            with client.stream("GET", url, headers=dict(headers),
                               timeout=httpx.Timeout(budget)) as resp:
                code = resp.status_code
                if code == 429 or code >= 500:
                    last = f"the service answered HTTP {code}"
                    continue
                if not 200 <= code < 300:
                    return Fetched(False, detail=f"the service answered HTTP {code}", attempts=attempts)
                ctype = resp.headers.get("content-type", "").split(";")[0].strip().lower()
                if not _JSON_TYPE.match(ctype):
                    return Fetched(False, detail=f"the response is not JSON (content type "
                                                 f"{ctype[:60] or 'missing'})", attempts=attempts)
                declared = resp.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > max_bytes:
                    return Fetched(False, detail=f"the response is larger than {max_bytes} bytes",
                                   attempts=attempts)
                body = bytearray()
                timed_out = False
                for chunk in resp.iter_bytes():
                    body += chunk
                    if len(body) > max_bytes:
                        return Fetched(False, detail=f"the response is larger than {max_bytes} bytes",
                                       attempts=attempts)
                    if time.monotonic() > attempt_end:
                        timed_out = True
                        break
                if timed_out:
                    last = f"the service did not answer within {round(timeout_s * 1000)} ms"
                    continue
                return Fetched(True, bytes(body), attempts=attempts)
        except httpx.TimeoutException:
            last = f"the service did not answer within {round(timeout_s * 1000)} ms"
        except httpx.HTTPError as exc:
            last = f"the service could not be reached ({type(exc).__name__})"
    tries = f" ({attempts} attempt{'s' if attempts != 1 else ''})" if attempts else ""
    return Fetched(False, detail=last + tries, attempts=attempts)
