"""The network backend of the tools' connection pool: httpcore's sockets, with every connect,
TLS handshake, write and read given at most the time left to the lookup's attempt (``END``,
set by ``_http.fetch`` on its own thread). Imported on a lookup's first use."""

from __future__ import annotations

import contextvars
import ssl
import time
from collections.abc import Iterable
from typing import Any

import httpcore

__all__ = ["END", "FAILURES", "new_pool"]

#: The end (``time.monotonic()``) of the attempt under way on this thread: every network
#: operation of the pool gets at most the time left to it.
END: contextvars.ContextVar[float | None] = contextvars.ContextVar("evidex_tool_deadline", default=None)
#: Every way httpcore says a request failed (the service's problem, never a fault of evidex).
FAILURES = (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError,
            httpcore.UnsupportedProtocol, httpcore.ProxyError)


def _left(timeout: float | None, late: type[Exception]) -> float | None:
    """The timeout for one network operation: ``timeout``, never past the attempt's end."""
    end = END.get()
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise late("the lookup's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname,
                                             _left(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    """httpcore's socket backend, with every operation bounded by the attempt's end."""

    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_tcp(host, port, _left(timeout, httpcore.ConnectTimeout),
                                               local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("tools are reached over TCP only")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)




def new_pool(max_connections: int) -> httpcore.ConnectionPool:
    return httpcore.ConnectionPool(ssl_context=ssl.create_default_context(),
                                   max_connections=max_connections, max_keepalive_connections=16,
                                   keepalive_expiry=5.0, network_backend=_Backend())
