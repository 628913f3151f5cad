"""Refuse to start `make run` while its ports are taken (most often by a `make run` already
running, whose store the new run would delete before failing to serve).

    python examples/free_ports.py 8000 8765 8081 8082

Exits 0 when this machine can listen on every port on 127.0.0.1 (probed as uvicorn and
http.server bind, with SO_REUSEADDR), else 1 with one line naming the ports in use. Only the
standard library, so it needs nothing that `make install` does not bring.
"""

from __future__ import annotations

import socket
import sys


def taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def main() -> int:
    busy = [p for p in map(int, sys.argv[1:]) if taken(p)]
    if busy:
        print(f"error: port{'s' if len(busy) > 1 else ''} {', '.join(map(str, busy))} on 127.0.0.1 "
              "in use (is `make run` already running?); nothing was changed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
