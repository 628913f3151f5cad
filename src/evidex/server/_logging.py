"""JSON lines on stderr for the service: one per request, one per failure.

What may appear: method, route template (``/v1/documents/{document_id}``, never the id), status,
duration, the caller's label (key name or hash prefix) and tenant, error class names and code
locations. What never appears: query or question text, passage text, document ids from paths,
credentials, exception messages (they can quote input). The one exception: a store failure's
message (the server's address, the database's words, credentials redacted) is the operator's
clue, so it is logged; the caller gets ``STORE_UNAVAILABLE`` only.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import traceback
from typing import Any

from ..store import scrubbed

__all__ = ["STORE_RETRY_AFTER_S", "STORE_UNAVAILABLE", "log_event", "log_failure", "log_store_failure",
           "logger", "setup_logging"]

logger = logging.getLogger("evidex.server")


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
                  + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "event": record.getMessage(),
        }
        data.update(getattr(record, "fields", {}))
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def setup_logging(level: int = logging.INFO) -> None:
    if any(getattr(h, "_evidex", False) for h in logger.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonFormatter())
    handler._evidex = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False


def log_event(event: str, level: int = logging.INFO, **fields: Any) -> None:
    if logger.isEnabledFor(level):
        logger.log(level, event, extra={"fields": fields})


def log_failure(event: str, exc: BaseException, **fields: Any) -> None:
    """An unexpected error: its class and where it happened (file:line function), no message."""
    frames = traceback.extract_tb(exc.__traceback__)[-6:]
    where = [f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} {f.name}" for f in frames]
    log_event(event, logging.ERROR, error=type(exc).__name__, at=where, **fields)


#: What a caller is told when a store fails (a server down, a tenant frozen by a move, a store
#: this evidex cannot open): never the server's address nor the database's words.
STORE_UNAVAILABLE = "the store is unavailable; try again shortly"
#: Seconds a client should wait before retrying a store failure (the Retry-After header).
STORE_RETRY_AFTER_S = 5


def log_store_failure(exc: BaseException, **fields: Any) -> None:
    """A store failure for the operator: its class and its message with every credential
    redacted (store messages quote no caller input)."""
    log_event("store_unavailable", logging.ERROR, error=type(exc).__name__, detail=scrubbed(str(exc)),
              **fields)
