"""Wait until a URL answers (for `make run`, which starts the example services in the background).

    python examples/wait_for.py http://127.0.0.1:8765/sitemap.xml [seconds]

Exits 0 once the URL answers with a success status, 1 with a one-line message after ``seconds``
(default 10). Only the standard library, so it needs nothing that `make install` does not bring.
"""

from __future__ import annotations

import sys
import time
import urllib.request


def main() -> int:
    url, seconds = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return 0
        except OSError:
            time.sleep(0.1)
    print(f"error: {url} did not answer within {seconds:g} s", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
